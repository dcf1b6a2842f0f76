package policy

import (
	"fmt"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file holds the rule matchers: Chorus regexes (full match, with a
// translation of the negative-lookahead form Go's RE2 lacks), Codelia globs
// (* and ?), and gitignore-style path globs. Everything is compiled once when
// a policy is loaded; matching allocates nothing.

// fullRegex is a Chorus regex matched against the whole subject string.
//
// Go's regexp (RE2) has no lookaround. Chorus profiles commonly use one
// negative lookahead such as "tool:git:(?!push).*" or
// "tool:git:push origin (?!main).*". A pattern of the form A(?!B)C, with the
// lookahead at the top level, is evaluated as "matches AC and does not match
// A(?:B).*" — exactly the lookahead's meaning when A matches a fixed string
// (the usual case: a literal prefix), and a close, stricter-leaning
// approximation otherwise. Nested or multiple lookarounds are rejected.
type fullRegex struct {
	src      string
	pos, neg string         // the pattern without its lookahead, and the lookahead's
	once     sync.Once      // compiles re and not (compileNow)
	err      error          // compile error (never for a validated pattern)
	re       *regexp.Regexp // ^(?:AC)$
	not      *regexp.Regexp // ^(?:A(?:B)(?s:.*))$, nil without lookahead
	prefix   string         // literal prefix of the pattern
	exact    bool           // the pattern is one literal string
}

// compileFullRegex returns the full-match matcher of src (a pattern of a
// policy file). A bad pattern is an error now; the matcher itself is compiled at first
// use: regexp.Compile fails only where its syntax.Parse does (the compile
// steps after it cannot fail), so parsing the very expressions
// compileNow compiles is the whole check, at a fifth of the cost
// (BenchmarkLoad1000Rules). TestCheckedRegexIsCompile holds the two to the
// same verdict.
func compileFullRegex(src string) (*fullRegex, error) {
	fr, err := lazyFullRegex(src)
	if err != nil {
		return nil, err
	}
	for _, expr := range fr.exprs() {
		if _, err := syntax.Parse(expr, syntax.Perl); err != nil {
			return nil, fmt.Errorf("invalid regex %q: %w", src, unwrapRegexErr(err))
		}
	}
	return fr, nil
}

// exprs are the regular expressions compileNow compiles.
func (f *fullRegex) exprs() []string {
	if f.neg == "" {
		return []string{`^(?:` + f.pos + `)$`}
	}
	return []string{`^(?:` + f.pos + `)$`, `^(?:` + f.neg + `)$`}
}

// lazyFullRegex checks src's syntax and literal prefix now and compiles
// the matcher at its first use: the built-in roles' hundreds of patterns
// cost a launch only the few that a decision tries.
func lazyFullRegex(src string) (*fullRegex, error) {
	pos, neg, err := splitLookahead(src)
	if err != nil {
		return nil, err
	}
	fr := &fullRegex{src: src, pos: pos, neg: neg}
	fr.prefix, fr.exact = literalPrefix(pos)
	if neg != "" {
		fr.exact = false
	}
	return fr, nil
}

// compileNow compiles the matcher (once).
func (f *fullRegex) compileNow() error {
	f.once.Do(func() {
		ex := f.exprs()
		f.re, f.err = regexp.Compile(ex[0])
		if f.err == nil && len(ex) > 1 {
			f.not, f.err = regexp.Compile(ex[1])
		}
	})
	return f.err
}

func unwrapRegexErr(err error) error {
	if se, ok := err.(*syntax.Error); ok {
		return fmt.Errorf("%s: %q", se.Code, se.Expr)
	}
	return err
}

// match reports whether s fully matches. Callers check the literal prefix
// first; match does not.
func (f *fullRegex) match(s string) bool {
	if f.compileNow() != nil || !f.re.MatchString(s) {
		return false
	}
	return f.not == nil || !f.not.MatchString(s)
}

// splitLookahead turns A(?!B)C into pos=AC, neg=A(?:B)(?s:.*). Without a
// lookahead it returns src, "". It rejects lookbehind, positive lookahead
// and more than one lookaround, which RE2 cannot express.
func splitLookahead(src string) (pos, neg string, err error) {
	depth := 0
	start, end := -1, -1
	walkRegex(src, func(i int, c byte) bool {
		switch c {
		case '(':
			if strings.HasPrefix(src[i:], "(?=") || strings.HasPrefix(src[i:], "(?<=") || strings.HasPrefix(src[i:], "(?<!") {
				err = fmt.Errorf("invalid regex %q: lookbehind and positive lookahead are not supported (RE2); only one top-level negative lookahead (?!...) is", src)
				return true
			}
			if strings.HasPrefix(src[i:], "(?!") {
				if depth != 0 || start >= 0 {
					err = fmt.Errorf("invalid regex %q: only one negative lookahead (?!...), at the top level, is supported (RE2)", src)
					return true
				}
				start = i
			}
			depth++
		case ')':
			depth--
			if depth == 0 && start >= 0 && end < 0 {
				end = i
			}
		}
		return false
	})
	if err != nil {
		return "", "", err
	}
	if start < 0 {
		return src, "", nil
	}
	if end < 0 {
		return "", "", fmt.Errorf("invalid regex %q: unclosed (?!", src)
	}
	a, b, c := src[:start], src[start+3:end], src[end+1:]
	return a + c, a + "(?:" + b + ")(?s:.*)", nil
}

// walkRegex calls visit with each character of the regular expression src
// that is neither escaped nor inside a bracket class (a "]" right after
// "[" or "[^" belongs to the class), with its index, until visit returns
// true: the structure (groups, alternation) the checks above read.
func walkRegex(src string, visit func(i int, c byte) bool) {
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(src) && src[i+1] == '^' {
				i++
			}
			if i+1 < len(src) && src[i+1] == ']' {
				i++
			}
		default:
			if visit(i, c) {
				return
			}
		}
	}
}

