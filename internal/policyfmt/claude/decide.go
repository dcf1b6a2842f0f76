package claude

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/policy"
)

// layer is the one layer all Claude Code settings files form (Claude Code
// merges its settings files): every file's rules, at the last file's
// layer and position.
type layer struct {
	rules []*rule
	path  string
	where policy.Layer
	order int
	// workspace and rel: the run's workspace and how the engine makes a
	// path relative to it (BindWorkspace).
	workspace string
	rel       func(string) string
}

// Merge implements policy.FormatReader.
func (reader) Merge(files []policy.FormatSource) policy.Format {
	l := &layer{rel: func(p string) string { return p }}
	for _, f := range files {
		l.rules = append(l.rules, f.Rules.(rules)...)
	}
	last := files[len(files)-1]
	l.path, l.where, l.order = last.Path, last.Layer, last.Order
	return l
}

// DenyAndAsk implements policy.FormatRules.
func (rs rules) DenyAndAsk() policy.FormatRules {
	var out rules
	for _, r := range rs {
		if r.dec != policy.Allow {
			out = append(out, r)
		}
	}
	return out
}

// BindWorkspace anchors the layer's project-relative path rules in the
// workspace, once, so deciding compiles nothing.
func (l *layer) BindWorkspace(workspace string, rel func(string) string) {
	l.workspace, l.rel = workspace, rel
	for _, r := range l.rules {
		if r.path != nil && strings.Contains(r.spec, "/") {
			r.inWS, _ = policy.PathMatcher(rel(r.spec))
		}
	}
}

// Where implements policy.Format.
func (l *layer) Where() (policy.Layer, int) { return l.where, l.order }

// Info implements policy.Format.
func (l *layer) Info() policy.FormatInfo {
	return policy.FormatInfo{Format: "claude", File: l.path, Layer: l.where.String(), Default: policy.Ask.String(),
		Order: "deny, then ask, then allow; else the role decides"}
}

// tools are the agentbox tools each Claude Code tool's path rules cover
// (Read rules cover every reading tool, Edit every editing tool).
var tools = map[string][]string{
	"Read": {policy.ToolView}, "Glob": {policy.ToolView}, "Grep": {policy.ToolView}, "LS": {policy.ToolView},
	"Edit": {policy.ToolCreateFile, policy.ToolStrReplace}, "MultiEdit": {policy.ToolStrReplace}, "NotebookEdit": {policy.ToolStrReplace},
	"Write": {policy.ToolCreateFile},
}

// matchCommand reports whether a Bash rule matches one command's text.
func (r *rule) matchCommand(c string) bool {
	if r.tool != "Bash" {
		return false
	}
	switch {
	case r.spec == "":
		return true
	case r.prefix != "":
		if r.dec == policy.Deny {
			return strings.HasPrefix(c, r.prefix) // refusals: the plain prefix
		}
		return c == r.prefix || strings.HasPrefix(c, r.prefix+" ") || strings.HasPrefix(c, r.prefix+":")
	case r.glob != nil:
		return r.glob(c)
	}
	return c == r.exact
}

// matchAction reports whether a rule matches a non-command action.
func (r *rule) matchAction(l *layer, tool, detail string) bool {
	switch tool {
	case policy.ToolView, policy.ToolCreateFile, policy.ToolStrReplace, policy.ToolDelete:
		ts := tools[r.tool]
		if tool == policy.ToolDelete {
			ts = tools["Edit"]
			if r.tool == "Edit" {
				ts = []string{policy.ToolDelete}
			}
		}
		ok := false
		for _, t := range ts {
			ok = ok || t == tool
		}
		if !ok {
			return false
		}
		switch {
		case r.spec == "":
			return true
		case r.abs != nil:
			abs := detail
			if !strings.HasPrefix(abs, "/") && l.workspace != "" {
				abs = path.Join(l.workspace, detail)
			}
			return r.abs(abs)
		case r.path != nil:
			rel := l.rel(detail)
			if !strings.Contains(r.spec, "/") {
				return r.path(rel)
			}
			return r.inWS != nil && r.inWS(rel)
		}
	case policy.ToolNet:
		return r.tool == "WebFetch" && (r.domain == nil || r.domain(detail))
	case "web_fetch":
		if r.tool != "WebFetch" {
			return false
		}
		if r.domain == nil {
			return true
		}
		u, err := url.Parse(detail)
		return err == nil && r.domain(policy.NetAction(u.Hostname(), 443)[len("tool:net:"):])
	case "web_search":
		return r.tool == "WebSearch"
	default:
		return r.tool == tool || strings.HasPrefix(r.tool, "mcp__") && strings.HasPrefix(tool, r.tool+"__")
	}
	return false
}

