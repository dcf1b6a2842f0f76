package shellquote

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
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

// parseWords reads line as bash would, with mvdan.cc/sh: the words of its
// one simple command, or an error if it is anything else.
func parseWords(line string) ([]string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, err
	}
	if len(f.Stmts) != 1 {
		return nil, fmt.Errorf("%d statements in %q", len(f.Stmts), line)
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(f.Stmts[0].Redirs) > 0 {
		return nil, fmt.Errorf("not one simple command: %q", line)
	}
	var out []string
	for _, w := range call.Args {
		s, err := expand.Literal(nil, w)
		if err != nil {
			return nil, fmt.Errorf("word %q of %q: %v", w.Lit(), line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// TestCommand: a suggested command reads back as the same words, and a
// word that would run something, or drive the terminal, neither does.
func TestCommand(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"agentbox", "quarantine", "/w/target/x/.git/hooks/pre-commit"}, "agentbox quarantine /w/target/x/.git/hooks/pre-commit"},
		{[]string{"agentbox", "quarantine", "/w/target/s;touch${IFS}PWNQ;#/.git/config"}, `agentbox quarantine '/w/target/s;touch${IFS}PWNQ;#/.git/config'`},
		{[]string{"agentbox", "quarantine", "/w/\x1b]0;owned\x07/hooks/x"}, `agentbox quarantine $'/w/\x1b]0;owned\a/hooks/x'`},
		{[]string{"it's"}, `"it's"`},
		{[]string{""}, "''"},
		{[]string{"evil\u202etxt"}, `$'evil\u202etxt'`},
		{[]string{"\xff"}, `$'\xff'`},
	}
	for _, tt := range tests {
		got := Command(tt.argv)
		if got != tt.want {
			t.Errorf("Command(%q) = %s, want %s", tt.argv, got, tt.want)
		}
		assertDisplaySafe(t, got)
		back, err := parseWords(got)
		if err != nil || !slices.Equal(back, tt.argv) {
			t.Errorf("Command(%q) = %s reads back as %q, %v", tt.argv, got, back, err)
		}
	}
}

// TestCommandPastedIntoShell: the suggested command for a directory named
// "s;touch${IFS}PWNQ;#", pasted into a real sh, passes the path as one
// argument and runs nothing else.
func TestCommandPastedIntoShell(t *testing.T) {
	dir := t.TempDir()
	word := filepath.Join(dir, "s;touch${IFS}PWNQ;#", "x")
	line := Command([]string{"printf", "%s\\n", word})
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c %s: %v %s", line, err, out)
	}
	if string(out) != word+"\n" {
		t.Errorf("sh -c %s printed %q, want %q", line, out, word+"\n")
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNQ")); err == nil {
		t.Errorf("sh -c %s ran touch PWNQ", line)
	}
}

// FuzzCommand: whatever the words (but a NUL byte, which no shell string
// holds), Command's line parses back, with mvdan.cc/sh, to the same words
// and holds nothing that drives a terminal.
func FuzzCommand(f *testing.F) {
	f.Add("quarantine", "s;touch${IFS}PWNQ;#")
	f.Add("\x1b]0;x\x07", "it's \\ \"q\"")
	f.Add("\xff\xfe", "\u202e\u200b~{a,b}*?[x]=$(id)`id`")
	f.Add("if", "!")
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a, 0) || strings.ContainsRune(b, 0) {
			t.Skip("reason: a shell word cannot hold a NUL byte")
		}
		argv := []string{"agentbox", a, b}
		line := Command(argv)
		assertDisplaySafe(t, line)
		back, err := parseWords(line)
		if err != nil || !slices.Equal(back, argv) {
			t.Fatalf("Command(%q) = %s reads back as %q, %v", argv, line, back, err)
		}
	})
}
