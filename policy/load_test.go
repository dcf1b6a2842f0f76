package policy

import (
	"strings"
	"testing"
)

func TestMatchers(t *testing.T) {
	globs := []struct {
		pat, s string
		want   bool
	}{
		{"git status*", "git status --short", true},
		{"git status*", "git statu", false},
		{"rg*", "rg -n foo", true},
		{"*rm -rf*", "sudo rm -rf /", true},
		{"a?c", "abc", true},
		{"a?c", "abbc", false},
		{"*.go", "x/y.go", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"", "", true},
		{"*", "", true},
		{"a*b*c", "abxbc", true},
		{"a*b*c", "acb", false},
		{"ü?", "üé", true},
	}
	for _, g := range globs {
		c, err := compileGlob(g.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.match(g.s); got != g.want {
			t.Errorf("glob %q match %q = %v", g.pat, g.s, got)
		}
	}
	paths := []struct {
		pat, s string
		want   bool
	}{
		{"*.md", "target/docs/a.md", true},
		{"*.md", "a.md", true},
		{"*.md", "a.mdx", false},
		{"docs/", "target/docs/x/y.html", true},
		{"/target", "target/a/b.go", true},
		{"/target", "x/target/a", false},
		{"target/**/.git/hooks", "target/.git/hooks/pre-commit", true},
		{"target/**/.git/hooks", "target/sub/mod/.git/hooks", true},
		{"target/**/.git/hooks", "target/.git/config", false},
		{".git", "target/.git/objects/ab", true},
		{"**", "anything/at/all", true},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"package.json", "target/package.json", true},
		{"**", "/etc/passwd", false},
		{"*.md", "../x.md", false},
		{"**", "target/../../x", false},
		{"/target", "./target/a/../b", true},
	}
	for _, p := range paths {
		c, err := compilePathGlob(p.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.match(p.s); got != p.want {
			t.Errorf("path %q match %q = %v", p.pat, p.s, got)
		}
	}
	for _, c := range []struct {
		re     string
		prefix string
		exact  bool
	}{
		{"tool:git:push.*", "tool:git:push", false},
		{"tool:git:commit", "tool:git:commit", true},
		{"tool:(ls|cat).*", "tool:", false},
		{"(?i)tool:x", "", false},
		{`tool:create_file:src/config\.json`, "tool:create_file:src/config.json", true},
	} {
		p, ex := literalPrefix(c.re)
		if p != c.prefix || ex != c.exact {
			t.Errorf("literalPrefix(%q) = %q %v", c.re, p, ex)
		}
	}
}

func TestPathGlobManyStars(t *testing.T) {
	g, err := compilePathGlob("**/a/**/a/**/a/**/a/**/b")
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("a/", 1500) + "c"
	if g.match(deep) {
		t.Fatal("matched")
	}
	if !g.match("x/a/a/y/a/a/b") || !g.match("a/a/a/a/b/c") {
		t.Fatal("did not match")
	}
	h, _ := compilePathGlob("target/**/.git/**/hooks")
	if !h.match("target/x/.git/y/hooks/pre") || h.match("target/.git/config") {
		t.Fatal("memo path")
	}
}
