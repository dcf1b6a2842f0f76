package policy

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
)

// Codex CLI's execpolicy rules (`~/.codex/rules/*.rules`, Starlark):
//
//	prefix_rule(
//	    pattern = ["git", ["push", "fetch"]],   # tokens in order; a list is alternatives
//	    decision = "prompt",                    # allow (default) | prompt | forbidden
//	    justification = "...",
//	    match = [["git", "push", "origin", "main"]],   # examples checked at load
//	    not_match = ["git status"],                    # (strings are split like a shell)
//	)
//
// decided as Codex decides: the strictest matching rule (forbidden > prompt
// > allow) over every command of a line; a line is allowed only when every
// command matches an allow rule; no match leaves it to the role.

// codexRule is one prefix_rule.
type codexRule struct {
	dec     Decision
	pattern [][]string // per token: its alternatives
	why     string
	ref     RuleRef
	text    string
}

// match reports whether argv starts with the rule's pattern.
func (r *codexRule) match(argv []string) bool {
	if len(argv) < len(r.pattern) {
		return false
	}
	for i, alts := range r.pattern {
		ok := false
		for _, a := range alts {
			if argv[i] == a || i == 0 && baseName(argv[0]) == a {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// starlark is a small reader for the subset of Starlark rule files use:
// calls with keyword arguments whose values are strings, lists and
// booleans; # comments. Errors carry line:column.
type starlark struct {
	src       string
	pos       int
	line, col int
}

type slValue struct {
	str   *string
	list  []slValue
	isLst bool
	line  int
}

func (s *starlark) errf(format string, args ...any) error {
	return fmt.Errorf("%d:%d: %s", s.line, s.col, fmt.Sprintf(format, args...))
}

func (s *starlark) next() byte {
	c := s.src[s.pos]
	s.pos++
	if c == '\n' {
		s.line, s.col = s.line+1, 1
	} else {
		s.col++
	}
	return c
}

func (s *starlark) skip() {
	for s.pos < len(s.src) {
		switch c := s.src[s.pos]; {
		case c == '#':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.next()
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.next()
		default:
			return
		}
	}
}

func (s *starlark) ident() string {
	start := s.pos
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || s.pos > start && c >= '0' && c <= '9' {
			s.next()
			continue
		}
		break
	}
	return s.src[start:s.pos]
}

func (s *starlark) expect(c byte) error {
	s.skip()
	if s.pos >= len(s.src) {
		return s.errf("expected %q, got end of file", c)
	}
	if s.src[s.pos] != c {
		return s.errf("expected %q, got %q", c, s.src[s.pos])
	}
	s.next()
	return nil
}

func (s *starlark) value(depth int) (slValue, error) {
	s.skip()
	if s.pos >= len(s.src) {
		return slValue{}, s.errf("expected a value, got end of file")
	}
	if depth > 8 {
		return slValue{}, s.errf("lists nested too deeply")
	}
	v := slValue{line: s.line}
	switch c := s.src[s.pos]; {
	case c == '"' || c == '\'':
		quote := c
		s.next()
		var b strings.Builder
		for {
			if s.pos >= len(s.src) || s.src[s.pos] == '\n' {
				return v, s.errf("unterminated string")
			}
			c := s.next()
			if c == quote {
				break
			}
			if c == '\\' && s.pos < len(s.src) {
				e := s.next()
				switch e {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(e)
				}
				continue
			}
			b.WriteByte(c)
		}
		str := b.String()
		v.str = &str
	case c == '[':
		s.next()
		v.isLst = true
		for {
			s.skip()
			if s.pos < len(s.src) && s.src[s.pos] == ']' {
				s.next()
				break
			}
			item, err := s.value(depth + 1)
			if err != nil {
				return v, err
			}
			v.list = append(v.list, item)
			s.skip()
			if s.pos < len(s.src) && s.src[s.pos] == ',' {
				s.next()
				continue
			}
			if err := s.expect(']'); err != nil {
				return v, err
			}
			break
		}
	case c >= 'A' && c <= 'Z':
		w := s.ident()
		if w != "True" && w != "False" && w != "None" {
			return v, s.errf("unexpected %q", w)
		}
		v.str = &w
	default:
		return v, s.errf("unexpected %q", c)
	}
	return v, nil
}

// parseCodexRules parses a rules file.
func (p *parser) parseCodexRules(data []byte, fd *fileDef) {
	fd.format = "codex"
	s := &starlark{src: string(data), line: 1, col: 1}
	fail := func(err error) { p.errs = append(p.errs, fmt.Errorf("%s:%v", p.file, err)) }
	for {
		s.skip()
		if s.pos >= len(s.src) {
			return
		}
		line := s.line
		fn := s.ident()
		if fn == "" {
			fail(s.errf("unexpected %q (want prefix_rule(...))", s.src[s.pos]))
			return
		}
		if err := s.expect('('); err != nil {
			fail(err)
			return
		}
		args := map[string]slValue{}
		for {
			s.skip()
			if s.pos < len(s.src) && s.src[s.pos] == ')' {
				s.next()
				break
			}
			name := s.ident()
			if name == "" {
				fail(s.errf("want keyword arguments (name = value)"))
				return
			}
			if err := s.expect('='); err != nil {
				fail(err)
				return
			}
			v, err := s.value(0)
			if err != nil {
				fail(err)
				return
			}
			if _, dup := args[name]; dup {
				fail(s.errf("argument %s given twice", name))
				return
			}
			args[name] = v
			s.skip()
			if s.pos < len(s.src) && s.src[s.pos] == ',' {
				s.next()
				continue
			}
			if err := s.expect(')'); err != nil {
				fail(err)
				return
			}
			break
		}
		switch fn {
		case "prefix_rule":
			if r, err := codexRuleOf(args); err != nil {
				fail(fmt.Errorf("%d: prefix_rule: %v", line, err))
			} else {
				r.ref = RuleRef{ID: fmt.Sprintf("%s:%d", p.base, line), Layer: p.layer, Source: fmt.Sprintf("%s:%d", p.file, line)}
				fd.codex = append(fd.codex, r)
			}
		case "host_executable", "network_rule":
			// Codex's own executable and network metadata: agentbox
			// identifies programs by content and decides hosts itself.
		default:
			fail(fmt.Errorf("%d: unknown function %s (want prefix_rule)", line, fn))
		}
	}
}

// codexRuleOf builds a rule from prefix_rule's arguments and checks its
// examples.
func codexRuleOf(args map[string]slValue) (*codexRule, error) {
	r := &codexRule{dec: Allow}
	for k := range args {
		switch k {
		case "pattern", "decision", "justification", "match", "not_match":
		default:
			return nil, fmt.Errorf("unknown argument %s", k)
		}
	}
	pat, ok := args["pattern"]
	if !ok || !pat.isLst || len(pat.list) == 0 {
		return nil, fmt.Errorf("pattern must be a non-empty list of tokens")
	}
	var texts []string
	for _, tok := range pat.list {
		switch {
		case tok.str != nil:
			r.pattern = append(r.pattern, []string{*tok.str})
			texts = append(texts, *tok.str)
		case tok.isLst && len(tok.list) > 0:
			var alts []string
			for _, a := range tok.list {
				if a.str == nil {
					return nil, fmt.Errorf("line %d: alternatives must be strings", a.line)
				}
				alts = append(alts, *a.str)
			}
			r.pattern = append(r.pattern, alts)
			texts = append(texts, "["+strings.Join(alts, "|")+"]")
		default:
			return nil, fmt.Errorf("line %d: a pattern token is a string or a list of strings", tok.line)
		}
	}
	r.text = strings.Join(texts, " ")
	if d, ok := args["decision"]; ok {
		if d.str == nil {
			return nil, fmt.Errorf("decision must be a string")
		}
		switch *d.str {
		case "allow":
			r.dec = Allow
		case "prompt":
			r.dec = Ask
		case "forbidden":
			r.dec = Deny
		default:
			return nil, fmt.Errorf("decision %q: want allow, prompt or forbidden", *d.str)
		}
	}
	if j, ok := args["justification"]; ok && j.str != nil {
		r.why = *j.str
	}
	for _, k := range []string{"match", "not_match"} {
		ex, ok := args[k]
		if !ok {
			continue
		}
		if !ex.isLst {
			return nil, fmt.Errorf("%s must be a list of examples", k)
		}
		for _, e := range ex.list {
			var argv []string
			switch {
			case e.str != nil:
				w, err := command.SplitWords(*e.str)
				if err != nil {
					return nil, fmt.Errorf("%s example %q: %v", k, *e.str, err)
				}
				argv = w
			case e.isLst:
				for _, a := range e.list {
					if a.str == nil {
						return nil, fmt.Errorf("%s example: tokens must be strings", k)
					}
					argv = append(argv, *a.str)
				}
			default:
				return nil, fmt.Errorf("%s example must be a string or a list of strings", k)
			}
			if got := r.match(argv); got != (k == "match") {
				verb := "does not match"
				if got {
					verb = "matches"
				}
				return nil, fmt.Errorf("%s example %q %s pattern %s (line %d)", k, strings.Join(argv, " "), verb, r.text, e.line)
			}
		}
	}
	return r, nil
}

// codexDecide applies the layer's prefix rules to q.
func (fl *formatLayer) codexDecide(q *FormatQuery) formatVerdict {
	if q.Line == "" {
		return formatVerdict{none: true, fl: fl}
	}
	var argvs [][]string
	if q.Argv != nil {
		argvs = [][]string{q.Argv}
	} else if items, err := parseShell(q.Line); err == nil {
		for _, it := range items {
			if it.Argv != nil && !it.Wrapper {
				argvs = append(argvs, it.Argv)
			}
		}
	}
	var strictest *codexRule
	all := len(argvs) > 0
	for _, argv := range argvs {
		var best *codexRule
		for _, r := range fl.codex {
			if r.match(argv) && (best == nil || r.dec > best.dec) {
				best = r
			}
		}
		if best == nil {
			all = false
			continue
		}
		if strictest == nil || best.dec > strictest.dec {
			strictest = best
		}
	}
	if strictest == nil || strictest.dec == Allow && !all {
		return formatVerdict{none: true, fl: fl}
	}
	why := fmt.Sprintf("%s %s: %s by prefix_rule %s", formatName[fl.format], fl.path,
		map[Decision]string{Allow: "allowed", Ask: "prompt", Deny: "forbidden"}[strictest.dec], strictest.text)
	if strictest.why != "" {
		why += ": " + strictest.why
	}
	return formatVerdict{dec: strictest.dec, ref: &strictest.ref, reason: why, fl: fl}
}
