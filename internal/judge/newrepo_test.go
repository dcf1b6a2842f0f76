package judge

import (
	"strings"
	"testing"
)

func TestNoteNewRepo(t *testing.T) {
	for _, tc := range []struct {
		argv string
		want string
	}{
		{"git init", "/w/t"},
		{"git init -q -b main sub", "/w/t/sub"},
		{"git init --template /x ../other", "/w/other"},
		{"git -C sub init", "/w/t/sub"},
		{"git clone https://h/org/proj.git", "/w/t/proj"},
		{"git clone --depth 1 -b dev https://h/org/proj.git there", "/w/t/there"},
		{"git clone /w/t/remote.git/", "/w/t/remote"},
		{"git status", ""},
		{"git clone", ""},
	} {
		p := &Judge{}
		p.noteNewRepo(strings.Fields(tc.argv), "/w/t")
		got := strings.Join(p.NewRepos(), ",")
		if got != tc.want {
			t.Errorf("%s: recorded %q, want %q", tc.argv, got, tc.want)
		}
	}
}
