package policy

import (
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

// String is the finding as `agentbox policy validate` prints it.
func (f Finding) String() string {
	if f.Partial {
		return f.Source + ": rule " + f.Rule + " in part never matches: " + f.Message
	}
	return f.Source + ": rule " + f.Rule + " can never decide: " + f.Message
}

// ruleSetOf is a set of loaded rules for reading (lint): each a copy whose
// order is its index (rules are in load order), sharing the matchers.
func ruleSetOf(rules []*rule) *RuleSet {
	rs := &RuleSet{}
	for _, r := range rules {
		c := *r
		c.order = len(rs.sub.rules)
		rs.sub.rules = append(rs.sub.rules, &c)
	}
	return rs
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
