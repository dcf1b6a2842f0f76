package agentbox_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/testkit"
	"golang.org/x/sys/unix"
)

// areaHash is target/ and feedback/ of the workspace, byte for byte.
func areaHash(t *testing.T, ws string) string {
	return testkit.TreeHash(t, filepath.Join(ws, "target"), filepath.Join(ws, "feedback"))
}

// gitProject makes target/proj a repository with a commit: sources, a
// script, an empty directory and a symlink. It skips the test where git
// is not installed.
func gitProject(t *testing.T, ws string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	proj := filepath.Join(ws, "target", "proj")
	for name, body := range map[string]string{"src/lib.c": "int lib(void) { return 1; }\n", "notes.txt": "keep these notes\n",
		"data.txt": "data\n", "README.md": "# proj\n", "run.sh": "#!/bin/sh\necho run\n"} {
		p := filepath.Join(proj, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(proj, "run.sh"), 0o755)
	os.Mkdir(filepath.Join(proj, "empty"), 0o750)
	os.Symlink("src/lib.c", filepath.Join(proj, "lib-link"))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", proj}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return proj
}

// runToEnd creates, starts and waits for a run of argv in ws as a
// developer with opts, its output into a file; it returns the result and
// that output.
func runToEnd(t *testing.T, ws string, argv []string, opts ...agentbox.Option) (*agentbox.Result, string) {
	t.Helper()
	out, _ := os.CreateTemp(t.TempDir(), "out")
	defer out.Close()
	r, err := agentbox.New(ws, "developer", argv, append(opts, agentbox.WithStdio(nil, out, out))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	return res, string(b)
}

// runCmd runs argv in the world's workspace with no approver, its
// warnings with its output, and returns the events it emitted too.
func runCmd(t *testing.T, w world, argv []string, extra ...agentbox.Option) (*agentbox.Result, string, []audit.Event) {
	t.Helper()
	var mu sync.Mutex
	var evs []audit.Event
	var warn strings.Builder
	res, out := runToEnd(t, w.ws, argv, w.opts(append([]agentbox.Option{
		agentbox.WithApprove("none"), agentbox.WithAudit(w.audit), agentbox.WithWarnings(&syncWriter{b: &warn, mu: &mu}),
		agentbox.WithEvents(func(e audit.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() })}, extra...)...)...)
	mu.Lock()
	defer mu.Unlock()
	return res, out + warn.String(), evs
}

// syncWriter serializes writes to b.
type syncWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestUndoAfterRun: a run with checkpoints on deletes a source directory,
// truncates a file, overwrites one with mv, discards a change with git
// checkout, commits and writes a report, headless (no approver): nothing
// asks. Each command's exec event names its checkpoint and the run's
// index names the event's seq; Changes lists what each did; Undo restores
// target/ and feedback/ byte for byte (.git, modes, links, the empty
// directory) and undo of the undo brings the work back; --only reverts
// one command; a live run is refused. With checkpoints off the same rm
// asks (denied, no approver).
func TestUndoAfterRun(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	needSandbox(t)
	w := newWorld(t)
	os.WriteFile(w.policy, []byte("version: 1\n"), 0o600)
	proj := gitProject(t, w.ws)
	store := filepath.Join(t.TempDir(), "store")
	before := areaHash(t, w.ws)
	script := `cd proj && rm -r src && cp /dev/null notes.txt && mv data.txt README.md && sed -i s/run/RUN/ run.sh && git checkout run.sh &&
git add -A && git -c user.name=a -c user.email=a@x commit -q -m 'agent work' && echo done > ../../feedback/report.txt`
	res, out, evs := runCmd(t, w, []string{"sh", "-c", script}, agentbox.WithCheckpoints(store, false), agentbox.WithDir(filepath.Join(w.ws, "target")))
	if res.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", res.ExitCode, out)
	}
	after := areaHash(t, w.ws)
	if after == before {
		t.Fatal("the run changed nothing")
	}
	var runID string
	seqOf := map[string]uint64{} // checkpoint -> seq of a command that ran after it
	for _, e := range evs {
		if (e.Event == audit.EventExec || e.Event == audit.EventGit) && e.Decision == audit.DecisionAllow {
			if e.Detail["checkpoint"] == "" {
				t.Errorf("exec event %d (%s) names no checkpoint", e.Seq, e.Action)
			}
			runID = e.Run
			seqOf[fmt.Sprint(e.Seq)] = e.Seq
		}
	}
	steps, err := review.Changes(store, runID)
	if err != nil {
		t.Fatal(err)
	}
	byArgv := map[string]review.CommandChanges{}
	for _, s := range steps {
		if s.Kind == "command" {
			if _, ok := seqOf[fmt.Sprint(s.Seq)]; !ok {
				t.Errorf("index seq %d is no allowed exec event of the run", s.Seq)
			}
			byArgv[strings.Join(s.Argv, " ")] = s
		}
	}
	has := func(argv, change string) {
		t.Helper()
		for _, c := range byArgv[argv].Changes {
			if string(c.Kind)+" "+c.Path == change {
				return
			}
		}
		t.Errorf("changes of %q = %v; want %s", argv, byArgv[argv].Changes, change)
	}
	has("rm -r src", "deleted target/proj/src/lib.c")
	has("mv data.txt README.md", "modified target/proj/README.md")
	has("mv data.txt README.md", "deleted target/proj/data.txt")

	// --only the mv: later commands (git add, commit) touched .git only
	r1, err := review.Undo(store, runID, review.UndoOptions{Only: byArgv["mv data.txt README.md"].Seq})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "README.md")); string(b) != "# proj\n" {
		t.Errorf("README.md after undo --only of the mv = %q", b)
	}
	if _, err := os.Stat(filepath.Join(proj, "src")); err == nil {
		t.Error("undo --only of the mv also brought src/ back")
	}
	if _, err := review.Undo(store, r1.Redo, review.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if areaHash(t, w.ws) != after {
		t.Fatal("redo of undo --only did not bring the run's end back")
	}
	// the whole run, then the redo
	r2, err := review.Undo(store, runID, review.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := areaHash(t, w.ws); got != before {
		t.Fatalf("after undo:\n%s\nwant:\n%s", got, before)
	}
	if _, err := review.Undo(store, r2.Redo, review.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if areaHash(t, w.ws) != after {
		t.Fatal("undo of the undo did not bring the agent's work back")
	}

	// checkpoints off: the same deletion asks, and nobody answers
	res, out, _ = runCmd(t, w, []string{"rm", "proj/notes.txt"}, agentbox.WithDir(filepath.Join(w.ws, "target")), agentbox.WithoutCheckpoints())
	if res.ExitCode != agentbox.ExitDenied || !strings.Contains(out, "needs approval, no approver") {
		t.Errorf("rm with checkpoints off: exit %d\n%s", res.ExitCode, out)
	}
	// and so does a silent spelling of the same: truncating by redirection
	res, out, _ = runCmd(t, w, []string{"sh", "-c", ": > proj/README.md"}, agentbox.WithDir(filepath.Join(w.ws, "target")), agentbox.WithoutCheckpoints())
	if res.ExitCode != agentbox.ExitDenied || !strings.Contains(out, "developer/overwrite") {
		t.Errorf(": > README.md with checkpoints off: exit %d\n%s", res.ExitCode, out)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "README.md")); len(b) == 0 {
		t.Error("README.md was truncated")
	}
}

// TestUndoRefusesLiveRun: undo of a run still going is refused, naming it.
func TestUndoRefusesLiveRun(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	store := filepath.Join(t.TempDir(), "store")
	ready := filepath.Join(w.ws, "target", "ready")
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", ": > ready; exec sleep 60"}, w.opts(
		agentbox.WithApprove("none"), agentbox.WithAudit(w.audit), agentbox.WithCheckpoints(store, false), agentbox.WithDir(filepath.Join(w.ws, "target")))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })
	_, err = review.Undo(store, r.ID(), review.UndoOptions{})
	r.Stop(0)
	r.Wait()
	if !errors.Is(err, review.ErrRunLive) {
		t.Fatalf("undo of a live run = %v", err)
	}
	if _, err := review.Undo(store, r.ID(), review.UndoOptions{}); err != nil {
		t.Fatalf("undo once it ended: %v", err)
	}
	if _, err := review.Undo(store, "nosuchrun", review.UndoOptions{}); !errors.Is(err, review.ErrNoCheckpoints) {
		t.Fatalf("unknown run: %v", err)
	}
}

