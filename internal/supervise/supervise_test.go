//go:build linux

package supervise

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/testkit"
	"golang.org/x/sys/unix"
)

// The unit tests of Supervise run real processes under the real supervisor
// with a decide function of their own (no Landlock, no policy engine). The
// helper is this test binary re-executed (TestSuperviseHelperProcess): it
// blocks reading one byte from fd 3 and then execs the command after "--".

const (
	superviseHelperEnv = "AGENTBOX_TEST_SUPERVISE_HELPER"
	superviseNotifyEnv = "AGENTBOX_TEST_SUPERVISE_NOTIFY"
)

// notifyMode makes supervise() use notify mode (exec notifications).
var notifyMode bool

// TestSuperviseHelperProcess is not a test: it is the blocked helper when the
// environment variable is set.
func TestSuperviseHelperProcess(t *testing.T) {
	if os.Getenv(superviseHelperEnv) != "1" {
		return
	}
	if os.Getenv(superviseNotifyEnv) == "1" {
		// Notify mode: install the exec-notification filter on this
		// (locked) thread, park the listener at fd 10, say ready on fd 4.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			os.Exit(125)
		}
		fd, err := helper.InstallExecNotify()
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(125)
		}
		if err := unix.Dup3(fd, 10, unix.O_CLOEXEC); err != nil {
			os.Exit(125)
		}
		unix.Write(4, []byte{'R'})
		unix.Close(4)
	}
	var b [1]byte
	if n, _ := unix.Read(3, b[:]); n != 1 {
		os.Exit(125)
	}
	unix.Close(3)
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(127)
	}
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, superviseHelperEnv+"=") {
			env = append(env, e)
		}
	}
	err = syscall.Exec(path, args, env)
	fmt.Fprintln(os.Stderr, "helper exec:", err)
	os.Exit(126)
}

// run is one supervised run's setup and outcome.
type run struct {
	argv     []string
	dir      string
	decide   func(*ExecEvent) Verdict
	fast     func(*ExecEvent) (Verdict, bool)
	ctx      context.Context
	status   syscall.WaitStatus
	err      error
	stdout   string
	stderr   string
	mu       sync.Mutex
	events   []*ExecEvent
	duration time.Duration
}

func (r *run) Events() []*ExecEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*ExecEvent(nil), r.events...)
}

// helperStart returns start/release functions for a blocked helper running argv.
func helperStart(t testing.TB, argv []string, dir string, stdout, stderr *os.File) (func() (int, error), func() error) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestSuperviseHelperProcess$", "--"}, argv...)...)
	cmd.Env = append(os.Environ(), superviseHelperEnv+"=1")
	cmd.ExtraFiles = []*os.File{r}
	var ready *os.File
	if notifyMode {
		rr, rw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ready = rr
		cmd.ExtraFiles = append(cmd.ExtraFiles, rw)
		cmd.Env = append(cmd.Env, superviseNotifyEnv+"=1")
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := func() (int, error) {
		defer r.Close()
		if err := cmd.Start(); err != nil {
			w.Close()
			return 0, err
		}
		if ready != nil {
			for _, f := range cmd.ExtraFiles[1:] {
				f.Close()
			}
			var b [1]byte
			n, _ := ready.Read(b[:])
			ready.Close()
			if n != 1 {
				return cmd.Process.Pid, fmt.Errorf("helper did not install the exec notification filter")
			}
		}
		return cmd.Process.Pid, nil
	}
	release := func() error {
		defer w.Close()
		_, err := w.Write([]byte{1})
		return err
	}
	return start, release
}

// supervise runs r under Supervise and fills in its outcome. It skips the
// test when the kernel refuses ptrace.
func supervise(t testing.TB, r *run) *run {
	t.Helper()
	if r.dir == "" {
		r.dir = t.TempDir()
	}
	if r.ctx == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r.ctx = ctx
	}
	outF, _ := os.CreateTemp(t.TempDir(), "out")
	errF, _ := os.CreateTemp(t.TempDir(), "err")
	defer outF.Close()
	defer errF.Close()
	start, release := helperStart(t, r.argv, r.dir, outF, errF)
	decide := func(ev *ExecEvent) Verdict {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		if r.decide == nil {
			return Verdict{Allow: true}
		}
		return r.decide(ev)
	}
	t0 := time.Now()
	var fast func(*ExecEvent) (Verdict, bool)
	if r.fast != nil {
		fast = func(ev *ExecEvent) (Verdict, bool) {
			v, ok := r.fast(ev)
			if ok {
				r.mu.Lock()
				r.events = append(r.events, ev)
				r.mu.Unlock()
			}
			return v, ok
		}
	}
	root := 0
	opts := Options{Start: func() (int, error) {
		pid, err := start()
		root = pid
		return pid, err
	}, Release: release, Decide: decide, DecideFast: fast}
	if notifyMode {
		opts.ExecListener = func() (int, error) {
			pfd, err := unix.PidfdOpen(root, 0)
			if err != nil {
				return -1, err
			}
			defer unix.Close(pfd)
			return unix.PidfdGetfd(pfd, 10, 0)
		}
	}
	r.status, r.err = Run(r.ctx, opts)
	r.duration = time.Since(t0)
	if errors.Is(r.err, ErrPtraceUnavailable) {
		t.Skipf("reason: %v", r.err)
	}
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	r.stdout, r.stderr = string(o), string(e)
	return r
}

