package audit

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Report is the summary of a log a security reviewer reads first: what was
// decided how often, what was denied most and by which rule, which asks were
// answered by whom, and every limit hit and violation.
type Report struct {
	File       string         `json:"file,omitempty"`      // where the log was read from (set by the caller)
	Integrity  string         `json:"integrity,omitempty"` // outcome of Verify (set by the caller)
	Since      time.Time      `json:"since,omitzero"`      // the filter's lower bound, if any
	Events     int            `json:"events"`
	Malformed  []string       `json:"malformed,omitempty"` // "line N: why", one per bad line
	First      time.Time      `json:"first,omitzero"`
	Last       time.Time      `json:"last,omitzero"`
	Runs       int            `json:"runs"`
	ByDecision map[string]int `json:"by_decision"`
	ByEvent    map[string]int `json:"by_event"`
	ByAgent    []AgentCount   `json:"by_agent"`
	TopDenied  []DeniedAction `json:"top_denied"`
	Asks       []Event        `json:"asks"`
	Limits     []Event        `json:"limits"`
	Violations []Event        `json:"violations"`
	// TopRules are the rules that refused most (rule id -> refusals).
	TopRules []RuleCount `json:"top_rules"`
	// Approvers counts answered asks per approver.
	Approvers map[string]int `json:"approvers"`
	// Hosts is each agent's use of each network host through the egress
	// proxy (tool:net: actions), by agent then host.
	Hosts []HostUse `json:"hosts"`
	// RunList describes each run (at most MaxRuns, most recent last).
	RunList []RunSummary `json:"run_list"`
	// Timeline counts decisions per minute: unix minute -> allowed, asked,
	// refused (what a plot of decisions over time needs).
	Timeline map[int64]*[3]int `json:"-"`
}

