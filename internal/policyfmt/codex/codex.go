// Package codex reads Codex CLI's execpolicy rules (~/.codex/rules/*.rules,
// a subset of Starlark) and decides them as Codex does:
//
//	prefix_rule(
//	    pattern = ["git", ["push", "fetch"]],   # tokens in order; a list is alternatives
//	    decision = "prompt",                    # allow (default) | prompt | forbidden
//	    justification = "...",
//	    match = [["git", "push", "origin", "main"]],   # examples checked at load
//	    not_match = ["git status"],                    # (strings are split like a shell)
//	)
//
// the strictest matching rule (forbidden > prompt > allow) over every
// command of a line; a line is allowed only when every command matches an
// allow rule; no match leaves it to the role.
//
// It owns how such a file is recognised, read, linted and decided, and
// reaches the policy loader only through load.RegisterFormat: it imports
// the decision core (policy) for its types and internal/command to split
// a shell line; never the loader, lint or presentation, and the core never
// imports it (arch_test.go).
package codex

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// name is how results and explanations name the format.
const name = "Codex execpolicy rules"

func init() { load.RegisterFormat(reader{}) }

// rule is one prefix_rule.
type rule struct {
	dec     policy.Decision
	pattern [][]string // per token: its alternatives
	why     string
	ref     policy.RuleRef
	text    string
}

