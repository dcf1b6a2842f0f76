// Package policylint finds the rules of policy files that load but can
// never decide anything (`agentbox policy validate`): shadowed by a deny,
// by a rule that wins over them for every action they match, or naming a
// tool no action carries; and, against a role, the allows and asks a deny
// of the role refuses. Only cases agentbox can decide exactly are
// reported (identical matchers, command prefixes, literal-prefix regexes
// and globs, whole-tool rules).
//
// It owns the linting of agentbox's own rules; the foreign formats lint
// theirs (policy.FormatRules.Lint). It reads the files with the loader
// (load.Files) and their rules through the core's exported view (each
// policy.Document's rule sets, Layers.RoleRules; policy.RuleSet: Covers,
// CoversIn, Tools, Info) and imports only those two (policy,
// policy/load), never a format or presentation (arch_test.go).
package policylint

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// Lint loads paths as --policy layers (reporting load errors like
// load.Files) and returns the rules in them that can never
// decide.
func Lint(paths ...string) ([]policy.Finding, []error) { return LintRole("", paths...) }

// LintRole is Lint, and also reports the rules of paths that can never
// take effect under role (a built-in one or one the files define): an
// allow or ask whose every action a deny of the role refuses (a deny is
// absolute, whatever the layer).
func LintRole(role string, paths ...string) ([]policy.Finding, []error) {
	files, roleRules, errs := lintFiles(role, paths...)
	if files == nil && len(errs) > 0 {
		return nil, errs
	}
	var out []policy.Finding
	var native []at // every native file's rules, in load order
	for fi, f := range files {
		if f.Foreign != nil {
			out = append(out, f.Foreign.Lint()...)
			continue
		}
		for i := 0; i < f.Rules.Len(); i++ {
			native = append(native, at{f.Rules, fi, i})
		}
		out = append(out, lintTools(f.Rules)...)
		for _, rs := range f.Roles {
			out = append(out, lintTools(rs)...)
			var rules []at
			for i := 0; i < rs.Len(); i++ {
				rules = append(rules, at{rs, 0, i})
			}
			out = append(out, lintNative(rules)...)
		}
	}
	out = append(out, lintNative(native)...)
	if len(errs) > 0 || roleRules == nil {
		return out, errs
	}
	for _, f := range files {
		if f.Foreign != nil {
			continue
		}
		for a := 0; a < f.Rules.Len(); a++ {
			if f.Rules.Decision(a) == policy.Deny {
				continue
			}
			for d := 0; d < roleRules.Len(); d++ {
				if roleRules.Decision(d) == policy.Deny && roleRules.CoversIn(d, f.Rules, a) {
					di := roleRules.Info(d)
					out = append(out, finding(f.Rules, a, "under role %s every action it matches is denied by %s (%s): a deny is absolute", role, di.ID, di.Matcher))
					break
				}
			}
		}
	}
	return out, nil
}

// at is one rule: its set, its file's position, its index in the set
// (file, then index, is load order).
type at struct {
	rs      *policy.RuleSet
	file, i int
}

// after reports whether a comes later in load order than b.
func (a at) after(b at) bool { return a.file > b.file || a.file == b.file && a.i > b.i }

func finding(rs *policy.RuleSet, i int, msg string, args ...any) policy.Finding {
	ref := rs.Ref(i)
	return policy.Finding{Source: ref.Source, Rule: ref.ID, Message: fmt.Sprintf(msg, args...)}
}

// lintNative: agentbox order — a deny anywhere wins; otherwise the most
// specific rule, the stricter at equal specificity, the later at equal
// decision.
func lintNative(rules []at) []policy.Finding {
	var out []policy.Finding
	for _, a := range rules {
		adec := a.rs.Decision(a.i)
		if adec == policy.Deny {
			continue
		}
		ai := a.rs.Info(a.i)
		for _, d := range rules {
			if d == a {
				continue
			}
			ddec, covers := d.rs.Decision(d.i), d.rs.CoversIn(d.i, a.rs, a.i)
			di := d.rs.Info(d.i)
			if ddec == policy.Deny && covers {
				out = append(out, finding(a.rs, a.i, "every action it matches is denied by %s (%s) at %s", di.ID, di.Matcher, di.Source))
				break
			}
			if di.Matcher == ai.Matcher && slices.Equal(d.rs.Tools(d.i), a.rs.Tools(a.i)) && covers && (ddec > adec || ddec == adec && d.after(a)) {
				out = append(out, finding(a.rs, a.i, "%s (%s) at %s matches the same actions and wins (stricter, or later at the same decision)", di.ID, di.Matcher, di.Source))
				break
			}
		}
	}
	return out
}

