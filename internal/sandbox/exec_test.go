//go:build linux

package sandbox

// Integration tests of the exec policy through the real `agentbox run`
// (bin built from ./cmd/agentbox): Landlock, seccomp, the supervisor, the
// developer role, the socket approver and the audit log, with a real bare
// remote inside target/ (writable: only the exec policy stands between the
// agent and a push). After every push attempt the remote's refs must be
// unchanged.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/internal/testkit"
)

var (
	agentboxOnce sync.Once
	agentboxBin  string
	agentboxErr  error
)

// agentboxBinary builds cmd/agentbox once per test binary, or takes the
// pair `make build` just made when AGENTBOX_TEST_BINDIR names it (make
// test sets it: the same sources, one link instead of two).
func agentboxBinary(t testing.TB) string {
	t.Helper()
	agentboxOnce.Do(func() {
		if dir := os.Getenv("AGENTBOX_TEST_BINDIR"); dir != "" {
			agentboxBin = filepath.Join(dir, "agentbox")
			for _, p := range []string{agentboxBin, filepath.Join(dir, "agentbox-helper")} {
				if _, err := os.Stat(p); err != nil {
					agentboxErr = fmt.Errorf("AGENTBOX_TEST_BINDIR: %v (make build makes it)", err)
				}
			}
			return
		}
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			agentboxErr = fmt.Errorf("go env GOMOD: %v", err)
			return
		}
		dir, err := os.MkdirTemp("", "agentbox-exec-test")
		if err != nil {
			agentboxErr = err
			return
		}
		// With agentbox-helper next to it, as `make build` leaves them:
		// these runs use the small helper binary (the rest of this
		// package's tests start the test binary as the helper).
		agentboxBin = filepath.Join(dir, "agentbox")
		cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/agentbox", "./cmd/agentbox-helper")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentboxErr = fmt.Errorf("go build ./cmd/agentbox ./cmd/agentbox-helper: %v\n%s", err, out)
		}
	})
	if agentboxErr != nil {
		t.Fatal(agentboxErr)
	}
	return agentboxBin
}

// execWorld is a workspace with a repository in target/ whose origin is a
// bare repository inside target/.
type execWorld struct {
	t      testing.TB
	bin    string
	ws     string
	target string
	remote string
	audit  string
	policy string // --policy file outside the workspace, or ""
}

func newExecWorld(t testing.TB) *execWorld {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("reason: integration tests run agentbox as root (Landlock + cgroups + ptrace)")
	}
	if err := supervise.PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
	testkit.NeedProg(t, "git")
	w := &execWorld{t: t, bin: agentboxBinary(t)}
	base := t.TempDir()
	os.Chmod(base, 0o755)
	w.ws = filepath.Join(base, "ws")
	w.audit = filepath.Join(base, "audit.jsonl")
	if out, err := exec.Command(w.bin, "init", w.ws).CombinedOutput(); err != nil {
		t.Fatalf("agentbox init: %v %s", err, out)
	}
	w.target = filepath.Join(w.ws, "target")
	w.remote = filepath.Join(w.target, "remote.git")
	w.git("init", "-q", "-b", "main", w.target)
	w.git("-C", w.target, "config", "user.email", "agent@example.com")
	w.git("-C", w.target, "config", "user.name", "agent")
	os.WriteFile(filepath.Join(w.target, "README"), []byte("hello\n"), 0o644)
	w.git("-C", w.target, "add", "README")
	w.git("-C", w.target, "commit", "-q", "-m", "init")
	w.git("init", "-q", "--bare", w.remote)
	w.git("-C", w.target, "remote", "add", "origin", w.remote)
	w.git("-C", w.target, "push", "-q", "origin", "main") // the remote starts with main
	return w
}

func (w *execWorld) git(args ...string) string {
	w.t.Helper()
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// refs returns the remote's refs as seen from outside the sandbox.
func (w *execWorld) refs() string {
	out, _ := exec.Command("git", "--git-dir="+w.remote, "show-ref").CombinedOutput()
	return string(out)
}

// resetRemote deletes every branch but main from the remote, so one failed
// case does not fail the next.
func (w *execWorld) resetRemote() {
	out, _ := exec.Command("git", "--git-dir="+w.remote, "for-each-ref", "--format=%(refname)", "refs/heads/").Output()
	for _, r := range strings.Fields(string(out)) {
		if r != "refs/heads/main" {
			exec.Command("git", "--git-dir="+w.remote, "update-ref", "-d", r).Run()
		}
	}
}

type runOut struct {
	code           int
	stdout, stderr string
}

// run runs `agentbox run` with extra flags and the command.
func (w *execWorld) run(flags []string, argv ...string) runOut {
	w.t.Helper()
	// These tests hold the role's asks: with checkpoints on (run's
	// default) deleting in target/ is undoable and allowed
	// (TestUndoAfterRun in the root package holds that).
	args := []string{"run", "--role", "developer", "--workspace", w.ws, "--audit", w.audit, "--no-user-policy", "--checkpoints", "off"}
	if w.policy != "" {
		args = append(args, "--policy", w.policy)
	}
	args = append(args, flags...)
	args = append(args, "--")
	args = append(args, argv...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = nil
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("agentbox run: %v", err)
	}
	return runOut{code, so.String(), se.String()}
}

func (w *execWorld) auditEvents() []audit.Event {
	w.t.Helper()
	evs, err := audit.ReadFile(w.audit)
	if err != nil {
		w.t.Fatal(err)
	}
	return evs
}

// approver is an approval client on the socket approver: it answers every
// request with answer(req) and records the requests.
type approver struct {
	mu   sync.Mutex
	reqs []map[string]any
	// over is closed when the run has ended: a client still dialing then
	// stops (a run that never asks may end before it connected).
	over chan struct{}
}

func (a *approver) requests() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.reqs...)
}

