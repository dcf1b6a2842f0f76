package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/fakemodel"
	"github.com/agentbox/agentbox/internal/testkit"
)

var runIDLine = regexp.MustCompile(`agentbox (?:diff\|apply\|discard|undo) ([0-9a-f]{12})`)

// cli runs the agentbox shim with the world's environment.
func (w agentWorld) cli(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return w.cliEnv(t, dir, nil, args...)
}

// TestReviewCLI: agentbox run --review, then diff (--stat, --json, a
// path), changes and undo on the review run, apply of one path, a
// conflict (exit 3, nothing applied), discard; bad input named.
func TestReviewCLI(t *testing.T) {
	w := newAgentWorld(t)
	if os.Geteuid() != 0 {
		t.Skip("reason: the review tests mount the overlay as root")
	}
	out, code := w.cli(t, w.proj, "run", "--review", "--role", "developer", "--no-exec-policy", "--",
		"sh", "-c", "echo changed > README.md && echo new > new.txt && rm -f .git/description")
	if code != 0 {
		t.Fatalf("run: %d\n%s", code, out)
	}
	m := runIDLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in the launch line:\n%s", out)
	}
	run := m[1]
	if b, _ := os.ReadFile(filepath.Join(w.proj, "README.md")); string(b) != "# proj\n" {
		t.Fatalf("target/ changed: %q", b)
	}
	out, code = w.cli(t, w.ws, "diff", "--stat", run)
	for _, want := range []string{"modified proj/README.md", "added    proj/new.txt", "git      proj/.git: description deleted (1 file)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("diff --stat lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if out, code = w.cli(t, w.ws, "diff", "--stat", "--git-internals", run); code != 0 || !strings.Contains(out, "deleted  proj/.git/description") {
		t.Errorf("diff --stat --git-internals (exit %d):\n%s", code, out)
	}
	if out, _ = w.cli(t, w.ws, "diff", run, "proj/README.md"); !strings.Contains(out, "-# proj") || !strings.Contains(out, "+changed") || strings.Contains(out, "new.txt") {
		t.Errorf("diff of one path:\n%s", out)
	}
	if out, _ = w.cli(t, w.ws, "diff", "--json", run); strings.Count(out, `"kind"`) != 3 {
		t.Errorf("diff --json:\n%s", out)
	}
	if out, code = w.cli(t, w.ws, "changes", run); code != 0 || !strings.Contains(out, "is a review run") || !strings.Contains(out, "proj/new.txt") {
		t.Errorf("changes of a review run (exit %d):\n%s", code, out)
	}
	if out, code = w.cli(t, w.ws, "undo", "--dry-run", run); code != 0 || !strings.Contains(out, "would discard the layer") {
		t.Errorf("undo --dry-run of a review run (exit %d):\n%s", code, out)
	}
	if out, code = w.cli(t, w.ws, "apply", run, "proj/new.txt"); code != 0 || !strings.Contains(out, "added    proj/new.txt") || !strings.Contains(out, "applied 1 change(s); 2 left in the layer") {
		t.Errorf("apply of one path (exit %d):\n%s", code, out)
	}
	os.WriteFile(filepath.Join(w.proj, "README.md"), []byte("# the human's edit\n"), 0o644)
	if out, code = w.cli(t, w.ws, "apply", run); code != 3 || !strings.Contains(out, "proj/README.md") || !strings.Contains(out, "nothing applied") {
		t.Errorf("apply over the human's edit: exit %d, want 3 naming the file:\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "README.md")); string(b) != "# the human's edit\n" {
		t.Errorf("the refused apply changed README.md: %q", b)
	}
	if !testkit.Exists(filepath.Join(w.proj, ".git", "description")) {
		t.Error("the refused apply deleted .git/description")
	}
	if out, code = w.cli(t, w.ws, "undo", run); code != 0 || !strings.Contains(out, "discarded the layer") {
		t.Errorf("undo of a review run (exit %d):\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"apply", run}, 1, "no review layer"},
		{[]string{"diff", "nosuchrun"}, 1, "no review layer"},
		{[]string{"discard", "../x"}, 125, "not a run id"},
		{[]string{"apply"}, 2, "which run"},
	} {
		if out, code := w.cli(t, w.ws, tc.args...); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}

// TestClaudeCodeReviewParallel: two sessions of the real Claude Code CLI
// (fake model API) as review runs on one project at the same time; both
// succeed and see only their own writes; the first applies whole; the
// second, which edited the same file, is refused whole naming it, and its
// other file applies by path.
func TestClaudeCodeReviewParallel(t *testing.T) {
	claude := needCLI(t, "claude", "@anthropic-ai/claude-code")
	w := newAgentWorld(t)
	if os.Geteuid() != 0 {
		t.Skip("reason: the review tests mount the overlay as root")
	}
	write := func(name, body string) fakemodel.Step {
		return fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.proj, name), "content": body}}
	}
	scripts := [][]agentStep{
		{{step: bash("echo '# proj by one' > README.md")}, {step: write("one.txt", "one\n")},
			{step: bash("ls"), wantNot: []string{"two.txt"}}, {step: fakemodel.Step{Text: "One done."}}},
		{{step: write("two.txt", "two\n")}, {step: bash("echo '# proj by two' > README.md")},
			{step: bash("ls"), wantNot: []string{"one.txt"}}, {step: fakemodel.Step{Text: "Two done."}}},
	}
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	srvs := make([]*fakemodel.Server, 2)
	for i, steps := range scripts {
		srv, err := fakemodel.Start(scriptOf(steps))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		srvs[i] = srv
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(w.bin, "agentbox"), "run", "--review", "--role", "developer", "--",
				claude, "-p", "do the scripted work", "--dangerously-skip-permissions")
			cmd.Dir = w.proj
			cmd.Env = w.env("ANTHROPIC_API_KEY="+fakeAnthropicKey, "ANTHROPIC_BASE_URL="+srv.URL)
			b, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(b), err
		}()
	}
	wg.Wait()
	var runs []string
	for i := range scripts {
		if errs[i] != nil || !strings.Contains(outs[i], []string{"One done.", "Two done."}[i]) {
			t.Fatalf("session %d: %v\n%s", i, errs[i], outs[i])
		}
		runScript(t, srvs[i], scripts[i])
		m := runIDLine.FindStringSubmatch(outs[i])
		if m == nil {
			t.Fatalf("no run id:\n%s", outs[i])
		}
		runs = append(runs, m[1])
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "README.md")); string(b) != "# proj\n" {
		t.Fatalf("a review run wrote target/: %q", b)
	}
	if out, code := w.cli(t, w.ws, "apply", runs[0]); code != 0 {
		t.Fatalf("apply of the first: %d\n%s", code, out)
	}
	out, code := w.cli(t, w.ws, "apply", runs[1])
	if code != 3 || !strings.Contains(out, "proj/README.md") {
		t.Fatalf("apply of the second over the same file: exit %d, want 3 naming README.md:\n%s", code, out)
	}
	if testkit.Exists(filepath.Join(w.proj, "two.txt")) {
		t.Fatal("the refused apply wrote two.txt")
	}
	if out, code := w.cli(t, w.ws, "apply", runs[1], "proj/two.txt"); code != 0 {
		t.Fatalf("apply of the second's other file: %d\n%s", code, out)
	}
	for name, want := range map[string]string{"README.md": "# proj by one\n", "one.txt": "one\n", "two.txt": "two\n"} {
		if b, _ := os.ReadFile(filepath.Join(w.proj, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
}
