package policy

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLoadPolicy: no input makes the policy file loader panic, and a file
// that loads yields an engine that can decide.
func FuzzLoadPolicy(f *testing.F) {
	for _, s := range []string{
		"version: 1\nrules:\n  - {decision: deny, command: curl}\n",
		`{"allow": ["tool:view:.*"], "ask": ["tool:bash:.*"]}`,
		`{"version":1,"permissions":{"allow":[{"tool":"bash","command":"rg"}],"deny":[{"tool":"bash","command_glob":"rm*"}]}}`,
		`{"default": "ask", "rules": [{"pattern": "tool:bash,arg:command:*rm -rf*", "permission": "deny"}]}`,
		"roles:\n  r:\n    extends: developer\n    rules: [{decision: allow, path: \"docs/**\", tool: create_file}]\n",
		"roles:\n  a: {extends: b}\n  b: {extends: a}\n",
		"rules:\n  - {decision: ask, regex: \"tool:git:(?!push).*\"}\n",
		"agents:\n  x:\n    programs: [x]\n    views: [.x/cfg]\n    set_env: {A: \"1\"}\n    hosts: [api.example.com]\n",
		"&a [*a]", "{", "rules: !!binary x", "- - - -", "\t{\"a\":\t1}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := LoaderHooks.Parse("fuzz.yaml", data, LayerFile)
		if err != nil || d == nil {
			return
		}
		l := &Layers{Options: LoadOptions{Role: "developer"}, Documents: []*Document{d}}
		if l.Check() != nil {
			return // a role defined twice, a broken extends chain: a load error
		}
		e, err := l.Engine()
		if err != nil {
			if strings.Contains(err.Error(), "approvers.") {
				return // an approver granting a role no layer defines
			}
			t.Fatal(err)
		}
		for _, a := range []string{"tool:exec:ls", "tool:bash:git push && rm -rf /", "tool:view:a.md", "tool:git:status"} {
			r := e.Decide(Query{Action: a})
			_ = r.AppendJSON(nil)
		}
		for _, rs := range d.Roles {
			if e, err := l.engine(LoadOptions{Role: rs.Name}); err == nil {
				e.Decide(Query{Action: "tool:create_file:docs/x"})
			}
		}
	})
}

// FuzzParseAction: ParseAction never panics, round-trips through
// FormatAction, and Decide on any string returns a valid decision and JSON.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"tool:exec:ls -la", "tool:git:push origin main", "tool:bash:a && b", "tool:", "tool::", "tool:x", "x", "tool:view:a:b:c", "tool:bash:$(curl x|sh)", "tool:exec:'a b' \"c\""} {
		f.Add(s)
	}
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tool, detail, err := ParseAction(s)
		if err == nil {
			if FormatAction(tool, detail) != s && !(strings.Count(s, ":") == 1 && detail == "") {
				t.Fatalf("round trip %q -> %q %q", s, tool, detail)
			}
		}
		r := e.Decide(Query{Action: s})
		if r.Decision < Allow || r.Decision > Deny {
			t.Fatalf("decision %d", r.Decision)
		}
		if err != nil && r.Decision != Deny {
			t.Fatalf("invalid action %q decided %s", s, r.Decision)
		}
		b := r.AppendJSON(nil)
		if len(b) == 0 || b[0] != '{' {
			t.Fatal("bad JSON")
		}
	})
}

// FuzzGlob: the glob matchers never panic.
func FuzzGlob(f *testing.F) {
	f.Add("git status*", "git status -s")
	f.Add("**/docs/**", "target/docs/a.md")
	f.Add("[a-", "a")
	f.Fuzz(func(t *testing.T, pat, s string) {
		if g, err := compileGlob(pat); err == nil {
			got := g.match(s)
			// reference: the same glob as a regexp
			var b strings.Builder
			for i := 0; i < len(pat); i++ {
				switch c := pat[i]; c {
				case '*':
					b.WriteString("(?s:.*)")
				case '?':
					b.WriteString("(?s:.)")
				case '\\':
					i++
					b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
				default:
					b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
				}
			}
			if re, err := regexp.Compile("^(?:" + b.String() + ")$"); err == nil && utf8.ValidString(s) && utf8.ValidString(pat) {
				if want := re.MatchString(s); want != got {
					t.Fatalf("glob %q on %q = %v, regexp says %v", pat, s, got, want)
				}
			}
		}
		if g, err := compilePathGlob(pat); err == nil {
			g.match(s)
		}
		if r, err := compileFullRegex(pat); err == nil {
			r.match(s)
		}
	})
}

// FuzzLiteralPrefix: literalPrefixFast, when it answers, gives the regex
// parser's answer on every valid pattern.
func FuzzLiteralPrefix(f *testing.F) {
	for _, s := range []string{"tool:git:push .*", "tool:exec:npm (install|i) .*", "ab*", "ab+c", "a?", "ab$", "ab^", "x(?:y)", "a\\.b", "a[b]c", "", "a|b", "ab(c)|d", "a{2}", "ab.", "é", "(?i)ab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, re string) {
		if _, err := syntax.Parse(re, syntax.Perl); err != nil {
			return
		}
		p, exact, ok := literalPrefixFast(re)
		if !ok {
			return
		}
		if wp, we := literalPrefixParsed(re); p != wp || exact != we {
			t.Fatalf("literalPrefixFast(%q) = %q, %v; parsed: %q, %v", re, p, exact, wp, we)
		}
	})
}

// TestCheckedRegexIsCompile: compileFullRegex (syntax checked at load,
// compiled at first use) refuses exactly the patterns regexp.Compile
// refuses, and a pattern it accepts always compiles.
func TestCheckedRegexIsCompile(t *testing.T) {
	for _, src := range []string{
		`a`, `tool:exec:git (push|pull) .*`, `a)(b`, `a)|(b`, `(`, `x{1001}`, `x{2,1}`, `[z-a]`, `\8`,
		`(?P<n>a)`, `(?i)abc`, `a(?!b)c`, `a(?!b`, `((((((((((a))))))))))`, `\pN`, `\p{Nope}`, `a**`, `x{1000}{1000}`,
		strings.Repeat("(", 1001) + strings.Repeat(")", 1001),
	} {
		checkRegexVerdicts(t, src)
	}
}

// FuzzCheckedRegex: the same on any pattern.
func FuzzCheckedRegex(f *testing.F) {
	for _, s := range []string{`a`, `a(?!b)c`, `x{2,1}`, `(a|b)*c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) { checkRegexVerdicts(t, src) })
}

func checkRegexVerdicts(t *testing.T, src string) {
	t.Helper()
	fr, err := compileFullRegex(src)
	if err != nil {
		// Refused: either the lookahead split refused it, or compiling
		// the expressions would have failed too.
		if lf, lerr := lazyFullRegex(src); lerr == nil {
			if lf.compileNow() == nil {
				t.Errorf("%q refused (%v) but compiles", src, err)
			}
		}
		return
	}
	if err := fr.compileNow(); err != nil {
		t.Errorf("%q accepted but does not compile: %v", src, err)
	}
}