// runErr starts r and waits for it: the error of whichever failed.
func runErr(t *testing.T, r *agentbox.Run) error {
	if err := r.Start(t.Context()); err != nil {
		return err
	}
	_, err := r.Wait()
	return err
}

// smallStore returns a world and a checkpoint store on a 256 KiB tmpfs
// (root only; skipped otherwise).
func smallStore(t *testing.T) (world, string) {
	t.Helper()
	needSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("reason: mounting a small tmpfs for the store needs root")
	}
	w := newWorld(t)
	store := t.TempDir()
	if err := unix.Mount("tmpfs", store, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("reason: cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(store, unix.MNT_DETACH) })
	return w, store
}

// TestCheckpointFailureDenies: when the store's file system is full, the
// command that would change the areas unprotected is denied with one
// line saying why; nothing runs without its checkpoint.
func TestCheckpointFailureDenies(t *testing.T) {
	w, store := smallStore(t)
	// 1 MiB of fresh content, then a command: its checkpoint cannot be stored
	script := `head -c 1048576 /dev/urandom > big.bin; stat -c RAN%s big.bin`
	res, out, evs := runCmd(t, w, []string{"sh", "-c", script}, agentbox.WithCheckpoints(store, false), agentbox.WithDir(filepath.Join(w.ws, "target")))
	if strings.Contains(out, "RAN1048576") || res.ExitCode != agentbox.ExitDenied {
		t.Fatalf("stat ran without its checkpoint (exit %d):\n%s", res.ExitCode, out)
	}
	if !strings.Contains(out, "no checkpoint could be taken") || !strings.Contains(out, "no space left on device") {
		t.Errorf("the deny line does not say why:\n%s", out)
	}
	denied := false
	for _, e := range evs {
		if e.Decision == audit.DecisionDeny && strings.Contains(e.Reason, "no checkpoint could be taken") {
			denied = true
		}
	}
	if !denied {
		t.Error("no audited deny for the checkpoint failure")
	}
}

// TestStartCheckpointFailureStopsRun: the start checkpoint is taken
// while the helper starts; when it fails, the command is never released
// (it does not run at all) and the run ends with one error naming the
// checkpoints and the flag that runs without them.
func TestStartCheckpointFailureStopsRun(t *testing.T) {
	w, store := smallStore(t)
	big := make([]byte, 1<<20) // random: stored whole, it does not fit in 256k
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.ws, "target", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(w.ws, "target", "ran")
	out, _ := os.CreateTemp(t.TempDir(), "out")
	defer out.Close()
	r, err := agentbox.New(w.ws, "developer", []string{"touch", marker}, w.opts(agentbox.WithApprove("none"), agentbox.WithAudit(w.audit),
		agentbox.WithCheckpoints(store, true), agentbox.WithStdio(nil, out, out))...)
	if err != nil {
		t.Fatal(err)
	}
	err = runErr(t, r)
	if err == nil || !strings.Contains(err.Error(), "--checkpoints off") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("run error %v, want the start checkpoint's failure", err)
	}
	var sawExit bool
	for _, e := range readEvents(t, w.audit) {
		if e.Event == audit.EventExit && e.Exit != nil && *e.Exit == agentbox.ExitFailure && strings.Contains(e.Reason, "not started") {
			sawExit = true
		}
	}
	if !sawExit {
		t.Error("the audit log does not say the command was not started")
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the command ran without its start checkpoint")
	}
}

