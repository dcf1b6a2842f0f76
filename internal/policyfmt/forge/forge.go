// Package forge reads Forge's permission rule files
// (~/.config/forge/permissions.json, .src/forge/permissions.json, or a
// --policy file) and decides them as Forge does:
//
//	{"default": "ask", "rules": [
//	    {"pattern": "tool:bash,arg:command:rm *", "permission": "deny", "description": "..."},
//	    {"pattern": "tool:^(read|view)$", "permission": "allow", "enabled": false}]}
//
// the highest source with a matching rule (FR-3.3: a --policy file over
// the project's over the user's), in it the most specific rule, the most
// restrictive at equal specificity (FR-2.4, FR-1.2); else the file's
// default (ask). Every Forge file of a run forms one layer.
//
// Pattern parts, comma-separated, all must hold:
//
//	tool:NAME        exact tool (read, write, edit, bash, ...), a glob (tool:*) or a regex (tool:^bash.*)
//	arg:NAME:VALUE   the action's detail (command text for bash, path for files): glob, or regex when VALUE starts with ^
//	category:NAME    a Forge category (read_operations, write_operations, ...)
//
// It owns how such a file is recognised, read, linted and decided, and
// reaches the policy loader only through load.RegisterFormat. It
// describes its rules as policy.RuleSpec values and matches them through
// a policy.RuleSet the core compiles (the core's globs, regexes and
// specificity); it applies Forge's order itself. It imports the decision
// core (policy) and internal/yamlfields to read the file; never the
// loader, lint or presentation, and the core never imports it
// (arch_test.go).
package forge

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
const name = "Forge rules"

func init() { load.RegisterFormat(reader{}) }

// reader is the format's policy.FormatReader.
type reader struct{}

// Name implements policy.FormatReader.
func (reader) Name() string { return "forge" }

// Fallback implements policy.FormatReader: asked with the other readers,
// in registration order.
func (reader) Fallback() bool { return false }

// Detect implements policy.FormatReader: a document whose "rules" list
// holds a Forge rule (a mapping with pattern or permission). agentbox's
// own rules never have those keys.
func (reader) Detect(_ string, _ []byte, root *yaml.Node) bool {
	if v := yamlfields.Lookup(root, "rules"); v != nil && v.Kind == yaml.SequenceNode {
		for _, rn := range v.Content {
			if isForgeRule(rn) {
				return true
			}
		}
	}
	return false
}

// isForgeRule: a mapping with a pattern or permission key.
func isForgeRule(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k == "pattern" || k == "permission" {
			return true
		}
	}
	return false
}

// rules are one file's rules as specs, compiled to check them and for
// lint, and the file's default.
type rules struct {
	spec.Rules
	def     *policy.Decision
	defLine int
	path    string
}

// parser reads one file, collecting every problem.
type parser struct{ *spec.File }

func (p parser) decision(n *yaml.Node, what string) (policy.Decision, bool) {
	s, ok := yamlfields.Str(n, what, p.Errf)
	if !ok {
		return 0, false
	}
	d, err := policy.ParseDecision(s)
	if err != nil {
		p.Errf(n, "%s: %v", what, err)
		return 0, false
	}
	return d, true
}

// Read implements policy.FormatReader: {version, default, rules}; every
// bad rule is reported and left out.
func (reader) Read(file string, layer policy.Layer, _ []byte, root *yaml.Node) (policy.FormatRules, []error) {
	p := parser{spec.NewFile(file, layer)}
	out := &rules{path: file}
	yamlfields.Fields(root, "Forge rule file", p.Errf, func(key string, k, v *yaml.Node) bool {
		switch key {
		case "version":
			p.Version(v)
		case "default":
			if d, ok := p.decision(v, "default"); ok {
				out.def, out.defLine = &d, v.Line
			}
		case "rules":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				return true
			}
			if v.Kind != yaml.SequenceNode {
				p.Errf(v, "rules must be a list, got %s", yamlfields.KindName(v))
				return true
			}
			for _, rn := range v.Content {
				if !isForgeRule(rn) {
					p.Errf(rn, "not a Forge rule (pattern, permission): a Forge rule file holds only Forge rules")
					continue
				}
				p.rule(rn, &out.Rules)
			}
		default:
			return false
		}
		return true
	})
	return out, p.Errs
}