// serve connects to the socket at path (waiting for it to appear) and
// answers until the connection closes. answer "" means: do not answer.
func (a *approver) serve(path string, answer func(req map[string]any) string) {
	var c net.Conn
	for i := 0; i < 600; i++ {
		var err error
		if c, err = net.Dial("unix", path); err == nil {
			break
		}
		select {
		case <-a.over:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	if c == nil {
		return
	}
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["type"] != "request" {
			continue
		}
		a.mu.Lock()
		a.reqs = append(a.reqs, m)
		a.mu.Unlock()
		if ans := answer(m); ans != "" {
			line, _ := json.Marshal(map[string]string{"type": "response", "id": m["id"].(string), "answer": ans})
			c.Write(append(line, '\n'))
		}
	}
}

// runApproved runs argv with a socket approver that allows every ask, so
// only deny rules stop anything.
func (w *execWorld) runApproved(argv ...string) (runOut, *approver) {
	sock := filepath.Join(filepath.Dir(w.audit), fmt.Sprintf("appr-%d.sock", time.Now().UnixNano()))
	a := &approver{over: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.serve(sock, func(map[string]any) string { return "allow" })
	}()
	out := w.run([]string{"--approve", "socket:" + sock}, argv...)
	close(a.over)
	<-done
	return out, a
}

func TestExecIntegrationPushAttempts(t *testing.T) {
	w := newExecWorld(t)
	before := w.refs()
	if !strings.Contains(before, "refs/heads/main") {
		t.Fatalf("remote not set up: %q", before)
	}
	// Extra programs prepared outside the sandbox.
	gitPath, _ := exec.LookPath("git")
	testkit.CopyFile(t, gitPath, filepath.Join(w.target, "x"))
	os.Symlink(gitPath, filepath.Join(w.target, "xs"))
	hardlink := os.Link(gitPath, filepath.Join(w.target, "xh")) == nil
	memfd := testkit.CompileC(t, t.TempDir(), "memfdgit", cMemfdGit)
	testkit.CopyFile(t, memfd, filepath.Join(w.target, "memfdgit"))
	racer := testkit.CompileC(t, t.TempDir(), "argvrace", cArgvRace)
	testkit.CopyFile(t, racer, filepath.Join(w.target, "argvrace"))
	ownListener := testkit.CompileC(t, t.TempDir(), "ownlistener", cOwnListener)
	testkit.CopyFile(t, ownListener, filepath.Join(w.target, "ownlistener"))
	w.git("-C", w.target, "config", "alias.p", "push")
	w.git("-C", w.target, "config", "alias.pp", "!git push origin HEAD:refs/heads/pp")
	w.git("-C", w.target, "config", "alias.q", "p")

	push := "origin HEAD:refs/heads/pwned"
	cases := []struct {
		name string
		argv []string
	}{
		{"plain", []string{"git", "push", "origin", "HEAD:refs/heads/pwned"}},
		{"global options", []string{"git", "-C", ".", "-c", "x.y=z", "--git-dir=.git", "push", "origin", "HEAD:refs/heads/pwned"}},
		{"env", []string{"env", "git", "push", "origin", "HEAD:refs/heads/pwned"}},
		{"bash -c", []string{"bash", "-c", "git push " + push}},
		{"eval", []string{"bash", "-c", `c="git pu"; eval "${c}sh ` + push + `"`}},
		{"xargs", []string{"sh", "-c", "echo " + push + " | xargs git push"}},
		{"find -exec", []string{"find", ".", "-maxdepth", "0", "-exec", "git", "push", "origin", "HEAD:refs/heads/pwned", ";"}},
		{"python os.execv", []string{"python3", "-c", `import os; os.execv("/usr/bin/git", ["git", "push", "origin", "HEAD:refs/heads/pwned"])`}},
		{"fexecve memfd copy", []string{"./memfdgit", gitPath, "push", "origin", "HEAD:refs/heads/pwned"}},
		{"-c alias", []string{"git", "-c", "alias.zz=push", "zz", "origin", "HEAD:refs/heads/pwned"}},
		{"repo alias", []string{"git", "p", "origin", "HEAD:refs/heads/pwned"}},
		{"chained alias", []string{"git", "q", "origin", "HEAD:refs/heads/pwned"}},
		{"! alias", []string{"git", "pp"}},
		{"env config alias", []string{"env", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=alias.yy", "GIT_CONFIG_VALUE_0=push", "git", "yy", "origin", "HEAD:refs/heads/pwned"}},
		{"copied git", []string{"./x", "push", "origin", "HEAD:refs/heads/pwned"}},
		{"symlinked git", []string{"./xs", "push", "origin", "HEAD:refs/heads/pwned"}},
		{"dashed git-push copy", []string{"sh", "-c", "cp ./x ./git-push && ./git-push origin HEAD:refs/heads/pwned"}},
		{"send-pack", []string{"git", "send-pack", "remote.git", "HEAD:refs/heads/pwned"}},
		// A notification listener of the sandbox's own on execve would
		// take precedence over agentbox's and could let its exec through.
		{"own exec notification listener", []string{"./ownlistener", gitPath, "push", "origin", "HEAD:refs/heads/pwned"}},
	}
	if hardlink {
		cases = append(cases, struct {
			name string
			argv []string
		}{"hardlinked git", []string{"./xh", "push", "origin", "HEAD:refs/heads/pwned"}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _ := w.runApproved(c.argv...)
			if strings.Contains(out.stderr, "not executable here, or denied by the sandbox") {
				t.Skipf("reason: the sandbox's system allowlist does not let %s run: %s", c.argv[0], out.stderr)
			}
			if got := w.refs(); got != before {
				w.resetRemote()
				t.Fatalf("remote refs changed:\n%s\nwas:\n%s\nstdout %q stderr %q", got, before, out.stdout, out.stderr)
			}
			if c.name == "own exec notification listener" && helper.ExecNotifySupported() == nil {
				// Refused by the kernel (the sandbox's seccomp filter)
				// before any push could be tried.
				if !strings.Contains(out.stderr, "own listener refused: Operation not permitted") || out.code != 3 {
					t.Errorf("the sandbox could install a notification listener of its own: %q (exit %d)", out.stderr, out.code)
				}
				return
			}
			if !strings.Contains(out.stderr, "agentbox: denied: ") {
				t.Errorf("no deny line on stderr: %q (exit %d)", out.stderr, out.code)
			}
		})
	}
	t.Run("post-commit hook that pushes", func(t *testing.T) {
		hook := filepath.Join(w.target, ".git", "hooks", "post-commit")
		os.WriteFile(hook, []byte("#!/bin/sh\ngit push origin HEAD:refs/heads/hook\n"), 0o755)
		defer os.Remove(hook)
		head := w.git("-C", w.target, "rev-parse", "HEAD")
		out, a := w.runApproved("git", "commit", "--allow-empty", "-m", "hooked")
		if got := w.refs(); got != before {
			w.resetRemote()
			t.Fatalf("hook pushed: %s", got)
		}
		if w.git("-C", w.target, "rev-parse", "HEAD") == head {
			t.Fatalf("the commit itself did not happen: %q %q", out.stdout, out.stderr)
		}
		if !strings.Contains(out.stderr, "agentbox: denied: git push origin HEAD:refs/heads/hook (rule developer/git.push:") {
			t.Errorf("stderr %q, approvals %v", out.stderr, a.requests())
		}
	})
	t.Run("argv rewritten by a thread during vfork+exec", func(t *testing.T) {
		out, _ := w.runApproved("./argvrace", "300")
		if got := w.refs(); got != before {
			w.resetRemote()
			t.Fatalf("race pushed: %s", got)
		}
		var pushes, statuses int
		for _, e := range w.auditEvents() {
			if e.Event == audit.EventGit && len(e.Argv) > 1 && e.Argv[1] == "push" && e.Decision == audit.DecisionDeny {
				pushes++
			}
			if e.Event == audit.EventGit && len(e.Argv) > 1 && e.Argv[1] == "status" && e.Decision == audit.DecisionAllow {
				statuses++
			}
		}
		t.Logf("argvrace: %d push execs denied, %d status execs allowed; stdout %q", pushes, statuses, lastLine(out.stdout))
		if pushes == 0 {
			t.Errorf("the race never produced a push exec (the test did not exercise the window)")
		}
	})
	// Every deny was audited with pid, argv, cwd, rule, layer, reason.
	var denies int
	for _, e := range w.auditEvents() {
		if e.Decision == audit.DecisionDeny && pushRules[e.Rule] {
			denies++
			if e.Pid == 0 || len(e.Argv) == 0 || e.Cwd == "" || e.Layer == "" || e.Reason == "" || e.Run == "" {
				t.Errorf("incomplete deny event %+v", e)
			}
		}
	}
	if denies < len(cases)-1 { // all but the listener, refused by the kernel
		t.Errorf("%d push denies audited for %d attempts", denies, len(cases)-1)
	}
}

// pushRules are the developer role's rules that deny pushes (send-pack is
// denied by its own rule, and as a push).
var pushRules = map[string]bool{"developer/git.push": true, "developer/git.send-pack": true,
	"developer/git.receive-pack": true, "developer/git.http-push": true}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// cOwnListener installs a seccomp filter of its own that turns execve
// into a user notification, answers it with CONTINUE from a forked child,
// and execs argv[1..]: if the sandbox let it have a listener, its execs
// would be answered by itself instead of by agentbox. It prints the
// seccomp error and exits 3 when the listener is refused.
const cOwnListener = `
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	int fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0) { fprintf(stderr, "own listener refused: %s\\n", strerror(errno)); return 3; }
	pid_t c = fork();
	if (c == 0) {
		struct seccomp_notif n; struct seccomp_notif_resp r;
		for (;;) {
			memset(&n, 0, sizeof n);
			if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0) return 0;
			memset(&r, 0, sizeof r);
			r.id = n.id; r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &r);
		}
	}
	close(fd);
	execv(argv[1], argv + 1);
	perror("execv");
	kill(c, SIGKILL);
	return 1;
}
`

// cMemfdGit copies argv[1] into a memfd and fexecve's it with argv[0] "x"
// and the remaining arguments.
const cMemfdGit = `
#define _GNU_SOURCE
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
extern char **environ;
int main(int c, char **v) {
	int in = open(v[1], O_RDONLY), fd = memfd_create("x", MFD_CLOEXEC);
	char buf[65536]; ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) write(fd, buf, n);
	v[1] = "x";
	fexecve(fd, v + 1, environ);
	perror("fexecve");
	return 99;
}
`

// cArgvRace: a second thread flips the subcommand string between "status"
// and "push" while the main thread vfork+execs git with it N times.
const cArgvRace = `
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static char sub[16] = "status";
static volatile int stop;
static void *flip(void *a) {
	while (!stop) { memcpy(sub, "push\0\0", 7); memcpy(sub, "status", 7); }
	return 0;
}
int main(int c, char **v) {
	int n = c > 1 ? atoi(v[1]) : 300, ok = 0;
	pthread_t t; pthread_create(&t, 0, flip, 0);
	char *argv[] = {"git", sub, "origin", "HEAD:refs/heads/race", 0};
	for (int i = 0; i < n; i++) {
		pid_t p = vfork();
		if (p == 0) { execv("/usr/bin/git", argv); _exit(127); }
		int st; waitpid(p, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ok++;
	}
	stop = 1; pthread_join(t, 0);
	printf("done %d ok %d\n", n, ok);
	return 0;
}
`

func TestExecIntegrationPositive(t *testing.T) {
	w := newExecWorld(t)
	// The kernel boundary and the exec policy let ordinary work through.
	os.WriteFile(filepath.Join(w.target, "README"), []byte("changed\n"), 0o644)
	for _, argv := range [][]string{
		{"git", "status", "--short"},
		{"git", "branch", "feature"},
		{"git", "add", "README"},
		{"git", "commit", "-q", "-m", "edit readme"},
		{"git", "log", "--oneline"},
	} {
		out := w.run([]string{"--approve", "none"}, argv...)
		if out.code != 0 {
			t.Fatalf("%v: exit %d stdout %q stderr %q", argv, out.code, out.stdout, out.stderr)
		}
	}
	if !strings.Contains(w.git("-C", w.target, "branch"), "feature") || !strings.Contains(w.git("-C", w.target, "log", "--oneline"), "edit readme") {
		t.Fatal("branch or commit missing")
	}
	// Commit without a message is denied (the role's deletion and commit rules, docs/policy.md), exit 126.
	out := w.run([]string{"--approve", "none"}, "git", "commit", "--allow-empty")
	if out.code != ExitDenied || !strings.Contains(out.stderr, "commit message required") {
		t.Fatalf("commit without message: exit %d stderr %q", out.code, out.stderr)
	}
	// --approve none turns ask into deny, audited as ask_unavailable.
	os.WriteFile(filepath.Join(w.target, "junk"), nil, 0o644)
	out = w.run([]string{"--approve", "none"}, "rm", "junk")
	if out.code != ExitDenied || !testkit.Exists(filepath.Join(w.target, "junk")) {
		t.Fatalf("rm with --approve none: exit %d, stderr %q", out.code, out.stderr)
	}
	evs := w.auditEvents()
	if last := lastExec(evs); last.Decision != audit.DecisionAskUnavailable || last.Action != "tool:exec:rm junk" {
		t.Fatalf("audit: %+v", last)
	}
}

func lastExec(evs []audit.Event) audit.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Event == audit.EventExec || evs[i].Event == audit.EventGit {
			return evs[i]
		}
	}
	return audit.Event{}
}

func TestExecIntegrationBuilds(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	w := newExecWorld(t)
	testkit.NeedProg(t, "make", "gcc")
	proj := filepath.Join(w.target, "cproj")
	writeCProject(t, proj, 20)
	out, a := w.runApproved("make", "-C", "cproj", "-j2")
	if out.code != 0 || !testkit.Exists(filepath.Join(proj, "prog")) {
		t.Fatalf("make -j2: exit %d stderr %q", out.code, out.stderr)
	}
	t.Logf("make -j2: %d approvals asked (toolchain internals the role does not name)", len(a.requests()))
	if _, err := exec.LookPath("go"); err == nil {
		gop := filepath.Join(w.target, "gomod")
		os.MkdirAll(gop, 0o755)
		os.WriteFile(filepath.Join(gop, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644)
		os.WriteFile(filepath.Join(gop, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"ok\") }\n"), 0o644)
		out, _ = w.runApproved("sh", "-c", "cd gomod && PATH=$PATH:"+filepath.Dir(testkit.LookProg(t, "go"))+" go build -o m . && ./m")
		if out.code != 0 || !strings.Contains(out.stdout, "ok") {
			t.Fatalf("go build: exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
		}
	}
}

// writeCProject writes a C project of n files with a Makefile.
func writeCProject(t testing.TB, dir string, n int) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	var objs, calls, decls strings.Builder
	for i := 0; i < n; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(fmt.Sprintf("int f%d(int x) { return x + %d; }\n", i, i)), 0o644)
		fmt.Fprintf(&objs, " f%d.o", i)
		fmt.Fprintf(&decls, "int f%d(int);\n", i)
		fmt.Fprintf(&calls, "s += f%d(%d);\n", i, i)
	}
	os.WriteFile(filepath.Join(dir, "main.c"), []byte(decls.String()+"#include <stdio.h>\nint main(void) { int s = 0;\n"+calls.String()+"printf(\"%d\\n\", s); return 0; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("prog: main.o"+objs.String()+"\n\tcc -o $@ $^\n%.o: %.c\n\tcc -c -o $@ $<\n"), 0o644)
}

func TestExecIntegrationApprovals(t *testing.T) {
	w := newExecWorld(t)
	// A role with a short approval timeout, from a policy file outside the workspace.
	w.policy = filepath.Join(filepath.Dir(w.audit), "fast.yaml")
	os.WriteFile(w.policy, []byte("version: 1\nroles:\n  fastdev:\n    extends: developer\n    limits: {approval_timeout: 2s}\n"), 0o644)
	runWith := func(answer func(map[string]any) string, argv ...string) (runOut, *approver) {
		sock := filepath.Join(filepath.Dir(w.audit), fmt.Sprintf("a-%d.sock", time.Now().UnixNano()))
		a := &approver{over: make(chan struct{})}
		done := make(chan struct{})
		go func() { defer close(done); a.serve(sock, answer) }()
		args := []string{"run", "--role", "fastdev", "--workspace", w.ws, "--audit", w.audit, "--no-user-policy", "--checkpoints", "off", "--policy", w.policy, "--approve", "socket:" + sock, "--"}
		cmd := exec.Command(w.bin, append(args, argv...)...)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		close(a.over)
		<-done
		return runOut{code, so.String(), se.String()}, a
	}
	mk := func(name string) string {
		p := filepath.Join(w.target, name)
		os.WriteFile(p, nil, 0o644)
		return p
	}
	cases := []struct {
		answer   string
		removed  bool
		decision string
	}{
		{"allow", true, audit.DecisionAskApproved},
		{"deny", false, audit.DecisionAskDenied},
		{"", false, audit.DecisionAskTimeout},
	}
	for _, c := range cases {
		t.Run("answer "+c.answer, func(t *testing.T) {
			f := mk("victim-" + c.answer)
			out, a := runWith(func(map[string]any) string { return c.answer }, "rm", filepath.Base(f))
			if testkit.Exists(f) == c.removed {
				t.Fatalf("removed=%v, want %v; exit %d stderr %q", !testkit.Exists(f), c.removed, out.code, out.stderr)
			}
			if len(a.requests()) != 1 || a.requests()[0]["action"] != "tool:exec:rm "+filepath.Base(f) {
				t.Fatalf("requests %v", a.requests())
			}
			last := lastExec(w.auditEvents())
			if last.Decision != c.decision || (c.answer != "" && !strings.HasPrefix(last.Approver, "socket")) {
				t.Fatalf("audit %+v, want %s", last, c.decision)
			}
		})
	}
	t.Run("allow_always", func(t *testing.T) {
		f1, f2 := mk("a1"), mk("a2")
		_, a := runWith(func(map[string]any) string { return "allow_always" }, "sh", "-c", "rm a1 a2; rm -f a1 a2; touch a1 a2; rm a1 a2")
		if testkit.Exists(f1) || testkit.Exists(f2) {
			t.Fatal("files not removed")
		}
		// The sh line is asked once; "always" makes session rules for its
		// parts, so none of the three `rm a1 a2` execs is asked again.
		if n := len(a.requests()); n != 1 {
			t.Fatalf("%d approvals asked, want 1; requests %v", n, a.requests())
		}
		var sess int
		for _, e := range w.auditEvents() {
			if e.Action == "tool:exec:rm a1 a2" && e.Decision == audit.DecisionAllow && strings.HasPrefix(e.Rule, "session:") {
				sess++
			}
		}
		if sess != 2 {
			t.Fatalf("%d rm execs allowed by a session rule, want 2", sess)
		}
	})
}

// cWindow tries, from inside the sandbox, what would reopen the window after
// an exec decision: writing a sibling's memory (/proc/PID/mem,
// process_vm_writev), tracing it, and starting a child the supervisor does
// not trace (CLONE_UNTRACED) that then execs git push.
const cWindow = `
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
static char buf[64] = "original";
int main(int c, char **v) {
	pid_t kid = fork();
	if (kid == 0) { for (;;) pause(); }
	char p[64]; snprintf(p, sizeof p, "/proc/%d/mem", kid);
	int fd = open(p, O_RDWR);
	printf("open-mem-rw=%s\n", fd < 0 ? strerror(errno) : "OPENED");
	fd = open(p, O_WRONLY);
	printf("open-mem-wo=%s\n", fd < 0 ? strerror(errno) : "OPENED");
	char nb[8] = "patched";
	struct iovec l = {nb, 8}, r = {buf, 8};
	ssize_t n = process_vm_writev(kid, &l, 1, &r, 1, 0);
	printf("process_vm_writev=%s\n", n < 0 ? strerror(errno) : "WROTE");
	long t = ptrace(PTRACE_ATTACH, kid, 0, 0);
	printf("ptrace-attach=%s\n", t < 0 ? strerror(errno) : "ATTACHED");
	kill(kid, SIGKILL); waitpid(kid, 0, 0);
	long u = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);
	if (u == 0) {
		char *argv[] = {"git", "push", "origin", "HEAD:refs/heads/untraced", 0};
		execv("/usr/bin/git", argv);
		_exit(127);
	}
	if (u < 0) printf("clone-untraced=%s\n", strerror(errno));
	else { int st; waitpid(u, &st, 0); printf("clone-untraced=ran exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)); }
	return 0;
}
`

func TestExecIntegrationWindowClosed(t *testing.T) {
	w := newExecWorld(t)
	before := w.refs()
	bin := testkit.CompileC(t, t.TempDir(), "window", cWindow)
	testkit.CopyFile(t, bin, filepath.Join(w.target, "window"))
	out := w.run([]string{"--approve", "none", "--policy", writePolicy(t, "version: 1\nrules:\n  - {decision: allow, command: window}\n")}, "./window")
	t.Logf("exit %d\n%s%s", out.code, out.stdout, out.stderr)
	// /proc/PID/mem: refused by Landlock (/proc read-only: EACCES) and, as
	// root, also by the read-only mount namespace (EROFS).
	for _, m := range []string{"open-mem-rw=", "open-mem-wo="} {
		if !strings.Contains(out.stdout, m+"Permission denied") && !strings.Contains(out.stdout, m+"Read-only file system") {
			t.Errorf("want %q refused in\n%s", m, out.stdout)
		}
	}
	for _, want := range []string{"process_vm_writev=Operation not permitted", "ptrace-attach=Operation not permitted", "clone-untraced=Operation not permitted"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("want %q in\n%s", want, out.stdout)
		}
	}
	if got := w.refs(); got != before {
		w.resetRemote()
		t.Fatalf("an untraced clone pushed: %s", got)
	}
}

// writePolicy writes a policy file outside any workspace.
func writePolicy(t testing.TB, body string) string {
	t.Helper()
	d := t.TempDir()
	os.Chmod(d, 0o755)
	p := filepath.Join(d, "policy.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExecIntegrationUnattendedDevelopment: under `--approve none` (how
// orchestrators run developers) ordinary development works: make -j2 of a
// C project (gcc's cc1/collect2/lto-wrapper by location), go build (the go
// command's compile/link in $GOROOT/pkg/tool), running what was built,
// workspace scripts and a git hook. What that code starts is still decided:
// a hook that pushes is denied, and a copy of a policed binary placed in
// target/ is still that program.
func TestExecIntegrationUnattendedDevelopment(t *testing.T) {
	w := newExecWorld(t)
	testkit.NeedProg(t, "make", "gcc")
	none := []string{"--approve", "none"}
	proj := filepath.Join(w.target, "cproj")
	writeCProject(t, proj, 8)
	if out := w.run(none, "make", "-C", "cproj", "-j2"); out.code != 0 || !testkit.Exists(filepath.Join(proj, "prog")) {
		t.Fatalf("make -j2: exit %d stderr %q", out.code, out.stderr)
	}
	if out := w.run(none, "./cproj/prog"); out.code != 0 || strings.TrimSpace(out.stdout) != "56" {
		t.Fatalf("./cproj/prog: exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
	}

	t.Run("go build", func(t *testing.T) {
		goBin := testkit.LookProg(t, "go")
		gop := filepath.Join(w.target, "gomod")
		os.MkdirAll(gop, 0o755)
		os.WriteFile(filepath.Join(gop, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644)
		os.WriteFile(filepath.Join(gop, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built ok\") }\n"), 0o644)
		out := w.run(none, "sh", "-c", "cd gomod && PATH=$PATH:"+filepath.Dir(goBin)+" go build -o m . && ./m")
		if out.code != 0 || !strings.Contains(out.stdout, "built ok") {
			t.Fatalf("go build: exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
		}
	})

	t.Run("scripts", func(t *testing.T) {
		os.WriteFile(filepath.Join(w.target, "configure"), []byte("#!/bin/sh\necho configured \"$@\"\n"), 0o755)
		os.WriteFile(filepath.Join(w.target, "build.sh"), []byte("echo building; ./configure --fast\n"), 0o644)
		out := w.run(none, "bash", "build.sh")
		if out.code != 0 || !strings.Contains(out.stdout, "configured --fast") {
			t.Fatalf("bash build.sh: exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
		}
	})

	t.Run("git hooks", func(t *testing.T) {
		hooks := filepath.Join(w.target, ".git", "hooks")
		os.MkdirAll(hooks, 0o755)
		hook := "#!/bin/sh\necho ran > hook-ran\ngit push -q origin HEAD:refs/heads/from-hook\n"
		if err := os.WriteFile(filepath.Join(hooks, "post-commit"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
		before := w.refs()
		out := w.run(none, "git", "commit", "-q", "--allow-empty", "-m", "hooked")
		if out.code != 0 {
			t.Fatalf("git commit with a post-commit hook: exit %d stderr %q", out.code, out.stderr)
		}
		if !testkit.Exists(filepath.Join(w.target, "hook-ran")) {
			t.Fatalf("post-commit hook did not run; stderr %q", out.stderr)
		}
		if w.refs() != before || !strings.Contains(out.stderr, "agentbox: denied") {
			t.Fatalf("the hook's push was not denied: refs %q -> %q, stderr %q", before, w.refs(), out.stderr)
		}
		var sawHook, sawPushDeny bool
		for _, e := range w.auditEvents() {
			if e.Decision == audit.DecisionAllow && e.Rule == "developer/programs.target" && strings.Contains(strings.Join(e.Argv, " "), "hooks/post-commit") {
				sawHook = e.Detail["rule_source"] != ""
			}
			if e.Event == audit.EventGit && e.Decision == audit.DecisionDeny && strings.HasPrefix(e.Action, "tool:git:push") {
				sawPushDeny = true
			}
		}
		if !sawHook || !sawPushDeny {
			t.Fatalf("audit: hook allowed by developer/programs.target with its source %v, push denied %v", sawHook, sawPushDeny)
		}
		os.Remove(filepath.Join(hooks, "post-commit"))
	})

	t.Run("copies of policed programs in target stay policed", func(t *testing.T) {
		os.MkdirAll(filepath.Join(w.target, "build"), 0o755)
		testkit.CopyFile(t, testkit.LookProg(t, "git"), filepath.Join(w.target, "build", "tool"))
		before := w.refs()
		out := w.run(none, "./build/tool", "push", "-q", "origin", "HEAD:refs/heads/from-copy")
		if !deniedRun(out) || w.refs() != before || !strings.Contains(out.stderr, "developer/git.push") {
			t.Fatalf("copy of git in target: exit %d stderr %q", out.code, out.stderr)
		}
		if p, err := exec.LookPath("curl"); err == nil {
			testkit.CopyFile(t, p, filepath.Join(w.target, "build", "fetch"))
			out = w.run(none, "./build/fetch", "--version")
			if !deniedRun(out) || !strings.Contains(out.stderr, "agentbox: denied: curl --version") {
				t.Fatalf("copy of curl in target: exit %d stderr %q", out.code, out.stderr)
			}
		}
		for _, argv := range [][]string{{"git", "send-pack", w.remote, "main"}, {"git-receive-pack", w.remote}, {"git", "receive-pack", w.remote}} {
			out = w.run(none, argv...)
			if !deniedRun(out) {
				t.Fatalf("%v: exit %d stderr %q", argv, out.code, out.stderr)
			}
		}
	})
}

// deniedRun reports whether a run's command was denied: exit 126 with the
// deny line, or 128+9 where the supervisor had to kill the denied program
// instead of making it exit (see ExitDenied).
func deniedRun(out runOut) bool {
	return (out.code == ExitDenied || out.code == 128+9) && strings.Contains(out.stderr, "agentbox: denied: ")
}

// cPreloadPush is a preload library whose constructor rewrites the argv git
// main will see: `git status --short --branch` becomes `git push origin
// main:evil`, without another exec. LD_AUDIT loads it the same way.
const cPreloadPush = `
#include <stdlib.h>
#include <string.h>
static char *rewritten[] = {"push", "origin", "main:evil"};
__attribute__((constructor)) static void init(int argc, char **argv, char **envp) {
	unsetenv("LD_PRELOAD"); /* children (git-receive-pack) run clean */
	unsetenv("LD_AUDIT");
	if (argc == 4 && strcmp(argv[1], "status") == 0) {
		argv[1] = rewritten[0]; argv[2] = rewritten[1]; argv[3] = rewritten[2];
	}
}
unsigned int la_version(unsigned int v) { return v; }
`

// TestExecIntegrationLoaderEnvironment: an allowed git started with
// LD_PRELOAD or LD_AUDIT naming a library the agent compiled in target/ is
// denied before its first instruction (the library would rewrite argv into
// a push); the push never happens, the run reports the deny, the audit event
// names the variable. Set through `export` in a script (not a prefix on a
// parsed line), it is still seen: the decision reads the new image's
// environment.
func TestExecIntegrationLoaderEnvironment(t *testing.T) {
	w := newExecWorld(t)
	testkit.NeedProg(t, "gcc")
	lib := filepath.Join(w.target, "evil.so")
	src := filepath.Join(t.TempDir(), "evil.c")
	os.WriteFile(src, []byte(cPreloadPush), 0o644)
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	// Outside any sandbox the library does what it says: the control.
	ctl := exec.Command("git", "status", "--short", "--branch")
	ctl.Dir = w.target
	ctl.Env = append(os.Environ(), "LD_PRELOAD="+lib)
	if out, _ := ctl.CombinedOutput(); !strings.Contains(w.refs(), "refs/heads/evil") {
		t.Fatalf("control: the preload library did not turn git status into a push:\n%s", out)
	}
	w.resetRemote()
	before := w.refs()
	for _, variable := range []string{"LD_PRELOAD", "LD_AUDIT"} {
		script := filepath.Join(w.target, "agent-"+variable+".sh")
		os.WriteFile(script, []byte("export "+variable+"="+lib+"\ngit status --short --branch\n"), 0o755)
		r := w.run([]string{"--approve", "none"}, "sh", script)
		if r.code != 126 || !strings.Contains(r.stderr, variable+" points into target/") {
			t.Errorf("%s: exit %d, stderr %q; want 126 and a deny naming the variable", variable, r.code, r.stderr)
		}
		if after := w.refs(); after != before {
			t.Fatalf("%s: the push happened:\n%s", variable, after)
		}
		found := false
		for _, e := range w.auditEvents() {
			if e.Event == audit.EventGit && e.Decision == audit.DecisionDeny && strings.Contains(e.Detail["env"], variable+"="+lib) && strings.Contains(e.Reason, variable) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no git deny event naming the variable in the audit log", variable)
		}
	}
	// A program the developer built may be started with LD_LIBRARY_PATH
	// pointing at its own output (the role's inject_env); git may not.
	// (A script file: the same line given to sh -c is refused as a whole,
	// its git part decided by the same rule before sh starts.)
	script := filepath.Join(w.target, "build.sh")
	os.WriteFile(script, []byte("export LD_LIBRARY_PATH="+w.target+"\n/bin/true && echo true=$?\ngit status; echo git=$?\n"), 0o755)
	r := w.run([]string{"--approve", "none"}, "sh", script)
	if !strings.Contains(r.stdout, "true=0") || !strings.Contains(r.stdout, "git=126") {
		t.Errorf("git with LD_LIBRARY_PATH=target/: stdout %q stderr %q; want git denied", r.stdout, r.stderr)
	}
}

// TestExecIntegrationPatchedLoader: a copy of ld.so with its build id
// patched and a byte appended, placed in target/ (where the developer may
// run what it builds), is still the loader: running git through it is
// refused, and the push it would do never happens.
func TestExecIntegrationPatchedLoader(t *testing.T) {
	w := newExecWorld(t)
	ld := testkit.PatchedLoader(t, w.target, identity.LoaderGlobs, identity.BuildID)
	before := w.refs()
	r := w.run([]string{"--approve", "none"}, ld, "/usr/bin/git", "push", "origin", "main:evil")
	if r.code != 126 || !strings.Contains(r.stderr, "dynamic loader") {
		t.Errorf("exit %d, stderr %q; want 126 refusing the loader", r.code, r.stderr)
	}
	if after := w.refs(); after != before {
		t.Fatalf("the push happened:\n%s", after)
	}
}

// TestExecIntegrationNewRepoWatched: a repository the agent creates during
// the run (git init), deeper than the end-of-run scan walks, with a hook in
// it is reported when the run ends: a violation event and one warning line,
// like a changed hook of a repository present at launch.
func TestExecIntegrationNewRepoWatched(t *testing.T) {
	w := newExecWorld(t)
	// A script file: the same line given to sh -c is refused before it runs
	// (its write into a .git/hooks path is a read-only carve-out).
	script := filepath.Join(w.target, "mkrepo.sh")
	os.WriteFile(script, []byte("git init -q deep/er/still/sub && printf '#!/bin/sh\\necho owned\\n' > deep/er/still/sub/.git/hooks/pre-commit && git init -q clean; echo done\n"), 0o755)
	r := w.run([]string{"--approve", "none"}, "sh", script)
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "sub/.git/hooks/pre-commit: hook pre-commit") || strings.Contains(r.stderr, "clean/.git") {
		t.Errorf("stderr %q; want one warning for sub/ and none for clean/", r.stderr)
	}
	found := false
	for _, e := range w.auditEvents() {
		if e.Event == audit.EventViolation && strings.Contains(e.Reason, "hook pre-commit") && strings.HasSuffix(e.Detail["path"], "sub/.git/hooks/pre-commit") {
			found = true
		}
	}
	if !found {
		t.Error("no violation event for the new repository's hook")
	}
}

// TestExecIntegrationGitLeftovers: what makes the human's git run a
// program, written during the run anywhere git looks — core.fsmonitor in
// a submodule's config under .git/modules, a commondir redirect — is
// reported when every process of the run is gone: a violation event and
// a warning line naming the file, the key and agentbox quarantine;
// quarantine moves it aside. A background process that changes
// .git/config after the command exited either is killed first or is
// caught: never a silent change.
func TestExecIntegrationGitLeftovers(t *testing.T) {
	w := newExecWorld(t)
	mod := filepath.Join(w.target, ".git", "modules", "lib")
	w.git("init", "-q", "--bare", mod)
	script := filepath.Join(w.target, "plant.sh")
	os.WriteFile(script, []byte("printf '[core]\\n\\tfsmonitor = ./fsm.sh\\n' >> .git/modules/lib/config\n"+
		"printf '/tmp/elsewhere\\n' > .git/commondir\n"+
		"(sleep 0.05; printf '[core]\\n\\tpager = ./pg.sh\\n' >> .git/config) &\n"+
		"echo planted\n"), 0o755)
	r := w.run([]string{"--approve", "none"}, "sh", script)
	if !strings.Contains(r.stdout, "planted") {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{".git/modules/lib/config: config core.fsmonitor = ./fsm.sh", ".git/commondir: commondir -> /tmp/elsewhere", "agentbox quarantine"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(w.target, ".git", "config"))
	if strings.Contains(string(cfg), "pg.sh") && !strings.Contains(r.stderr, "core.pager = ./pg.sh") {
		t.Errorf(".git/config was changed after the command exited and not reported:\n%s", r.stderr)
	}
	events := 0
	for _, e := range w.auditEvents() {
		if e.Event == audit.EventViolation && e.Detail["git"] != "" {
			events++
		}
	}
	if events < 2 {
		t.Errorf("%d violation events, want one per finding", events)
	}
	out, err := exec.Command(w.bin, "quarantine", filepath.Join(mod, "config")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "agentbox-quarantine") {
		t.Errorf("quarantine: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(mod, "config")); !os.IsNotExist(err) {
		t.Error("the submodule config is still in place")
	}
}

// TestHelperBinary: agentbox starts agentbox-helper when it sits next to
// its executable, and itself when it does not; both run the command.
func TestHelperBinary(t *testing.T) {
	w := newExecWorld(t)
	r := w.run([]string{"--debug", "--approve", "none"}, "/bin/echo", "hi")
	if r.code != 0 || r.stdout != "hi\n" {
		t.Fatalf("with agentbox-helper: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
	}
	if want := "started (" + filepath.Join(filepath.Dir(w.bin), HelperBinary) + ")"; !strings.Contains(r.stderr, want) {
		t.Errorf("the helper binary next to agentbox was not used (want %q):\n%s", want, r.stderr)
	}
	// A copy of agentbox alone in its directory starts itself.
	alone := filepath.Join(t.TempDir(), "agentbox")
	data, err := os.ReadFile(w.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	w.bin = alone
	r = w.run([]string{"--debug", "--approve", "none"}, "/bin/echo", "hi")
	if r.code != 0 || r.stdout != "hi\n" {
		t.Fatalf("without agentbox-helper: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "started (/proc/self/exe)") {
		t.Errorf("agentbox alone did not start itself as the helper:\n%s", r.stderr)
	}
}

// TestExecIntegrationConfigChildNotLifted: core.fsmonitor in the agent's
// own ~/.gitconfig makes the allowed `git stash` start a script, which
// execs `git reset --hard HEAD~1`. That git is a child of the stash by
// pid, but it is not one the stash started as itself: it is decided as a
// program of its own (the role denies reset --hard) and the commit stays.
func TestExecIntegrationConfigChildNotLifted(t *testing.T) {
	w := newExecWorld(t)
	os.WriteFile(filepath.Join(w.target, "second"), []byte("2\n"), 0o644)
	w.git("-C", w.target, "add", "second")
	w.git("-C", w.target, "commit", "-q", "-m", "second")
	head := strings.TrimSpace(w.git("-C", w.target, "rev-parse", "HEAD"))
	fsm := filepath.Join(w.target, "fsm.sh")
	os.WriteFile(fsm, []byte("#!/bin/sh\nexec git reset --hard -q HEAD~1\n"), 0o755)
	home := filepath.Join(w.ws, "agents", "main", "home")
	os.MkdirAll(home, 0o700)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\tfsmonitor = "+fsm+"\n"), 0o644)
	os.WriteFile(filepath.Join(w.target, "README"), []byte("changed\n"), 0o644)
	out := w.run([]string{"--approve", "none"}, "git", "stash")
	if got := strings.TrimSpace(w.git("-C", w.target, "rev-parse", "HEAD")); got != head {
		t.Errorf("HEAD moved from %s to %s: the config-started git reset --hard ran\n%s", head, got, out.stderr)
	}
	denied := false
	for _, e := range w.auditEvents() {
		if e.Action != "tool:git:reset --hard -q HEAD~1" {
			continue // the stash's own reset (--no-recurse-submodules) is lifted, as it should be
		}
		if e.Decision == audit.DecisionAllow {
			t.Errorf("the script's reset --hard allowed: %s", e.Reason)
		}
		denied = denied || e.Decision == audit.DecisionDeny
	}
	if !denied {
		t.Errorf("no denied reset --hard HEAD~1 in the audit log\n%s", out.stderr)
	}
}