// TestDestructiveSpellingsInRun: inside real runs with checkpoints off
// and nobody to approve, each spelling of destroying uncommitted work is
// refused before it runs: the repository's files and .git are unchanged,
// checked from outside. With checkpoints on the same lines run, and undo
// of each run puts the tree back byte for byte.
func TestDestructiveSpellingsInRun(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	needSandbox(t)
	w := newWorld(t)
	os.WriteFile(w.policy, []byte("version: 1\n"), 0o600)
	proj := gitProject(t, w.ws)
	os.WriteFile(filepath.Join(proj, "README.md"), []byte("# proj, edited\n"), 0o644) // uncommitted work
	store := filepath.Join(t.TempDir(), "store")
	lines := []string{"mv data.txt README.md", "cp /dev/null README.md", ": > README.md", "sed -i d README.md",
		"echo x | tee README.md", "ln -sf data.txt README.md", "git show HEAD:README.md > README.md",
		"git checkout README.md", "git checkout --ours README.md", "git read-tree -u --reset HEAD",
		"git checkout -B main HEAD~0", "truncate -s 0 README.md", "rm README.md"}
	before := areaHash(t, w.ws)
	for _, l := range lines {
		res, out, _ := runCmd(t, w, []string{"sh", "-c", l}, agentbox.WithDir(proj), agentbox.WithoutCheckpoints())
		if res.ExitCode != agentbox.ExitDenied || !strings.Contains(out, "needs approval, no approver") {
			t.Errorf("checkpoints off: %q: exit %d\n%s", l, res.ExitCode, out)
		}
		if areaHash(t, w.ws) != before {
			t.Fatalf("checkpoints off: %q changed the tree", l)
		}
	}
	for _, l := range lines {
		res, out, evs := runCmd(t, w, []string{"sh", "-c", l}, agentbox.WithDir(proj), agentbox.WithCheckpoints(store, false))
		if res.ExitCode != 0 {
			t.Errorf("checkpoints on: %q: exit %d\n%s", l, res.ExitCode, out)
			continue
		}
		if _, err := review.Undo(store, evs[0].Run, review.UndoOptions{}); err != nil {
			t.Fatalf("undo of %q: %v", l, err)
		}
		if areaHash(t, w.ws) != before {
			t.Fatalf("undo of %q did not restore the tree", l)
		}
	}
}

