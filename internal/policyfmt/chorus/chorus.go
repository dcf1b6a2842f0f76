// Package chorus reads Chorus's permission profiles and decides them as
// Chorus does:
//
//	{"allow": ["tool:view:.*", "tool:bash:ls.*"], "ask": ["tool:bash:.*"]}   a profile
//	{"name": "x", "permissions": {"allow": [...], "ask": [...]}}             an agent.json
//	{"permissions": "standard"}                                              a preset (open, standard, locked)
//
// each pattern a regex matched against the whole action string
// (tool:<tool>:<detail>; a shell command is tool:bash:<command>): the
// allow list first, then ask, and unmatched is denied (a deny list, an
// agentbox extension, before both). Every Chorus file is a layer of its
// own. The presets are the built-in roles of those names (policy's
// roles.yaml, where the core keeps them: the core imports no format), read
// through policy.RuleSet.AddRolePatterns. A Chorus server settings file's
// permission_grants are approvers, read by the core.
//
// It owns how such a file is recognised, read, linted and decided, and
// reaches the policy loader only through load.RegisterFormat. Its
// patterns are compiled and matched by the core (policy.RuleSpec's Regex,
// policy.RuleSet.MatchAction: the core's lookahead translation and lazy
// compilation); it applies Chorus's order itself. It imports the decision
// core (policy) and internal/yamlfields to read the file; never the
// loader, lint or presentation, and the core never imports it
// (arch_test.go).
package chorus

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/policyfmt/spec"
	"github.com/agentbox/agentbox/internal/yamlfields"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// name is how results and explanations name the format.
const name = "Chorus profile"

// presets are the names an agent.json may give as "permissions".
var presets = []string{"open", "standard", "locked"}

func init() { load.RegisterFormat(reader{}) }

// reader is the format's policy.FormatReader.
type reader struct{}

// Name implements policy.FormatReader.
func (reader) Name() string { return "chorus" }

// LayerPerFile: every Chorus profile decides on its own.
func (reader) LayerPerFile() bool { return true }

// Fallback implements policy.FormatReader: asked after the other
// readers, since Claude Code's permissions are lists of strings too.
func (reader) Fallback() bool { return true }

// Detect implements policy.FormatReader: a profile (top-level allow or
// ask lists), or an agent.json whose "permissions" is a preset name or
// Chorus's lists; never a server settings file (permission_grants: the
// core reads its approvers). Claude Code settings are claimed before
// (Fallback; and the core refuses a permissions mapping while Claude
// Code's reader is not linked).
func (reader) Detect(_ string, _ []byte, root *yaml.Node) bool {
	if root == nil {
		return false
	}
	var perms *yaml.Node
	lists := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "permission_grants":
			return false
		case "permissions":
			perms = root.Content[i+1]
		case "allow", "ask":
			lists = true
		}
	}
	if perms != nil {
		return perms.Kind == yaml.ScalarNode || spec.StringLists(perms)
	}
	return lists
}

// rules are one file's patterns as specs (compiled, to check them and
// for lint), or the preset it names.
type rules struct {
	spec.Rules
	preset string
	// denyAndAsk: the file is untrusted; a preset gives only its deny
	// and ask patterns.
	denyAndAsk bool
}

// parser reads one file into out.
type parser struct {
	*spec.File
	out *rules
}

// Read implements policy.FormatReader: every bad pattern is reported and
// left out.
func (reader) Read(file string, layer policy.Layer, _ []byte, root *yaml.Node) (policy.FormatRules, []error) {
	p := &parser{spec.NewFile(file, layer), &rules{}}
	if yamlfields.Lookup(root, "permissions") != nil {
		p.agentJSON(root)
	} else {
		p.profile(root)
	}
	return p.out, p.Errs
}

// profile reads {allow: [regex], ask: [regex]} (plus deny: [regex], an
// agentbox extension).
func (p *parser) profile(root *yaml.Node) {
	yamlfields.Fields(root, "Chorus profile", p.Errf, func(key string, k, v *yaml.Node) bool {
		var dec policy.Decision
		switch key {
		case "version", "name", "description":
			return true
		case "allow":
			dec = policy.Allow
		case "ask":
			dec = policy.Ask
		case "deny":
			dec = policy.Deny
		default:
			return false
		}
		pats, nodes := yamlfields.StrList(v, key, p.Errf)
		for i, pat := range pats {
			if err := p.out.Add(policy.RuleSpec{Decision: dec, Regex: pat, Ref: p.Ref(nodes[i], "")}); err != nil {
				p.Errf(nodes[i], "%v", err)
			}
		}
		return true
	})
}