// literalPrefix returns the literal text every match of re must start with,
// and whether re matches only that text.
func literalPrefix(re string) (string, bool) {
	if prefix, exact, ok := literalPrefixFast(re); ok {
		return prefix, exact
	}
	return literalPrefixParsed(re)
}

// literalPrefixFast is literalPrefix without parsing for the shapes the
// built-in roles use ("tool:git:push .*", "tool:exec:npm (install|i) ...")
// : a run of plain ASCII characters, then the end, '.', '^', '$', a
// capturing group or a quantifier. Anything else (escapes, classes,
// braces, flags, non-capturing groups, a top-level '|', non-ASCII) says
// !ok and is parsed. It assumes re is valid (FuzzLiteralPrefix holds it to
// the parsed answer on every valid pattern); an invalid one fails to
// compile anyway.
func literalPrefixFast(re string) (prefix string, exact, ok bool) {
	i := 0
	for i < len(re) && plainRegexByte(re[i]) {
		i++
	}
	if i == len(re) {
		return re, true, true
	}
	if hasTopLevelAlt(re) {
		return "", false, false
	}
	switch re[i] {
	case '.', '^', '$':
		return re[:i], false, true
	case '(':
		if i+1 < len(re) && re[i+1] == '?' {
			return "", false, false
		}
		return re[:i], false, true
	case '*', '+', '?':
		if i == 0 {
			return "", false, false
		}
		return re[:i-1], false, true // the quantifier takes the last character
	}
	return "", false, false
}

// plainRegexByte reports whether c stands for itself in a regex wherever
// it appears.
func plainRegexByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte(" :_-/=,@%!#&~'\"`;<>", c) >= 0
}

// literalPrefixParsed is literalPrefix by the regex parser.
func literalPrefixParsed(re string) (string, bool) {
	t, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "", false
	}
	t = t.Simplify()
	lit := func(n *syntax.Regexp) (string, bool) {
		if n.Op == syntax.OpLiteral && n.Flags&syntax.FoldCase == 0 {
			return string(n.Rune), true
		}
		return "", false
	}
	if s, ok := lit(t); ok {
		return s, true
	}
	if t.Op == syntax.OpEmptyMatch {
		return "", true
	}
	if t.Op != syntax.OpConcat {
		return "", false
	}
	var b strings.Builder
	for i, sub := range t.Sub {
		s, ok := lit(sub)
		if !ok {
			return b.String(), false
		}
		b.WriteString(s)
		if i == len(t.Sub)-1 {
			return b.String(), true
		}
	}
	return b.String(), false
}

