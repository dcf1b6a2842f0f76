package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testkit"
)

// cliEnv is cli with extra environment.
func (w agentWorld) cliEnv(t *testing.T, dir string, extra []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, "agentbox"), args...)
	cmd.Dir = dir
	cmd.Env = w.env(extra...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// gitOut runs git as the human does in dir.
func (w agentWorld) gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// reviewRun runs script as a review run in proj and returns its id and
// output.
func (w agentWorld) reviewRun(t *testing.T, script string) (string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("reason: the review tests mount the overlay as root")
	}
	out, code := w.cli(t, w.proj, "run", "--review", "--role", "developer", "--no-exec-policy", "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("run: %d\n%s", code, out)
	}
	m := regexp.MustCompile(`agentbox: run ([0-9a-f]{12}) ended`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no end line with the run id:\n%s", out)
	}
	return m[1], out
}

// TestReviewGitFlow: a review run commits twice; the human runs git
// status in target/ meanwhile (it rewrites .git/index). diff --stat,
// from a directory outside the workspace, lists the work and one git
// line for the repository; apply is not blocked by the index, says it
// took the run's index and why, and leaves git clean at the run's
// commits.
func TestReviewGitFlow(t *testing.T) {
	w := newAgentWorld(t)
	run, _ := w.reviewRun(t, "echo b > b && git add b && git commit -qm b && echo c > c && git add c && git commit -qm c")
	elsewhere := t.TempDir()
	out, code := w.cli(t, elsewhere, "diff", "--stat", run)
	for _, want := range []string{"added    proj/b\n", "added    proj/c\n", "git      proj/.git: 2 commits on main, index changed ("} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("diff --stat lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if strings.Contains(out, ".git/objects") {
		t.Errorf("diff --stat lists object files:\n%s", out)
	}
	// the human: an editor saved README.md unchanged, then git status
	var st0, st1 unix.Stat_t
	unix.Stat(filepath.Join(w.proj, ".git", "index"), &st0)
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(filepath.Join(w.proj, "README.md"), later, later)
	w.gitOut(t, w.proj, "status", "--short")
	unix.Stat(filepath.Join(w.proj, ".git", "index"), &st1)
	if st1.Ctim == st0.Ctim {
		t.Fatal("git status did not rewrite .git/index: the case under test did not arise")
	}
	out, code = w.cli(t, elsewhere, "apply", run)
	if code != 0 || !strings.Contains(out, "note: proj/.git/index: took the run's git index over yours") || !strings.Contains(out, "the layer is removed") {
		t.Fatalf("apply after git status (exit %d):\n%s", code, out)
	}
	if !strings.Contains(out, "git      proj/.git: 2 commits on main") {
		t.Errorf("apply's listing lacks the git line:\n%s", out)
	}
	if s := w.gitOut(t, w.proj, "status", "--porcelain"); s != "" {
		t.Errorf("git status after the apply: %q, want clean", s)
	}
	if s := w.gitOut(t, w.proj, "log", "--format=%s"); s != "c\nb\ninitial\n" {
		t.Errorf("git log after the apply: %q", s)
	}
}

// TestApplyAtomicCLI: a review run edits, adds, deletes and moves a
// directory. An apply that fails half way (the fault point apply-midway)
// exits non-zero with one line saying nothing was applied, and target/ is
// byte for byte as before; the next apply carries everything.
func TestApplyAtomicCLI(t *testing.T) {
	w := newAgentWorld(t)
	os.MkdirAll(filepath.Join(w.proj, "docs"), 0o755)
	os.WriteFile(filepath.Join(w.proj, "docs", "a.md"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(w.proj, "docs", "b.md"), []byte("b\n"), 0o644)
	os.WriteFile(filepath.Join(w.proj, "old.txt"), []byte("old\n"), 0o644)
	run, _ := w.reviewRun(t, "echo edited > README.md && echo n > new.txt && rm old.txt && mv docs manual")
	before := testkit.TreeHash(t, w.proj)
	out, code := w.cliEnv(t, w.ws, []string{"AGENTBOX_FAULT_INJECT=apply-midway"}, "apply", run)
	if code == 0 || !strings.Contains(out, "nothing applied") || !strings.Contains(out, "target/ is as it was") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("apply with a failure half way (exit %d): want one line saying nothing was applied:\n%s", code, out)
	}
	if after := testkit.TreeHash(t, w.proj); after != before {
		t.Fatalf("the failed apply changed target/:\n%s\nwas:\n%s", after, before)
	}
	out, code = w.cli(t, w.ws, "apply", run)
	if code != 0 {
		t.Fatalf("apply (exit %d):\n%s", code, out)
	}
	for p, want := range map[string]string{"README.md": "edited\n", "new.txt": "n\n", "manual/a.md": "a\n", "manual/b.md": "b\n"} {
		if b, err := os.ReadFile(filepath.Join(w.proj, p)); err != nil || string(b) != want {
			t.Errorf("%s after the apply: %q %v", p, b, err)
		}
	}
	for _, p := range []string{"docs", "old.txt"} {
		if _, err := os.Lstat(filepath.Join(w.proj, p)); err == nil {
			t.Errorf("%s is still there after the apply", p)
		}
	}
}

