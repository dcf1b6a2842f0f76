package audit

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// WriteHTML renders the report as one self-contained HTML page: no scripts,
// no external resources, the plot as inline SVG. Every string from the log
// is escaped by html/template (actions and argv are chosen by sandboxed
// code).
func (rep *Report) WriteHTML(out io.Writer) error {
	return reportTmpl().Execute(out, htmlView{Report: rep, Plot: rep.plot(), Generated: time.Now().UTC()})
}

type htmlView struct {
	*Report
	Plot      template.HTML
	Generated time.Time
}

// plot draws decisions over time as stacked bars (allowed, asked,
// refused) in at most 60 buckets spanning the log.
func (rep *Report) plot() template.HTML {
	if len(rep.Timeline) == 0 {
		return template.HTML(`<p class="none">no decisions in this log</p>`)
	}
	keys := make([]int64, 0, len(rep.Timeline))
	for k := range rep.Timeline {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	first, last := keys[0], keys[len(keys)-1]
	span := last - first + 1
	n := int64(min(60, span))
	width := (span + n - 1) / n // minutes per bucket
	buckets := make([][3]int, n)
	for _, k := range keys {
		b := (k - first) / width
		for i := range 3 {
			buckets[b][i] += rep.Timeline[k][i]
		}
	}
	peak := 1
	for _, b := range buckets {
		peak = max(peak, b[0]+b[1]+b[2])
	}
	const W, H, left, bottom = 720.0, 220.0, 40.0, 30.0
	bw := (W - left - 10) / float64(n)
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" role="img" aria-label="decisions over time">`, W, H)
	fmt.Fprintf(&sb, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#888"/>`, left, H-bottom, W-10, H-bottom)
	fmt.Fprintf(&sb, `<text x="4" y="14" font-size="11">%d</text><text x="4" y="%.0f" font-size="11">0</text>`, peak, H-bottom)
	colors := [3]string{"#3a7d44", "#d4a017", "#b8322a"}
	names := [3]string{"allowed", "approved on ask", "refused"}
	for i, b := range buckets {
		y := H - bottom
		for j := range 3 {
			if b[j] == 0 {
				continue
			}
			h := float64(b[j]) / float64(peak) * (H - bottom - 20)
			y -= h
			t := time.Unix((first+int64(i)*width)*60, 0).UTC().Format("2006-01-02 15:04")
			fmt.Fprintf(&sb, `<rect class="bar-%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d %s</title></rect>`,
				names[j], left+float64(i)*bw+1, y, max(bw-2, 1), h, colors[j], t, b[j], names[j])
		}
	}
	t0 := time.Unix(first*60, 0).UTC().Format("2006-01-02 15:04")
	t1 := time.Unix((last+1)*60, 0).UTC().Format("2006-01-02 15:04")
	fmt.Fprintf(&sb, `<text x="%.0f" y="%.0f" font-size="11">%s</text><text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s UTC</text>`, left, H-8, t0, W-10, H-8, t1)
	for j := range 3 {
		fmt.Fprintf(&sb, `<rect x="%.0f" y="6" width="10" height="10" fill="%s"/><text x="%.0f" y="15" font-size="11">%s</text>`, W-330+float64(j)*110, colors[j], W-316+float64(j)*110, names[j])
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

var reportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"ts": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"refused": func(m map[string]int) int {
			return m[DecisionDeny] + m[DecisionAskDenied] + m[DecisionAskTimeout] + m[DecisionAskUnavailable]
		},
		"asked": func(m map[string]int) int {
			return m[DecisionAskApproved] + m[DecisionAskDenied] + m[DecisionAskTimeout] + m[DecisionAskUnavailable] + m[DecisionAsk]
		},
		"sorted":  sortedKeys,
		"broken":  func(s string) bool { return strings.HasPrefix(s, "BROKEN") },
		"unkeyed": func(s string) bool { return strings.Contains(s, "unkeyed") },
		"action": func(e Event) string {
			if e.Action != "" {
				return e.Action
			}
			return strings.Join(e.Argv, " ")
		},
	}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>agentbox audit report</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right}code{font-size:12px;word-break:break-all}
.ok{color:#3a7d44;font-weight:bold}.bad{color:#b8322a;font-weight:bold}.warn{color:#a86400;font-weight:bold}.none{color:#777}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;padding:.6em 1em;min-width:7em}.card b{display:block;font-size:1.6em}
</style></head><body>
<h1>agentbox audit report</h1>
<p>Log <code>{{.File}}</code>, {{.Events}} events from {{ts .First}} to {{ts .Last}} UTC. Generated {{ts .Generated}} UTC.</p>
<p id="integrity">Integrity: <span class="{{if broken .Integrity}}bad{{else if unkeyed .Integrity}}warn{{else}}ok{{end}}">{{.Integrity}}</span></p>
<div class="cards">
<div class="card" id="card-runs"><b>{{.Runs}}</b>runs</div>
<div class="card" id="card-agents"><b>{{len .ByAgent}}</b>agents</div>
<div class="card" id="card-allowed"><b>{{index .ByDecision "allow"}}</b>allowed</div>
<div class="card" id="card-asked"><b>{{asked .ByDecision}}</b>asked</div>
<div class="card" id="card-refused"><b>{{refused .ByDecision}}</b>refused</div>
<div class="card" id="card-violations"><b>{{len .Violations}}</b>violations</div>
</div>
<h2>Decisions over time</h2>
{{.Plot}}
<h2>Runs</h2>
{{if .RunList}}<table id="runs"><tr><th>run</th><th>agent</th><th>role</th><th>command</th><th>workspace</th><th>started (UTC)</th><th>events</th><th>refusals</th><th>exit</th></tr>
{{range .RunList}}<tr><td><code>{{.Run}}</code></td><td>{{.Agent}}</td><td>{{.Role}}</td><td><code>{{.Command}}</code></td><td>{{.Workspace}}</td><td>{{ts .Start}}</td><td class="n">{{.Events}}</td><td class="n">{{.Refusals}}</td><td>{{.Exit}}</td></tr>
{{end}}</table>{{else}}<p class="none">no runs</p>{{end}}
<h2>Agents</h2>
<table id="agents"><tr><th>agent</th><th>events</th><th>decisions</th></tr>
{{range .ByAgent}}<tr><td>{{.Agent}}</td><td class="n">{{.Events}}</td><td>{{$d := .Decisions}}{{range sorted .Decisions}}{{.}} {{index $d .}}; {{end}}</td></tr>
{{end}}</table>
<h2>Most refused actions</h2>
{{if .TopDenied}}<table id="top-denied"><tr><th>action</th><th>times</th><th>rules</th></tr>
{{range .TopDenied}}<tr><td><code>{{.Action}}</code></td><td class="n">{{.Count}}</td><td>{{range .Rules}}<code>{{.}}</code> {{end}}</td></tr>
{{end}}</table>{{else}}<p class="none">nothing was refused</p>{{end}}
<h2>Rules that refused most</h2>
{{if .TopRules}}<table id="top-rules"><tr><th>rule</th><th>refusals</th></tr>
{{range .TopRules}}<tr><td><code>{{.Rule}}</code></td><td class="n">{{.Count}}</td></tr>
{{end}}</table>{{else}}<p class="none">no rule refused anything</p>{{end}}
<h2>Approvals</h2>
{{if .Asks}}<table id="asks"><tr><th>time (UTC)</th><th>agent</th><th>action</th><th>outcome</th><th>approver</th></tr>
{{range .Asks}}<tr><td>{{ts .Time}}</td><td>{{.Agent}}</td><td><code>{{action .}}</code></td><td>{{.Decision}}</td><td>{{.Approver}}</td></tr>
{{end}}</table>
<p id="approvers">Answered by: {{$a := .Approvers}}{{range sorted .Approvers}}{{.}} ({{index $a .}}) {{else}}nobody{{end}}</p>{{else}}<p class="none">no approvals were asked for</p>{{end}}
<h2>Network hosts</h2>
{{if .Hosts}}<table id="hosts"><tr><th>agent</th><th>host</th><th>allowed</th><th>refused</th><th>bytes up</th><th>bytes down</th></tr>{{range .Hosts}}<tr><td>{{.Agent}}</td><td><code>{{.Host}}</code></td><td class="n">{{.Allowed}}</td><td class="n">{{.Refused}}</td><td class="n">{{.BytesUp}}</td><td class="n">{{.BytesDown}}</td></tr>{{end}}</table>
{{else}}<p class="none">no network decisions recorded (network is none, or TCP ports granted without the egress proxy)</p>{{end}}
<h2>Limits and violations</h2>
{{if or .Limits .Violations}}<table id="violations"><tr><th>time (UTC)</th><th>event</th><th>what</th></tr>
{{range .Limits}}<tr><td>{{ts .Time}}</td><td>limit {{.Limit}}</td><td>{{.Reason}}</td></tr>{{end}}
{{range .Violations}}<tr><td>{{ts .Time}}</td><td>violation</td><td>{{.Reason}}</td></tr>{{end}}
</table>{{else}}<p class="none">none</p>{{end}}
{{if .Malformed}}<h2>Malformed lines</h2><ul>{{range .Malformed}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<p class="none">Kernel refusals (Landlock, seccomp) reach the program itself and are not recorded here.</p>
</body></html>
`))
})
