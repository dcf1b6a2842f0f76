package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Finding is a rule that loads but can never decide anything: shadowed by
// a deny, or by a rule that wins over it for every action it matches
// (`agentbox policy validate`). Only cases agentbox can decide exactly are
// reported: identical matchers, command prefixes, literal-prefix regexes
// and globs ("tool:bash:.*" covers "tool:bash:ls.*"), whole-tool rules.
type Finding struct {
	Source  string `json:"source"` // file:line of the rule that never decides
	Rule    string `json:"rule"`   // its id
	Message string `json:"message"`
	// Partial: only part of the rule never matches (one of its tool:
	// names is unknown; it still decides for the others).
	Partial bool `json:"partial,omitempty"`
}

func (f Finding) String() string {
	if f.Partial {
		return f.Source + ": rule " + f.Rule + " in part never matches: " + f.Message
	}
	return f.Source + ": rule " + f.Rule + " can never decide: " + f.Message
}

// Lint loads paths as --policy layers (reporting load errors like
// ValidateFiles) and returns the rules in them that can never decide.
func Lint(paths ...string) ([]Finding, []error) {
	_, defs, err := loadLayers(LoadOptions{NoUserFile: true, Files: paths})
	if err != nil {
		var es Errors
		if errors.As(err, &es) {
			return nil, es
		}
		return nil, []error{err}
	}
	var out []Finding
	var native []*rule
	for _, fd := range defs {
		if fd.foreign != nil {
			out = append(out, fd.foreign.Lint()...)
			continue
		}
		native = append(native, fd.rules...)
		out = append(out, lintTools(fd.rules)...)
		for _, rd := range fd.roles {
			out = append(out, lintTools(rd.rules)...)
			out = append(out, lintNative(rd.rules)...)
		}
	}
	out = append(out, lintNative(native)...)
	return out, nil
}

// actionTools are the tools of the actions agentbox builds (action.go,
// docs/policy.md "Actions") and its hook passes on (web_fetch,
// web_search); aliasTools the names a rule's tool: accepts for them
// (mapToolName); otherTools those of other agents agentbox knows
// (Codelia's system tools, Forge's glob and grep).
var (
	actionTools = []string{ToolExec, ToolGit, ToolBash, ToolView, ToolCreateFile, ToolStrReplace, ToolDelete, ToolOverwrite,
		ToolSelfEdit, ToolNet, ToolHTTP, "web_fetch", "web_search"}
	aliasTools = []string{"shell", "command", "commands", "read", "write", "edit", "files", "file", "path"}
	otherTools = []string{"grep", "glob", "glob_search", "fetch", "todo_read", "todo_write", "tool_output_cache",
		"tool_output_cache_grep", "agents_resolve", "skill_search", "skill_load", "done"}
)

// hookMapped are Claude Code's tools the hook decides as other actions
// (internal/judge DecideTool): a rule naming them never matches.
var hookMapped = map[string]string{
	"Bash": ToolBash, "Read": ToolView, "NotebookRead": ToolView, "LS": ToolView, "Grep": ToolView, "Glob": ToolView,
	"Write": ToolCreateFile, "Edit": ToolStrReplace, "MultiEdit": ToolStrReplace, "NotebookEdit": ToolStrReplace,
	"WebFetch": "web_fetch", "WebSearch": "web_search",
}

// unknownTool says why a rule's tool: name never names an action, or ""
// when it may: a tool agentbox knows, or an agent's own tool name, which
// the hook passes on as written (tool:<Name>:<input>): Claude Code's
// TodoWrite, Task..., MCP tools (mcp__server__tool) — a name with an
// upper-case letter or "__". A lower-case name agentbox does not know is
// reported, with the nearest known name when one is close (a typo:
// "delte").
func unknownTool(t string) string {
	if as, ok := hookMapped[t]; ok {
		return fmt.Sprintf("tool %q is Claude Code's name: the hook decides its calls as tool:%s actions, so no action matches it (did you mean %q?)", t, as, as)
	}
	known := func(n string) bool {
		return slices.Contains(actionTools, n) || slices.Contains(aliasTools, n) || slices.Contains(otherTools, n)
	}
	if known(t) {
		return ""
	}
	if l := strings.ToLower(t); l != t && known(l) {
		return fmt.Sprintf("tool %q: tool names are case-sensitive and no action names this one (did you mean %q?)", t, l)
	}
	if strings.ToLower(t) != t || strings.Contains(t, "__") {
		return "" // an agent's own tool, passed on as written
	}
	best, bestD := "", len(t)
	for _, set := range [][]string{actionTools, aliasTools, otherTools} {
		for _, n := range set {
			if d := editDistance(t, n); d < bestD {
				best, bestD = n, d
			}
		}
	}
	if best != "" && bestD <= max(1, len(t)/3) {
		return fmt.Sprintf("tool %q names no action agentbox decides, so no action matches it (did you mean %q?)", t, best)
	}
	return fmt.Sprintf("tool %q names no action agentbox decides, so no action matches it (its tools: %s; an agent's own tool is named as the agent spells it, e.g. TodoWrite or mcp__server__tool)", t, strings.Join(actionTools, ", "))
}

// editDistance is the optimal-string-alignment distance between a and b
// (bytes): insertions, deletions, substitutions and transpositions of
// adjacent bytes ("wirte" is 1 from "write"), each costing one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// lintTools reports each tool: name of rules that names no action
// (unknownTool). A rule all of whose names are unknown never matches; one
// with some known names still decides for them (Finding.Partial).
func lintTools(rules []*rule) []Finding {
	var out []Finding
	for _, r := range rules {
		var fs []Finding
		for _, t := range r.tools {
			if msg := unknownTool(t); msg != "" {
				fs = append(fs, finding(r, "%s", msg))
			}
		}
		for i := range fs {
			fs[i].Partial = len(fs) < len(r.tools)
		}
		out = append(out, fs...)
	}
	return out
}

