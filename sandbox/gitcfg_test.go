package sandbox

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
	got, err := parseGitConfig([]byte(src), "cfg")
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
		if _, err := parseGitConfig([]byte(bad), "bad"); err == nil {
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
	got, err := parseGitConfig([]byte(src), f)
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
		got, err := parseConfigParameters(c.in)
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
		got, err := splitAliasCmdline(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := splitAliasCmdline(`a "b`); err == nil {
		t.Error("unclosed quote accepted")
	}
}

func TestFindGitDir(t *testing.T) {
	d := t.TempDir()
	repo := filepath.Join(d, "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	os.MkdirAll(filepath.Join(repo, "a", "b"), 0o755)
	if got := findGitDir(filepath.Join(repo, "a", "b"), ""); got != filepath.Join(repo, ".git") {
		t.Errorf("walk up: %q", got)
	}
	wt := filepath.Join(d, "wt")
	os.MkdirAll(filepath.Join(repo, ".git", "worktrees", "wt"), 0o755)
	os.WriteFile(filepath.Join(repo, ".git", "worktrees", "wt", "commondir"), []byte("../..\n"), 0o644)
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt")+"\n"), 0o644)
	if got := findGitDir(wt, ""); got != filepath.Join(repo, ".git") {
		t.Errorf("worktree: %q", got)
	}
	if got := findGitDir(d, "repo/.git"); got != filepath.Join(repo, ".git") {
		t.Errorf("--git-dir: %q", got)
	}
}

func FuzzParseGitConfig(f *testing.F) {
	for _, s := range []string{"[a]\nb = c\n", "[a \"b\"]\n\tc = \"d\\\"\" ; x\n", "[a]\nb = c\\\nd\n", "[", "[a]\nb"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, _ := parseGitConfig(data, "fuzz")
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
		_, _ = parseConfigParameters(s)
		_, _ = splitAliasCmdline(s)
	})
}
