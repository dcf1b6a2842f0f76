package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/fakemodel"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/testkit"
)

// TestClaudeCodeUndo: the real Claude Code CLI under `agentbox run`,
// headless (no approver), deletes a source directory, truncates a file,
// overwrites one with mv, discards a change with git checkout, commits
// and creates a file; none of it asks. `agentbox changes` lists each
// command's changes; `agentbox undo RUN` restores target/ and feedback/
// byte for byte (every file's hash, mode and link target, the
// repository's .git included); undo of the undo brings the agent's work
// back.
func TestClaudeCodeUndo(t *testing.T) {
	claude := needCLI(t, "claude", "@anthropic-ai/claude-code")
	w := newAgentWorld(t)
	for name, body := range map[string]string{"src/lib.c": "int lib(void) { return 1; }\n", "src/lib.h": "int lib(void);\n",
		"notes.txt": "notes worth keeping\n", "data.txt": "data\n"} {
		p := filepath.Join(w.proj, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("src/lib.c", filepath.Join(w.proj, "lib-link"))
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "sources"}} {
		cmd := exec.Command("git", append([]string{"-C", w.proj}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	areas := []string{filepath.Join(w.ws, "target"), filepath.Join(w.ws, "feedback")}
	before := testkit.TreeHash(t, areas...)
	steps := []agentStep{
		{step: bash("rm -r src && ls"), wantNot: []string{"denied"}},
		{step: bash("truncate -s 0 notes.txt && wc -c notes.txt"), want: []string{"0 notes.txt"}},
		{step: bash("mv data.txt README.md && cat README.md"), want: []string{"data"}},
		{step: bash("echo local >> README.md && git checkout README.md && cat README.md"), want: []string{"# proj"}},
		{step: bash("git add -A && git commit -q -m 'agent work' && git log --oneline -1"), want: []string{"agent work"}},
		{step: fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.proj, "new.txt"), "content": "made by the agent\n"}}},
		{step: fakemodel.Step{Text: "All done."}},
	}
	srv, out := w.session(t, agentRun{steps: steps,
		argv: []string{filepath.Join(w.bin, "agentbox"), "run", "--role", "developer", "--", claude, "-p", "do the scripted work", "--dangerously-skip-permissions"},
		env: func(url string) []string {
			return []string{"ANTHROPIC_API_KEY=" + fakeAnthropicKey, "ANTHROPIC_BASE_URL=" + url}
		}})
	runScript(t, srv, steps)
	m := regexp.MustCompile(`checkpoints on \(undo: agentbox undo ([0-9a-f]+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the launch line does not say checkpoints are on:\n%s", out)
	}
	run := m[1]
	after := testkit.TreeHash(t, areas...)
	if after == before {
		t.Fatal("the agent changed nothing")
	}
	t.Setenv("XDG_STATE_HOME", w.state) // the store the run used
	store, err := review.CheckpointStore(w.ws, "")
	if err != nil {
		t.Fatal(err)
	}
	chg, errOut, code := runCLI(t, "", "changes", "--checkpoint-store", store, run)
	for _, want := range []string{"rm -r src", "deleted  target/proj/src/lib.c", "truncate -s 0 notes.txt", "modified target/proj/notes.txt",
		"mv data.txt README.md", "git checkout README.md", "added    target/proj/new.txt"} {
		if !strings.Contains(chg, want) {
			t.Errorf("agentbox changes lacks %q (exit %d):\n%s%s", want, code, chg, errOut)
		}
	}
	undo, errOut, code := runCLI(t, "", "undo", "--checkpoint-store", store, run)
	if code != 0 {
		t.Fatalf("undo: exit %d\n%s%s", code, undo, errOut)
	}
	if got := testkit.TreeHash(t, areas...); got != before {
		t.Fatalf("after undo, target/ and feedback/ differ from before the run:\n%s\nwant\n%s", got, before)
	}
	redo := regexp.MustCompile(`agentbox undo (undo-[0-9a-f]+)`).FindStringSubmatch(undo)
	if redo == nil {
		t.Fatalf("undo printed no redo id:\n%s", undo)
	}
	if out, errOut, code := runCLI(t, "", "undo", "--checkpoint-store", store, redo[1]); code != 0 {
		t.Fatalf("redo: exit %d\n%s%s", code, out, errOut)
	}
	if testkit.TreeHash(t, areas...) != after {
		t.Fatal("undo of the undo did not bring the agent's work back")
	}
}

// TestDestructiveSpellingsOneAnswer: every spelling of destroying
// uncommitted work in target/ the issue names (today's silent ones
// included) asks with checkpoints off and is allowed with them on, where
// undo puts it back; appending and writing a new file never ask; git
// reset --hard stays denied either way. agentbox check decides against
// the real files of a real repository.
func TestDestructiveSpellingsOneAnswer(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(ws, "target", "proj")
	os.MkdirAll(target, 0o755)
	for _, f := range []string{"a", "b", "x"} {
		os.WriteFile(filepath.Join(target, f), []byte(f+" content\n"), 0o644)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "i"}} {
		if out, err := exec.Command("git", append([]string{"-C", target}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	t.Chdir(target)
	for _, tc := range []struct {
		line    string
		off, on int // check's exit: 0 allow, 3 ask, 4 deny
	}{
		{"rm a", 3, 0}, {"rmdir d", 3, 0}, {"unlink a", 3, 0}, {"truncate -s 0 a", 3, 0},
		{"mv b a", 3, 0}, {"cp /dev/null a", 3, 0}, {": > a", 3, 0}, {"sed -i d a", 3, 0}, {"tee a", 3, 0},
		{"install x a", 3, 0}, {"ln -sf x a", 3, 0}, {"git show HEAD:a > a", 3, 0},
		{"git restore a", 3, 0}, {"git checkout -- a", 3, 0}, {"git checkout a", 3, 0}, {"git checkout --ours a", 3, 0},
		{"git clean -f", 3, 0}, {"git stash drop", 3, 0}, {"git read-tree -u --reset HEAD", 3, 0},
		{"git checkout -B main HEAD~1", 3, 0}, {"git switch -C main HEAD~1", 3, 0}, {"git branch -f main HEAD~1", 3, 0},
		{"echo more >> a", 0, 0}, {"tee -a a", 0, 0}, {"echo new > fresh.txt", 0, 0}, {"git checkout main", 0, 0},
		{"git reset --hard", 4, 4}, {"rm -rf /etc/x", 3, 3},
	} {
		for _, mode := range []struct {
			flag string
			want int
		}{{"off", tc.off}, {"on", tc.on}} {
			out, errOut, code := runCLI(t, "", "check", "--role", "developer", "--workspace", ws, "--no-user-policy", "--checkpoints", mode.flag, "--shell", tc.line)
			if code != mode.want {
				t.Errorf("checkpoints %s: check %q = exit %d, want %d\n%s%s", mode.flag, tc.line, code, mode.want, out, errOut)
			}
		}
	}
}

// TestChangesOutput: agentbox changes of a real run: --diff shows a
// unified diff of a text file and names a binary one, --json is one
// object per command with its seq, --runs lists the run; a file name
// with terminal escapes is shown escaped.
func TestChangesOutput(t *testing.T) {
	needRunSandbox(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "target", "a.txt"), []byte("one\n"), 0o644)
	store := filepath.Join(t.TempDir(), "store")
	os.MkdirAll(filepath.Join(ws, "target", "node_modules", "dep"), 0o755)
	os.WriteFile(filepath.Join(ws, "target", "node_modules", "dep", "index.js"), []byte("x\n"), 0o644)
	script := `sed -i s/one/two/ a.txt; head -c 64 /dev/urandom > bin.dat; touch "$(printf 'evil\033[31m')"`
	if out, errOut, code := runCLI(t, "", "run", "--role", "developer", "--workspace", ws, "--no-user-policy", "--approve", "none",
		"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--checkpoint-store", store, "--quiet", "--", "sh", "-c", script); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	runs, _, code := runCLI(t, "", "changes", "--checkpoint-store", store, "--runs")
	if code != 0 || strings.Count(runs, "\n") != 2 || !regexp.MustCompile(`(?m)^RUN +STARTED +EXIT +CHANGED +COMMAND\n[0-9a-f]{12} +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +0 +3 +sh -c `).MatchString(runs) {
		t.Fatalf("changes --runs (exit %d): want a header and the run with its exit status, 3 paths changed and its command:\n%s", code, runs)
	}
	out, errOut, code := runCLI(t, "", "changes", "--checkpoint-store", store, "--diff")
	for _, want := range []string{"run ", "(started ", ", exit 0): 3 paths changed\n", "sed -i s/one/two/ a.txt", "-one", "+two", "--- a/target/a.txt", "Binary files", "target/bin.dat", `evil\x1b[31m`,
		"not checkpointed", "target/node_modules"} {
		if !strings.Contains(out, want) {
			t.Errorf("changes --diff (exit %d) lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("changes printed a raw terminal escape")
	}
	js, _, _ := runCLI(t, "", "changes", "--checkpoint-store", store, "--json")
	seqs := 0
	for _, l := range strings.Split(strings.TrimSpace(js), "\n") {
		var st review.CommandChanges
		if err := json.Unmarshal([]byte(l), &st); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		if st.Kind == "excluded" && !strings.Contains(l, "target/node_modules") {
			t.Errorf("--json excluded line: %s", l)
		}
		if st.Kind == "command" && st.Seq > 0 {
			seqs++
		}
	}
	if seqs < 3 {
		t.Errorf("--json: %d commands with a seq; want 3 or more:\n%s", seqs, js)
	}
	// bad input: an unknown run, a bad run id
	if _, errOut, code := runCLI(t, "", "undo", "--checkpoint-store", store, "nosuchrun"); code != exitBadInput || !strings.Contains(errOut, "no checkpoints of run nosuchrun") {
		t.Errorf("undo of an unknown run: exit %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "undo", "--checkpoint-store", store, "../etc"); code != exitBadInput || !strings.Contains(errOut, "run id") {
		t.Errorf("undo of a path: exit %d %s", code, errOut)
	}
}

// TestCheckpointFlagsBadInput: the checkpoint flags' bad values, and a
// store the sandbox could write, are refused in one line naming the flag,
// exit 125, nothing started.
func TestCheckpointFlagsBadInput(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--role", "developer", "--workspace", ws, "--no-user-policy", "--approve", "none", "--audit", filepath.Join(t.TempDir(), "a.jsonl")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoints", "maybe"}, `--checkpoints "maybe": want on or off`},
		{[]string{"--checkpoint-max-size", "lots"}, "--checkpoint-max-size"},
		{[]string{"--checkpoint-max-age", "soon"}, "--checkpoint-max-age"},
		{[]string{"--checkpoint-store", filepath.Join(ws, "target", "store")}, "checkpoint-store"},
		{[]string{"--checkpoint-store", ws}, "outside the workspace"},
	} {
		marker := filepath.Join(ws, "target", "ran")
		_, errOut, code := runCLI(t, "", append(append(slices.Clone(base), c.args...), "--", "sh", "-c", "echo > "+marker)...)
		if code != exitFailure || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d %q; want 125 and one line with %q", c.args, code, errOut, c.want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%v: the command ran", c.args)
		}
	}
}

// TestBuildSharesItsCommandCheckpoint: the programs a build starts share
// its command's checkpoint (the judge finds the command among their
// ancestors, through pidfds or /proc): in the run's index make is one
// command whose changes are everything its recipes wrote, two levels
// down included, and the next line of the shell is a command of its own.
func TestBuildSharesItsCommandCheckpoint(t *testing.T) {
	needRunSandbox(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	mk := "all:\n\tsh -c 'touch x; touch y'\n\ttouch z\n"
	if err := os.WriteFile(filepath.Join(ws, "target", "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	if out, errOut, code := runCLI(t, "", "run", "--role", "developer", "--workspace", ws, "--no-user-policy", "--approve", "none",
		"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--checkpoint-store", store, "--quiet", "--", "sh", "-c", "make -s; touch c"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	js, errOut, code := runCLI(t, "", "changes", "--checkpoint-store", store, "--json")
	if code != 0 {
		t.Fatalf("changes: exit %d\n%s", code, errOut)
	}
	var cmds []string
	changed := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(js), "\n") {
		var st review.CommandChanges
		if err := json.Unmarshal([]byte(l), &st); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		if st.Kind != "command" {
			continue
		}
		c := strings.Join(st.Argv, " ")
		cmds = append(cmds, c)
		for _, ch := range st.Changes {
			changed[ch.Path] = c
		}
	}
	if want := []string{"sh -c make -s; touch c", "make -s", "touch c"}; !slices.Equal(cmds, want) {
		t.Errorf("commands %q, want %q", cmds, want)
	}
	for f, by := range map[string]string{"target/x": "make -s", "target/y": "make -s", "target/z": "make -s", "target/c": "touch c"} {
		if changed[f] != by {
			t.Errorf("%s changed by %q, want %q (%v)", f, changed[f], by, changed)
		}
	}
}
