package policy

import (
	"strconv"
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

// Format is a policy file in another agent tool's own format (Claude Code
// settings, Codex rules, Chorus, Codelia, Forge), decided by its own
// document's rules. The engine asks every Format after its native layers
// and combines the verdicts by the rules at the top of this file
// (applyFormats); it knows nothing else of them. Every format is a
// package of its own (internal/policyfmt/...) that reaches the loader
// through load.RegisterFormat.
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

// buildFormats turns the files in foreign formats into format layers:
// the files of each registered format into one layer, as its reader
// merges them (Claude Code settings merge as the tool merges them; Forge
// keeps each file's source priority), or each file on its own for a
// reader with a layer per file (Chorus). A file the sandbox could have
// written gives only its deny and ask rules, and its layer only its deny
// and ask verdicts (untrustedFormat).
func buildFormats(defs []*fileDef) []Format {
	var fs []Format // the layers, in order of their first file
	foreign := map[string][]FormatSource{}
	var at []int // positions in fs of the layers
	var readers []FormatReader
	var keys []string // readers' keys in foreign: the name, or name#file for a layer per file
	for i, fd := range defs {
		if fd.reader == nil {
			continue
		}
		key := fd.reader.Name()
		if pf, ok := fd.reader.(interface{ LayerPerFile() bool }); ok && pf.LayerPerFile() {
			key += "#" + strconv.Itoa(i)
		}
		if foreign[key] == nil {
			at = append(at, len(fs))
			readers = append(readers, fd.reader)
			keys = append(keys, key)
			fs = append(fs, nil)
		}
		src := FormatSource{Path: fd.path, Layer: fd.layer, Order: i, Untrusted: fd.untrusted, Rules: fd.foreign}
		if src.Untrusted {
			src.Rules = src.Rules.DenyAndAsk()
		}
		foreign[key] = append(foreign[key], src)
	}
	for i, r := range readers {
		srcs := foreign[keys[i]]
		f := r.Merge(srcs)
		for _, src := range srcs {
			if src.Untrusted {
				f = untrustedFormat{f}
				break
			}
		}
		fs[at[i]] = f
	}
	return fs
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
