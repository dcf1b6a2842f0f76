package approval

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		in      string
		want    Answer
		allowed bool
		always  bool
	}{
		{"allow", AllowOnce, true, false},
		{"allow_always", AllowAlways, true, true},
		{"deny", DenyOnce, false, false},
		{"deny_always", DenyAlways, false, true},
		{"remember", Remember, true, false},
	}
	for _, tt := range tests {
		got, err := ParseAnswer(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseAnswer(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in || got.Allowed() != tt.allowed || got.Always() != tt.always {
			t.Errorf("%v: String=%q Allowed=%v Always=%v", got, got.String(), got.Allowed(), got.Always())
		}
	}
	for _, bad := range []string{"", "Allow", "ALLOW", "yes", "y", "allow ", "allow_once", "0", "invalid"} {
		if a, err := ParseAnswer(bad); err == nil {
			t.Errorf("ParseAnswer(%q) = %v, want error", bad, a)
		}
	}
	var zero Answer
	if zero.Allowed() || zero.String() != "invalid" || Answer(99).Allowed() {
		t.Error("zero or out-of-range Answer must not allow")
	}
}

func TestNewSpec(t *testing.T) {
	for _, spec := range []string{"", "ttyy", "socket:", "socket", "auto", "None"} {
		_, err := New(spec, Options{})
		if err == nil || !strings.Contains(err.Error(), "--approve") || !strings.Contains(err.Error(), `"`+spec+`"`) {
			t.Errorf("New(%q) error = %v, want one naming the value", spec, err)
		}
	}
	a, err := New("none", Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Approve(context.Background(), Request{Argv: []string{"git", "push"}})
	if !errors.Is(err, ErrUnavailable) || resp.Answer.Allowed() {
		t.Errorf("none: got %v, %v; want ErrUnavailable", resp, err)
	}
}

func TestQuoteArgv(t *testing.T) {
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
		if got := QuoteArgv(tt.argv); got != tt.want {
			t.Errorf("QuoteArgv(%q) = %s, want %s", tt.argv, got, tt.want)
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

func FuzzQuoteArgv(f *testing.F) {
	f.Add("git", "\x1b[2K\rALLOWED")
	f.Add("it's", "\xff\u202e")
	f.Add("", "a b")
	f.Fuzz(func(t *testing.T, a, b string) {
		assertDisplaySafe(t, QuoteArgv([]string{a, b}))
		assertDisplaySafe(t, Sanitize(a))
	})
}