// lintTools reports each tool: name of rules that names no action
// (unknownTool). A rule all of whose names are unknown never matches; one
// with some known names still decides for them (Finding.Partial).
func lintTools(rs *policy.RuleSet) []policy.Finding {
	var out []policy.Finding
	for i := 0; i < rs.Len(); i++ {
		var fs []policy.Finding
		tools := rs.Tools(i)
		for _, t := range tools {
			if msg := unknownTool(t); msg != "" {
				fs = append(fs, finding(rs, i, "%s", msg))
			}
		}
		for j := range fs {
			fs[j].Partial = len(fs) < len(tools)
		}
		out = append(out, fs...)
	}
	return out
}

// actionTools are the tools of the actions agentbox builds (policy/action.go,
// docs/policy.md "Actions") and its hook passes on (web_fetch,
// web_search); aliasTools the names a rule's tool: accepts for them
// (mapToolName); otherTools those of other agents agentbox knows
// (Codelia's system tools, Forge's glob and grep).
var (
	actionTools = []string{policy.ToolExec, policy.ToolGit, policy.ToolBash, policy.ToolView, policy.ToolCreateFile, policy.ToolStrReplace,
		policy.ToolDelete, policy.ToolOverwrite, policy.ToolSelfEdit, policy.ToolNet, policy.ToolHTTP, "web_fetch", "web_search"}
	aliasTools = []string{"shell", "command", "commands", "read", "write", "edit", "files", "file", "path"}
	otherTools = []string{"grep", "glob", "glob_search", "fetch", "todo_read", "todo_write", "tool_output_cache",
		"tool_output_cache_grep", "agents_resolve", "skill_search", "skill_load", "done"}
)

// hookMapped are Claude Code's tools the hook decides as other actions
// (internal/judge DecideTool): a rule naming them never matches.
var hookMapped = map[string]string{
	"Bash": policy.ToolBash, "Read": policy.ToolView, "NotebookRead": policy.ToolView, "LS": policy.ToolView, "Grep": policy.ToolView, "Glob": policy.ToolView,
	"Write": policy.ToolCreateFile, "Edit": policy.ToolStrReplace, "MultiEdit": policy.ToolStrReplace, "NotebookEdit": policy.ToolStrReplace,
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

// lintFile is one policy file as the linter reads it: a file of a
// registered format gives its reader's rules (Foreign, which lint
// themselves); an agentbox file its rules and each role's, compiled into
// sets in load order.
type lintFile struct {
	Path    string
	Foreign policy.FormatRules
	Rules   *policy.RuleSet
	Roles   []*policy.RuleSet
}

// lintFiles loads paths as --policy layers (reporting load errors, with
// no files); with role set, it also returns that role's rules (built-in
// or defined in the files, with the rules its settings derive), or an
// error when there is no such role.
func lintFiles(role string, paths ...string) ([]lintFile, *policy.RuleSet, []error) {
	l, err := load.Files(paths...)
	if err != nil {
		var es policy.Errors
		if errors.As(err, &es) {
			return nil, nil, es
		}
		return nil, nil, []error{err}
	}
	var files []lintFile
	for _, d := range l.Documents {
		f := lintFile{Path: d.Path, Foreign: d.Foreign}
		if d.Foreign == nil {
			f.Rules = d.Rules
			if f.Rules == nil {
				f.Rules = &policy.RuleSet{}
			}
			for _, rs := range d.Roles {
				f.Roles = append(f.Roles, rs.Rules)
			}
		}
		files = append(files, f)
	}
	if role == "" {
		return files, nil, nil
	}
	rules, err := l.RoleRules(role)
	if err != nil {
		return files, nil, []error{err}
	}
	return files, rules, nil
}
