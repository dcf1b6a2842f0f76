package policy

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/programs"
)

// Policy files in another tool's format (Chorus profiles, Codelia
// permissions, Forge rule files, Claude Code settings, Codex execpolicy
// rules) are decided the way their own documents say, each as one layer
// of its own, and combined with agentbox's native layers so (docs/policy.md,
// "How formats combine"):
//
//  1. A deny rule from any layer denies — native or format, whatever the
//     layers above say (a format's *default*, such as Chorus's implicit
//     deny, is not a deny rule).
//  2. Otherwise the highest layer with a verdict decides: a format layer
//     overrides the native layers below it (the role) and is overridden by
//     native rules of higher layers (later --policy files, session answers).
//  3. A format layer's default (Chorus: unmatched is denied; Codelia:
//     confirm; Forge: the file's default) applies to the agent's own tool
//     calls — an action, a shell line (Claude Code's Bash, `sh -c LINE`) —
//     where the format's tools decide; a program started deeper down (a
//     compiler a build runs) gets only the format's matching rules, and the
//     native layers decide the rest.
//  4. agentbox's own floors (unparseable or dynamic input, inline code)
//     stay a minimum: a pattern over a command's text cannot vouch for code
//     agentbox cannot read.

// formatLayer is one Chorus file as a layer (each on its own).
type formatLayer struct {
	format string // chorus
	path   string
	layer  Layer
	order  int // position among all policy files
	rules  []*rule
	def    Decision
	defWhy string
	// why is each rule's reason text as a verdict of this layer, and
	// defReason the default's (built once: deciding allocates nothing).
	why       map[*rule]string
	defReason string
	// untrusted: only the layer's deny and ask rules count, and it has no
	// default (a file the sandbox could have written; see LoadOptions).
	untrusted bool
}

// Format is a policy file in another agent tool's own format (Claude Code
// settings, Codex rules, Chorus, Codelia, Forge), decided by its own
// document's rules. The engine asks every Format after its native layers
// and combines the verdicts by the rules at the top of this file
// (applyFormats); it knows nothing else of them. formatLayer implements it
// for Chorus; the Claude Code, Codex, Codelia and Forge formats are
// packages of their own (internal/policyfmt/...) that reach the loader
// through RegisterFormat.
type Format interface {
	// Where is the layer the file was loaded at and its position among
	// all policy files (a later file wins a tie at the same layer).
	Where() (Layer, int)
	// Decide answers q by the document: by a rule (Rule set), by its
	// default (Rule nil), or not at all (None: it leaves q to the others).
	Decide(q FormatQuery) FormatVerdict
	// Info describes the file and its rules (policy show).
	Info() FormatInfo
}

// FormatQuery is what a Format decides: an action, or a command line (a
// shell line, or one program's argv joined), and whether it is one of the
// agent's own tool calls (rule 3 above) or a connection.
type FormatQuery struct {
	Action   string   // the action as given (tool:view:x, tool:bash:LINE, tool:exec:ARGV)
	Line     string   // command text for command queries ("" otherwise)
	Argv     []string // a program start's argv (nil for shell lines)
	ToolCall bool
	Net      bool // a connection through the egress proxy (tool:net)
}

// FormatVerdict is a Format's answer to one query.
type FormatVerdict struct {
	Decision Decision
	Rule     *RuleRef // the rule that decided; nil for the format's default
	Reason   string
	None     bool // the format leaves the query to the other layers
}

// formatVerdict is a format layer's answer: by a rule (ref set), by its
// default (ref nil), or none at all (the layer leaves it to the others).
type formatVerdict struct {
	dec    Decision
	rule   *rule
	ref    *RuleRef
	reason string
	fl     *formatLayer
	none   bool
}

// formatName is how results and explanations name a format.
var formatName = map[string]string{
	"chorus": "Chorus profile", "codelia": "Codelia permissions", "forge": "Forge rules",
	"claude": "Claude Code permissions", "codex": "Codex execpolicy rules",
}

// buildFormats turns the files in foreign formats into format layers:
// every Chorus file on its own; the files of each registered format into
// one layer, as its reader merges them (Claude Code settings merge as the
// tool merges them; Forge keeps each file's source priority).
func buildFormats(e *Engine, defs []*fileDef) []Format {
	var out []*formatLayer
	var fs []Format // out and the registered formats' layers, in order of their first file
	foreign := map[string][]FormatSource{}
	var foreignAt []int // positions in fs of the registered formats' layers
	var readers []FormatReader
	for i, fd := range defs {
		if fd.format == "agentbox" || fd.format == "" {
			continue
		}
		if fd.reader != nil {
			name := fd.reader.Name()
			if foreign[name] == nil {
				foreignAt = append(foreignAt, len(fs))
				readers = append(readers, fd.reader)
				fs = append(fs, nil)
			}
			src := FormatSource{Path: fd.path, Layer: fd.layer, Order: i, Untrusted: fd.untrusted, Rules: fd.foreign}
			if src.Untrusted {
				src.Rules = src.Rules.DenyAndAsk()
			}
			foreign[name] = append(foreign[name], src)
			continue
		}
		fl := &formatLayer{format: "chorus", def: Deny, path: fd.path, layer: fd.layer, order: i}
		out = append(out, fl)
		fs = append(fs, fl)
		rules := fd.rules
		if fd.preset != "" {
			rules = chorusPresetRules(fd.preset)
		}
		for _, r := range rules {
			if fd.untrusted && r.dec == Allow {
				continue
			}
			fl.rules = append(fl.rules, r)
		}
		fl.untrusted = fd.untrusted
	}
	for i, r := range readers {
		srcs := foreign[r.Name()]
		f := r.Merge(srcs)
		for _, src := range srcs {
			if src.Untrusted {
				f = untrustedFormat{f}
				break
			}
		}
		fs[foreignAt[i]] = f
	}
	for _, fl := range out {
		fl.defWhy = "no allow or ask pattern matches: denied (Chorus's implicit deny)"
		fl.explain()
	}
	return fs
}