// denyIf denies programs for which match returns true.
func denyIf(match func(ev *ExecEvent) bool) func(*ExecEvent) Verdict {
	return func(ev *ExecEvent) Verdict {
		if match(ev) {
			return Verdict{Message: "agentbox: denied: " + strings.Join(ev.Argv, " ") + " (rule test/deny)"}
		}
		return Verdict{Allow: true}
	}
}

func programIs(name string) func(*ExecEvent) bool {
	return func(ev *ExecEvent) bool { return ev.Program == name }
}

func TestSuperviseStatusAndAllow(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		argv   []string
		exited int
		signal syscall.Signal
	}{
		{"exit 0", []string{"true"}, 0, 0},
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7, 0},
		{"killed by TERM", []string{"sh", "-c", "kill -TERM $$"}, -1, syscall.SIGTERM},
		{"writes a file", []string{"sh", "-c", "echo hi > " + filepath.Join(dir, "f") + "; cat " + filepath.Join(dir, "f")}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := supervise(t, &run{argv: c.argv})
			if r.err != nil {
				t.Fatal(r.err)
			}
			if c.signal != 0 {
				if !r.status.Signaled() || r.status.Signal() != c.signal {
					t.Fatalf("status %#x, want killed by %v", r.status, c.signal)
				}
				return
			}
			if !r.status.Exited() || r.status.ExitStatus() != c.exited {
				t.Fatalf("status %#x (%v), want exit %d; stderr %q", r.status, r.status, c.exited, r.stderr)
			}
			if len(r.Events()) == 0 {
				t.Fatal("no exec event seen")
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "hi\n" {
		t.Fatalf("file content %q", b)
	}
}

func TestSuperviseDenyBeforeFirstInstruction(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "created")
	// Inner exec denied: the shell sees 126 and our line on stderr.
	r := supervise(t, &run{
		argv:   []string{"sh", "-c", "touch " + f + "; echo rc=$?"},
		decide: denyIf(programIs("touch")),
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if testkit.Exists(f) {
		t.Fatal("denied touch created its file")
	}
	if !strings.Contains(r.stdout, "rc=126") {
		t.Errorf("stdout %q, want rc=126", r.stdout)
	}
	if !strings.Contains(r.stderr, "agentbox: denied: touch "+f+" (rule test/deny)") {
		t.Errorf("stderr %q lacks the deny line", r.stderr)
	}
	// Root exec denied.
	r = supervise(t, &run{argv: []string{"touch", f}, decide: denyIf(programIs("touch"))})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if testkit.Exists(f) {
		t.Fatal("denied root touch created its file")
	}
	if !r.status.Exited() || r.status.ExitStatus() != helper.ExitDenied {
		t.Fatalf("root status %v, want exit %d", r.status, helper.ExitDenied)
	}
	// A signal pending when the deny is carried out (queued here while the
	// process is held at its exec stop) is suppressed on the way to
	// exit_group: the parent still sees 126 and the program never ran.
	r = supervise(t, &run{
		argv: []string{"sh", "-c", "touch " + f + "; echo rc=$?"},
		decide: func(ev *ExecEvent) Verdict {
			if ev.Program != "touch" {
				return Verdict{Allow: true}
			}
			_ = syscall.Kill(ev.Pid, syscall.SIGUSR1)
			_ = syscall.Kill(ev.Pid, syscall.SIGTERM)
			return Verdict{Message: "agentbox: denied: touch (rule test/deny)"}
		},
	})
	if testkit.Exists(f) {
		t.Fatal("denied touch created its file")
	}
	if !strings.Contains(r.stdout, "rc=126") {
		t.Errorf("with signals pending at the deny: stdout %q, want rc=126", r.stdout)
	}
	// A panicking decide function denies (fail closed).
	r = supervise(t, &run{argv: []string{"touch", f}, decide: func(*ExecEvent) Verdict { panic("boom") }})
	if testkit.Exists(f) || r.status.ExitStatus() != helper.ExitDenied {
		t.Fatalf("panicking decide: file exists=%v status=%v", testkit.Exists(f), r.status)
	}
}

// cPrograms exercise exec paths a shell never takes. Each takes the file to
// create as argv[1] and creates it with /usr/bin/touch (or rm for fexecve).
const cThreadExec = `
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
static char *file;
static void *run(void *a) { char *argv[] = {"touch", file, 0}; execv("/usr/bin/touch", argv); perror("execv"); _exit(99); }
int main(int c, char **v) { pthread_t t; file = v[1]; pthread_create(&t, 0, run, 0); for (;;) pause(); }
`

const cVforkExec = `
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
extern char **environ;
int main(int c, char **v) {
	char *argv[] = {"touch", v[1], 0};
	pid_t p = vfork();
	if (p == 0) { execv("/usr/bin/touch", argv); _exit(99); }
	int st; waitpid(p, &st, 0);
	printf("vfork=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	char *argv2[] = {"touch", v[2], 0};
	if (posix_spawn(&p, "/usr/bin/touch", 0, 0, argv2, environ) != 0) return 98;
	waitpid(p, &st, 0);
	printf("spawn=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}
`

const cMemfdExec = `
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
extern char **environ;
int main(int c, char **v) {
	int in = open(v[1], O_RDONLY), fd = memfd_create("x", MFD_CLOEXEC);
	char buf[65536]; ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) write(fd, buf, n);
	char *argv[] = {"x", v[2], 0};
	pid_t p = fork();
	if (p == 0) { fexecve(fd, argv, environ); perror("fexecve"); _exit(99); }
	int st; waitpid(p, &st, 0);
	printf("fexecve=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	p = fork();
	if (p == 0) { syscall(322, fd, "", argv, environ, 0x1000); perror("execveat"); _exit(99); }
	waitpid(p, &st, 0);
	printf("execveat=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}
`

const cStatic = `
#include <fcntl.h>
#include <unistd.h>
int main(int c, char **v) { return open(v[1], O_CREAT|O_WRONLY, 0644) < 0; }
`

// TestSuperviseFailedExecs: execs that fail (a PATH search through
// missing directories, a missing absolute path, an execve that fails for
// another reason) return their error to the program, leave it untraced
// and running, and the next exec is decided. /proc/self/fd/N names the
// program's descriptor, not the supervisor's.
func TestSuperviseFailedExecs(t *testing.T) {
	testkit.NeedProg(t, "bash", "sleep")
	dir := t.TempDir()
	script := `PATH=/nonexistent-a:/nonexistent-b:$PATH
sleep 0; echo "sleep $?"
/no/such/program; echo "missing $?"
` + dir + `; echo "directory $?"
exec 97</bin/true; /proc/self/fd/97; echo "fd $?"
touch ` + filepath.Join(dir, "denied") + `; echo "touch $?"`
	r := supervise(t, &run{argv: []string{"bash", "-c", script}, decide: denyIf(programIs("touch"))})
	want := "sleep 0\nmissing 127\ndirectory 126\nfd 0\ntouch 126\n"
	if r.stdout != want {
		t.Fatalf("stdout %q, want %q (stderr %q)", r.stdout, want, r.stderr)
	}
	if testkit.Exists(filepath.Join(dir, "denied")) {
		t.Fatal("denied touch ran after the failed execs")
	}
	var progs []string
	for _, ev := range r.Events() {
		progs = append(progs, ev.Program)
	}
	if got := strings.Join(progs, " "); got != "bash sleep true touch" {
		t.Errorf("decided programs %q, want bash sleep true touch", got)
	}
}

func TestSuperviseExecPaths(t *testing.T) {
	dir := t.TempDir()
	threadBin := testkit.CompileC(t, dir, "threadexec", cThreadExec)
	vforkBin := testkit.CompileC(t, dir, "vforkexec", cVforkExec)
	memfdBin := testkit.CompileC(t, dir, "memfdexec", cMemfdExec)

	t.Run("exec from a non-main thread", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "f")
		r := supervise(t, &run{argv: []string{threadBin, f}, decide: denyIf(programIs("touch"))})
		if testkit.Exists(f) {
			t.Fatal("thread exec of denied touch created the file")
		}
		if r.status.ExitStatus() != helper.ExitDenied {
			t.Fatalf("status %v, want %d", r.status, helper.ExitDenied)
		}
		r = supervise(t, &run{argv: []string{threadBin, f}})
		if !testkit.Exists(f) || r.status.ExitStatus() != 0 {
			t.Fatalf("allowed thread exec: exists=%v status=%v", testkit.Exists(f), r.status)
		}
	})
	t.Run("vfork and posix_spawn", func(t *testing.T) {
		d := t.TempDir()
		f1, f2 := filepath.Join(d, "a"), filepath.Join(d, "b")
		r := supervise(t, &run{argv: []string{vforkBin, f1, f2}, decide: denyIf(programIs("touch"))})
		if testkit.Exists(f1) || testkit.Exists(f2) {
			t.Fatal("denied vfork/posix_spawn child created its file")
		}
		if !strings.Contains(r.stdout, "vfork=126") || !strings.Contains(r.stdout, "spawn=126") {
			t.Fatalf("stdout %q", r.stdout)
		}
		r = supervise(t, &run{argv: []string{vforkBin, f1, f2}})
		if !testkit.Exists(f1) || !testkit.Exists(f2) {
			t.Fatalf("allowed: files missing; stdout %q stderr %q", r.stdout, r.stderr)
		}
	})
	t.Run("fexecve and execveat of a memfd copy", func(t *testing.T) {
		rm, err := exec.LookPath("rm")
		if err != nil {
			t.Skip("reason: no rm")
		}
		if !slices.Contains(identity.DefaultIdentifier().KnownNames(), "rm") {
			t.Skip("reason: rm binary not found by the identifier")
		}
		f := filepath.Join(t.TempDir(), "victim")
		os.WriteFile(f, nil, 0o644)
		r := supervise(t, &run{argv: []string{memfdBin, rm, f}, decide: denyIf(programIs("rm"))})
		if !testkit.Exists(f) {
			t.Fatal("memfd copy of rm ran although rm is denied")
		}
		if !strings.Contains(r.stdout, "fexecve=126") || !strings.Contains(r.stdout, "execveat=126") {
			t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
		}
		var saw bool
		for _, ev := range r.Events() {
			if ev.Program == "rm" && strings.HasPrefix(ev.Exe, "/memfd:") && ev.Argv[0] == "x" {
				saw = true
			}
		}
		if !saw {
			t.Fatalf("no event identifying the memfd copy as rm: %+v", r.Events())
		}
	})
	t.Run("#! script", func(t *testing.T) {
		d := t.TempDir()
		script := filepath.Join(d, "mk.sh")
		os.WriteFile(script, []byte("#!/bin/sh\ntouch \"$1\"\n"), 0o755)
		f := filepath.Join(d, "f")
		r := supervise(t, &run{argv: []string{script, f}, decide: denyIf(func(ev *ExecEvent) bool {
			return len(ev.Argv) > 1 && ev.Argv[1] == script
		})})
		if testkit.Exists(f) {
			t.Fatal("denied script ran")
		}
		evs := r.Events()
		if len(evs) == 0 || evs[0].Argv[0] != "/bin/sh" || evs[0].Program != "sh" {
			t.Fatalf("script event %+v, want interpreter /bin/sh with the script as argv[1]", *evs[0])
		}
	})
	t.Run("static binary", func(t *testing.T) {
		bin := testkit.CompileC(t, t.TempDir(), "static", cStatic, "-static")
		f := filepath.Join(t.TempDir(), "f")
		supervise(t, &run{argv: []string{bin, f}, decide: denyIf(programIs("static"))})
		if testkit.Exists(f) {
			t.Fatal("denied static binary ran")
		}
		r := supervise(t, &run{argv: []string{bin, f}})
		if !testkit.Exists(f) || r.status.ExitStatus() != 0 {
			t.Fatalf("allowed static binary: exists=%v status %v", testkit.Exists(f), r.status)
		}
	})
}

