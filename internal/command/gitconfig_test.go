package command

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseGitConfig(t *testing.T) {
	src := `# comment
[core]
	bare = false
	editor = vim ; trailing comment
[alias]
	p = push
	s = "status  --short" # quoted keeps spaces
	Long = log \
	  --oneline
	sh = !git push \"origin\"
	flag
[remote "Origin"]
	url = /tmp/x.git
[Include]
	path = other.cfg
[section.sub]
	key = v
`
	got, err := ParseGitConfig([]byte(src), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"core.bare": "false", "core.editor": "vim", "alias.p": "push", "alias.s": "status  --short",
		"alias.long": "log    --oneline", "alias.sh": `!git push "origin"`, "alias.flag": "true",
		"remote.Origin.url": "/tmp/x.git", "include.path": "other.cfg", "section.sub.key": "v",
	}
	have := map[string]string{}
	for _, e := range got {
		have[e.Key] = e.Value
	}
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("got %v\nwant %v", have, want)
	}
	for _, bad := range []string{"[core\n", "x = 1\n", "[a]\nk = \"open\n", "[a]\nk = \\q\n", "[a \"b]\n"} {
		if _, err := ParseGitConfig([]byte(bad), "bad"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestParseGitConfigAgainstGit checks the parser against git's own reading
// of the same file.
func TestParseGitConfigAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	src := "[alias]\n\ta = \"x  y\" z\n\tb = one\\\n two\n\tc = !sh -c 'echo hi' ; c\n[x \"Sub\\\"q\"]\n\tK = 1\n"
	f := filepath.Join(t.TempDir(), "cfg")
	os.WriteFile(f, []byte(src), 0o644)
	out, err := exec.Command("git", "config", "--file", f, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseGitConfig([]byte(src), f)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, e := range got {
		mine = append(mine, e.Key+"="+e.Value)
	}
	if strings.Join(mine, "\n")+"\n" != string(out) {
		t.Fatalf("mine:\n%s\ngit:\n%s", strings.Join(mine, "\n"), out)
	}
}

func TestParseConfigParameters(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{`'alias.st'='status'`, []string{"alias.st=status"}, false},
		{`'core.pager=less' 'Remote.X.URL'='a b'`, []string{"core.pager=less", "remote.X.url=a b"}, false},
		{`'a.b'='it'\''s'`, []string{"a.b=it's"}, false},
		{`'a.b`, nil, true},
		{`a.b=c`, nil, true},
	}
	for _, c := range cases {
		got, err := ParseGitConfigParameters(c.in)
		if (err != nil) != c.err {
			t.Errorf("%q: err %v", c.in, err)
			continue
		}
		var s []string
		for _, e := range got {
			s = append(s, e.Key+"="+e.Value)
		}
		if !c.err && !reflect.DeepEqual(s, c.want) {
			t.Errorf("%q: got %v want %v", c.in, s, c.want)
		}
	}
}

func TestSplitAliasCmdline(t *testing.T) {
	cases := map[string][]string{
		`push origin`:          {"push", "origin"},
		`log "--format=%h %s"`: {"log", "--format=%h %s"},
		`a 'b c' d\ e`:         {"a", "b c", "d e"},
		`""`:                   {""},
	}
	for in, want := range cases {
		got, err := SplitGitAlias(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := SplitGitAlias(`a "b`); err == nil {
		t.Error("unclosed quote accepted")
	}
}

func FuzzParseGitConfig(f *testing.F) {
	for _, s := range []string{"[a]\nb = c\n", "[a \"b\"]\n\tc = \"d\\\"\" ; x\n", "[a]\nb = c\\\nd\n", "[", "[a]\nb"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, _ := ParseGitConfig(data, "fuzz")
		for _, e := range es {
			if e.Key == "" {
				t.Fatal("empty key")
			}
		}
	})
}

func FuzzParseConfigParameters(f *testing.F) {
	f.Add(`'a.b'='c' 'd.e=f'`)
	f.Add(`'a.b'='it'\''s'`)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseGitConfigParameters(s)
		_, _ = SplitGitAlias(s)
	})
}

func FuzzGitCommitHasMessage(f *testing.F) {
	f.Add("-am\x00msg")
	f.Add("--mess=x\x00--amend")
	f.Add("-F")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = GitCommitHasMessage(strings.Split(s, "\x00"))
	})
}