// glob is a Codelia/Forge glob: '*' matches any run of characters (including
// '/' and spaces), '?' one character, '\' escapes the next character;
// everything else is literal.
type glob struct {
	src    string
	segs   []globSeg
	prefix string // literal text before the first wildcard
	exact  bool
}

type globSeg struct {
	lit  string
	star bool // '*' before lit
	qm   int  // number of '?' before lit (after star)
}

func compileGlob(src string) (*glob, error) {
	g := &glob{src: src}
	var lit strings.Builder
	cur := globSeg{}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '\\':
			if i+1 >= len(src) {
				return nil, fmt.Errorf("invalid glob %q: trailing backslash", src)
			}
			i++
			lit.WriteByte(src[i])
		case '*', '?':
			if lit.Len() > 0 {
				cur.lit = lit.String()
				g.segs = append(g.segs, cur)
				lit.Reset()
				cur = globSeg{}
			}
			if c == '*' {
				cur.star = true
			} else {
				cur.qm++
			}
		default:
			lit.WriteByte(c)
		}
	}
	cur.lit = lit.String()
	g.segs = append(g.segs, cur)
	g.exact = true
	var p strings.Builder
	for _, s := range g.segs {
		if s.star || s.qm > 0 {
			g.exact = false
			break
		}
		p.WriteString(s.lit)
	}
	g.prefix = p.String()
	return g, nil
}

// match reports whether the whole of s matches the glob.
func (g *glob) match(s string) bool { return globMatch(g.segs, s) }

// globMatch matches in O(len(segs)*len(s)): on a mismatch it only ever
// backtracks to the most recent '*', which is enough for '*'/'?' globs, so a
// hostile subject cannot make matching exponential.
func globMatch(segs []globSeg, s string) bool {
	starSeg, starPos := -1, 0
	i, pos := 0, 0
	for {
		if i == len(segs) {
			if pos == len(s) {
				return true
			}
		} else {
			seg := segs[i]
			if seg.star {
				starSeg, starPos = i, pos
			}
			if seg.star && seg.qm == 0 && seg.lit != "" {
				// jump to the next occurrence of the literal
				j := strings.Index(s[pos:], seg.lit)
				if j < 0 {
					return false // no later position can match either
				}
				pos += j
				starPos = pos
			}
			if p, ok := matchSegHere(seg, s, pos); ok {
				if !seg.star || i+1 < len(segs) || p == len(s) {
					i, pos = i+1, p
					continue
				}
			}
		}
		// mismatch: let the last '*' swallow one more rune
		if starSeg < 0 || starPos >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starPos:])
		starPos += n
		i, pos = starSeg, starPos
		// re-enter the starred segment without resetting its start
		seg := segs[i]
		p, ok := matchSegHere(seg, s, pos)
		if !ok {
			continue
		}
		if i+1 == len(segs) && p != len(s) {
			continue
		}
		i, pos = i+1, p
	}
}

// matchSegHere matches seg's '?'s and literal at s[pos:] (its '*' is handled
// by the caller) and returns the position after it.
func matchSegHere(seg globSeg, s string, pos int) (int, bool) {
	for q := 0; q < seg.qm; q++ {
		if pos >= len(s) {
			return 0, false
		}
		_, n := utf8.DecodeRuneInString(s[pos:])
		pos += n
	}
	if !strings.HasPrefix(s[pos:], seg.lit) {
		return 0, false
	}
	return pos + len(seg.lit), true
}

// pathGlob is a gitignore-style path pattern relative to the workspace:
//   - '*', '?' and '[...]' match within one path segment;
//   - '**' as a whole segment matches zero or more segments;
//   - a pattern without a '/' (other than a trailing one) matches at any depth
//     ("*.md" matches "target/docs/a.md"); a leading '/' anchors at the root;
//   - a pattern that matches a directory also matches everything beneath it
//     (".git" matches "target/.git/config").
type pathGlob struct {
	src     string
	segs    []string
	lead    string // literal first segment of an anchored pattern ("" if none)
	literal int    // number of literal (non-wildcard) characters: specificity
}