func TestSuperviseProgramsStartedByPrograms(t *testing.T) {
	testkit.NeedProg(t, "make", "xargs", "find")
	d := t.TempDir()
	bad := func(ev *ExecEvent) bool {
		return ev.Program == "touch" && strings.Contains(strings.Join(ev.Argv, " "), "bad")
	}
	os.WriteFile(filepath.Join(d, "Makefile"), []byte("all:\n\ttouch good1\n\ttouch bad1\n"), 0o644)
	os.WriteFile(filepath.Join(d, "seed"), nil, 0o644)
	r := supervise(t, &run{dir: d, argv: []string{"sh", "-c",
		"make -s; echo bad2 | xargs touch; find . -name seed -exec touch bad3 \\; ; touch good2"},
		decide: denyIf(bad)})
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, f := range []string{"good1", "good2"} {
		if !testkit.Exists(filepath.Join(d, f)) {
			t.Errorf("%s missing; stderr %q", f, r.stderr)
		}
	}
	for _, f := range []string{"bad1", "bad2", "bad3"} {
		if testkit.Exists(filepath.Join(d, f)) {
			t.Errorf("%s created by a denied exec", f)
		}
	}
	var progs []string
	for _, ev := range r.Events() {
		progs = append(progs, ev.Program)
	}
	for _, want := range []string{"make", "xargs", "find"} {
		if !strings.Contains(strings.Join(progs, " "), want) {
			t.Errorf("no exec event for %s: %v", want, progs)
		}
	}
}

