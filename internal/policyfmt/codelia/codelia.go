// Package codelia reads Codelia's permissions (config.json, its §4-§7)
// and decides them as Codelia does:
//
//	{"version": 1, "permissions": {
//	    "allow": [{"tool": "read"}, {"tool": "bash", "command": "git status"}],
//	    "deny":  [{"tool": "bash", "command_glob": "rm -rf *"}, {"tool": "skill_load", "skill_name": "x"}]}}
//
// deny, then allow, else confirm (ask); a command line first against the
// command_glob rules on its whole normalized text, then segment by
// segment (§6): a deny in any segment denies, and the line is allowed
// only when every segment is. Codelia's built-in system allowlist (§7)
// comes before the files' rules. Every Codelia file of a run forms one
// layer.
//
// It owns how such a file is recognised, read, linted and decided, and
// reaches the policy loader only through load.RegisterFormat. Its rules
// have the native shape, so it describes them as policy.RuleSpec values
// and matches them through a policy.RuleSet the core compiles; it applies
// Codelia's order itself. It imports the decision core (policy) and
// internal/yamlfields to read the file; never the loader, lint or
// presentation, and the core never imports it (arch_test.go).
package codelia

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/policyfmt/spec"
	"github.com/agentbox/agentbox/internal/yamlfields"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// name is how results and explanations name the format.
const name = "Codelia permissions"

func init() { load.RegisterFormat(reader{}) }

// reader is the format's policy.FormatReader.
type reader struct{}

// Name implements policy.FormatReader.
func (reader) Name() string { return "codelia" }

// Fallback implements policy.FormatReader: asked with the other readers,
// in registration order.
func (reader) Fallback() bool { return false }

// Detect implements policy.FormatReader: a document whose "permissions"
// is a mapping of rule lists (not Chorus's lists of regexes, not a Chorus
// preset name). Claude Code settings are claimed before (its reader is
// registered first; their string lists are never Codelia's mappings).
func (reader) Detect(_ string, _ []byte, root *yaml.Node) bool {
	v := yamlfields.Lookup(root, "permissions")
	return v != nil && v.Kind == yaml.MappingNode && !spec.StringLists(v)
}

// rules are one file's rules as specs, compiled to check them and for
// lint.
type rules struct{ spec.Rules }

// Read implements policy.FormatReader: every bad rule is reported and
// left out; the file's other keys (model, prompts...) are not policy.
func (reader) Read(file string, layer policy.Layer, _ []byte, root *yaml.Node) (policy.FormatRules, []error) {
	p := spec.NewFile(file, layer)
	out := &rules{}
	yamlfields.Fields(root, "Codelia config", p.Errf, func(key string, k, v *yaml.Node) bool {
		switch key {
		case "version":
			p.Version(v)
		case "permissions":
			yamlfields.Fields(v, "permissions", p.Errf, func(key string, k, lv *yaml.Node) bool {
				dec, ok := listDecision(key)
				if !ok {
					return false
				}
				if lv.Kind == yaml.ScalarNode && lv.Tag == "!!null" {
					return true
				}
				if lv.Kind != yaml.SequenceNode {
					p.Errf(lv, "permissions.%s must be a list, got %s", key, yamlfields.KindName(lv))
					return true
				}
				for _, rn := range lv.Content {
					if s, ok := rule(p, rn, dec); ok {
						if err := out.Add(s); err != nil {
							p.Errf(rn, "%v", err)
						}
					}
				}
				return true
			})
		}
		return true
	})
	return out, p.Errs
}

// listDecision maps a permission list's key to its decision (confirm is
// Codelia's ask).
func listDecision(key string) (policy.Decision, bool) {
	switch key {
	case "allow":
		return policy.Allow, true
	case "ask", "confirm":
		return policy.Ask, true
	case "deny":
		return policy.Deny, true
	}
	return 0, false
}

// rule reads {tool, command, command_glob, skill_name}.
func rule(p *spec.File, n *yaml.Node, dec policy.Decision) (policy.RuleSpec, bool) {
	var (
		tool, command, cglob, skill string
		hasTool                     bool
		errBefore                   = len(p.Errs)
	)
	yamlfields.Fields(n, "Codelia rule", p.Errf, func(key string, k, v *yaml.Node) bool {
		switch key {
		case "tool":
			tool, hasTool = yamlfields.Str(v, "tool", p.Errf)
		case "command":
			command, _ = yamlfields.Str(v, "command", p.Errf)
		case "command_glob":
			cglob, _ = yamlfields.Str(v, "command_glob", p.Errf)
		case "skill_name":
			skill, _ = yamlfields.Str(v, "skill_name", p.Errf)
		default:
			return false
		}
		return true
	})
	if !hasTool && len(p.Errs) == errBefore {
		p.Errf(n, "Codelia rule needs a tool")
	}
	if len(p.Errs) > errBefore {
		return policy.RuleSpec{}, false
	}
	if !spec.ValidToolName(tool) {
		p.Errf(n, "invalid tool name %q", tool)
		return policy.RuleSpec{}, false
	}
	s := policy.RuleSpec{Decision: dec, Ref: p.Ref(n, "")}
	switch {
	case command != "" || cglob != "":
		if tool != "bash" {
			p.Errf(n, "command and command_glob apply only to tool bash, not %q", tool)
			return s, false
		}
		if command != "" && len(strings.Fields(command)) > 2 {
			p.Errf(n, "command %q must be 1 or 2 words; use command_glob for more", command)
			return s, false
		}
		s.Command, s.CommandGlob, s.CommandOnly = command, strings.Join(strings.Fields(cglob), " "), true
		if cglob != "" && s.CommandGlob == "" {
			p.Errf(n, "command_glob is blank")
			return s, false
		}
	case skill != "":
		if tool != "skill_load" {
			p.Errf(n, "skill_name applies only to tool skill_load, not %q", tool)
			return s, false
		}
		s.Action = policy.FormatAction(tool, skill)
	default:
		s.Tools = []string{tool}
	}
	return s, true
}