// LintRole is Lint, and also reports the rules of paths that can never
// take effect under role (a built-in one or one the files define): an
// allow or ask whose every action a deny of the role refuses (a deny is
// absolute, whatever the layer).
func LintRole(role string, paths ...string) ([]Finding, []error) {
	out, errs := Lint(paths...)
	if len(errs) > 0 || role == "" {
		return out, errs
	}
	regs, defs, err := loadLayers(LoadOptions{NoUserFile: true, Files: paths})
	if err != nil {
		return out, []error{err}
	}
	rd, err := resolveRole(regs, role)
	if err != nil {
		return out, []error{err}
	}
	roleRules := append(append([]*rule(nil), rd.rules...), roleDerivedRules(rd)...)
	for _, fd := range defs {
		if fd.format != "agentbox" && fd.format != "" {
			continue
		}
		for _, a := range fd.rules {
			if a.dec == Deny {
				continue
			}
			for _, d := range roleRules {
				if d.dec == Deny && covers(d, a) {
					out = append(out, finding(a, "under role %s every action it matches is denied by %s (%s): a deny is absolute", role, d.ref.ID, d.text))
					break
				}
			}
		}
	}
	return out, nil
}

func finding(r *rule, msg string, args ...any) Finding {
	return Finding{Source: r.ref.Source, Rule: r.ref.ID, Message: fmt.Sprintf(msg, args...)}
}

// covers reports whether every action a matches, d matches too (decidable
// cases only; false when unsure).
func covers(d, a *rule) bool {
	if !slices.Equal(d.tools, a.tools) && !subsetTools(a.tools, d.tools) {
		return false
	}
	if d.text == a.text && d.cats == a.cats && d.kind == a.kind && d.prog == nil && a.prog == nil && d.path == nil && a.path == nil {
		return true
	}
	// d: only a tool restriction (a whole tool)
	if d.act == nil && d.words == nil && d.cmdGlob == nil && d.path == nil && d.prog == nil && d.kind == 0 && d.host == nil &&
		d.exact == "" && d.cats == 0 && d.toolRe == nil && d.detRe == nil && d.tools != nil {
		return true
	}
	// d: a command prefix (command: git) and a by command words or glob
	if len(d.words) > 0 && d.act == nil && d.cmdGlob == nil && d.prog == nil && d.path == nil {
		prefix := strings.Join(d.words, " ")
		switch {
		case len(a.words) >= len(d.words) && slices.Equal(a.words[:len(d.words)], d.words):
			return true
		case a.cmdGlob != nil && (a.cmdGlob.prefix == prefix || strings.HasPrefix(a.cmdGlob.prefix, prefix+" ")):
			return true
		}
	}
	// d: a regex or glob "LITERAL.*" (anything after a literal prefix)
	if d.act != nil && d.words == nil && d.cmdGlob == nil && d.path == nil && d.prog == nil && d.kind == 0 {
		lit, any := prefixAnything(d.act)
		if any {
			switch {
			case a.act != nil && strings.HasPrefix(a.act.prefix, lit):
				return true
			case a.exact != "" && strings.HasPrefix(a.exact, lit):
				return true
			}
		}
	}
	return false
}

// prefixAnything reports whether an action matcher is a literal followed
// by "match anything" (regex `lit.*`, glob `lit*`), and the literal.
func prefixAnything(m *actMatch) (string, bool) {
	switch {
	case m.re != nil && m.re.neg == "":
		src := m.re.src
		for _, tail := range []string{".*", "(.*)", "(?s:.*)"} {
			if strings.HasSuffix(src, tail) && literalPrefixOnly(strings.TrimSuffix(src, tail)) {
				return m.re.prefix, true
			}
		}
	case m.g != nil:
		if strings.HasSuffix(m.g.src, "*") && !strings.ContainsAny(strings.TrimSuffix(m.g.src, "*"), "*?\\") {
			return m.g.prefix, true
		}
	}
	return "", false
}

// literalPrefixOnly: a regex source with no metacharacters but escaped ones.
func literalPrefixOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$':
			return false
		}
	}
	return true
}

// subsetTools: every tool of a is in b (nil b: any tool).
func subsetTools(a, b []string) bool {
	if b == nil {
		return true
	}
	if a == nil {
		return false
	}
	for _, t := range a {
		if !slices.Contains(b, t) {
			return false
		}
	}
	return true
}

// lintNative: agentbox order — a deny anywhere wins; otherwise the most
// specific rule, the stricter at equal specificity, the later at equal
// decision.
func lintNative(rules []*rule) []Finding {
	var out []Finding
	for _, a := range rules {
		if a.dec == Deny {
			continue
		}
		for _, d := range rules {
			if d == a {
				continue
			}
			if d.dec == Deny && covers(d, a) {
				out = append(out, finding(a, "every action it matches is denied by %s (%s) at %s", d.ref.ID, d.text, d.ref.Source))
				break
			}
			if d.text == a.text && slices.Equal(d.tools, a.tools) && covers(d, a) && (d.dec > a.dec || d.dec == a.dec && d.order > a.order) {
				out = append(out, finding(a, "%s (%s) at %s matches the same actions and wins (stricter, or later at the same decision)", d.ref.ID, d.text, d.ref.Source))
				break
			}
		}
	}
	return out
}