// rule reads {"pattern": "tool:bash,arg:command:rm *", "permission":
// "deny", "description": "...", "enabled": true, "id": "..."} and adds
// it to set; a disabled rule is read and left out.
func (p parser) rule(n *yaml.Node, rs *spec.Rules) {
	var (
		pattern, desc, id string
		patNode           *yaml.Node
		dec               policy.Decision
		hasDec            bool
		enabled           = true
		errBefore         = len(p.Errs)
	)
	yamlfields.Fields(n, "Forge rule", p.Errf, func(key string, k, v *yaml.Node) bool {
		switch key {
		case "pattern":
			pattern, _ = yamlfields.Str(v, "pattern", p.Errf)
			patNode = v
		case "permission":
			dec, _ = p.decision(v, "permission")
			hasDec = true
		case "description":
			desc, _ = yamlfields.Str(v, "description", p.Errf)
		case "enabled":
			if v.Value == "false" {
				enabled = false
			} else if v.Value != "true" {
				p.Errf(v, "enabled must be true or false")
			}
		case "id":
			id, _ = yamlfields.Str(v, "id", p.Errf)
		default:
			return false
		}
		return true
	})
	if patNode == nil {
		p.Errf(n, "Forge rule has no pattern")
	}
	if !hasDec {
		p.Errf(n, "Forge rule has no permission (allow, ask or deny)")
	}
	if len(p.Errs) > errBefore || !enabled {
		return
	}
	s := policy.RuleSpec{Decision: dec, Ref: p.Ref(n, id)}
	s.Ref.Description = desc
	bad := func(format string, args ...any) {
		p.Errf(patNode, "pattern %q: %s", pattern, fmt.Sprintf(format, args...))
	}
	for _, part := range splitPattern(pattern) {
		kind, val, _ := strings.Cut(part, ":")
		switch kind {
		case "tool":
			switch {
			case val == "" || val == "*":
				// any tool
			case strings.HasPrefix(val, "^"):
				s.ToolRegex = val + "(?s:.*)"
			case strings.ContainsAny(val, "*?"):
				match, err := policy.GlobMatcher(val)
				if err != nil {
					bad("%v", err)
					return
				}
				for _, t := range knownTools {
					if match(t) {
						s.Tools = append(s.Tools, t)
					}
				}
				if s.Tools == nil {
					s.Tools = []string{val} // matches nothing we know
				}
			default:
				if !spec.ValidToolName(val) {
					bad("invalid tool name %q", val)
					return
				}
				s.Tools = append(s.Tools, val)
			}
		case "arg":
			_, v, ok := strings.Cut(val, ":")
			if !ok {
				bad("arg part must be arg:NAME:VALUE")
				return
			}
			if strings.HasPrefix(v, "^") {
				if !strings.HasSuffix(v, "$") {
					v += "(?s:.*)" // Python re.match: anchored at the start only
				}
				s.DetailRegex = v
			} else {
				if _, err := policy.GlobMatcher(v); err != nil {
					bad("%v", err)
					return
				}
				if v == "" {
					bad("arg part %q has no value", part)
					return
				}
				s.CommandGlob = v
			}
		case "category":
			s.Categories = append(s.Categories, val)
		default:
			bad("part %q must start with tool:, arg: or category:", part)
			return
		}
	}
	if err := rs.Add(s); err != nil {
		bad("%v", err)
	}
}

// knownTools are the tool names a tool glob (tool:*_file) is tried on.
var knownTools = []string{"bash", "read", "write", "edit", "view", "create_file", "str_replace", "delete", "exec", "git", "glob", "grep", "self_edit"}

// splitPattern splits at commas that start a new tool:/arg:/category:
// part, so argument values may contain commas.
func splitPattern(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			continue
		}
		rest := strings.TrimLeft(s[i+1:], " ")
		if strings.HasPrefix(rest, "tool:") || strings.HasPrefix(rest, "arg:") || strings.HasPrefix(rest, "category:") {
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(s[start:]))
}