// agentJSON reads an agent.json's "permissions": a preset name or
// Chorus's lists; its other settings (model, prompts...) are not policy.
func (p *parser) agentJSON(root *yaml.Node) {
	yamlfields.Fields(root, "Codelia config", p.Errf, func(key string, k, v *yaml.Node) bool {
		switch key {
		case "version":
			p.Version(v)
		case "permissions":
			if v.Kind == yaml.ScalarNode {
				if !slices.Contains(presets, v.Value) {
					p.Errf(v, "permissions %q: not a Chorus preset (%s) nor a list of rules", v.Value, strings.Join(presets, ", "))
					return true
				}
				p.out.preset = v.Value
				return true
			}
			p.profile(v)
		}
		return true
	})
}

// DenyAndAsk implements policy.FormatRules: the file without its allow
// patterns.
func (rs *rules) DenyAndAsk() policy.FormatRules {
	return &rules{Rules: rs.Rules.DenyAndAsk(), preset: rs.preset, denyAndAsk: true}
}

// rank is Chorus's order: the deny list, then allow, then ask.
var rank = map[policy.Decision]int{policy.Deny: 0, policy.Allow: 1, policy.Ask: 2}

// Lint implements policy.FormatRules: a pattern that one tried before it
// (an earlier list, or earlier in the same list) matches entirely.
func (rs *rules) Lint() []policy.Finding {
	var out []policy.Finding
	for a := range rs.Specs {
		for d := range rs.Specs {
			da, dd := rs.Specs[a].Decision, rs.Specs[d].Decision
			if d == a || rank[dd] > rank[da] || rank[dd] == rank[da] && d > a {
				continue
			}
			if rs.Specs[d].Regex == rs.Specs[a].Regex || rs.Set.Covers(d, a) {
				ref := rs.Specs[a].Ref
				out = append(out, policy.Finding{Source: ref.Source, Rule: ref.ID,
					Message: fmt.Sprintf("Chorus tries %s pattern %q first and it matches everything this one does", dd, rs.Specs[d].Regex)})
				break
			}
		}
	}
	return out
}

// layer is one Chorus file as a format layer.
type layer struct {
	path  string
	where policy.Layer
	order int
	set   *policy.RuleSet
	// why is each rule's reason as a verdict of this layer, defReason the
	// implicit deny's (built once: deciding allocates nothing).
	why       []string
	defReason string
}

// Merge implements policy.FormatReader, for one file (LayerPerFile).
func (reader) Merge(files []policy.FormatSource) policy.Format {
	last := files[len(files)-1]
	l := &layer{path: last.Path, where: last.Layer, order: last.Order, set: &policy.RuleSet{}}
	for _, f := range files {
		rs := f.Rules.(*rules)
		if rs.preset != "" {
			var keep func(policy.Decision) bool
			if rs.denyAndAsk {
				keep = func(d policy.Decision) bool { return d != policy.Allow }
			}
			l.set.AddRolePatterns(rs.preset, keep)
		}
		for _, s := range rs.Specs {
			_ = l.set.Add(s) // compiled once already
		}
	}
	label := name + " " + l.path
	l.defReason = label + ": no allow or ask pattern matches: denied (Chorus's implicit deny)"
	for i := 0; i < l.set.Len(); i++ {
		l.why = append(l.why, fmt.Sprintf("%s: %s (%s list; Chorus tries allow, then ask, then denies)", label, l.set.Reason(i), l.set.Decision(i)))
	}
	return l
}

// Where implements policy.Format.
func (l *layer) Where() (policy.Layer, int) { return l.where, l.order }

// Info implements policy.Format.
func (l *layer) Info() policy.FormatInfo {
	return policy.FormatInfo{Format: "chorus", File: l.path, Layer: l.where.String(), Default: policy.Deny.String(),
		Order: "deny list, then allow patterns, then ask patterns; unmatched is denied", Rules: spec.Infos(l.set)}
}

// Decide implements policy.Format: re.fullmatch on the one action string
// Chorus builds: a shell command is tool:bash:<command> (a program
// start's argv joined), any other action as given. Chorus names no
// hosts, so it answers no connection.
func (l *layer) Decide(q policy.FormatQuery) policy.FormatVerdict {
	if q.Net {
		return policy.FormatVerdict{None: true}
	}
	if q.Line == "" {
		if _, _, err := policy.ParseAction(q.Action); err != nil {
			return policy.FormatVerdict{Decision: policy.Deny, Reason: "malformed action"}
		}
	}
	act := q.Action
	if q.Line != "" && (q.Argv == nil || !q.ToolCall) {
		act = policy.FormatAction(policy.ToolBash, q.Line)
	}
	for _, d := range []policy.Decision{policy.Deny, policy.Allow, policy.Ask} {
		for i := 0; i < l.set.Len(); i++ {
			if l.set.Decision(i) == d && l.set.MatchAction(i, act) {
				return policy.FormatVerdict{Decision: d, Rule: l.set.Ref(i), Reason: l.why[i]}
			}
		}
	}
	return policy.FormatVerdict{Decision: policy.Deny, Reason: l.defReason}
}
