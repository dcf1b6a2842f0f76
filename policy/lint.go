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
}

func (f Finding) String() string {
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
		switch fd.format {
		case "chorus":
			out = append(out, lintChorus(fd.rules)...)
		case "codelia", "forge":
			out = append(out, lintOrdered(fd.rules, fd.format)...)
		case "claude":
			out = append(out, lintClaude(fd.claude)...)
		case "codex":
			out = append(out, lintCodex(fd.codex)...)
		default:
			native = append(native, fd.rules...)
			for _, rd := range fd.roles {
				out = append(out, lintNative(rd.rules)...)
			}
		}
	}
	out = append(out, lintNative(native)...)
	return out, nil
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

// lintChorus: the allow list is tried first, then ask (a deny list, the
// agentbox extension, before both).
func lintChorus(rules []*rule) []Finding {
	var out []Finding
	rank := map[Decision]int{Deny: 0, Allow: 1, Ask: 2}
	for _, a := range rules {
		for _, d := range rules {
			if d == a || rank[d.dec] > rank[a.dec] || rank[d.dec] == rank[a.dec] && d.order > a.order {
				continue
			}
			if d.act != nil && a.act != nil && (d.act.re.src == a.act.re.src || covers(d, a)) {
				out = append(out, finding(a, "Chorus tries %s pattern %q first and it matches everything this one does", d.dec, d.act.re.src))
				break
			}
		}
	}
	return out
}

// lintOrdered: Codelia (deny before allow) and Forge (at equal
// specificity the more restrictive) — an allow covered by a deny.
func lintOrdered(rules []*rule, format string) []Finding {
	var out []Finding
	for _, a := range rules {
		for _, d := range rules {
			if d == a || d.dec <= a.dec {
				continue
			}
			if format == "forge" && d.spec < a.spec {
				continue // the more specific rule wins in Forge
			}
			if covers(d, a) {
				out = append(out, finding(a, "%s rule %s (%s) matches every action this one does and wins", formatName[format], d.ref.ID, d.text))
				break
			}
		}
	}
	return out
}

// lintClaude: deny, then ask, then allow.
func lintClaude(rules []*claudeRule) []Finding {
	var out []Finding
	for _, a := range rules {
		for _, d := range rules {
			if d == a || d.dec <= a.dec || d.tool != a.tool {
				continue
			}
			cov := d.spec == "" || d.spec == a.spec
			if d.tool == "Bash" && d.prefix != "" {
				cov = cov || a.prefix != "" && strings.HasPrefix(a.prefix, d.prefix) || a.exact != "" && strings.HasPrefix(a.exact, d.prefix)
			}
			if cov {
				out = append(out, Finding{Source: a.ref.Source, Rule: a.ref.ID,
					Message: fmt.Sprintf("Claude Code rule %q (%s) matches every call this one does and is checked first", d.text, d.dec)})
				break
			}
		}
	}
	return out
}

// lintCodex: the strictest matching rule wins, so a rule whose pattern
// extends a stricter rule's pattern never decides.
func lintCodex(rules []*codexRule) []Finding {
	var out []Finding
	for _, a := range rules {
		for _, d := range rules {
			if d == a || d.dec <= a.dec || len(d.pattern) > len(a.pattern) {
				continue
			}
			ok := true
			for i := range d.pattern {
				for _, alt := range a.pattern[i] {
					if !slices.Contains(d.pattern[i], alt) {
						ok = false
					}
				}
			}
			if ok {
				out = append(out, Finding{Source: a.ref.Source, Rule: a.ref.ID,
					Message: fmt.Sprintf("prefix_rule %s (%s) matches every command this one does and is stricter", d.text, map[Decision]string{Allow: "allow", Ask: "prompt", Deny: "forbidden"}[d.dec])})
				break
			}
		}
	}
	return out
}
