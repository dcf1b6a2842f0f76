package shellquote

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestDisplay(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"git", "push", "origin", "main"}, "git push origin main"},
		{[]string{"git", "commit", "-m", "fix it"}, "git commit -m 'fix it'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"sh", "-c", "a;b|c&&$x"}, `sh -c 'a;b|c&&$x'`},
		{[]string{""}, "''"},
		{[]string{"x", "\x1b[2K\rALLOWED"}, `x $'\x1b[2K\rALLOWED'`},
		{[]string{"a\nb"}, `$'a\nb'`},
		{[]string{"it's\t"}, `$'it\'s\t'`},
		{[]string{"\xff\\"}, `$'\xff\\'`},
		{[]string{"evil\u202etxt.exe"}, `$'evil\u202etxt.exe'`},
		{[]string{"zero\u200bwidth"}, `$'zero\u200bwidth'`},
		{[]string{"c1\u009b31m"}, `$'c1\u009b31m'`},
		{[]string{"café", "日本"}, "café 日本"},
	}
	for _, tt := range tests {
		if got := Display(tt.argv); got != tt.want {
			t.Errorf("Display(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
	if got := Sanitize("/tmp/\x1b]0;pwned\x07\\x"); got != `/tmp/\x1b]0;pwned\x07\\x` {
		t.Errorf("Sanitize = %s", got)
	}
}

// assertDisplaySafe fails if s holds anything that could move the cursor,
// clear the line or reorder text on a terminal.
func assertDisplaySafe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("not valid UTF-8: %q", s)
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
			t.Fatalf("unsafe rune %U in %q", r, s)
		}
	}
}

func FuzzDisplay(f *testing.F) {
	f.Add("git", "\x1b[2K\rALLOWED")
	f.Add("it's", "\xff\u202e")
	f.Add("", "a b")
	f.Fuzz(func(t *testing.T, a, b string) {
		assertDisplaySafe(t, Display([]string{a, b}))
		assertDisplaySafe(t, Sanitize(a))
	})
}