// HostUse is one agent's connections to one host:port through the egress
// proxy: decisions, and the bytes of the allowed ones when they closed.
type HostUse struct {
	Agent     string `json:"agent"`
	Host      string `json:"host"` // host:port
	Allowed   int    `json:"allowed"`
	Refused   int    `json:"refused"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}

// RuleCount is one rule and how often it refused.
type RuleCount struct {
	Rule  string `json:"rule"`
	Count int    `json:"count"`
}

// RunSummary is one run in the report.
type RunSummary struct {
	Run      string    `json:"run"`
	Agent    string    `json:"agent"`
	Role     string    `json:"role"`
	Start    time.Time `json:"start"`
	Events   int       `json:"events"`
	Refusals int       `json:"refusals"`
	Exit     string    `json:"exit,omitempty"`
}

// MaxRuns bounds Report.RunList.
const MaxRuns = 500

// AgentCount is one agent's share of the log.
type AgentCount struct {
	Agent     string         `json:"agent"`
	Events    int            `json:"events"`
	Decisions map[string]int `json:"decisions"`
}

// DeniedAction is one denied action with how often and by which rules.
type DeniedAction struct {
	Action string   `json:"action"`
	Count  int      `json:"count"`
	Rules  []string `json:"rules"`
}

// MaxTopDenied bounds Report.TopDenied.
const MaxTopDenied = 15

// Summarize reads a log and builds its Report from the events filter
// selects. Malformed lines do not stop it; each is listed in Report.Malformed.
func Summarize(r io.Reader, filter Filter) (*Report, error) {
	rep := &Report{ByDecision: map[string]int{}, ByEvent: map[string]int{}, Since: filter.Since,
		Approvers: map[string]int{}, Timeline: map[int64]*[3]int{}}
	rules := map[string]int{}
	runList := map[string]*RunSummary{}
	var runOrder []string
	agents := map[string]*AgentCount{}
	hosts := map[[2]string]*HostUse{}
	denied := map[string]*DeniedAction{}
	runs := map[string]bool{}
	err := Scan(r, filter, func(e Event) error {
		rep.Events++
		if rep.First.IsZero() || e.Time.Before(rep.First) {
			rep.First = e.Time
		}
		if e.Time.After(rep.Last) {
			rep.Last = e.Time
		}
		if e.Run != "" {
			runs[e.Run] = true
			rs := runList[e.Run]
			if rs == nil && len(runList) < MaxRuns {
				rs = &RunSummary{Run: e.Run, Agent: e.Agent, Role: e.Role, Start: e.Time}
				runList[e.Run] = rs
				runOrder = append(runOrder, e.Run)
			}
			if rs != nil {
				rs.Events++
				if Refused(e.Decision) {
					rs.Refusals++
				}
				if e.Event == EventExit && e.Exit != nil {
					rs.Exit = fmt.Sprint(*e.Exit)
				}
			}
		}
		if e.Decision != "" {
			m := e.Time.Unix() / 60
			c := rep.Timeline[m]
			if c == nil {
				c = &[3]int{}
				rep.Timeline[m] = c
			}
			switch {
			case Refused(e.Decision):
				c[2]++
			case strings.HasPrefix(e.Decision, "ask"):
				c[1]++
			default:
				c[0]++
			}
			if Refused(e.Decision) && e.Rule != "" {
				rules[e.Rule]++
			}
			if e.Approver != "" {
				rep.Approvers[e.Approver]++
			}
		}
		if host, ok := strings.CutPrefix(e.Action, "tool:net:"); ok && e.Event == EventNet {
			k := [2]string{e.Agent, host}
			h := hosts[k]
			if h == nil {
				h = &HostUse{Agent: e.Agent, Host: host}
				hosts[k] = h
			}
			switch {
			case e.Decision == "":
				up, _ := strconv.ParseInt(e.Detail["bytes_up"], 10, 64)
				down, _ := strconv.ParseInt(e.Detail["bytes_down"], 10, 64)
				h.BytesUp += up
				h.BytesDown += down
			case Refused(e.Decision):
				h.Refused++
			default:
				h.Allowed++
			}
		}
		rep.ByEvent[e.Event]++
		if e.Decision != "" {
			rep.ByDecision[e.Decision]++
		}
		a := agents[e.Agent]
		if a == nil {
			a = &AgentCount{Agent: e.Agent, Decisions: map[string]int{}}
			agents[e.Agent] = a
		}
		a.Events++
		if e.Decision != "" {
			a.Decisions[e.Decision]++
		}
		if Refused(e.Decision) {
			key := e.Action
			if key == "" {
				key = strings.Join(e.Argv, " ")
			}
			d := denied[key]
			if d == nil {
				d = &DeniedAction{Action: key}
				denied[key] = d
			}
			d.Count++
			rule := e.Rule
			if rule == "" {
				rule = e.Decision
			}
			if !slices.Contains(d.Rules, rule) {
				d.Rules = append(d.Rules, rule)
			}
		}
		if strings.HasPrefix(e.Decision, "ask") || e.Event == EventAsk {
			rep.Asks = append(rep.Asks, e)
		}
		switch e.Event {
		case EventLimit:
			rep.Limits = append(rep.Limits, e)
		case EventViolation:
			rep.Violations = append(rep.Violations, e)
		}
		return nil
	}, func(le *LineError) error {
		rep.Malformed = append(rep.Malformed, le.Error())
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Runs = len(runs)
	for _, r := range runOrder {
		rep.RunList = append(rep.RunList, *runList[r])
	}
	for r, n := range rules {
		rep.TopRules = append(rep.TopRules, RuleCount{Rule: r, Count: n})
	}
	slices.SortFunc(rep.TopRules, func(x, y RuleCount) int { return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Rule, y.Rule)) })
	if len(rep.TopRules) > MaxTopDenied {
		rep.TopRules = rep.TopRules[:MaxTopDenied]
	}
	for _, a := range agents {
		rep.ByAgent = append(rep.ByAgent, *a)
	}
	for _, h := range hosts {
		rep.Hosts = append(rep.Hosts, *h)
	}
	slices.SortFunc(rep.Hosts, func(x, y HostUse) int { return cmp.Or(cmp.Compare(x.Agent, y.Agent), cmp.Compare(x.Host, y.Host)) })
	slices.SortFunc(rep.ByAgent, func(x, y AgentCount) int {
		return cmp.Or(cmp.Compare(y.Events, x.Events), cmp.Compare(x.Agent, y.Agent))
	})
	for _, d := range denied {
		slices.Sort(d.Rules)
		rep.TopDenied = append(rep.TopDenied, *d)
	}
	slices.SortFunc(rep.TopDenied, func(x, y DeniedAction) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Action, y.Action))
	})
	if len(rep.TopDenied) > MaxTopDenied {
		rep.TopDenied = rep.TopDenied[:MaxTopDenied]
	}
	return rep, nil
}

// WriteText prints the report for a terminal. Every string that came from
// the log is passed through Printable, since actions and argv are chosen by
// sandboxed code and must not reach the reviewer's terminal as escape codes.
func (rep *Report) WriteText(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	if rep.File != "" {
		p("log\t%s\n", Printable(rep.File))
	}
	if rep.Integrity != "" {
		p("integrity\t%s\n", Printable(rep.Integrity))
	}
	if !rep.Since.IsZero() {
		p("since\t%s\n", fmtTime(rep.Since))
	}
	p("events\t%d\n", rep.Events)
	if rep.Events > 0 {
		p("period\t%s .. %s\n", fmtTime(rep.First), fmtTime(rep.Last))
	}
	p("runs\t%d\n", rep.Runs)
	p("malformed lines\t%d\n", len(rep.Malformed))
	for _, m := range rep.Malformed {
		p("  %s\n", Printable(m))
	}
	section := func(title string, n int) {
		p("\n%s", title)
		if n == 0 {
			p(": none\n")
		} else {
			p(":\n")
		}
	}
	section("decisions", len(rep.ByDecision))
	for _, k := range sortedKeys(rep.ByDecision) {
		p("  %s\t%d\n", Printable(k), rep.ByDecision[k])
	}
	section("events by kind", len(rep.ByEvent))
	for _, k := range sortedKeys(rep.ByEvent) {
		p("  %s\t%d\n", Printable(k), rep.ByEvent[k])
	}
	section("agents", len(rep.ByAgent))
	for _, a := range rep.ByAgent {
		var parts []string
		for _, k := range sortedKeys(a.Decisions) {
			parts = append(parts, fmt.Sprintf("%s %d", k, a.Decisions[k]))
		}
		p("  %s\t%d events\t%s\n", Printable(orDash(a.Agent)), a.Events, Printable(strings.Join(parts, ", ")))
	}
	section("top denied actions", len(rep.TopDenied))
	for _, d := range rep.TopDenied {
		p("  %d\t%s\t%s\n", d.Count, Printable(clip(d.Action, 100)), Printable(strings.Join(d.Rules, ", ")))
	}
	section("asks", len(rep.Asks))
	for _, e := range rep.Asks {
		who := e.Approver
		if who == "" {
			who = "-"
		}
		p("  %s\t%s\t%s\tapprover %s\t%s\n", fmtTime(e.Time), Printable(orDash(e.Agent)), Printable(orDash(e.Decision)), Printable(who), Printable(clip(e.Action, 100)))
	}
	section("network hosts (egress proxy)", len(rep.Hosts))
	for _, h := range rep.Hosts {
		p("  %s\t%s\tallowed %d\trefused %d\tup %d B\tdown %d B\n", Printable(orDash(h.Agent)), Printable(h.Host), h.Allowed, h.Refused, h.BytesUp, h.BytesDown)
	}
	section("limit hits", len(rep.Limits))
	for _, e := range rep.Limits {
		p("  %s\t%s\t%s\t%s\n", fmtTime(e.Time), Printable(orDash(e.Agent)), Printable(orDash(e.Limit)), Printable(e.Reason))
	}
	section("violations", len(rep.Violations))
	for _, e := range rep.Violations {
		p("  %s\t%s\t%s\t%s\n", fmtTime(e.Time), Printable(orDash(e.Agent)), Printable(orDash(e.Action)), Printable(e.Reason))
	}
	return tw.Flush()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	return keys
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Printable returns s with control characters, invalid UTF-8 and other
// non-printable runes replaced by Go escapes (\x1b, \n, \u202e...), so text
// chosen by sandboxed code cannot move the cursor, recolour or rewrite a
// reviewer's terminal. Tabs are escaped too, so tables stay aligned.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}