func TestSuperviseOrphansAndStops(t *testing.T) {
	d := t.TempDir()
	pidf := filepath.Join(d, "pid")
	r := supervise(t, &run{argv: []string{"sh", "-c", "sleep 60 & echo $! > " + pidf + "; exit 3"}})
	if r.status.ExitStatus() != 3 || r.duration > 20*time.Second {
		t.Fatalf("status %v after %v", r.status, r.duration)
	}
	b, _ := os.ReadFile(pidf)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || !gone(pid) {
		t.Fatalf("orphan %q still alive after the root exited", b)
	}
	// A stopped child (group-stop) must not hang anything, and SIGCONT resumes it.
	r = supervise(t, &run{argv: []string{"sh", "-c",
		"sleep 0.3 & p=$!; kill -STOP $p; sleep 0.2; kill -CONT $p; wait $p; echo waited=$?; sleep 60 & kill -STOP $!; exit 4"}})
	if r.status.ExitStatus() != 4 || !strings.Contains(r.stdout, "waited=0") {
		t.Fatalf("status %v stdout %q stderr %q", r.status, r.stdout, r.stderr)
	}
	// Signals are delivered (re-injected) to tracees.
	r = supervise(t, &run{argv: []string{"sh", "-c", "trap 'echo got; exit 5' USR1; kill -USR1 $$; sleep 5"}})
	if r.status.ExitStatus() != 5 || !strings.Contains(r.stdout, "got") {
		t.Fatalf("trap: status %v stdout %q", r.status, r.stdout)
	}
	// Cancelling the context kills the tree.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r = supervise(t, &run{ctx: ctx, argv: []string{"sleep", "60"}})
	if !r.status.Signaled() || r.duration > 10*time.Second {
		t.Fatalf("cancel: status %v after %v", r.status, r.duration)
	}
}