// TestRunChangesAndUndo: one entry point on Run for what a run changed
// and for taking it back, for a run with checkpoints as for a review run
// (TestReviewRun): Changes lists the net changes, Undo restores them.
func TestRunChangesAndUndo(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	store := filepath.Join(t.TempDir(), "store")
	tgt := filepath.Join(w.ws, "target")
	os.WriteFile(filepath.Join(tgt, "keep.txt"), []byte("keep\n"), 0o644)
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "rm keep.txt; echo new > new.txt"}, w.opts(
		agentbox.WithApprove("none"), agentbox.WithAudit(w.audit), agentbox.WithCheckpoints(store, false), agentbox.WithDir(tgt))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Changes(); err == nil {
		t.Error("Changes before the run ended: no error")
	}
	if err := runErr(t, r); err != nil {
		t.Fatal(err)
	}
	ch, err := r.Changes()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range ch {
		got[c.Path] = string(c.Kind)
	}
	if got["target/keep.txt"] != "deleted" || got["target/new.txt"] != "added" || len(got) != 2 {
		t.Fatalf("Changes = %v", got)
	}
	if _, err := r.Undo(agentbox.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(tgt, "keep.txt")); err != nil || string(b) != "keep\n" {
		t.Errorf("keep.txt after Undo: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(tgt, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt after Undo: %v", err)
	}
}