func compilePathGlob(src string) (*pathGlob, error) {
	p := strings.TrimSpace(src)
	if p == "" {
		return nil, fmt.Errorf("invalid path glob %q: empty", src)
	}
	p = strings.TrimSuffix(p, "/")
	anchored := strings.HasPrefix(p, "/") || strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		p = "**"
	}
	var segs []string
	for _, seg := range strings.Split(p, "/") {
		if seg == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue // a/**/**/b is a/**/b
		}
		segs = append(segs, seg)
	}
	if !anchored && segs[0] != "**" {
		segs = append([]string{"**"}, segs...)
	}
	g := &pathGlob{src: src, segs: segs}
	if segs[0] != "**" && !strings.ContainsAny(segs[0], "*?[\\") {
		g.lead = segs[0]
	}
	for _, s := range segs {
		if s == "**" {
			continue
		}
		if strings.Contains(s, "**") {
			return nil, fmt.Errorf("invalid path glob %q: '**' must be a whole path segment", src)
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("invalid path glob %q: %w", src, err)
		}
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '*', '?', '[', ']':
			case '\\':
				i++
				g.literal++
			default:
				g.literal++
			}
		}
	}
	return g, nil
}

// match reports whether rel (a slash-separated path relative to the
// workspace) or one of its parent directories matches.
func (g *pathGlob) match(rel string) bool {
	// Patterns are relative to the workspace: a path outside it (absolute
	// after the engine made workspace paths relative, or climbing out with
	// "..") matches no path pattern, not even "**".
	rel = path.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "../") {
		return false
	}
	if g.lead != "" && (!strings.HasPrefix(rel, g.lead) || len(rel) > len(g.lead) && rel[len(g.lead)] != '/') {
		return false
	}
	stars := 0
	for _, s := range g.segs {
		if s == "**" {
			stars++
		}
	}
	if stars > 1 {
		// several '**' could try every split of a deep path: memoize
		// failures by (pattern segment, path offset).
		return matchSegsMemo(g.segs, rel, 0, 0, map[[2]int]bool{})
	}
	return matchSegs(g.segs, rel)
}

func matchSegsMemo(segs []string, full string, si, off int, failed map[[2]int]bool) bool {
	key := [2]int{si, off}
	if failed[key] {
		return false
	}
	ok := matchSegsAt(segs, full, si, off, failed)
	if !ok {
		failed[key] = true
	}
	return ok
}

func matchSegsAt(segs []string, full string, si, off int, failed map[[2]int]bool) bool {
	p := full[off:]
	if si == len(segs) {
		return true
	}
	if segs[si] == "**" {
		if matchSegsMemo(segs, full, si+1, off, failed) {
			return true
		}
		for i := 0; i < len(p); i++ {
			if p[i] == '/' && matchSegsMemo(segs, full, si+1, off+i+1, failed) {
				return true
			}
		}
		return si+1 == len(segs)
	}
	if p == "" {
		return false
	}
	head, restOff := p, len(full)
	if i := strings.IndexByte(p, '/'); i >= 0 {
		head, restOff = p[:i], off+i+1
	}
	if ok, _ := path.Match(segs[si], head); !ok {
		return false
	}
	if restOff >= len(full) && strings.IndexByte(p, '/') < 0 {
		return si+1 == len(segs)
	}
	return matchSegsMemo(segs, full, si+1, restOff, failed)
}

// matchSegs matches pattern segments against the path, allowing the pattern to
// end at a directory boundary (a match of a parent matches its contents).
func matchSegs(segs []string, p string) bool {
	if len(segs) == 0 {
		return true // the pattern matched a parent directory of p (or p itself)
	}
	if segs[0] == "**" {
		if matchSegs(segs[1:], p) {
			return true
		}
		for i := 0; i < len(p); i++ {
			if p[i] == '/' && matchSegs(segs[1:], p[i+1:]) {
				return true
			}
		}
		return len(segs) == 1
	}
	if p == "" {
		return false
	}
	head, rest := p, ""
	if i := strings.IndexByte(p, '/'); i >= 0 {
		head, rest = p[:i], p[i+1:]
	}
	if ok, _ := path.Match(segs[0], head); !ok {
		return false
	}
	if rest == "" {
		return len(segs) == 1 // "dir/**" matches inside dir, not dir itself
	}
	return matchSegs(segs[1:], rest)
}