// match reports whether argv starts with the rule's pattern.
func (r *rule) match(argv []string) bool {
	if len(argv) < len(r.pattern) {
		return false
	}
	for i, alts := range r.pattern {
		ok := false
		for _, a := range alts {
			if argv[i] == a || i == 0 && argv[0][strings.LastIndexByte(argv[0], '/')+1:] == a {
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

// reader is the format's policy.FormatReader.
type reader struct{}

// Name implements policy.FormatReader.
func (reader) Name() string { return "codex" }

// Fallback implements policy.FormatReader: asked with the other readers,
// in registration order.
func (reader) Fallback() bool { return false }

// Detect implements policy.FormatReader: a .rules or .codexpolicy file, or
// text starting (after # comments) with a rule call; never a YAML
// document.
func (reader) Detect(name string, data []byte, root *yaml.Node) bool {
	if root != nil {
		return false
	}
	if strings.HasSuffix(name, ".rules") || strings.HasSuffix(name, ".codexpolicy") {
		return true
	}
	trimmed := strings.TrimSpace(string(data))
	for strings.HasPrefix(trimmed, "#") {
		_, trimmed, _ = strings.Cut(trimmed, "\n")
		trimmed = strings.TrimSpace(trimmed)
	}
	return strings.HasPrefix(trimmed, "prefix_rule(") || strings.HasPrefix(trimmed, "prefix_rule (")
}

// rules are one file's prefix rules.
type rules []*rule

// Read implements policy.FormatReader: a syntax error ends the file; a
// bad rule or an unknown function is reported and reading goes on.
func (reader) Read(file string, layer policy.Layer, data []byte, _ *yaml.Node) (policy.FormatRules, []error) {
	var out rules
	var errs []error
	base := filepath.Base(file)
	s := &starlark{src: string(data), line: 1, col: 1}
	fail := func(err error) { errs = append(errs, fmt.Errorf("%s:%v", file, err)) }
	for {
		s.skip()
		if s.pos >= len(s.src) {
			return out, errs
		}
		line := s.line
		fn, args, err := s.call()
		if err != nil {
			fail(err)
			return out, errs
		}
		switch fn {
		case "prefix_rule":
			if r, err := ruleOf(args); err != nil {
				fail(fmt.Errorf("%d: prefix_rule: %v", line, err))
			} else {
				r.ref = policy.RuleRef{ID: fmt.Sprintf("%s:%d", base, line), Layer: layer, Source: fmt.Sprintf("%s:%d", file, line)}
				out = append(out, r)
			}
		case "host_executable", "network_rule":
			// Codex's own executable and network metadata: agentbox
			// identifies programs by content and decides hosts itself.
		default:
			fail(fmt.Errorf("%d: unknown function %s (want prefix_rule)", line, fn))
		}
	}
}

// call reads one call with keyword arguments: name(key = value, ...).
func (s *starlark) call() (string, map[string]slValue, error) {
	fn := s.ident()
	if fn == "" {
		return "", nil, s.errf("unexpected %q (want prefix_rule(...))", s.src[s.pos])
	}
	if err := s.expect('('); err != nil {
		return "", nil, err
	}
	args := map[string]slValue{}
	for {
		s.skip()
		if s.pos < len(s.src) && s.src[s.pos] == ')' {
			s.next()
			return fn, args, nil
		}
		name := s.ident()
		if name == "" {
			return "", nil, s.errf("want keyword arguments (name = value)")
		}
		if err := s.expect('='); err != nil {
			return "", nil, err
		}
		v, err := s.value(0)
		if err != nil {
			return "", nil, err
		}
		if _, dup := args[name]; dup {
			return "", nil, s.errf("argument %s given twice", name)
		}
		args[name] = v
		s.skip()
		if s.pos < len(s.src) && s.src[s.pos] == ',' {
			s.next()
			continue
		}
		if err := s.expect(')'); err != nil {
			return "", nil, err
		}
		return fn, args, nil
	}
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

// ruleOf builds a rule from prefix_rule's arguments and checks its
// examples.
func ruleOf(args map[string]slValue) (*rule, error) {
	r := &rule{dec: policy.Allow}
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
			r.dec = policy.Allow
		case "prompt":
			r.dec = policy.Ask
		case "forbidden":
			r.dec = policy.Deny
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

// layer is the one layer all Codex rule files form: every file's rules,
// at the last file's layer and position.
type layer struct {
	rules rules
	path  string
	where policy.Layer
	order int
}

// Merge implements policy.FormatReader: the files' rules in load order,
// at the last file's layer.
func (reader) Merge(files []policy.FormatSource) policy.Format {
	last := files[len(files)-1]
	l := &layer{path: last.Path, where: last.Layer, order: last.Order}
	for _, f := range files {
		l.rules = append(l.rules, f.Rules.(rules)...)
	}
	return l
}

// DenyAndAsk implements policy.FormatRules: prompt and forbidden rules.
func (rs rules) DenyAndAsk() policy.FormatRules {
	return slices.DeleteFunc(slices.Clone(rs), func(r *rule) bool { return r.dec == policy.Allow })
}

// Where implements policy.Format.
func (l *layer) Where() (policy.Layer, int) { return l.where, l.order }

// Info implements policy.Format.
func (l *layer) Info() policy.FormatInfo {
	return policy.FormatInfo{Format: "codex", File: l.path, Layer: l.where.String(), Default: policy.Ask.String(),
		Order: "the strictest matching prefix rule (forbidden > prompt > allow); else the role decides"}
}

// words are Codex's names of the decisions.
var words = map[policy.Decision]string{policy.Allow: "allow", policy.Ask: "prompt", policy.Deny: "forbidden"}

// Decide implements policy.Format: prefix rules decide commands only.
func (l *layer) Decide(q policy.FormatQuery) policy.FormatVerdict {
	if q.Net || q.Line == "" {
		return policy.FormatVerdict{None: true}
	}
	var argvs [][]string
	if q.Argv != nil {
		argvs = [][]string{q.Argv}
	} else if items, err := command.ParseShell(q.Line); err == nil {
		for _, it := range items {
			if it.Argv != nil && !it.Wrapper {
				argvs = append(argvs, it.Argv)
			}
		}
	}
	var strictest *rule
	all := len(argvs) > 0
	for _, argv := range argvs {
		var best *rule
		for _, r := range l.rules {
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
	if strictest == nil || strictest.dec == policy.Allow && !all {
		return policy.FormatVerdict{None: true}
	}
	why := fmt.Sprintf("%s %s: %s by prefix_rule %s", name, l.path,
		map[policy.Decision]string{policy.Allow: "allowed", policy.Ask: "prompt", policy.Deny: "forbidden"}[strictest.dec], strictest.text)
	if strictest.why != "" {
		why += ": " + strictest.why
	}
	return policy.FormatVerdict{Decision: strictest.dec, Rule: &strictest.ref, Reason: why}
}

// Lint implements policy.FormatRules: the strictest matching rule wins,
// so a rule whose pattern extends a stricter rule's pattern never decides.
func (rs rules) Lint() []policy.Finding {
	var out []policy.Finding
	for _, a := range rs {
		for _, d := range rs {
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
				out = append(out, policy.Finding{Source: a.ref.Source, Rule: a.ref.ID,
					Message: fmt.Sprintf("prefix_rule %s (%s) matches every command this one does and is stricter", d.text, words[d.dec])})
				break
			}
		}
	}
	return out
}