// TestReviewNothingChangedAndDiscard: a review run that changed nothing
// leaves no layer and its end line says so; discard of a run that did
// change something confirms in one line what it dropped; ps marks a
// live review run (review).
func TestReviewNothingChangedAndDiscard(t *testing.T) {
	w := newAgentWorld(t)
	run, out := w.reviewRun(t, "cat README.md > /dev/null")
	if !strings.Contains(out, "no file changed") {
		t.Errorf("the end line of a review run that changed nothing:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(w.state, "agentbox", "layers", run)); err == nil {
		t.Errorf("a layer was left for run %s, which changed nothing", run)
	}
	if out, _ := w.cli(t, w.ws, "diff"); strings.Contains(out, run) {
		t.Errorf("diff lists the empty run's layer:\n%s", out)
	}
	run, _ = w.reviewRun(t, "echo x > x.txt")
	out, code := w.cli(t, t.TempDir(), "discard", run)
	if code != 0 || strings.TrimSpace(out) != "discarded run "+run+"'s layer: 1 change(s) dropped; target/ was never changed" {
		t.Errorf("discard (exit %d): %q", code, out)
	}
	// ps: a live review run is marked
	cmd := exec.Command(filepath.Join(w.bin, "agentbox"), "run", "--review", "--role", "developer", "--no-exec-policy", "--", "sleep", "60")
	cmd.Dir, cmd.Env = w.proj, w.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := w.cli(t, w.ws, "ps")
		if m := regexp.MustCompile(`(?m)^([0-9a-f]{12}) \(review\) `).FindStringSubmatch(out); m != nil {
			w.cli(t, w.ws, "stop", m[1])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ps never marked the review run (review):\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUndoFlow: a checkpointed run deletes, adds and edits files.
// From a directory outside every workspace: changes RUN names the run
// and lists its changes; undo without an id and without a terminal names
// the latest run, says what it would do and refuses with the exact
// command; undo RUN says what it did in words ("restored ... (it had
// been deleted)"); at a terminal, undo without an id proposes the latest
// run (the undo, whose undo brings the work back) and does it on y.
func TestUndoFlow(t *testing.T) {
	w := newAgentWorld(t)
	os.WriteFile(filepath.Join(w.proj, "a.txt"), []byte("a\n"), 0o644)
	out, code := w.cli(t, w.proj, "run", "--role", "developer", "--no-exec-policy", "--", "sh", "-c", "rm a.txt; echo n > n.txt; echo more >> README.md")
	if code != 0 {
		t.Fatalf("run (exit %d):\n%s", code, out)
	}
	m := regexp.MustCompile(`agentbox: run ([0-9a-f]{12}) ended`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no end line:\n%s", out)
	}
	run := m[1]
	elsewhere := t.TempDir()
	out, code = w.cli(t, elsewhere, "changes", run)
	for _, want := range []string{"run " + run + " (started ", "sh -c 'rm a.txt; echo n > n.txt; echo more >> README.md', exit 0): 3 paths changed", "deleted  target/proj/a.txt"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("changes %s from elsewhere lacks %q (exit %d):\n%s", run, want, code, out)
		}
	}
	out, code = w.cli(t, elsewhere, "undo")
	for _, want := range []string{"the latest run: run " + run, "would restore target/proj/a.txt (it had been deleted)", "would remove target/proj/n.txt (the run had created it)",
		"would restore target/proj/README.md (its earlier content)", "to undo that run: agentbox undo " + run} {
		if code != exitUsage || !strings.Contains(out, want) {
			t.Errorf("undo without an id nor a terminal lacks %q (exit %d, want %d):\n%s", want, code, exitUsage, out)
		}
	}
	if _, err := os.Stat(filepath.Join(w.proj, "a.txt")); err == nil {
		t.Fatal("undo without an id and without a terminal restored a.txt")
	}
	out, code = w.cli(t, elsewhere, "undo", run)
	for _, want := range []string{"restored target/proj/a.txt (it had been deleted)", "removed target/proj/n.txt (the run had created it)", "restored target/proj/README.md (its earlier content)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("undo %s from elsewhere lacks %q (exit %d):\n%s", run, want, code, out)
		}
	}
	if strings.Contains(out, "restored added") {
		t.Errorf("undo says %q:\n%s", "restored added", out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "a.txt")); string(b) != "a\n" {
		t.Fatalf("a.txt after the undo: %q", b)
	}
	// at a terminal: the latest run is the undo; y undoes it (a redo)
	cmd := exec.Command(filepath.Join(w.bin, "agentbox"), "undo")
	cmd.Dir, cmd.Env = elsewhere, w.env()
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("reason: no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shown := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(screen.String(), s)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !shown("[y/N]") {
		if time.Now().After(deadline) {
			t.Fatalf("no y/N question at the terminal:\n%s", screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tty.Write([]byte("y\n"))
	cmd.Wait()
	for !shown("undone; to bring it back") {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	text := screen.String()
	mu.Unlock()
	if !strings.Contains(text, "an undo of "+run) || !strings.Contains(text, "removed target/proj/a.txt (the run had created it)") {
		t.Errorf("undo at a terminal, answered y:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "a.txt")); err == nil {
		t.Error("the redo did not delete a.txt again")
	}
}
