package capfield

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		keep string // the head kept ("" with cut false: unchanged)
		cut  bool
	}{
		{"short", 10, "short", false},
		{strings.Repeat("a", 20), 10, strings.Repeat("a", 10), true},
		{"ééééé", 3, "é", true}, // never half a rune
	} {
		got := Value(c.in, c.n)
		if !c.cut && got != c.in {
			t.Errorf("Value(%q, %d) = %q; want it unchanged", c.in, c.n, got)
		}
		if c.cut && (!strings.HasPrefix(got, c.keep+"…[cut: ") || !utf8.ValidString(got) || !strings.Contains(got, "sha256:")) {
			t.Errorf("Value(%q, %d) = %q; want %q and a marker", c.in, c.n, got, c.keep)
		}
	}
}

func TestWords(t *testing.T) {
	ws := []string{"a", strings.Repeat("b", 100), "c", "d"}
	if got := Words(ws, 200, 1000); len(got) != 4 || got[1] != ws[1] {
		t.Errorf("fitting words changed: %q", got)
	}
	got := Words(ws, 10, 1000)
	if len(got) != 4 || !strings.HasPrefix(got[1], "bbbbbbbbbb…[cut: 100 bytes") {
		t.Errorf("long word not cut: %q", got)
	}
	got = Words(ws, 200, 50)
	if len(got) != 2 || !strings.HasPrefix(got[1], "…[3 more words cut: ") {
		t.Errorf("words past the total not folded into a marker: %q", got)
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a\nb\tc\x1b[31md\x7f", 40, "a b c [31md "}, // one line, no terminal escapes
		{strings.Repeat("a", 20), 10, strings.Repeat("a", 10) + "..."},
		{"ab\ncd", 3, "ab ..."},
	} {
		if got := Line(c.in, c.n); got != c.want {
			t.Errorf("Line(%q, %d) = %q; want %q", c.in, c.n, got, c.want)
		}
	}
}