// systemAllowlist is Codelia's built-in allowlist (its §7): tools and
// read-only commands allowed without a config file.
func systemAllowlist() []policy.RuleSpec {
	var out []policy.RuleSpec
	src := "codelia:system-allowlist"
	for _, t := range []string{"read", "grep", "glob_search", "todo_read", "todo_write", "tool_output_cache", "tool_output_cache_grep", "agents_resolve", "skill_search", "skill_load", "done"} {
		out = append(out, policy.RuleSpec{Decision: policy.Allow, Tools: []string{t}, Ref: policy.RuleRef{ID: "codelia/system." + t,
			Layer: policy.LayerBuiltin, Source: src, Description: "Codelia system allowlist (tool " + t + ")"}})
	}
	for _, c := range []string{"pwd", "ls", "rg", "grep", "find", "sort", "cat", "head", "tail", "wc", "stat", "file", "uname", "whoami", "date",
		"git status", "git diff", "git show", "git log", "git rev-parse", "git ls-files", "git grep"} {
		out = append(out, policy.RuleSpec{Decision: policy.Allow, Command: c, CommandOnly: true, Ref: policy.RuleRef{ID: "codelia/system." + strings.ReplaceAll(c, " ", "."),
			Layer: policy.LayerBuiltin, Source: src, Description: "Codelia system allowlist (command " + c + ")"}})
	}
	return out
}

// DenyAndAsk implements policy.FormatRules: the file without its allow
// rules.
func (rs *rules) DenyAndAsk() policy.FormatRules { return &rules{rs.Rules.DenyAndAsk()} }

// Lint implements policy.FormatRules: an allow covered by a deny (Codelia
// tries deny first).
func (rs *rules) Lint() []policy.Finding {
	var out []policy.Finding
	for a := range rs.Specs {
		for d := range rs.Specs {
			if d == a || rs.Set.Decision(d) <= rs.Set.Decision(a) || !rs.Set.Covers(d, a) {
				continue
			}
			ra, rd := rs.Set.Ref(a), rs.Set.Info(d)
			out = append(out, policy.Finding{Source: ra.Source, Rule: ra.ID,
				Message: fmt.Sprintf("%s rule %s (%s) matches every action this one does and wins", name, rd.ID, rd.Matcher)})
			break
		}
	}
	return out
}

// layer is the run's Codelia files as one format layer.
type layer struct {
	path  string // the last file
	where policy.Layer
	order int
	set   *policy.RuleSet
	// why is each rule's reason as a verdict of this layer, defReason the
	// default's (built once: deciding allocates little).
	why       []string
	globOnly  []bool // a command_glob rule without a command
	label     string // "Codelia permissions <path>"
	defReason string
}

// Merge implements policy.FormatReader: the system allowlist, then every
// file's rules in load order.
func (reader) Merge(files []policy.FormatSource) policy.Format {
	last := files[len(files)-1]
	l := &layer{path: last.Path, where: last.Layer, order: last.Order, set: &policy.RuleSet{}}
	specs := systemAllowlist()
	for _, f := range files {
		specs = append(specs, f.Rules.(*rules).Specs...)
	}
	for _, s := range specs {
		_ = l.set.Add(s) // every spec compiled once already
	}
	l.label = name + " " + l.path
	l.defReason = l.label + ": no allow rule matches: confirm (Codelia's default)"
	l.why = make([]string, l.set.Len())
	for i := range l.why {
		l.why[i] = fmt.Sprintf("%s: %s (deny, then allow, else confirm)", l.label, l.set.Reason(i))
		l.globOnly = append(l.globOnly, specs[i].CommandGlob != "" && specs[i].Command == "")
	}
	return l
}

// BindWorkspace makes path rules see workspace-relative paths.
func (l *layer) BindWorkspace(workspace string, _ func(string) string) {
	l.set.BindWorkspace(workspace)
}

// Where implements policy.Format.
func (l *layer) Where() (policy.Layer, int) { return l.where, l.order }

// Info implements policy.Format.
func (l *layer) Info() policy.FormatInfo {
	return policy.FormatInfo{Format: "codelia", File: l.path, Layer: l.where.String(), Default: policy.Ask.String(),
		Order: "deny, then allow (every segment of a command), else confirm (ask)", Rules: spec.Infos(l.set)}
}

