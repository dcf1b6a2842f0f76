package boundary

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/agentbox/agentbox/policy"
)

func devFS() policy.FSGrants {
	return policy.FSGrants{
		Context: policy.AccessRead, Target: policy.AccessAll, Feedback: policy.AccessReadWrite,
		OwnAgent: policy.AccessAll, OtherAgents: policy.AccessRead,
	}
}

func mkWS(t *testing.T) string {
	t.Helper()
	w := t.TempDir()
	for _, a := range Areas {
		if err := os.Mkdir(filepath.Join(w, a), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func ruleAt(p *Plan, path string) (Rule, bool) {
	for _, r := range p.Rules {
		if r.Path == path {
			return r, true
		}
	}
	return Rule{}, false
}

func TestResolveLayout(t *testing.T) {
	w := mkWS(t)
	p, err := Resolve(w, "a1", devFS())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{p.Home, p.Tmp, p.Cache} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s not created", d)
		}
	}
	want := map[string]Rights{
		filepath.Join(w, "context"):      RightsRead,
		filepath.Join(w, "target"):       RightsRead | RightsWrite | RightsExec,
		filepath.Join(w, "feedback"):     RightsRead | RightsWrite,
		filepath.Join(w, "agents"):       RightsRead,
		filepath.Join(w, "agents", "a1"): RightsRead | RightsWrite | RightsExec,
	}
	for path, r := range want {
		got, ok := ruleAt(p, path)
		if !ok || got.Rights != r {
			t.Errorf("rule for %s = %v (%v), want %v", path, got.Rights, ok, r)
		}
	}
	if _, ok := ruleAt(p, w); ok {
		t.Errorf("the workspace root itself must not be granted")
	}
	for _, r := range p.Rules {
		if r.Rights&(ll.AccessFSMakeChar|ll.AccessFSMakeBlock) != 0 {
			t.Errorf("%s grants device creation", r.Path)
		}
		if r.Path == "/etc" || r.Path == "/" || r.Path == "/etc/shadow" || r.Path == "/dev/pts" {
			t.Errorf("system allowlist grants %s", r.Path)
		}
		if strings.HasPrefix(r.Path, "/proc") && r.Rights&^RightsRead != 0 {
			t.Errorf("/proc must be read-only, got %v", r.Rights)
		}
		if !r.Dir && r.Rights&^fileRights != 0 {
			t.Errorf("file rule %s has directory rights %v", r.Path, r.Rights)
		}
	}
}

func TestResolveRefusals(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		name  string
		setup func(w string) string // returns the workspace argument
		agent string
		fs    func() policy.FSGrants
		want  string
	}{
		{"missing area", func(w string) string { os.Remove(filepath.Join(w, "feedback")); return w }, "a1", devFS, "feedback: missing"},
		{"area is a file", func(w string) string {
			os.Remove(filepath.Join(w, "context"))
			os.WriteFile(filepath.Join(w, "context"), nil, 0o644)
			return w
		}, "a1", devFS, "not a directory"},
		{"area symlink outside", func(w string) string {
			os.Remove(filepath.Join(w, "target"))
			os.Symlink(outside, filepath.Join(w, "target"))
			return w
		}, "a1", devFS, "is a symlink"},
		{"area symlink inside", func(w string) string {
			os.Remove(filepath.Join(w, "target"))
			os.Symlink(filepath.Join(w, "context"), filepath.Join(w, "target"))
			return w
		}, "a1", devFS, "is a symlink"},
		{"agent dir symlink", func(w string) string {
			os.Symlink(outside, filepath.Join(w, "agents", "a1"))
			return w
		}, "a1", devFS, "is a symlink"},
		{"agent home symlink", func(w string) string {
			os.MkdirAll(filepath.Join(w, "agents", "a1"), 0o755)
			os.Symlink(outside, filepath.Join(w, "agents", "a1", "home"))
			return w
		}, "a1", devFS, "is a symlink"},
		{"dotdot workspace", func(w string) string { return filepath.Join(w, "target") + "/../" }, "a1", devFS, `contains ".."`},
		{"missing workspace", func(w string) string { return filepath.Join(w, "nope") }, "a1", devFS, "agentbox init"},
		{"bad agent id", func(w string) string { return w }, "../x", devFS, "agent id"},
		{"bad access", func(w string) string { return w }, "a1", func() policy.FSGrants { f := devFS(); f.Target = "write"; return f }, "unknown access level"},
		{"readonly glob with dotdot", func(w string) string { return w }, "a1", func() policy.FSGrants { f := devFS(); f.ReadOnly = []string{"target/../context"}; return f }, "readonly"},
		{"readonly glob absolute", func(w string) string { return w }, "a1", func() policy.FSGrants { f := devFS(); f.ReadOnly = []string{"/etc"}; return f }, "readonly"},
		{"extra path relative", func(w string) string { return w }, "a1", func() policy.FSGrants { f := devFS(); f.ExtraRead = []string{"usr"}; return f }, "absolute"},
		{"extra path dotdot", func(w string) string { return w }, "a1", func() policy.FSGrants { f := devFS(); f.ExtraWrite = []string{outside + "/../x"}; return f }, `contains ".."`},
		{"extra path symlink", func(w string) string {
			os.Symlink(outside, filepath.Join(w, "link"))
			return w
		}, "a1", func() policy.FSGrants { f := devFS(); f.ExtraWrite = []string{"LINK"}; return f }, "symlink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := mkWS(t)
			arg := c.setup(w)
			fs := c.fs()
			for i, e := range fs.ExtraWrite {
				if e == "LINK" {
					fs.ExtraWrite[i] = filepath.Join(w, "link")
				}
			}
			_, err := Resolve(arg, c.agent, fs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestCarveOutReadOnly(t *testing.T) {
	w := mkWS(t)
	tg := filepath.Join(w, "target")
	os.MkdirAll(filepath.Join(tg, "src", "vendor"), 0o755)
	os.MkdirAll(filepath.Join(tg, "docs"), 0o755)
	os.WriteFile(filepath.Join(tg, "src", "main.go"), nil, 0o644)
	os.WriteFile(filepath.Join(tg, "README"), nil, 0o644)
	fs := devFS()
	fs.ReadOnly = []string{"target/src/vendor"}
	p, err := Resolve(w, "a1", fs)
	if err != nil {
		t.Fatal(err)
	}
	full := RightsRead | RightsWrite | RightsExec
	check := func(path string, want Rights) {
		t.Helper()
		r, ok := ruleAt(p, path)
		if !ok || r.Rights != want {
			t.Errorf("%s: rights %v (present %v), want %v", path, r.Rights, ok, want)
		}
	}
	check(filepath.Join(tg, "src", "vendor"), RightsRead)
	check(filepath.Join(tg, "docs"), full)                      // sibling dir: whole area rights
	check(filepath.Join(tg, "README"), full&fileRights)         // existing file beside: file rights
	check(filepath.Join(tg, "src", "main.go"), full&fileRights) // existing file in an ancestor
	check(tg, RightsRead)                                       // ancestor: read only
	check(filepath.Join(tg, "src"), RightsRead)                 // ancestor: read only
	check(filepath.Join(w, "context"), RightsRead)              // other areas untouched
	check(filepath.Join(w, "feedback"), RightsRead|RightsWrite) // other areas untouched
	if len(p.Watch) != 0 {
		t.Errorf("unexpected watch list %v", p.Watch)
	}
}

func TestGitPathsAreWatched(t *testing.T) {
	w := mkWS(t)
	g := filepath.Join(w, "target", "repo", ".git")
	os.MkdirAll(filepath.Join(g, "hooks"), 0o755)
	os.WriteFile(filepath.Join(g, "config"), nil, 0o644)
	p, err := Resolve(w, "a1", devFS())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(g, "config"), filepath.Join(g, "hooks")}; strings.Join(p.Watch, " ") != strings.Join(want, " ") {
		t.Errorf("watch = %v, want %v", p.Watch, want)
	}
	if r, ok := ruleAt(p, filepath.Join(w, "target")); !ok || r.Rights != RightsRead|RightsWrite|RightsExec {
		t.Errorf("target must keep full rights when only .git internals are read-only: %v", r)
	}
	if len(p.Notes) != 2 || !strings.Contains(p.Notes[0], "watched, not enforced") {
		t.Errorf("notes = %q", p.Notes)
	}
	// Listing the .git directory itself enforces it (commits then fail).
	fs := devFS()
	fs.ReadOnly = []string{"target/**/.git"}
	p, err = Resolve(w, "a1", fs)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := ruleAt(p, g); !ok || r.Rights != RightsRead {
		t.Errorf(".git rule = %v %v, want read-only", r, ok)
	}
}

func TestWatchWalkStopsAtRepoRoot(t *testing.T) {
	w := mkWS(t)
	tg := filepath.Join(w, "target")
	os.MkdirAll(filepath.Join(tg, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(tg, ".git", "config"), nil, 0o644)
	// A big tree beside .git is not walked for the watched globs: more
	// entries than the budget would otherwise be an error.
	for i := 0; i < 3; i++ {
		d := filepath.Join(tg, "src", strconv.Itoa(i))
		os.MkdirAll(d, 0o755)
	}
	old := walkBudget
	walkBudget = 5
	defer func() { walkBudget = old }()
	p, err := Resolve(w, "a1", devFS())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Watch) != 2 {
		t.Errorf("watch = %v", p.Watch)
	}
	// An enforced glob still needs the full walk and fails closed.
	fs := devFS()
	fs.ReadOnly = []string{"target/**/*.lock"}
	if _, err := Resolve(w, "a1", fs); err == nil || !strings.Contains(err.Error(), "narrow the role's readonly globs") {
		t.Errorf("err = %v, want the budget error", err)
	}
}

func TestWritableReadable(t *testing.T) {
	w := mkWS(t)
	p, err := Resolve(w, "a1", devFS())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	os.Symlink(filepath.Join(w, "feedback"), filepath.Join(out, "fb"))
	cases := []struct {
		path            string
		write, readable bool
	}{
		{filepath.Join(w, "feedback", "audit.jsonl"), true, true},
		{filepath.Join(w, "target", "x", "y.jsonl"), true, true},
		{filepath.Join(w, "agents", "a1", "home", "p.yaml"), true, true},
		{filepath.Join(w, "context", "p.yaml"), false, true},
		{filepath.Join(w, "agentbox.yaml"), false, false},
		{filepath.Join(out, "fb", "audit.jsonl"), true, true}, // through a symlink
		{filepath.Join(out, "audit.jsonl"), false, false},
	}
	for _, c := range cases {
		if got, _ := p.Writable(c.path); got != c.write {
			t.Errorf("Writable(%s) = %v, want %v", c.path, got, c.write)
		}
		if got, _ := p.Readable(c.path); got != c.readable {
			t.Errorf("Readable(%s) = %v, want %v", c.path, got, c.readable)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		glob, path string
		want       bool
	}{
		{"target/**/.git/hooks", "target/.git/hooks", true},
		{"target/**/.git/hooks", "target/a/b/.git/hooks", true},
		{"target/**/.git/hooks", "target/.git/hooks/pre-commit", false},
		{"target/**/.git/hooks", "context/.git/hooks", false},
		{"target/*.md", "target/README.md", true},
		{"target/*.md", "target/docs/README.md", false},
		{"**", "anything/at/all", true},
		{"target/src/[ab].go", "target/src/a.go", true},
		{"target/src/[", "target/src/[", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.glob, c.path); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.glob, c.path, got, c.want)
		}
	}
}

// refMatchSegs is the matcher without matchSegs' shortcuts (last segment
// first, literal segments compared as strings): FuzzMatchGlob holds the two
// equal.
func refMatchSegs(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if refMatchSegs(g[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, _ := filepath.Match(g[0], p[0]); !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

func FuzzMatchGlob(f *testing.F) {
	f.Add("target/*/x", "target/a/x")
	f.Add(`a/\*`, "a/*")
	f.Add("target/**/.git/hooks", "target/a/.git/hooks")
	f.Add("**/**/*", "a/b/c")
	f.Add("[", "x")
	f.Fuzz(func(t *testing.T, glob, path string) {
		if len(glob) > 200 || len(path) > 200 || strings.Count(glob, "**") > 6 {
			return
		}
		if got, want := MatchGlob(glob, path), refMatchSegs(strings.Split(glob, "/"), strings.Split(path, "/")); got != want {
			t.Fatalf("MatchGlob(%q, %q) = %v, the plain matcher says %v", glob, path, got, want)
		}
		_ = couldMatchUnder(glob, path)
		_ = checkGlob(glob)
	})
}

func FuzzValidAgentID(f *testing.F) {
	f.Add("a1")
	f.Add("../x")
	f.Fuzz(func(t *testing.T, id string) {
		if ValidAgentID(id) == nil && (strings.ContainsAny(id, "/\x00") || id == "." || id == "..") {
			t.Errorf("accepted %q", id)
		}
	})
}

// TestSystemRulesResolve: the cached resolver gives filepath.EvalSymlinks'
// answer through symlinked parents, symlinked leaves, chains, dangling
// links and missing paths.
func TestSystemRulesResolve(t *testing.T) {
	d := t.TempDir()
	d, _ = filepath.EvalSymlinks(d)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "usr/lib/x"), 0o755))
	must(os.WriteFile(filepath.Join(d, "usr/lib/f"), nil, 0o644))
	must(os.Symlink("usr/lib", filepath.Join(d, "lib")))
	must(os.Symlink("../usr/lib/f", filepath.Join(d, "usr/flink")))
	must(os.Symlink("flink", filepath.Join(d, "usr/chain")))
	must(os.Symlink("nowhere", filepath.Join(d, "usr/dangling")))
	c := realDirs{}
	for _, p := range []string{"lib", "lib/x", "lib/f", "usr/flink", "usr/chain", "usr/dangling", "usr/missing", "lib/missing/deeper", "usr/lib/x/", "/"} {
		p = filepath.Join(d, p)
		want, werr := filepath.EvalSymlinks(p)
		got, st, err := c.resolve(p)
		if (werr != nil) != (err != nil) || got != want && err == nil {
			t.Errorf("resolve(%s) = %q, %v; EvalSymlinks = %q, %v", p, got, err, want, werr)
			continue
		}
		if err == nil {
			wst, _ := os.Stat(want)
			if st.IsDir() != wst.IsDir() {
				t.Errorf("resolve(%s): IsDir %v, want %v", p, st.IsDir(), wst.IsDir())
			}
		}
	}
}
