package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/jsonstr"
)

// AppendJSON appends r as one JSON object in the shape `agentbox check --json` documents (README):
// {"decision","action","rule":{"id","layer","source"}|null,"reason",
// "floor" (only when set), "segments":[...] (only for compound input)}.
// It is hand-written for speed: `check --stdin` writes one per line.
func (r *Result) AppendJSON(b []byte) []byte {
	b = append(b, `{"decision":"`...)
	b = append(b, r.Decision.String()...)
	b = append(b, `","action":`...)
	b = jsonstr.Append(b, r.Action)
	b = append(b, `,"rule":`...)
	if r.Rule == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = jsonstr.Append(b, r.Rule.ID)
		b = append(b, `,"layer":"`...)
		b = append(b, r.Rule.Layer.String()...)
		b = append(b, `","source":`...)
		b = jsonstr.Append(b, r.Rule.Source)
		b = append(b, '}')
	}
	b = append(b, `,"reason":`...)
	b = jsonstr.Append(b, r.Reason)
	if r.Floor != "" {
		b = append(b, `,"floor":`...)
		b = jsonstr.Append(b, r.Floor)
	}
	if len(r.Segments) > 0 {
		b = append(b, `,"segments":[`...)
		for i := range r.Segments {
			if i > 0 {
				b = append(b, ',')
			}
			b = r.Segments[i].AppendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with AppendJSON's shape.
func (r Result) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSONString appends s as a JSON string literal, as encoding/json
// writes it without HTML escaping (invalid UTF-8 becomes U+FFFD).
func AppendJSONString(b []byte, s string) []byte { return jsonstr.Append(b, s) }

// ---- explanations ----

// RuleMatch is one rule that matched an action, for explanations.
type RuleMatch struct {
	Ref         RuleRef
	Decision    Decision
	Matcher     string // e.g. `command "git push"`
	Specificity int
	Description string
}

// Exact reports whether the rule matched the action exactly (an action:
// rule, or a pattern with no wildcard): it outranks every other.
func (m RuleMatch) Exact() bool { return m.Specificity >= specExact }

// SegmentExplanation is how one item of the input was decided.
type SegmentExplanation struct {
	Result  Result
	Matches []RuleMatch // every matching rule, winner first
	Text    string      // source text of the simple command, if known
	// Why says which rule won and by which step of the decision order
	// (the one the engine took: outranks); "" when no rule decided.
	Why string
}

// Explanation is a decision with everything that went into it.
type Explanation struct {
	Result   Result
	Segments []SegmentExplanation
}

// explain decides action like decide and records every rule that matched
// each part of it; a shell line's relative paths are taken in c.Cwd.
func (e *Engine) explain(action string, c ExecContext) Explanation {
	cwd := c.Cwd
	res := e.decide(action, nil)
	if line, ok := strings.CutPrefix(action, "tool:bash:"); ok && (cwd != "" || c.LookPath != nil) {
		res = e.decideShell(action, line, c, nil)
	}
	ex := Explanation{Result: res}
	tool, detail, err := ParseAction(action)
	if err != nil {
		return ex
	}
	var items []command.Item
	var whole *subject
	switch tool {
	case ToolBash:
		if cwd != "" {
			items, _ = parseShellIn(detail, cwd)
		} else {
			items, _ = parseShell(detail)
		}
		items = e.withOverwrites(items, c)
		whole = &subject{action: action, tool: ToolBash, detail: detail, cats: catExecute}
	case ToolExec, ToolGit:
		items, _ = splitCommandAction(tool, detail)
		ex.Segments = e.explainItemsAt(items, e.actionLocations(tool, detail, items), nil)
		return ex
	default:
		if isPathTool(tool) {
			detail = e.relPath(detail)
		}
		s := subject{action: action, tool: tool, detail: detail, cats: toolCategories(tool)}
		ex.Segments = append(ex.Segments, e.explainSubject(&s, command.FloorNone, "", ""))
		return ex
	}
	ex.Segments = e.explainItemsAt(items, e.shellLocations(items, c.LookPath), whole)
	return ex
}

func (e *Engine) explainItemsAt(items []command.Item, locs []string, whole *subject) []SegmentExplanation {
	var out []SegmentExplanation
	segs := make([]SegmentExplanation, len(items))
	res := make([]Result, len(items))
	valid := make([]bool, len(items))
	for i := range items {
		s, ok := e.itemSubject(&items[i])
		if !ok {
			continue
		}
		if i < len(locs) {
			s.setProgram(e, locs[i])
		}
		segs[i] = e.explainSubject(&s, items[i].Floor, items[i].FloorReason, items[i].Text)
		res[i] = e.itemResult(&items[i], segs[i].Result)
		valid[i] = true
	}
	// As Decide does: a deletion whose every path the role auto-approves.
	e.liftAutoApprovedDeletes(items, res)
	for i := range items {
		if valid[i] {
			segs[i].Result = res[i]
			out = append(out, segs[i])
		}
	}
	if whole != nil {
		se := e.explainSubject(whole, command.FloorNone, "", "")
		if len(se.Matches) > 0 {
			se.Text = "(whole command line)"
			out = append(out, se)
		}
	}
	return out
}

func (e *Engine) explainSubject(s *subject, floor command.Floor, why, text string) SegmentExplanation {
	var trace []*rule
	res := e.decideSubject(s, floor, why, &trace)
	sort.SliceStable(trace, func(i, j int) bool {
		a, b := trace[i], trace[j]
		if (a.dec == Deny) != (b.dec == Deny) {
			return a.dec == Deny
		}
		return beats(a, b)
	})
	se := SegmentExplanation{Result: res, Text: text, Why: whyWon(trace, res)}
	for _, r := range trace {
		se.Matches = append(se.Matches, RuleMatch{Ref: r.ref, Decision: r.dec, Matcher: r.text, Specificity: r.spec, Description: r.desc})
	}
	return se
}

// whyWon says why res's rule won over the other matching rules (trace,
// sorted denies first, then by beats): the step of outranks that settled
// it against the runner-up, naming both rules.
func whyWon(trace []*rule, res Result) string {
	var w *rule
	for _, r := range trace {
		if &r.ref == res.Rule {
			w = r
			break
		}
	}
	switch {
	case w == nil:
		return ""
	case strings.HasPrefix(res.Reason, selfEditWhy):
		return fmt.Sprintf("a write to a permission file is also decided as a self-edit, and the stricter decision stands: %s (%s)", w.ref.ID, w.dec)
	case w.dec == Deny:
		return "a matching deny rule always wins, from any layer"
	}
	var ru *rule // the runner-up: the best other allow or ask
	for _, r := range trace {
		if r != w && r.dec != Deny {
			ru = r
			break
		}
	}
	if ru == nil {
		return "the only matching allow/ask rule"
	}
	won, step := outranks(w, ru)
	if !won {
		// Not reachable: the engine kept w over ru by this same order.
		return fmt.Sprintf("%s won although %s ranks above it (a bug in agentbox's explanation)", w.ref.ID, ru.ref.ID)
	}
	name := func(r *rule) string { return fmt.Sprintf("%s (%s, layer %s)", r.ref.ID, r.dec, r.ref.Layer) }
	switch step {
	case bySpecificity:
		return fmt.Sprintf("the most specific matching allow/ask rule wins: %s, specificity %d, over %s, specificity %d", name(w), w.spec, name(ru), ru.spec)
	case byOwnerOverRole:
		return fmt.Sprintf("equally specific, and an allow and an ask disagree: the owner's layer (user, project, --policy) wins over a role's, so %s wins over %s", name(w), name(ru))
	case byStrictness:
		return fmt.Sprintf("equally specific rules disagree; the stricter one wins: %s over %s", name(w), name(ru))
	case byLayer:
		return fmt.Sprintf("equally specific and equally strict; the higher layer wins: %s over %s", name(w), name(ru))
	}
	return fmt.Sprintf("equally specific, equally strict, same layer; the later rule wins: %s over %s", name(w), name(ru))
}

// DecidingPart returns the part of a compound decision (a shell line's
// commands) that made it: the first segment as strict as the whole, or the
// whole when it has no segments. Refusals name it rather than the wrapper.
func (res Result) DecidingPart() Result {
	for _, s := range res.Segments {
		if s.Decision == res.Decision {
			return s
		}
	}
	return res
}

// ActionText renders an action as the agent would have typed it: the
// command of an exec, git or bash action, "write PATH" for a file write.
func ActionText(action string) string {
	rest, ok := strings.CutPrefix(action, "tool:")
	if !ok {
		return ""
	}
	tool, detail, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	switch tool {
	case ToolExec, ToolBash:
		return detail
	case ToolGit:
		return "git " + detail
	case ToolCreateFile, ToolStrReplace:
		return "writing " + detail
	case ToolDelete:
		return "deleting " + detail
	}
	return action
}