// first returns the first rule (in load order) of decision d among the
// matching rules m (sorted), or -1.
func (l *layer) first(m []int, d policy.Decision) int {
	for _, i := range m {
		if l.set.Decision(i) == d {
			return i
		}
	}
	return -1
}

// Decide implements policy.Format: Codelia names no hosts, so it answers
// no connection.
func (l *layer) Decide(q policy.FormatQuery) policy.FormatVerdict {
	if q.Net {
		return policy.FormatVerdict{None: true}
	}
	if q.Line != "" {
		return l.command(q.Line)
	}
	var buf [8]int
	m, err := l.set.Match(buf[:0], q)
	if err != nil {
		return policy.FormatVerdict{Decision: policy.Deny, Reason: "malformed action"}
	}
	for _, d := range []policy.Decision{policy.Deny, policy.Allow} {
		if i := l.first(m, d); i >= 0 {
			return policy.FormatVerdict{Decision: d, Rule: l.set.Ref(i), Reason: l.why[i]}
		}
	}
	return policy.FormatVerdict{Decision: policy.Ask, Reason: l.defReason}
}

// command applies Codelia's §6 to a command: the normalized full text
// against command_glob rules (a match decides at once, deny first), then
// every segment between operators: a deny in any segment denies, and the
// command is allowed only when every segment is allowed; else confirm.
func (l *layer) command(line string) policy.FormatVerdict {
	text := strings.Join(strings.Fields(line), " ")
	var buf [8]int
	wm, _ := l.set.Match(buf[:0], policy.FormatQuery{Line: text})
	for _, d := range []policy.Decision{policy.Deny, policy.Allow} {
		for _, i := range wm {
			if l.set.Decision(i) == d && l.globOnly[i] {
				return policy.FormatVerdict{Decision: d, Rule: l.set.Ref(i),
					Reason: fmt.Sprintf("%s: %s (command_glob on the full text)", l.label, l.set.Reason(i))}
			}
		}
	}
	allowBy := -1
	var notAllowed string
	for _, seg := range segments(text) {
		words := strings.Fields(seg)
		if len(words) == 0 {
			continue
		}
		if words[0] == "cd" {
			continue // allowed by the runtime inside the sandbox (§7.2); agentbox's boundary keeps it there
		}
		m := l.set.MatchSegment(buf[:0], seg, words)
		if i := l.first(m, policy.Deny); i >= 0 {
			return policy.FormatVerdict{Decision: policy.Deny, Rule: l.set.Ref(i),
				Reason: fmt.Sprintf("%s: %s (segment %q)", l.label, l.set.Reason(i), seg)}
		}
		if i := l.first(m, policy.Allow); i >= 0 {
			if allowBy < 0 {
				allowBy = i
			}
		} else if notAllowed == "" {
			notAllowed = seg
		}
	}
	if notAllowed == "" && allowBy >= 0 {
		return policy.FormatVerdict{Decision: policy.Allow, Rule: l.set.Ref(allowBy),
			Reason: fmt.Sprintf("%s: every segment allowed (%s)", l.label, l.set.Reason(allowBy))}
	}
	why := "no allow rule matches: confirm (Codelia's default)"
	if notAllowed != "" {
		why = fmt.Sprintf("segment %q is not allowed: confirm (Codelia allows a command only when every segment is allowed)", notAllowed)
	}
	return policy.FormatVerdict{Decision: policy.Ask, Reason: l.label + ": " + why}
}

// segments splits a normalized command at Codelia's operators (§6.4:
// | || && ; > >> < 2> 2>> |&, longest match, not inside quotes or after a
// backslash) and drops the right side of each redirection, which is a file,
// not a command.
func segments(s string) []string {
	var segs []string
	var cur strings.Builder
	redirect := false
	flush := func(nextRedirect bool) {
		seg := strings.TrimSpace(cur.String())
		cur.Reset()
		if redirect {
			// "rg x > out.txt | wc": the redirect target is the first word;
			// anything after it still belongs to the command before.
			if _, rest, ok := strings.Cut(seg, " "); ok && len(segs) > 0 {
				segs[len(segs)-1] += " " + rest
			}
		} else if seg != "" {
			segs = append(segs, seg)
		}
		redirect = nextRedirect
	}
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) {
				cur.WriteByte(c)
				i++
				c = s[i]
			}
			cur.WriteByte(c)
			continue
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
			continue
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
			continue
		}
		op := ""
		for _, o := range []string{"2>>", "||", "&&", "|&", ">>", "2>", "|", ";", ">", "<"} {
			if strings.HasPrefix(s[i:], o) {
				if o[0] == '2' && i > 0 && s[i-1] != ' ' {
					continue // "a2>b": the 2 is part of a word
				}
				op = o
				break
			}
		}
		if op == "" {
			cur.WriteByte(c)
			continue
		}
		flush(strings.ContainsAny(op, "<>"))
		i += len(op) - 1
	}
	flush(false)
	return segs
}