// gone reports whether pid has disappeared (or is a zombie) within 5 s.
func gone(pid int) bool {
	for i := 0; i < 100; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func TestSuperviseSlowDecisionDoesNotBlockOthers(t *testing.T) {
	d := t.TempDir()
	other := filepath.Join(d, "other")
	held := make(chan struct{})
	var once sync.Once
	decide := func(ev *ExecEvent) Verdict {
		if ev.Program == "cat" {
			once.Do(func() {})
			<-held // an approval taking as long as the test wants
		}
		return Verdict{Allow: true}
	}
	done := make(chan *run)
	go func() {
		done <- supervise(t, &run{argv: []string{"sh", "-c", "cat /dev/null & touch " + other + "; wait; echo done"}, decide: decide})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !testkit.Exists(other) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ok := testkit.Exists(other)
	close(held)
	r := <-done
	if !ok {
		t.Fatal("a sibling could not run while a decision was pending")
	}
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

const supervisorProcEnv = "AGENTBOX_TEST_SUPERVISOR_PROC"

// TestSupervisorProcess is not a test: it runs Supervise in a child process
// that the parent test kills.
func TestSupervisorProcess(t *testing.T) {
	pidf := os.Getenv(supervisorProcEnv)
	if pidf == "" {
		return
	}
	start, release := helperStart(t, []string{"sh", "-c", "echo $$ > " + pidf + ".tmp; mv " + pidf + ".tmp " + pidf + "; exec sleep 60"}, "/", os.Stdout, os.Stderr)
	_, err := Run(context.Background(), Options{Start: start, Release: release, Decide: func(*ExecEvent) Verdict { return Verdict{Allow: true} }})
	fmt.Println(err)
	os.Exit(0)
}

func TestSuperviseSupervisorDeathKillsTracees(t *testing.T) {
	if err := PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
	pidf := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSupervisorProcess$")
	cmd.Env = append(os.Environ(), supervisorProcEnv+"="+pidf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for i := 0; i < 200 && pid == 0; i++ {
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(pidf)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("supervised sleep never started")
	}
	// The shell has written its pid; kill the supervisor once that pid
	// has become the sleep it execs.
	testkit.WaitCond(t, "the supervised shell to exec sleep", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return strings.TrimSpace(string(b)) == "sleep"
	})
	cmd.Process.Kill()
	cmd.Wait()
	if !gone(pid) {
		unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("tracee %d survived its supervisor", pid)
	}
}

// BenchmarkExecLoop compares 200 fork+exec of /bin/true from a shell loop,
// bare and under Supervise (allow-all decide). Reported per loop.
func BenchmarkExecLoop(b *testing.B) {
	loop := []string{"sh", "-c", "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done"}
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command(loop[0], loop[1:]...).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	allow := func(*ExecEvent) (Verdict, bool) { return Verdict{Allow: true}, true }
	for _, mode := range []string{"supervised", "supervised-fast", "notify", "notify-fast"} {
		b.Run(mode, func(b *testing.B) {
			notifyMode = strings.HasPrefix(mode, "notify")
			defer func() { notifyMode = false }()
			for i := 0; i < b.N; i++ {
				r := &run{argv: loop, dir: "/"}
				if strings.HasSuffix(mode, "-fast") {
					r.fast = allow
				}
				r = supervise(b, r)
				if r.err != nil || r.status != 0 {
					b.Fatal(r.err, r.status)
				}
			}
		})
	}
}

// TestSuperviseArgv0Alias: a non-policed program reached through a symlink
// chain (cc -> gcc -> x86_64-linux-gnu-gcc-N) is named by argv[0] when
// argv[0] resolves to the file being run; a lie is not believed.
func TestSuperviseArgv0Alias(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("reason: no cc")
	}
	real, _ := filepath.EvalSymlinks(cc)
	if filepath.Base(real) == "cc" {
		t.Skip("reason: cc is not a symlink here")
	}
	d := t.TempDir()
	os.Symlink("/bin/true", filepath.Join(d, "liar"))
	r := supervise(t, &run{dir: d, argv: []string{"bash", "-c", "cc --version >/dev/null; exec -a cc /bin/true"}})
	var names []string
	for _, ev := range r.Events() {
		names = append(names, ev.Program)
	}
	if !strings.Contains(strings.Join(names, " "), "cc") {
		t.Fatalf("no event named cc: %v", names)
	}
	if names[len(names)-1] != "true" {
		t.Fatalf("exec -a cc /bin/true was named %q, want true", names[len(names)-1])
	}
}

// TestReadArgEnv: the single process_vm_readv read returns what
// /proc/PID/cmdline and environ return.
func TestReadArgEnv(t *testing.T) {
	c := exec.Command("sleep", "10", "0.5")
	c.Env = []string{"A=1", "B=two words"}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	dir := "/proc/" + strconv.Itoa(c.Process.Pid)
	testkit.WaitCond(t, "the child to exec sleep", func() bool {
		b, _ := os.ReadFile(dir + "/cmdline")
		return string(b) == "sleep\x0010\x000.5\x00"
	})
	st, err := procfs.ReadStat(c.Process.Pid)
	if err != nil || st.Ppid != os.Getpid() {
		t.Fatalf("stat %+v %v", st, err)
	}
	a, e, ok := readArgEnv(c.Process.Pid, st)
	if !ok {
		t.Fatal("process_vm_readv path failed")
	}
	wa, _ := os.ReadFile(dir + "/cmdline")
	we, _ := os.ReadFile(dir + "/environ")
	if string(a) != string(wa) || string(e) != string(we) {
		t.Fatalf("argv %q env %q, want %q %q", a, e, wa, we)
	}
}

// TestSuperviseFastPath: decisions made on the tracer thread (DecideFast)
// deny and allow like the goroutine path, and "not decided" falls back.
func TestSuperviseFastPath(t *testing.T) {
	dir := t.TempDir()
	f, g := filepath.Join(dir, "denied"), filepath.Join(dir, "slow")
	var slow sync.WaitGroup
	slow.Add(1)
	fast := func(ev *ExecEvent) (Verdict, bool) {
		switch {
		case ev.Program == "touch" && strings.HasSuffix(ev.Argv[len(ev.Argv)-1], "denied"):
			return Verdict{Message: "agentbox: denied: fast"}, true
		case ev.Program == "touch":
			return Verdict{}, false // needs the slow path
		}
		return Verdict{Allow: true}, true
	}
	decide := func(ev *ExecEvent) Verdict {
		slow.Done()
		return Verdict{Allow: true}
	}
	r := supervise(t, &run{argv: []string{"sh", "-c", "touch " + f + "; echo rc=$?; touch " + g}, fast: fast, decide: decide})
	if testkit.Exists(f) || !strings.Contains(r.stdout, "rc=126") || !strings.Contains(r.stderr, "agentbox: denied: fast") {
		t.Fatalf("fast deny: exists=%v stdout %q stderr %q", testkit.Exists(f), r.stdout, r.stderr)
	}
	if !testkit.Exists(g) {
		t.Fatal("slow-path allow did not run")
	}
	slow.Wait()
}

// TestSuperviseNotify runs the Supervise tests again in notify mode: a
// seccomp exec notification triggers a seize of only the exec'ing thread.
func TestSuperviseNotify(t *testing.T) {
	if err := helper.ExecNotifySupported(); err != nil {
		t.Skipf("reason: %v", err)
	}
	notifyMode = true
	defer func() { notifyMode = false }()
	t.Run("status", TestSuperviseStatusAndAllow)
	t.Run("deny", TestSuperviseDenyBeforeFirstInstruction)
	t.Run("exec paths", TestSuperviseExecPaths)
	t.Run("failed execs", TestSuperviseFailedExecs)
	t.Run("programs by programs", TestSuperviseProgramsStartedByPrograms)
	// Not "orphans and stops": in notify mode processes that never exec
	// are not traced, so killing leftovers is the launcher's cgroup kill.
	t.Run("slow decision", TestSuperviseSlowDecisionDoesNotBlockOthers)
	t.Run("fast path", TestSuperviseFastPath)
}

// TestSuperviseHelperExec: when every process is traced, the root's first
// exec is let through undecided only if it runs the helper's file
// (Options.HelperExe: agentbox-helper, or this binary by
// default); any other first exec is decided like every later one. The
// root here is a shell that, once released, execs /bin/true: the exec a
// seize landing early would see.
func TestSuperviseHelperExec(t *testing.T) {
	if err := PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
	truePath, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Skipf("reason: no /bin/true: %v", err)
	}
	for _, tc := range []struct {
		helperExe   string
		wantDecided bool
	}{{truePath, false}, {"", true}, {"/bin/sh", true}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", "read x; exec /bin/true")
		cmd.Stdin = r
		var decided []string
		opts := Options{
			Start: func() (int, error) {
				err := cmd.Start()
				r.Close()
				if err != nil {
					return 0, err
				}
				// The shell's own exec must be over (its exec event
				// included) before the seize, so the first exec stop is
				// the one under test: wait until it blocks in read(0, ...).
				want := fmt.Sprintf("%d 0x0 ", unix.SYS_READ)
				for i := 0; ; i++ {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", cmd.Process.Pid))
					if strings.HasPrefix(string(b), want) {
						break
					}
					if i == 5000 {
						return 0, fmt.Errorf("the shell did not reach its read: %q", b)
					}
					time.Sleep(time.Millisecond)
				}
				return cmd.Process.Pid, nil
			},
			Release: func() error {
				_, err := w.Write([]byte("go\n"))
				w.Close()
				return err
			},
			Decide: func(ev *ExecEvent) Verdict {
				decided = append(decided, ev.Exe)
				return Verdict{Allow: true}
			},
			HelperExe: tc.helperExe,
		}
		st, err := Run(t.Context(), opts)
		if errors.Is(err, ErrPtraceUnavailable) {
			t.Skipf("reason: %v", err)
		}
		if err != nil || st.ExitStatus() != 0 {
			t.Fatalf("HelperExe %q: status %v, %v", tc.helperExe, st, err)
		}
		if got := len(decided) > 0; got != tc.wantDecided {
			t.Errorf("HelperExe %q: exec of /bin/true decided: %v (%v), want %v", tc.helperExe, got, decided, tc.wantDecided)
		}
	}
}

// TestSuperviseNotifyReapsDenied: a denied program's exit is reaped even
// when it comes after the supervisor last looked. A traced process that
// exits stays a zombie its parent cannot wait for until the tracer reaps
// it, and poll(2) does not wake for it; only a SIGCHLD that happens to be
// delivered to the supervisor's thread interrupts the poll. So the
// supervisor must block in wait4 while a denied or killed tracee is on its
// way out. Here the supervisor's thread blocks SIGCHLD (the signal then
// goes to another thread, as it can under load), and the sandboxed tree
// runs at nice 19 on a CPU a spinning process holds, so a denied program
// exits well after the supervisor let it go. Seen as a rare hang of
// TestFaultAuditDiskFull/deny under load before the fix.
func TestSuperviseNotifyReapsDenied(t *testing.T) {
	if err := helper.ExecNotifySupported(); err != nil {
		t.Skipf("reason: %v", err)
	}
	testkit.NeedProg(t, "nice", "taskset")
	notifyMode = true
	notifyLoopHook = func() func() {
		var set unix.Sigset_t
		set.Val[(unix.SIGCHLD-1)/64] |= 1 << ((uint(unix.SIGCHLD) - 1) % 64)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			panic(err)
		}
		return func() { _ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil) }
	}
	defer func() { notifyMode, notifyLoopHook = false, nil }()
	spin := exec.Command("taskset", "-c", "0", "sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { spin.Process.Kill(); spin.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r := supervise(t, &run{
		ctx:    ctx,
		argv:   []string{"taskset", "-c", "0", "nice", "-n", "19", "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do touch x; echo rc=$?; done; echo finished"},
		decide: denyIf(programIs("touch")),
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if ctx.Err() != nil || !strings.Contains(r.stdout, "finished") || strings.Count(r.stdout, "rc=126") != 8 {
		t.Fatalf("run hung or was cut short (%v after %v): stdout %q stderr %q", ctx.Err(), r.duration, r.stdout, r.stderr)
	}
}

