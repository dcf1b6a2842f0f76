//go:build linux

package judge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
)

// TestAskSaysWhatCannotWork: a question about a network program in a
// run without network, or about a write outside every writable area,
// says approving only lets it start and names the flag that would make
// it work; a question that can work carries no such note.
func TestAskSaysWhatCannotWork(t *testing.T) {
	ws := t.TempDir()
	bp := &boundary.Plan{Workspace: ws, Rules: []boundary.Rule{{Path: ws, Rights: boundary.Rights(^uint64(0)), Dir: true}}}
	cases := []struct {
		name    string
		network policy.Network
		argv    []string
		want    string
	}{
		{"curl offline", policy.Network{}, []string{"curl", "-sS", "https://example.com"}, "cannot work in this run: curl -sS https://example.com reaches the network and the run has none (network: none); approving only lets it start (to reach a host: agentbox run --allow-host HOST, or --network proxy)"},
		{"cargo install offline", policy.Network{}, []string{"cargo", "install", "ripgrep"}, "(network: none); approving only lets it start"},
		{"wget offline", policy.Network{}, []string{"wget", "https://example.com/f"}, "wget https://example.com/f reaches the network"},
		{"curl through the proxy", policy.Network{Proxy: true}, []string{"curl", "-sS", "https://example.com"}, ""},
		{"chmod in the workspace", policy.Network{}, []string{"chmod", "600", filepath.Join(ws, "f")}, ""},
		{"tee outside every area", policy.Network{Proxy: true}, []string{"tee", "/etc/agentbox-test-x"}, "cannot work in this run: /etc/agentbox-test-x is outside every area the sandbox may write (Landlock refuses the write); approving only lets it start (to write there: agentbox run --rw DIR)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eng := testEngine(t, "developer")
			role := eng.Role()
			role.Network = c.network
			f := &fakeApprover{answer: approval.DenyOnce}
			pol := New(Config{Engine: eng, Role: role, Approver: f, Workspace: ws, Boundary: bp})
			ev := &supervise.ExecEvent{Pid: 9, Program: filepath.Base(c.argv[0]), Exe: "/usr/bin/" + c.argv[0], Argv: c.argv, Cwd: ws}
			if c.argv[0] == "git" {
				ev = gitEv(ws, nil, c.argv...)
			}
			pol.Decide(ev)
			if f.calls.Load() != 1 {
				t.Fatalf("asked %d times, want once (the question is still put)", f.calls.Load())
			}
			has := strings.Contains(f.last.Reason, "cannot work in this run")
			if c.want == "" && has {
				t.Fatalf("reason %q warns about a command that can work", f.last.Reason)
			}
			if c.want != "" && !strings.Contains(f.last.Reason, c.want) {
				t.Fatalf("reason %q lacks %q", f.last.Reason, c.want)
			}
		})
	}
}