// DenyAndAsk implements policy.FormatRules: the file without its allow
// rules (its default stays: the engine drops an untrusted layer's
// default verdicts).
func (rs *rules) DenyAndAsk() policy.FormatRules {
	return &rules{Rules: rs.Rules.DenyAndAsk(), def: rs.def, defLine: rs.defLine, path: rs.path}
}

// Lint implements policy.FormatRules: an allow or ask covered by a
// stricter rule at least as specific (Forge takes the more specific rule,
// the more restrictive at equal specificity).
func (rs *rules) Lint() []policy.Finding {
	var out []policy.Finding
	for a := range rs.Specs {
		for d := range rs.Specs {
			if d == a || rs.Set.Decision(d) <= rs.Set.Decision(a) {
				continue
			}
			ia, id := rs.Set.Info(a), rs.Set.Info(d)
			if id.Specificity < ia.Specificity || !rs.Set.Covers(d, a) {
				continue
			}
			out = append(out, policy.Finding{Source: ia.Source, Rule: ia.ID,
				Message: fmt.Sprintf("%s rule %s (%s) matches every action this one does and wins", name, id.ID, id.Matcher)})
			break
		}
	}
	return out
}

// layer is the run's Forge files as one format layer.
type layer struct {
	path  string // the last file
	where policy.Layer
	order int
	set   *policy.RuleSet
	// prio is each rule's source priority (its file's layer: a higher
	// one wins, FR-3.3), spec its specificity.
	prio, spec []int
	def        policy.Decision
	// why is each rule's reason as a verdict of this layer, defReason the
	// default's (built once: deciding allocates little).
	why       []string
	defReason string
}

// Merge implements policy.FormatReader: every file's rules in load order,
// each with its file's source priority; the last default given wins.
func (reader) Merge(files []policy.FormatSource) policy.Format {
	last := files[len(files)-1]
	l := &layer{path: last.Path, where: last.Layer, order: last.Order, set: &policy.RuleSet{}, def: policy.Ask}
	label := name + " " + l.path
	defWhy := "no rule matches: " + name + " default is ask"
	for _, f := range files {
		rs := f.Rules.(*rules)
		for _, s := range rs.Specs {
			_ = l.set.Add(s) // compiled once already
			l.prio = append(l.prio, int(f.Layer))
		}
		if rs.def != nil {
			l.def = *rs.def
			defWhy = fmt.Sprintf("default set at %s:%d", rs.path, rs.defLine)
		}
	}
	l.defReason = label + ": " + defWhy
	for i := 0; i < l.set.Len(); i++ {
		l.why = append(l.why, label+": "+l.set.Reason(i))
		l.spec = append(l.spec, l.set.Info(i).Specificity)
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
	return policy.FormatInfo{Format: "forge", File: l.path, Layer: l.where.String(), Default: l.def.String(),
		Order: "highest source (project over user), then most specific rule, then most restrictive", Rules: spec.Infos(l.set)}
}

// beats: rule a wins over b: a higher source (FR-3.3); in it the more
// specific, then the more restrictive (FR-2.4, FR-1.2), then the later.
func (l *layer) beats(a, b int) bool {
	if l.prio[a] != l.prio[b] {
		return l.prio[a] > l.prio[b]
	}
	if l.spec[a] != l.spec[b] {
		return l.spec[a] > l.spec[b]
	}
	if da, db := l.set.Decision(a), l.set.Decision(b); da != db {
		return da > db
	}
	return a > b
}

// Decide implements policy.Format: Forge names no hosts, so it answers no
// connection.
func (l *layer) Decide(q policy.FormatQuery) policy.FormatVerdict {
	if q.Net {
		return policy.FormatVerdict{None: true}
	}
	var buf [8]int
	m, err := l.set.Match(buf[:0], q)
	if err != nil {
		return policy.FormatVerdict{Decision: policy.Deny, Reason: "malformed action"}
	}
	best := -1
	for _, i := range m {
		if best < 0 || l.beats(i, best) {
			best = i
		}
	}
	if best < 0 {
		return policy.FormatVerdict{Decision: l.def, Reason: l.defReason}
	}
	return policy.FormatVerdict{Decision: l.set.Decision(best), Rule: l.set.Ref(best), Reason: l.why[best]}
}