// explain builds the layer's reason texts.
func (fl *formatLayer) explain() {
	name := formatName[fl.format] + " " + fl.path
	fl.defReason = name + ": " + fl.defWhy
	fl.why = make(map[*rule]string, len(fl.rules))
	for _, r := range fl.rules {
		fl.why[r] = fmt.Sprintf("%s: %s (%s list; Chorus tries allow, then ask, then denies)", name, r.reason, r.dec)
	}
}

// chorusPresetRules are the allow/ask patterns of a Chorus preset (open,
// standard, locked: the built-in roles of those names), for an agent.json
// with "permissions": "standard".
func chorusPresetRules(name string) []*rule {
	roles, _, _ := builtinRoles()
	rd := roles[name]
	if rd == nil {
		return nil
	}
	var out []*rule
	for _, r := range rd.rules {
		if r.act != nil && r.act.re != nil {
			out = append(out, r)
		}
	}
	return out
}

// chorusPresets are the preset names an agent.json may give as
// "permissions".
var chorusPresets = []string{"open", "standard", "locked"}

// decide answers q by the layer's own document.
func (fl *formatLayer) decide(q *FormatQuery) formatVerdict {
	v := fl.decide1(q)
	if v.rule != nil {
		v.ref = &v.rule.ref
	}
	if fl.untrusted && (v.ref == nil || v.dec == Allow) {
		v.none = true
	}
	return v
}

func (fl *formatLayer) decide1(q *FormatQuery) formatVerdict {
	if q.Line == "" {
		if _, _, err := ParseAction(q.Action); err != nil {
			return formatVerdict{dec: Deny, reason: "malformed action", fl: fl}
		}
	}
	// re.fullmatch on the one action string Chorus builds: a shell
	// command is tool:bash:<command> (a program start's argv joined), any
	// other action as given. Allow patterns first, then ask, then the
	// implicit deny; a deny list (agentbox's extension) first.
	act := q.Action
	if q.Line != "" && (q.Argv == nil || !q.ToolCall) {
		act = FormatAction(ToolBash, q.Line)
	}
	for _, d := range []Decision{Deny, Allow, Ask} {
		for _, r := range fl.rules {
			if r.dec == d && r.act != nil && r.act.matchView("", act) {
				return formatVerdict{dec: d, rule: r, reason: fl.why[r], fl: fl}
			}
		}
	}
	return formatVerdict{dec: fl.def, reason: fl.defReason, fl: fl}
}

// shellLineOf returns the line a shell program start runs (`bash -c LINE`,
// `sh -lc LINE`), if argv is one.
func shellLineOf(argv []string) (string, bool) {
	if len(argv) < 3 || !programs.Is(baseName(argv[0]), programs.Shell) {
		return "", false
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			return "", false
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			if i+1 < len(argv) {
				return argv[i+1], true
			}
			return "", false
		}
	}
	return "", false
}

// applyFormats combines the native result n with the format layers'
// verdicts on q (see the rules at the top of this file).
func (e *Engine) applyFormats(n Result, q FormatQuery) Result {
	if len(e.formats) == 0 {
		return n
	}
	if n.Decision == Deny && (n.Rule != nil || n.Floor != "") {
		return n
	}
	var top FormatVerdict
	topLayer, topOrder, found := Layer(0), 0, false
	for _, f := range e.formats {
		v := f.Decide(q)
		if v.None || v.Rule == nil && !q.ToolCall {
			continue
		}
		if v.Decision == Deny && v.Rule != nil {
			return formatResult(n, v)
		}
		if l, o := f.Where(); !found || l > topLayer || l == topLayer && o > topOrder {
			top, topLayer, topOrder, found = v, l, o, true
		}
	}
	if !found || n.Rule != nil && n.Rule.Layer > topLayer {
		return n
	}
	res := formatResult(n, top)
	if n.Floor != "" && n.Decision > res.Decision {
		return n
	}
	return res
}

// formatResult is the Result of a format verdict, keeping the native
// result's segments for explanations.
func formatResult(n Result, v FormatVerdict) Result {
	// rules are immutable once loaded: the verdict's RuleRef is shared
	return Result{Decision: v.Decision, Action: n.Action, Reason: v.Reason, Segments: n.Segments, Rule: v.Rule}
}

// Where implements Format.
func (fl *formatLayer) Where() (Layer, int) { return fl.layer, fl.order }

// Decide implements Format: the layer's own verdict; none of these
// formats names hosts, so none answers a connection.
func (fl *formatLayer) Decide(q FormatQuery) FormatVerdict {
	if q.Net {
		return FormatVerdict{None: true}
	}
	v := fl.decide(&q)
	return FormatVerdict{Decision: v.dec, Rule: v.ref, Reason: v.reason, None: v.none}
}

// Info implements Format.
func (fl *formatLayer) Info() FormatInfo {
	fi := FormatInfo{Format: fl.format, File: fl.path, Layer: fl.layer.String(), Default: fl.def.String(), Order: formatOrder[fl.format]}
	for _, r := range fl.rules {
		fi.Rules = append(fi.Rules, RuleInfo{ID: r.ref.ID, Layer: r.ref.Layer.String(), Source: r.ref.Source,
			Decision: r.dec.String(), Matcher: r.text, Description: r.desc, Specificity: r.spec})
	}
	return fi
}