// pick returns the first rule matching, by decision: deny, then ask, then
// allow.
func (l *layer) pick(match func(r *rule) bool) *rule {
	for _, d := range []policy.Decision{policy.Deny, policy.Ask, policy.Allow} {
		for _, r := range l.rules {
			if r.dec == d && match(r) {
				return r
			}
		}
	}
	return nil
}

// verdict is r's answer, what naming what it decided.
func (l *layer) verdict(r *rule, what string) policy.FormatVerdict {
	return policy.FormatVerdict{Decision: r.dec, Rule: &r.ref, Reason: fmt.Sprintf("%s %s: %s %s (rule %q; deny, then ask, then allow)",
		name, l.path, map[policy.Decision]string{policy.Allow: "allowed", policy.Ask: "needs approval", policy.Deny: "denied"}[r.dec], what, r.text)}
}

// Decide implements policy.Format: Claude Code settings name hosts, so
// they answer a connection too.
func (l *layer) Decide(q policy.FormatQuery) policy.FormatVerdict {
	if q.Line != "" {
		var allowedBy, ask *rule
		cmds := commandTexts(&q)
		allAllowed := len(cmds) > 0
		for _, c := range cmds {
			r := l.pick(func(r *rule) bool { return r.matchCommand(c) })
			switch {
			case r == nil:
			case r.dec == policy.Deny:
				return l.verdict(r, fmt.Sprintf("%q", c))
			case r.dec == policy.Ask:
				if ask == nil {
					ask = r
				}
			default:
				if allowedBy == nil {
					allowedBy = r
				}
				continue
			}
			allAllowed = false
		}
		if ask != nil {
			return l.verdict(ask, "a command of the line")
		}
		if allAllowed && allowedBy != nil {
			return l.verdict(allowedBy, "every command of the line")
		}
		return policy.FormatVerdict{Decision: policy.Ask, Reason: "no Claude Code rule decides every command", None: true}
	}
	tool, detail, err := policy.ParseAction(q.Action)
	if err != nil {
		return policy.FormatVerdict{None: true}
	}
	if r := l.pick(func(r *rule) bool { return r.matchAction(l, tool, detail) }); r != nil {
		return l.verdict(r, tool+" "+detail)
	}
	return policy.FormatVerdict{None: true}
}

// commandTexts are the commands of a command query, as their text.
func commandTexts(q *policy.FormatQuery) []string {
	if q.Argv != nil {
		return []string{command.Join(q.Argv)}
	}
	items, err := command.ParseShell(q.Line)
	if err != nil {
		return []string{q.Line}
	}
	var out []string
	for _, it := range items {
		if it.Argv != nil && !it.Wrapper {
			out = append(out, strings.Join(it.Argv, " "))
		}
	}
	return out
}

// Lint implements policy.FormatRules: deny, then ask, then allow, so a
// rule a stricter one of the same tool covers never decides.
func (rs rules) Lint() []policy.Finding {
	var out []policy.Finding
	for _, a := range rs {
		for _, d := range rs {
			if d == a || d.dec <= a.dec || d.tool != a.tool {
				continue
			}
			cov := d.spec == "" || d.spec == a.spec
			if d.tool == "Bash" && d.prefix != "" {
				cov = cov || a.prefix != "" && strings.HasPrefix(a.prefix, d.prefix) || a.exact != "" && strings.HasPrefix(a.exact, d.prefix)
			}
			if cov {
				out = append(out, policy.Finding{Source: a.ref.Source, Rule: a.ref.ID,
					Message: fmt.Sprintf("Claude Code rule %q (%s) matches every call this one does and is checked first", d.text, d.dec)})
				break
			}
		}
	}
	return out
}