// TestReopenStderrOnlyWritablePipes: the fallback for a runtime that
// refuses pidfd_getfd opens a process's stderr again only when the
// process holds it open for writing: a file it only reads (here the
// test's own source) is never opened for writing; a file it writes gets
// the line appended, not written over its start; a pipe gets it.
func TestReopenStderrOnlyWritablePipes(t *testing.T) {
	start := func(stderr *os.File) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	ro, err := os.Open("supervise_test.go")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if fd, err := reopenStderr(start(ro).Process.Pid); err == nil {
		unix.Close(fd)
		t.Fatal("a read-only regular file was reopened for writing")
	}
	logPath := filepath.Join(t.TempDir(), "log")
	os.WriteFile(logPath, []byte("before\n"), 0o600)
	w, err := os.OpenFile(logPath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fd, err := reopenStderr(start(w).Process.Pid)
	if err != nil {
		t.Fatalf("a file open for writing: %v", err)
	}
	unix.Write(fd, []byte("denied\n"))
	unix.Close(fd)
	if b, _ := os.ReadFile(logPath); string(b) != "before\ndenied\n" {
		t.Fatalf("the file holds %q; want the line appended", b)
	}
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	cmd := start(pw)
	pw.Close()
	fd, err = reopenStderr(cmd.Process.Pid)
	if err != nil {
		t.Fatalf("a pipe open for writing: %v", err)
	}
	unix.Write(fd, []byte("hello\n"))
	unix.Close(fd)
	buf := make([]byte, 6)
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "hello\n" {
		t.Fatalf("read %q %v", buf, err)
	}
}

// splitNulSimple is splitNul's meaning, written plainly.
func splitNulSimple(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	var out []string
	for _, p := range bytes.Split(b, []byte{0}) {
		out = append(out, string(p))
	}
	return out
}

func TestSplitNul(t *testing.T) {
	for _, in := range []string{"", "\x00", "a", "a\x00", "a\x00b\x00", "a\x00\x00b\x00", "\x00a\x00", "a\x00b", "x=1\x00PATH=/bin\x00\x00"} {
		got, want := splitNul([]byte(in)), splitNulSimple([]byte(in))
		if !slices.Equal(got, want) {
			t.Errorf("splitNul(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSplitNul(f *testing.F) {
	f.Add([]byte("a\x00\x00b\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := splitNul(b), splitNulSimple(b); !slices.Equal(got, want) {
			t.Fatalf("splitNul(%q) = %q, want %q", b, got, want)
		}
	})
}

// TestArgEnvFromStack: argv and the environment read from a new image's
// stack are the bytes /proc/PID/stat's ranges hold, for environments
// small, empty, of odd strings, of more pointers than the first read
// holds, and with a variable longer than the second read (read from the
// ranges then).
func TestArgEnvFromStack(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("reason: the stack is read on amd64 only")
	}
	big := strings.Repeat("x", 40<<10)
	var many []string // beyond the first read: read again from argv[0]
	for i := range 300 {
		many = append(many, fmt.Sprintf("V%d=%s", i, strings.Repeat("v", i%50)))
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		env    []string
		window bool // fits in the window
	}{
		{"small", []string{"/bin/true", "a", "b c"}, []string{"A=1", "PATH=/usr/bin:/bin"}, true},
		{"empty env", []string{"/bin/true"}, []string{}, true},
		{"empty strings", []string{"/bin/true", "", ""}, []string{"=", "E="}, true},
		{"many variables", []string{"/bin/true", "x"}, many, true},
		{"large env", []string{"/bin/true"}, []string{"BIG=" + big}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := exec.Command(tc.argv[0], tc.argv[1:]...)
			c.Args, c.Env = tc.argv, tc.env
			pid := startStopped(t, c)
			argv, env, _, ok := readArgEnvStack(pid)
			if ok != tc.window {
				t.Fatalf("read from the stack: %v, want %v", ok, tc.window)
			}
			st, err := procfs.ReadStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			wantArgv, wantEnv, wok := readArgEnv(pid, st)
			if !wok {
				t.Fatal("the /proc ranges could not be read")
			}
			if ok && (!bytes.Equal(argv, wantArgv) || !bytes.Equal(env, wantEnv)) {
				t.Errorf("from the stack %q %q, /proc ranges %q %q", argv, env, wantArgv, wantEnv)
			}
			if got := splitNul(wantArgv); !slices.Equal(got, tc.argv) {
				t.Errorf("argv %q, want %q", got, tc.argv)
			}
		})
	}
}

// FuzzArgEnvFromStack: any window either yields argv and environment
// bytes inside it, NUL-terminated, or is refused; never a panic.
func FuzzArgEnvFromStack(f *testing.F) {
	w := make([]byte, 0, 256)
	w = binary.LittleEndian.AppendUint64(w, 2)
	const sp = 0x7ff000
	strs := uint64(sp + 8*6)
	w = binary.LittleEndian.AppendUint64(w, strs)
	w = binary.LittleEndian.AppendUint64(w, strs+2)
	w = binary.LittleEndian.AppendUint64(w, 0)
	w = binary.LittleEndian.AppendUint64(w, strs+4)
	w = binary.LittleEndian.AppendUint64(w, 0)
	w = append(w, "a\x00b\x00E=1\x00"...)
	f.Add(w)
	f.Fuzz(func(t *testing.T, w []byte) {
		argv, env, ok := argEnvFromStack(w, sp)
		if !ok {
			return
		}
		if len(argv) == 0 || argv[len(argv)-1] != 0 || len(env) > 0 && env[len(env)-1] != 0 {
			t.Fatalf("argv %q env %q not NUL-terminated", argv, env)
		}
	})
}

// TestReadExecEventBothWays: an exec stop read through the new stack and
// a pidfd gives what the /proc/PID/stat path gives (argv, environment,
// parent, exe, cwd, identity); only the first keeps a pidfd, only the
// second a start time.
func TestReadExecEventBothWays(t *testing.T) {
	if err := procfs.PidfdUsable(); err != nil {
		t.Skipf("reason: pidfds cannot stand in for /proc here: %v", err)
	}
	c := exec.Command("/bin/true", "one", "two words")
	c.Env = []string{"A=1", "PATH=/usr/bin:/bin"}
	c.Dir = t.TempDir()
	pid := startStopped(t, c)
	fast, err := readExecEvent(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.closePidfd()
	pidfdUsable = func() error { return errors.New("forced off") }
	defer func() { pidfdUsable = procfs.PidfdUsable }()
	slow, err := readExecEvent(pid)
	if err != nil {
		t.Fatal(err)
	}
	if fast.Pidfd() < 0 || fast.Start != 0 || slow.Pidfd() >= 0 || slow.Start == 0 {
		t.Errorf("pidfd %d start %d (stack), pidfd %d start %d (/proc)", fast.Pidfd(), fast.Start, slow.Pidfd(), slow.Start)
	}
	if fast.Ppid != os.Getpid() || fast.Ppid != slow.Ppid || fast.Exe != slow.Exe || fast.Cwd != slow.Cwd || fast.Program != slow.Program ||
		!slices.Equal(fast.Argv, slow.Argv) || !slices.Equal(fast.Env, slow.Env) || !slices.Equal(fast.Argv, c.Args) || !slices.Equal(fast.Env, c.Env) {
		t.Errorf("stack and pidfd: %+v\n/proc/PID/stat: %+v", fast, slow)
	}
}

// TestReadExecEventScript: the file name execve was given (AT_EXECFN, read
// from the new stack) tells a #! script from the program it names: the
// kernel replaced argv[0] by the interpreter's words and the script's
// path, and ScriptArg says where that path stands, at any #! depth.
func TestReadExecEventScript(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sh := write("tool", "#!/bin/sh\nexit 0\n")
	envsh := write("envtool", "#!/usr/bin/env sh\nexit 0\n")
	inner := write("inner", "#!/bin/sh -e\nexit 0\n")
	outer := write("outer", "#!"+inner+" -x\nexit 0\n")
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true on PATH")
	}
	for _, tc := range []struct {
		name      string
		path, dir string
		args      []string
		wantArg   int
		wantArgv  []string
	}{
		{"elf", trueBin, "", []string{"true", "x"}, 0, []string{"true", "x"}},
		{"elf naming itself", trueBin, "", []string{"true", trueBin}, 0, []string{"true", trueBin}},
		{"sh script", sh, "", []string{"tool", "deploy", "now"}, 1, []string{"/bin/sh", sh, "deploy", "now"}},
		{"relative script", "./tool", dir, []string{"whatever", "deploy"}, 1, []string{"/bin/sh", "./tool", "deploy"}},
		{"env script", envsh, "", []string{"envtool", "publish"}, 2, []string{"/usr/bin/env", "sh", envsh, "publish"}},
		{"two levels", outer, "", []string{"outer", "a"}, 4, []string{"/bin/sh", "-e", inner, "-x", outer, "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := exec.Command(tc.path)
			c.Args, c.Dir = tc.args, tc.dir
			pid := startStopped(t, c)
			ev, err := readExecEvent(pid)
			if err != nil {
				t.Fatal(err)
			}
			defer ev.closePidfd()
			if ev.Path != tc.path {
				t.Errorf("Path %q, want %q", ev.Path, tc.path)
			}
			// The other way, for images whose stack is not read directly.
			dfd, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dfd)
			if fn := execFnFromAuxv(dfd, pid); fn != tc.path {
				t.Errorf("from /proc/PID/auxv: %q, want %q", fn, tc.path)
			}
			if ev.ScriptArg != tc.wantArg || !slices.Equal(ev.Argv, tc.wantArgv) {
				t.Errorf("ScriptArg %d argv %q, want %d %q", ev.ScriptArg, ev.Argv, tc.wantArg, tc.wantArgv)
			}
		})
	}
}