// TestApprovedLineCoversItsCommands: approving `sh -c 'chmod 600 f'`
// once approves the chmod it runs (the same process after its exec, or
// a child of it), and nothing more: another chmod, the same chmod outside
// the line's process tree, or after the line's process is gone, asks.
func TestApprovedLineCoversItsCommands(t *testing.T) {
	dir := t.TempDir()
	f := &fakeApprover{answer: approval.AllowOnce}
	pol := New(Config{Engine: testEngine(t, "developer"), Approver: f, Workspace: dir})
	// The line runs in this test's process; a real child stands for a
	// program it starts, the test's parent for one outside its tree.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	self := os.Getpid()
	start, err := procfs.StartTime(self)
	if err != nil {
		t.Fatal(err)
	}
	sh := &supervise.ExecEvent{Pid: self, Start: start, Ppid: os.Getppid(), Program: "sh", Exe: "/bin/sh", Argv: []string{"sh", "-c", "chmod 600 f; chmod 600 g"}, Cwd: dir}
	if v := pol.Decide(sh); !v.Allow || f.calls.Load() != 1 {
		t.Fatalf("the line: allow=%v asked %d", v.Allow, f.calls.Load())
	}
	f.answer = approval.DenyOnce
	chmod := func(pid, ppid int, argv ...string) *supervise.ExecEvent {
		return &supervise.ExecEvent{Pid: pid, Ppid: ppid, Program: "chmod", Exe: "/usr/bin/chmod", Argv: argv, Cwd: dir}
	}
	cases := []struct {
		name  string
		ev    *supervise.ExecEvent
		allow bool
	}{
		{"the line's process after its exec", chmod(self, os.Getppid(), "chmod", "600", "f"), true},
		{"a child of the line", chmod(child.Process.Pid, self, "chmod", "600", "g"), true},
		{"a command the line did not show", chmod(child.Process.Pid, self, "chmod", "777", "f"), false},
		{"outside the line's tree", chmod(os.Getppid(), 1, "chmod", "600", "f"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.calls.Load()
			v := pol.Decide(c.ev)
			asked := f.calls.Load() - before
			if v.Allow != c.allow || (c.allow && asked != 0) || (!c.allow && asked != 1) {
				t.Fatalf("allow=%v asked %d times; want allow=%v asked %v", v.Allow, asked, c.allow, !c.allow)
			}
		})
	}
	// The line's process gone (its pid possibly reused): the cover ends.
	pid := other.Process.Pid
	ostart, _ := procfs.StartTime(pid)
	pol2 := New(Config{Engine: testEngine(t, "developer"), Approver: &fakeApprover{answer: approval.AllowOnce}, Workspace: dir})
	pol2.Decide(&supervise.ExecEvent{Pid: pid, Start: ostart, Program: "sh", Exe: "/bin/sh", Argv: []string{"sh", "-c", "chmod 600 f"}, Cwd: dir})
	other.Process.Kill()
	other.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for procfs.Alive(pid, ostart) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	f2 := &fakeApprover{answer: approval.DenyOnce}
	pol2.cfg.Approver = f2
	if v := pol2.Decide(chmod(pid, self, "chmod", "600", "f")); v.Allow || f2.calls.Load() != 1 {
		t.Fatalf("after the line's process ended: allow=%v asked %d", v.Allow, f2.calls.Load())
	}
}

// TestPromptEnvShowsWhatChangesWhatRuns: git's identity and display
// variables are not shown to the approver; what changes what git runs is,
// and the audit event records it.
func TestPromptEnvShowsWhatChangesWhatRuns(t *testing.T) {
	got := relevantEnv([]string{"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x",
		"GIT_TERMINAL_PROMPT=0", "GIT_SSL_CAINFO=/ca.pem", "GIT_PS1_SHOWDIRTYSTATE=1", "TERM=xterm",
		"GIT_DIR=.git", "GIT_SSH_COMMAND=ssh -i k", "GIT_EDITOR=vi", "GIT_TRACE=/tmp/t", "LD_PRELOAD=/x.so"})
	want := "GIT_DIR=.git GIT_SSH_COMMAND=ssh -i k GIT_EDITOR=vi GIT_TRACE=/tmp/t LD_PRELOAD=/x.so"
	if strings.Join(got, " ") != want {
		t.Fatalf("relevantEnv = %q, want %q", strings.Join(got, " "), want)
	}
}

// TestAskCarriesTheRememberPreview: the approver is given the exact rule
// each "remember" answer would save, and the file.
func TestAskCarriesTheRememberPreview(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "agentbox.yaml")
	f := &fakeApprover{answer: approval.DenyOnce}
	pol := New(Config{Engine: testEngine(t, "developer"), Approver: f, Workspace: dir, ProjectPolicy: proj})
	pol.Decide(&supervise.ExecEvent{Pid: 8, Program: "chmod", Exe: "/usr/bin/chmod", Argv: []string{"chmod", "600", "key.pem"}, Cwd: dir})
	if r := f.last.Remember; r == nil || r.File != proj || r.Allow != "chmod 600" || r.Deny != "chmod" {
		t.Fatalf("request's remember preview %+v; want chmod 600 / chmod in %s", r, proj)
	}
}
