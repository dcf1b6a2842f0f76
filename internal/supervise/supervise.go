//go:build linux

package supervise

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/fault"
	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"golang.org/x/sys/unix"
)

// ExecEvent describes one program start, read while the new image is stopped
// at PTRACE_EVENT_EXEC: its address space is fresh and unshared, so nothing in
// the sandbox can change Argv or Env any more (the sandbox's seccomp filter
// refuses ptrace and process_vm_writev, and Landlock keeps /proc/PID/mem
// read-only).
type ExecEvent struct {
	Pid, Tgid, Ppid int
	// Start is the process's start time (clock ticks since boot, as in
	// /proc/PID/stat): with Pid, it names the process across pid reuse.
	// Zero when the event was read without /proc/PID/stat: Pidfd names
	// the process then.
	Start uint64
	// Exe is /proc/PID/exe resolved: the file the kernel mapped. For a #!
	// script it is the interpreter (the script path is in Argv); for fexecve
	// of a memfd it looks like "/memfd:name (deleted)".
	Exe string
	// Program is the identity of Exe (see Identifier): "git" for any copy,
	// hardlink, symlink, rename or memfd copy of git; otherwise Exe's base name.
	Program string
	// Via says how Program was established (Identity.Via: "file",
	// "content", "build-id", "elf", or "name" for an unknown program).
	Via  string
	Argv []string
	Env  []string
	Cwd  string
	// Path is the file name the execve(2) call gave (AT_EXECFN), relative
	// to Cwd when not absolute; "" when it could not be read.
	Path string
	// ScriptArg is set when Path is a script the kernel ran through its
	// interpreter (a #! line, binfmt_misc): the kernel replaced argv[0]
	// by the interpreter's words and the script's path, so Argv is
	// [interpreter words..., script path, the caller's argv[1:]...] and
	// Argv[ScriptArg] is the script's path (== Path). Exe and Program are
	// the interpreter's. Zero when the file run is the program itself.
	ScriptArg int
	// Err is set when the new program could not be inspected (its /proc
	// entries unreadable: it vanished, or the supervisor ran out of file
	// descriptors); only Pid is known. The program is denied.
	Err error

	pidfd int // a pidfd of Pid, plus one (0: none); see Pidfd
}

// Pidfd returns a pidfd of the process, open while the decision is made
// (the supervisor closes it afterwards: dup it to keep it), or -1. It
// names the process beyond its pid: the pid of a live process is never
// reused, and the pidfd is readable once the process exited.
func (ev *ExecEvent) Pidfd() int { return ev.pidfd - 1 }

// closePidfd closes the event's pidfd, if it has one.
func (ev *ExecEvent) closePidfd() {
	if ev.pidfd > 0 {
		unix.Close(ev.pidfd - 1)
		ev.pidfd = 0
	}
}

// Verdict is what the decide function of Supervise answers for one ExecEvent.
type Verdict struct {
	Allow bool
	// Message is the one line written to the denied process's stderr, e.g.
	// "agentbox: denied: git push origin main (rule developer/git.push)".
	Message string
	// OnExit, if set on an allowed verdict, is called (from the supervisor
	// thread; it must not block) once the process exits, with its wait
	// status. It is not called if the process execs another program first.
	OnExit func(status syscall.WaitStatus)
}

// ErrPtraceUnavailable is wrapped by Supervise's error when the kernel refuses
// to let agentbox trace the sandboxed process (Yama ptrace_scope=3, a seccomp
// filter of an outer container, missing CAP_SYS_PTRACE across user namespaces).
var ErrPtraceUnavailable = errors.New("ptrace unavailable: the exec policy cannot be enforced, refusing to run (--no-exec-policy runs with the kernel boundary only; in a container, a seccomp profile that allows ptrace gives it back)")

// A denied program reports helper.ExitDenied to its parent: the process is made to
// call exit_group(126) from the kernel's vDSO before the program's first
// instruction (so the parent sees "126 = not executable", the same code
// `agentbox run` uses for a denied command). Where that is not possible it
// is killed with SIGKILL instead (parent sees 128+9).

const ptraceOptions = unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACEEXEC |
	unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE

const (
	waitAll = unix.WALL | unix.WNOTHREAD
	// fastDecide is how long the tracer thread waits inline for a decision
	// before treating it as slow (an approval) and serving other tracees.
	fastDecide = 20 * time.Millisecond
	// pollPending is the wait4 polling period while slow decisions are out.
	pollPending = time.Millisecond
)

// ptrace event numbers in the wait status (status>>16).
const (
	evFork      = unix.PTRACE_EVENT_FORK
	evVfork     = unix.PTRACE_EVENT_VFORK
	evClone     = unix.PTRACE_EVENT_CLONE
	evExec      = unix.PTRACE_EVENT_EXEC
	evVforkDone = unix.PTRACE_EVENT_VFORK_DONE
	evExit      = unix.PTRACE_EVENT_EXIT
	evStop      = unix.PTRACE_EVENT_STOP
)

// Options configure Run.
type Options struct {
	Start   func() (int, error)
	Release func() error
	// HelperExe is the file the helper was started from (default
	// /proc/self/exe: this binary). When every process is traced and the
	// seize lands before the helper's own exec completes, that exec stop
	// is seen first; it is the launcher's choice, not the command's, and
	// is let through undecided — only as the root's first exec, and only
	// if it runs this very file.
	HelperExe string
	// Decide decides an exec in its own goroutine; it may block.
	Decide func(*ExecEvent) Verdict
	// DecideFast, when set, is tried first, on the tracer thread, so the
	// common case costs no goroutine hand-off. It must not block; ok=false
	// (e.g. the answer needs a human) hands the event to Decide.
	DecideFast func(*ExecEvent) (v Verdict, ok bool)
	// ExecListener, when set, selects notify mode (supervise_notify.go):
	// called after Start, it returns, in this process, the seccomp
	// listener fd of the filter the helper installed with
	// helper.InstallExecNotify before blocking (Supervise closes it). The tree is
	// then not traced; each exec'ing thread is seized on its notification
	// and decided at its exec stop, then detached. Without it every
	// process is traced (fork, clone and exec events).
	ExecListener func() (int, error)
	// Prewarm, when set, is called once on a goroutine of its own after
	// Start: work the first decision needs (compiling what it will use)
	// that can overlap the helper's setting itself up. It must not decide
	// anything for real.
	Prewarm func()
	// Logf, when set, receives debug lines (the launcher's --debug).
	Logf func(format string, args ...any)
	// Observe, when set, is told of every program start that is allowed,
	// before the process runs its first instruction (the egress proxy's
	// table of which process runs which program). It must not block. A
	// context made by WithObserver supplies one when this is nil.
	Observe func(*ExecEvent)
}

type observerKey struct{}

// WithObserver returns ctx carrying observe for Run (Options.Observe):
// the run's wiring can watch program starts through a SuperviseFunc it
// wraps, without building the supervisor's options itself.
func WithObserver(ctx context.Context, observe func(*ExecEvent)) context.Context {
	return context.WithValue(ctx, observerKey{}, observe)
}

// observed wraps o's decide functions so that an allowed program start is
// told to observe while its process is still stopped.
func observed(ctx context.Context, o Options) Options {
	obs := o.Observe
	if obs == nil {
		obs, _ = ctx.Value(observerKey{}).(func(*ExecEvent))
	}
	if obs == nil {
		return o
	}
	if d := o.Decide; d != nil {
		o.Decide = func(ev *ExecEvent) Verdict {
			v := d(ev)
			if v.Allow && ev.Err == nil {
				obs(ev)
			}
			return v
		}
	}
	if f := o.DecideFast; f != nil {
		o.DecideFast = func(ev *ExecEvent) (Verdict, bool) {
			v, ok := f(ev)
			if ok && v.Allow && ev.Err == nil {
				obs(ev)
			}
			return v, ok
		}
	}
	return o
}

// Run supervises a sandboxed process tree under the exec policy.
//
// It locks its goroutine to an OS thread (ptrace requests must all come from
// the tracer thread), calls start — which must fork the helper from the
// calling goroutine and leave it blocked until release — seizes it with
// PTRACE_O_EXITKILL|TRACEEXEC|TRACEFORK|TRACEVFORK|TRACECLONE, calls release,
// and then serves every tracee until the root process exits. Every exec in
// the tree stops at PTRACE_EVENT_EXEC, before the new image runs its first
// instruction; decide is called for it (in its own goroutine: it may block on
// an approval while the other tracees keep running). Allowed: the process
// continues. Denied: the Message line is written to the process's stderr and
// the process exits with helper.ExitDenied (or is killed) without running.
// If the process cannot be inspected it is denied (fail closed).
//
// When the root exits, every remaining tracee is killed with SIGKILL and
// reaped, and the root's wait status is returned. Cancelling ctx kills the
// root (and so the tree). If the supervisor itself dies, EXITKILL makes the
// kernel kill every tracee.
//
// Supervise reaps with wait4(-1, __WALL|__WNOTHREAD): only children and
// tracees of its own thread, so other goroutines' os/exec children are not
// stolen. The caller must not Wait for the helper itself.
//
// The root's first exec is not decided when it is this very binary (the
// helper re-executing agentbox, seen when the seize lands before that exec
// completes). Debuggers and strace cannot run inside: a process has one
// tracer, and the sandbox's seccomp filter refuses ptrace anyway. The
// sandbox must also refuse clone(CLONE_UNTRACED) (it does: sandbox/helper/seccomp.go),
// or a child could start untraced.
//
// Options.DecideFast decides on the tracer thread; Options.ExecListener
// selects notify mode (supervise_notify.go), which traces only exec'ing
// threads.
func Run(ctx context.Context, o Options) (syscall.WaitStatus, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o = observed(ctx, o)
	start, release := o.Start, o.Release
	root, err := start()
	if err != nil {
		return 0, fmt.Errorf("supervise: start helper: %w", err)
	}
	// The identity table (shared, built once per process) and
	// Options.Prewarm's work are needed at the first exec decision: done
	// while the helper, configured by now, sets itself up, when the
	// launcher has nothing else to do (before the fork they competed with
	// the launch's own work for the CPUs).
	go func() {
		identity.PrewarmIdentity()
		_ = procfs.PidfdUsable() // probed once, at the first exec's inspection otherwise
		if o.Prewarm != nil {
			o.Prewarm()
		}
	}()
	t := newTracer(root, o.Decide)
	t.fast = o.DecideFast
	t.helperExe = o.HelperExe
	if t.helperExe == "" {
		t.helperExe = "/proc/self/exe"
	}
	t.logf = o.Logf
	if t.logf == nil {
		t.logf = func(string, ...any) {}
	}
	if o.ExecListener != nil {
		return t.superviseNotify(ctx, o)
	}
	t.logf("supervise: seizing helper %d", root)
	if err := t.seizeAll(root); err != nil {
		_ = unix.Kill(root, unix.SIGKILL)
		t.reapAll()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EACCES) {
			return 0, fmt.Errorf("supervise: PTRACE_SEIZE pid %d: %v (%s): %w", root, err, ptraceHint(), ErrPtraceUnavailable)
		}
		return 0, fmt.Errorf("supervise: PTRACE_SEIZE pid %d: %w", root, err)
	}
	t.logf("supervise: helper %d seized (%d threads)", root, len(t.tracees))
	if err := release(); err != nil {
		_ = unix.Kill(root, unix.SIGKILL)
		t.reapAll()
		return 0, fmt.Errorf("supervise: release helper: %w", err)
	}

	stop := context.AfterFunc(ctx, func() { _ = unix.Kill(root, unix.SIGKILL) })
	defer stop()

	status, err := t.loop()
	t.killAll()
	t.reapAll()
	close(t.done)
	return status, err
}

// superviseNotify is Run in notify mode, after start.
func (t *tracer) superviseNotify(ctx context.Context, o Options) (syscall.WaitStatus, error) {
	t.notify = true
	// The helper installed the filter after its own (re-)exec: the first
	// notified exec is already the command's.
	t.rootDecided = true
	nfd, err := o.ExecListener()
	if err != nil {
		_ = unix.Kill(t.root, unix.SIGKILL)
		t.reapAll()
		return 0, fmt.Errorf("supervise: exec notification listener of pid %d: %w", t.root, err)
	}
	defer unix.Close(nfd) // later execs in the sandbox fail: nobody listens
	if err := t.probePtrace(); err != nil {
		_ = unix.Kill(t.root, unix.SIGKILL)
		t.reapAll()
		return 0, err
	}
	if err := o.Release(); err != nil {
		_ = unix.Kill(t.root, unix.SIGKILL)
		t.reapAll()
		return 0, fmt.Errorf("supervise: release helper: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = unix.Kill(t.root, unix.SIGKILL) })
	defer stop()
	status, err := t.notifyLoop(nfd)
	t.killAll()
	t.reapTracees()
	close(t.done)
	return status, err
}

// probePtrace seizes the blocked helper, stops it and detaches, so that a
// kernel refusing ptrace is reported as ErrPtraceUnavailable before the
// command starts (in notify mode the first seize would otherwise come at
// the command's exec, which would only fail with EPERM).
func (t *tracer) probePtrace() error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(t.root), 0, uintptr(notifyOptions), 0, 0)
	if e != 0 {
		if e == unix.EPERM || e == unix.ENOSYS || e == unix.EACCES {
			return fmt.Errorf("supervise: PTRACE_SEIZE pid %d: %v (%s): %w", t.root, e, ptraceHint(), ErrPtraceUnavailable)
		}
		return fmt.Errorf("supervise: PTRACE_SEIZE pid %d: %w", t.root, e)
	}
	if err := ptraceInterrupt(t.root); err != nil {
		return fmt.Errorf("supervise: PTRACE_INTERRUPT pid %d: %w", t.root, err)
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(t.root, &ws, waitAll, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("supervise: waiting for pid %d: %w", t.root, err)
		}
		if pid != t.root || !ws.Stopped() {
			return fmt.Errorf("supervise: helper %d ended before its command started", t.root)
		}
		sig := 0
		if int(ws)>>16 == 0 && ws.StopSignal() != unix.SIGTRAP {
			sig = int(ws.StopSignal()) // a signal arrived first: pass it on
		}
		if err := ptraceDetach(t.root, sig); err != nil {
			return fmt.Errorf("supervise: PTRACE_DETACH pid %d: %w", t.root, err)
		}
		return nil
	}
}

// seizeAll seizes every thread of the (blocked) helper. ptrace is per
// thread and an exec from an untraced thread would produce an untraced
// process (de_thread does not move the leader's ptrace link), so all threads
// must be traced. Threads created by traced threads are traced
// automatically (TRACECLONE); passes repeat until one finds no new thread.
func (t *tracer) seizeAll(pid int) error {
	if err := seize(pid); err != nil {
		return err
	}
	t.tracees[pid] = struct{}{}
	for pass := 0; pass < 100; pass++ {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return fmt.Errorf("list threads: %w", err)
		}
		added := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if _, ok := t.tracees[tid]; ok {
				continue
			}
			if err := seize(tid); err != nil {
				if err == unix.ESRCH {
					continue
				}
				// A thread the (traced) main thread created after our
				// seize is auto-attached (TRACECLONE) before wait4 has
				// told us: seizing it again fails with EPERM.
				if err == unix.EPERM && tracedByUs(pid, tid) {
					t.tracees[tid] = struct{}{}
					added = true
					continue
				}
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			t.tracees[tid] = struct{}{}
			added = true
		}
		if !added {
			return nil
		}
	}
	return fmt.Errorf("threads of pid %d keep appearing", pid)
}

// tracedByUs reports whether thread tid of process pid is traced by the
// calling thread (its TracerPid in /proc is the tracer thread's id).
func tracedByUs(pid, tid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nTracerPid:"))
	if !ok {
		return false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, err := strconv.Atoi(strings.TrimSpace(string(line)))
	return err == nil && n == unix.Gettid()
}

// seize attaches to pid with the supervisor's options.
func seize(pid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, uintptr(ptraceOptions), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ptraceHint names the likely reason ptrace is refused on this host.
func ptraceHint() string {
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		if s := strings.TrimSpace(string(b)); s == "3" {
			return "kernel.yama.ptrace_scope=3 forbids all ptrace"
		}
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil && bytes.Contains(b, []byte("\nSeccomp:\t2")) {
		return "agentbox itself runs under a seccomp filter (container runtime?) that may refuse ptrace"
	}
	return "ptrace refused by the kernel or a security module"
}

// PtraceAvailable reports, without starting anything, whether something on
// this host is known to forbid ptrace (Yama ptrace_scope=3). A nil result is
// not a guarantee: Supervise reports ErrPtraceUnavailable if the seize fails.
func PtraceAvailable() error {
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		return fmt.Errorf("kernel.yama.ptrace_scope=3 forbids all ptrace: %w", ErrPtraceUnavailable)
	}
	return nil
}

type execResult struct {
	pid int
	gen uint64
	v   Verdict
}

type tracer struct {
	root        int
	decide      func(*ExecEvent) Verdict
	fast        func(*ExecEvent) (Verdict, bool)
	notify      bool                             // only exec'ing threads are traced (supervise_notify.go)
	tracees     map[int]struct{}                 // every tid we trace
	execing     map[int]struct{}                 // notify mode: seized at their exec notification, no exec stop yet
	wake        *os.File                         // notify mode: eventfd the slow decisions write to
	rootDir     int                              // notify mode: O_PATH fd of the sandbox's root, or -1
	pending     map[int]uint64                   // tgid -> generation of its outstanding decision
	onExit      map[int]func(syscall.WaitStatus) // tgid -> callback of the allowed program
	rootDecided bool                             // the root's first exec has been seen
	helperExe   string                           // the helper's file (Options.HelperExe)
	denying     map[int]int                      // denied, on the way to exit_group: syscall stops seen (see exitViaVDSO)
	rootDenied  bool                             // the root's exec was denied
	denySignals map[int]int                      // signals suppressed while a denied process exits
	gen         uint64
	results     chan execResult
	done        chan struct{}
	timer       *time.Timer
	logf        func(format string, args ...any) // --debug timings; no-op otherwise
	execs       int                              // exec events seen (for logf)
	// dying are tracees sent to their end (SIGKILL, or let into
	// exit_group) and not yet reaped. A traced process that exits stays a
	// zombie its parent cannot wait for until the tracer reaps it, so while
	// one is dying the notify loop blocks in wait4 instead of poll(2),
	// which no exit wakes.
	dying map[int]struct{}
}

func newTracer(root int, decide func(*ExecEvent) Verdict) *tracer {
	t := &tracer{
		root:        root,
		decide:      decide,
		tracees:     map[int]struct{}{},
		execing:     map[int]struct{}{},
		pending:     map[int]uint64{},
		onExit:      map[int]func(syscall.WaitStatus){},
		denying:     map[int]int{},
		denySignals: map[int]int{},
		dying:       map[int]struct{}{},
		results:     make(chan execResult, 16),
		done:        make(chan struct{}),
		timer:       time.NewTimer(time.Hour),
		logf:        func(string, ...any) {},
	}
	t.timer.Stop()
	return t
}

// loop serves tracees until the root exits and returns the root's status.
func (t *tracer) loop() (syscall.WaitStatus, error) {
	for {
		flags := waitAll
		if len(t.pending) > 0 {
			flags |= unix.WNOHANG
		}
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, flags, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("supervise: wait4: %w (root pid %d lost)", err, t.root)
		}
		if pid == 0 { // WNOHANG, nothing happened: wait for a slow decision
			t.awaitResult(pollPending)
			continue
		}
		if done, status := t.handle(pid, uint32(ws)); done {
			return status, nil
		}
		t.drainResults()
	}
}

// handle processes one wait status; it reports the root's exit.
func (t *tracer) handle(pid int, ws uint32) (bool, syscall.WaitStatus) {
	switch {
	case ws&0x7f != 0x7f: // exited (low 7 bits 0) or killed by a signal
		delete(t.tracees, pid)
		delete(t.execing, pid)
		delete(t.pending, pid)
		delete(t.denying, pid)
		delete(t.dying, pid)
		if cb := t.onExit[pid]; cb != nil {
			delete(t.onExit, pid)
			cb(syscall.WaitStatus(ws))
		}
		if pid == t.root {
			st := syscall.WaitStatus(ws)
			if t.rootDenied && st.Signaled() && st.Signal() == syscall.SIGKILL {
				// The deny fell back to SIGKILL (exit_group via the vDSO
				// could not be arranged): still report "denied".
				st = syscall.WaitStatus(helper.ExitDenied << 8)
			}
			return true, st
		}
		return false, 0
	case ws&0xff == 0x7f: // stopped
	default:
		return false, 0 // continued (WCONTINUED not requested)
	}
	t.tracees[pid] = struct{}{} // a new child may stop before its parent's fork event
	sig := int((ws >> 8) & 0xff)
	event := int(ws >> 16)
	if n, ok := t.denying[pid]; ok {
		// A signal arriving on the way (SIGCHLD, the terminal's SIGINT...)
		// is a signal-delivery stop: suppress the signal — the process will
		// never run code that could handle it — and resume towards the
		// same syscall stop. Bounded, then killed.
		// In notify mode the interrupt asked for at the exec
		// notification stops it once too (PTRACE_EVENT_STOP).
		if (event == 0 && sig != int(unix.SIGTRAP)|0x80 && sig != int(unix.SIGTRAP) || event == evStop) && t.denySignals[pid] < 64 {
			t.denySignals[pid]++
			if err := unix.PtraceSyscall(pid, 0); err != nil {
				delete(t.denying, pid)
				t.kill(pid)
			}
			return false, 0
		}
		// Otherwise a denied process must reach execve's syscall-exit stop
		// and then the vDSO syscall's entry stop, nothing else; anything
		// unexpected ends it with SIGKILL.
		t.denying[pid] = n + 1
		if sig != int(unix.SIGTRAP)|0x80 || event != 0 || n > 1 {
			delete(t.denying, pid)
			delete(t.denySignals, pid)
			t.kill(pid)
			return false, 0
		}
		done, err := finishExit(pid, helper.ExitDenied)
		if done || err != nil {
			delete(t.denying, pid)
			delete(t.denySignals, pid)
			t.dying[pid] = struct{}{} // in exit_group now, or killed below
		}
		if err != nil {
			t.kill(pid)
		}
		return false, 0
	}
	if _, ok := t.execing[pid]; ok && event != evExec {
		delete(t.execing, pid)
		if _, tracked := t.onExit[pid]; !tracked {
			t.execFailed(pid, sig, event)
			return false, 0
		}
		// A program kept for its exit: handled as any other stop below.
	}
	if sig == int(unix.SIGTRAP) && event != 0 {
		switch event {
		case evFork, evVfork, evClone:
			if msg, err := unix.PtraceGetEventMsg(pid); err == nil && msg != 0 {
				t.tracees[int(msg)] = struct{}{}
			}
			t.cont(pid, 0)
		case evExec:
			t.onExec(pid)
		case evStop:
			// Initial stop of an auto-attached child, or PTRACE_INTERRUPT.
			t.cont(pid, 0)
		default: // evVforkDone, evExit, anything else
			t.cont(pid, 0)
		}
		return false, 0
	}
	if event == evStop {
		// Group-stop (SIGSTOP/SIGTSTP/SIGTTIN/SIGTTOU) of a seized tracee:
		// PTRACE_LISTEN keeps it stopped but lets SIGCONT wake it; plain
		// PTRACE_CONT would silently resume it (and break `kill -STOP`).
		if err := ptraceListen(pid); err != nil && err != unix.ESRCH {
			slog.Debug("supervise: PTRACE_LISTEN", "pid", pid, "err", err)
		}
		return false, 0
	}
	if sig == int(unix.SIGTRAP)|0x80 { // syscall-stop (not requested)
		t.cont(pid, 0)
		return false, 0
	}
	// Signal-delivery-stop: re-inject the signal.
	t.cont(pid, sig)
	return false, 0
}

func ptraceListen(pid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_LISTEN, uintptr(pid), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (t *tracer) cont(pid, sig int) {
	if err := unix.PtraceCont(pid, sig); err != nil && err != unix.ESRCH {
		slog.Debug("supervise: PTRACE_CONT", "pid", pid, "err", err)
	}
}

// onExec handles PTRACE_EVENT_EXEC of pid (the thread-group id: an exec from
// a non-main thread reports under the tgid; the former tid is gone).
func (t *tracer) onExec(pid int) {
	fault.Point("exec-stop")
	if t.execs++; t.execs <= 3 {
		t.logf("supervise: exec stop of pid %d", pid)
		defer t.logf("supervise: exec of pid %d handled", pid)
	}
	if former, err := unix.PtraceGetEventMsg(pid); err == nil && int(former) != pid {
		delete(t.tracees, int(former))
		delete(t.execing, int(former))
	}
	delete(t.execing, pid)
	delete(t.onExit, pid) // the previous program is gone
	if pid == t.root && !t.rootDecided {
		// The helper's own exec (agentbox-helper, or agentbox re-executing
		// itself; it can be seen when the seize lands before it
		// completes) is not the command's: the launcher chose it. Only
		// the root's first exec can be skipped, and only if it runs the
		// helper's very file.
		t.rootDecided = true
		if sameFile("/proc/"+strconv.Itoa(pid)+"/exe", t.helperExe) {
			t.cont(pid, 0)
			return
		}
	}
	t.gen++
	gen := t.gen
	t.pending[pid] = gen
	var ev *ExecEvent
	if t.fast != nil {
		var err error
		if ev, err = inspectExec(pid); err == nil {
			if v, ok := safeDecideFast(t.fast, ev); ok && v.Allow {
				t.apply(execResult{pid: pid, gen: gen, v: v})
				ev.closePidfd()
				return
			} else if ok {
				ev.closePidfd()
				t.finish(pid, gen, nil, v) // deny: the stderr write may block
				return
			}
		} else {
			ev = nil
		}
	}
	t.finish(pid, gen, ev, Verdict{})
}

// finish decides (unless v is already a deny) and carries out the verdict
// for pid off the tracer thread; ev is nil when it still has to be read.
func (t *tracer) finish(pid int, gen uint64, ev *ExecEvent, v Verdict) {
	decided := v.Message != ""
	go func() {
		// The process stays stopped until apply, so /proc can be read here,
		// off the tracer thread.
		if !decided {
			var err error
			if ev == nil {
				ev, err = inspectExec(pid)
			}
			if err != nil {
				// Still decided (and audited) by the policy, which sees
				// only the pid and the error; whatever it says, a
				// program that could not be inspected does not run.
				ev = &ExecEvent{Pid: pid, Tgid: pid, Err: err}
				v = safeDecide(t.decide, ev)
				if v.Allow || v.Message == "" {
					v = Verdict{Message: fmt.Sprintf("agentbox: denied: cannot inspect new program of pid %d: %v", pid, err)}
				}
			} else {
				v = safeDecide(t.decide, ev)
			}
		}
		if ev != nil {
			ev.closePidfd()
		}
		if !v.Allow && v.Message != "" {
			writeStderr(pid, v.Message)
		}
		select {
		case t.results <- execResult{pid: pid, gen: gen, v: v}:
			if t.wake != nil {
				_, _ = t.wake.Write([]byte{1, 0, 0, 0, 0, 0, 0, 0})
			}
		case <-t.done:
		}
	}()
	t.awaitResult(fastDecide)
}

// safeDecideFast calls fast and turns a panic into "not decided".
func safeDecideFast(fast func(*ExecEvent) (Verdict, bool), ev *ExecEvent) (v Verdict, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("supervise: fast decide panicked", "pid", ev.Pid, "panic", r)
			v, ok = Verdict{}, false
		}
	}()
	v, ok = fast(ev)
	if ok && !v.Allow && v.Message == "" {
		v.Message = "agentbox: denied: " + ev.Program
	}
	return v, ok
}

// safeDecide calls decide and turns a panic into a deny (fail closed).
func safeDecide(decide func(*ExecEvent) Verdict, ev *ExecEvent) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("supervise: decide panicked; denying", "pid", ev.Pid, "panic", r)
			v = Verdict{Message: "agentbox: denied: internal error while deciding " + ev.Program}
		}
	}()
	return decide(ev)
}

// awaitResult applies one decision if it arrives within d.
func (t *tracer) awaitResult(d time.Duration) {
	select {
	case r := <-t.results:
		t.apply(r)
		return
	default:
	}
	t.timer.Reset(d)
	select {
	case r := <-t.results:
		t.apply(r)
	case <-t.timer.C:
		return
	}
	if !t.timer.Stop() {
		select {
		case <-t.timer.C:
		default:
		}
	}
}

func (t *tracer) drainResults() {
	for {
		select {
		case r := <-t.results:
			t.apply(r)
		default:
			return
		}
	}
}

// apply carries out a decision on the (still stopped) process.
func (t *tracer) apply(r execResult) {
	if g, ok := t.pending[r.pid]; !ok || g != r.gen {
		return // the process died meanwhile
	}
	delete(t.pending, r.pid)
	if r.v.Allow {
		if r.v.OnExit != nil {
			t.onExit[r.pid] = r.v.OnExit
		} else if t.notify {
			// Decided: the program runs untraced until its next exec.
			if err := unix.PtraceDetach(r.pid); err == nil || err == unix.ESRCH {
				delete(t.tracees, r.pid)
				return
			}
		}
		t.cont(r.pid, 0)
		return
	}
	t.denyStopped(r.pid)
}

// denyStopped ends a process stopped at its exec event without letting the
// new program run: it is made to exit(helper.ExitDenied) through a syscall
// instruction of the vDSO (kernel-provided code), or else killed.
func (t *tracer) denyStopped(pid int) {
	if pid == t.root {
		t.rootDenied = true
	}
	if err := exitViaVDSO(pid, helper.ExitDenied); err != nil {
		slog.Debug("supervise: deny via exit failed, killing", "pid", pid, "err", err)
		t.kill(pid)
		return
	}
	t.denying[pid] = 0
}

// kill SIGKILLs the tracee pid and counts it as dying until it is reaped.
func (t *tracer) kill(pid int) {
	if err := unix.Kill(pid, unix.SIGKILL); err == nil {
		t.dying[pid] = struct{}{}
	}
}

// killAll SIGKILLs every known tracee.
func (t *tracer) killAll() {
	for tid := range t.tracees {
		_ = unix.Kill(tid, unix.SIGKILL)
	}
}

// reapAll waits for every remaining child/tracee of this thread; anything
// that still stops (a child forked while dying) is killed.
func (t *tracer) reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, waitAll, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		t.reaped(pid, ws)
	}
}

// reapTracees waits (notify mode) until every tracee has gone, then reaps
// what else has already exited without waiting: untraced descendants are
// the launcher's to kill and reap.
func (t *tracer) reapTracees() {
	for len(t.tracees) > 0 {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, waitAll, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break
		}
		t.reaped(pid, ws)
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, waitAll|unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		t.reaped(pid, ws)
	}
}

// reaped handles one status while reaping: a stopped tracee is killed.
func (t *tracer) reaped(pid int, ws unix.WaitStatus) {
	if ws.Stopped() {
		_ = unix.Kill(pid, unix.SIGKILL)
		_ = unix.PtraceCont(pid, 0)
		return
	}
	delete(t.tracees, pid)
	if cb := t.onExit[pid]; cb != nil {
		delete(t.onExit, pid)
		cb(syscall.WaitStatus(ws))
	}
}

// pidfdUsable says whether the parent is read through a pidfd
// (procfs.PidfdUsable); tests force the /proc/PID/stat path with it.
var pidfdUsable = procfs.PidfdUsable

// inspectExec is how the supervisor reads a stopped exec: readExecEvent;
// the benchmarks replace it to measure the mechanism alone (export_test.go).
var inspectExec = readExecEvent

// readExecEvent reads what pid is about to run. Any failure is an error: the
// caller denies (fail closed).
func readExecEvent(pid int) (*ExecEvent, error) {
	if err := fault.Err("proc-emfile"); err != nil {
		return nil, fmt.Errorf("read /proc/%d: %w", pid, err)
	}
	dir := "/proc/" + strconv.Itoa(pid)
	// One lookup of /proc/PID, then names relative to it: each path walk
	// through /proc costs a pid lookup and fresh dentries, at every exec.
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	exe, err := readlinkAt(dfd, "exe")
	if err != nil {
		return nil, fmt.Errorf("read exe: %w", err)
	}
	cwd, err := readlinkAt(dfd, "cwd")
	if err != nil {
		return nil, fmt.Errorf("read cwd: %w", err)
	}
	// argv and the environment from the new stack, the parent through a
	// pidfd (kept with the event: the judge may hold it to recognise the
	// process later); else both from /proc/PID/stat.
	var ppid, pfd int
	var start uint64
	pfd = -1
	cmdline, environ, execFn, ok := readArgEnvStack(pid)
	if ok && pidfdUsable() == nil {
		if fd, err := procfs.OpenPidfd(pid); err == nil {
			if pp, err := procfs.PidfdParent(fd); err == nil {
				ppid, pfd = pp, fd
			} else {
				unix.Close(fd)
			}
		}
	}
	if pfd < 0 {
		st, err := procfs.ReadStatAt(dfd, dir)
		if err != nil {
			return nil, err
		}
		ppid, start = st.Ppid, st.StartTime
		if !ok {
			cmdline, environ, ok = readArgEnv(pid, st)
		}
	}
	ev := &ExecEvent{Pid: pid, Tgid: pid, Ppid: ppid, Start: start, Exe: exe, Cwd: cwd, pidfd: pfd + 1}
	if !ok { // fall back to the /proc files (same data, more syscalls)
		if cmdline, err = os.ReadFile(dir + "/cmdline"); err != nil {
			ev.closePidfd()
			return nil, fmt.Errorf("read cmdline: %w", err)
		}
		if environ, err = os.ReadFile(dir + "/environ"); err != nil {
			ev.closePidfd()
			return nil, fmt.Errorf("read environ: %w", err)
		}
	}
	ev.Argv, ev.Env = splitNul(cmdline), splitNul(environ)
	if !ok {
		execFn = execFnFromAuxv(dfd, pid)
	}
	ev.Path = execFn
	ev.ScriptArg = scriptArg(dfd, ev.Argv, execFn)
	id, err := identity.DefaultIdentifier().IdentifyProc(dfd, pid, exe, ev.Argv)
	if err != nil {
		ev.closePidfd()
		return nil, err
	}
	ev.Program, ev.Via = id.Name, id.Via
	if !id.Known && len(ev.Argv) > 0 {
		if n := argv0Alias(pid, ev); n != "" {
			ev.Program = n
		}
	}
	return ev, nil
}

// scriptArg returns the index in argv of the script path fn when the
// kernel ran fn through an interpreter, else 0. The kernel (binfmt_script,
// binfmt_misc) puts the interpreter's words first and the path it was
// given after them, in place of the caller's argv[0]; an image that is fn
// itself (dfd's exe) is no script, whatever argv says. The first index
// after 0 is taken: the words before it came from #! lines, which the
// script's own author chose.
func scriptArg(dfd int, argv []string, fn string) int {
	if fn == "" {
		return 0
	}
	k := 0
	for i := 1; i < len(argv); i++ {
		if argv[i] == fn {
			k = i
			break
		}
	}
	if k == 0 {
		return 0
	}
	var exe, f unix.Stat_t
	if unix.Fstatat(dfd, "exe", &exe, 0) != nil {
		return 0
	}
	name := fn
	switch {
	case strings.HasPrefix(name, "/dev/fd/"):
		name = name[len("/dev/"):] // fexecve: the process's descriptor, not ours
	case filepath.IsAbs(name):
		name = "root" + name
	default:
		name = "cwd/" + name
	}
	if unix.Fstatat(dfd, name, &f, 0) == nil && f.Dev == exe.Dev && f.Ino == exe.Ino {
		return 0 // execve("/usr/bin/ls", ["ls", "/usr/bin/ls"]): ls itself
	}
	return k
}

// argv0Alias returns argv[0]'s base name when argv[0], resolved the way
// the process's exec would (a path relative to its cwd, or a PATH search),
// names the very file being run: /usr/bin/cc is a symlink chain to
// x86_64-linux-gnu-gcc-12, and rules are written for "cc". Only used for
// files that are not policed programs, whose names carry no trust anyway.
func argv0Alias(pid int, ev *ExecEvent) string {
	a0 := ev.Argv[0]
	base := filepath.Base(a0)
	if a0 == "" || base == identity.ExeBase(ev.Exe) {
		return ""
	}
	var exe unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &exe) != nil {
		return ""
	}
	same := func(p string) bool {
		var st unix.Stat_t
		return unix.Stat(p, &st) == nil && st.Dev == exe.Dev && st.Ino == exe.Ino
	}
	if strings.Contains(a0, "/") {
		if !filepath.IsAbs(a0) {
			a0 = filepath.Join("/proc/"+strconv.Itoa(pid)+"/cwd", a0)
		}
		if same(a0) {
			return base
		}
		return ""
	}
	for _, e := range ev.Env {
		if path, ok := strings.CutPrefix(e, "PATH="); ok {
			for _, d := range filepath.SplitList(path) {
				if filepath.IsAbs(d) && same(filepath.Join(d, a0)) {
					return base
				}
			}
			break
		}
	}
	return ""
}

// readlinkAt reads the symbolic link name in directory dfd.
func readlinkAt(dfd int, name string) (string, error) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlinkat(dfd, name, buf[:])
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", fmt.Errorf("readlink %s: longer than PATH_MAX", name)
	}
	return string(buf[:n]), nil
}

// maxArgEnv bounds one argv or environment block read from a tracee.
const maxArgEnv = 16 << 20

// readArgEnv reads argv and environment strings of the stopped process in
// one process_vm_readv(2) from the ranges /proc/PID/stat names: the same
// bytes /proc/PID/cmdline and environ return, in one syscall instead of
// two opens and reads. ok is false when that is not possible.
func readArgEnv(pid int, st procfs.Stat) (argv, env []byte, ok bool) {
	if st.ArgEnd <= st.ArgStart || st.EnvEnd < st.EnvStart ||
		st.ArgEnd-st.ArgStart > maxArgEnv || st.EnvEnd-st.EnvStart > maxArgEnv {
		return nil, nil, false
	}
	argv = make([]byte, st.ArgEnd-st.ArgStart)
	env = make([]byte, st.EnvEnd-st.EnvStart)
	local := []unix.Iovec{{Base: &argv[0]}}
	local[0].SetLen(len(argv))
	remote := []unix.RemoteIovec{{Base: uintptr(st.ArgStart), Len: len(argv)}}
	want := len(argv)
	if len(env) > 0 {
		l := unix.Iovec{Base: &env[0]}
		l.SetLen(len(env))
		local = append(local, l)
		remote = append(remote, unix.RemoteIovec{Base: uintptr(st.EnvStart), Len: len(env)})
		want += len(env)
	}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil || n != want {
		return nil, nil, false
	}
	return argv, env, true
}

// splitNul splits a NUL-separated /proc list (cmdline, environ). The parts
// share one string (one allocation for the bytes, one for the slice): an
// environment of a hundred variables is split at every exec.
func splitNul(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	all := string(b)
	out := make([]string, 0, bytes.Count(b, []byte{0})+1)
	for {
		i := strings.IndexByte(all, 0)
		if i < 0 {
			return append(out, all)
		}
		out = append(out, all[:i])
		all = all[i+1:]
	}
}

// writeStderr writes line to the stderr of the stopped process pid.
//
// It duplicates the process's fd 2 with pidfd_getfd(2) instead of opening
// /proc/PID/fd/2: re-opening would create a new open file (with the
// supervisor's credentials and side effects of open(2) on devices), and fails
// for sockets. The duplicate shares the open file description, so the line
// lands where the program's own stderr would have gone. The write waits at
// most 200 ms for the pipe/tty to accept it; it is best effort.
func writeStderr(pid int, line string) {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	fd, err := unix.PidfdGetfd(pfd, 2, 0)
	if err != nil {
		// pidfd_getfd refused (a container runtime's default seccomp
		// profile allows it only with CAP_SYS_PTRACE)
		if fd, err = reopenStderr(pid); err != nil {
			return
		}
	}
	defer unix.Close(fd)
	pfds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if n, err := unix.Poll(pfds, 200); err != nil || n == 0 || pfds[0].Revents&unix.POLLOUT == 0 {
		return
	}
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	_, _ = unix.Write(fd, []byte(line))
}

// reopenStderr opens the denied process's stderr again through
// /proc/PID/fd/2, for appending. Only a pipe, terminal or regular file
// the process holds open for writing: reopening is an open by the
// supervisor, with its own rights, and the process chose what its fd 2
// is (a file it may only read, /etc/passwd say, must never be opened for
// writing here). The process is stopped at its exec stop, so its
// descriptors hold still.
func reopenStderr(pid int) (int, error) {
	info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/2")
	if err != nil {
		return -1, err
	}
	var flags int64 = -1
	for _, l := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			flags, _ = strconv.ParseInt(strings.TrimSpace(v), 8, 64)
		}
	}
	if flags < 0 || (flags&unix.O_ACCMODE != unix.O_WRONLY && flags&unix.O_ACCMODE != unix.O_RDWR) {
		return -1, errors.New("stderr not open for writing")
	}
	p := "/proc/" + strconv.Itoa(pid) + "/fd/2"
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return -1, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFCHR, unix.S_IFREG:
		// a pipe, a terminal, or a file the program writes its output
		// to (an agent's tool capturing it): appended to, never
		// written from its start
	default:
		return -1, errors.New("stderr is not a pipe, terminal or file")
	}
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, err
	}
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || now.Dev != st.Dev || now.Ino != st.Ino || now.Rdev != st.Rdev {
		unix.Close(fd)
		return -1, errors.New("stderr changed")
	}
	return fd, nil
}

// sameFile reports whether a and b are the same file (device and inode).
func sameFile(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// stackPointers parses the start of a new image's stack, read from
// address sp into w: argc, argc argv pointers, a NULL, the envp pointers,
// a NULL. It returns the pointers (argv's, then envp's) and argc; ok is
// false when w does not hold them all or they are not laid out that way.
func stackPointers(w []byte, sp uint64) (ptrs []uint64, argc int, ok bool) {
	word := func(i int) (uint64, bool) {
		if i < 0 || (i+1)*8 > len(w) {
			return 0, false
		}
		return binary.LittleEndian.Uint64(w[i*8:]), true
	}
	n, ok := word(0)
	if !ok || n == 0 || n > uint64(len(w)/8) {
		return nil, 0, false
	}
	argc = int(n)
	ptrs = make([]uint64, 0, argc+64)
	for i := 1; i <= argc; i++ {
		p, ok := word(i)
		if !ok || p == 0 {
			return nil, 0, false
		}
		ptrs = append(ptrs, p)
	}
	if p, ok := word(argc + 1); !ok || p != 0 {
		return nil, 0, false
	}
	for i := argc + 2; ; i++ {
		p, ok := word(i)
		if !ok {
			return nil, 0, false
		}
		if p == 0 {
			return ptrs, argc, true
		}
		ptrs = append(ptrs, p)
	}
}

// stackStrings returns the bytes of the strings ptrs name (argv's, the
// first argc, then envp's), NUL-terminated each, from w read at address
// base: each must start where the one before it ended, from ptrs[0] on
// (the kernel copies them so), and the last must end in w. ok is false
// otherwise.
func stackStrings(w []byte, base uint64, ptrs []uint64, argc int) (argv, env []byte, ok bool) {
	if len(ptrs) == 0 || ptrs[0] < base || ptrs[0]-base >= uint64(len(w)) {
		return nil, nil, false
	}
	start := int(ptrs[0] - base)
	off, argEnd := start, start
	for i, p := range ptrs {
		if p != base+uint64(off) {
			return nil, nil, false
		}
		j := bytes.IndexByte(w[off:], 0)
		if j < 0 {
			return nil, nil, false
		}
		off += j + 1
		if i == argc-1 {
			argEnd = off
		}
	}
	return w[start:argEnd:argEnd], w[argEnd:off:off], true
}

// argEnvFromStack is stackPointers and stackStrings over one window w read
// at sp.
func argEnvFromStack(w []byte, sp uint64) (argv, env []byte, ok bool) {
	ptrs, argc, ok := stackPointers(w, sp)
	if !ok {
		return nil, nil, false
	}
	return stackStrings(w, sp, ptrs, argc)
}

// readRemote reads up to n bytes of pid's memory at addr, one remote
// iovec per page so that a read stops at the first unmapped page (above
// the stack's top) instead of failing whole. ok is false when nothing
// could be read.
func readRemote(pid int, addr uint64, n int) ([]byte, bool) {
	buf := make([]byte, n)
	var remote []unix.RemoteIovec
	for a, end := addr, addr+uint64(n); a < end; {
		next := min((a|4095)+1, end)
		remote = append(remote, unix.RemoteIovec{Base: uintptr(a), Len: int(next - a)})
		a = next
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	got, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil || got <= 0 {
		return nil, false
	}
	return buf[:got], true
}

// atExecFn is the auxiliary vector's entry for the address of the file
// name execve(2) was given (getauxval(AT_EXECFN)): for a #! script the
// script's path as the caller wrote it, whatever the kernel then ran.
const atExecFn = 31

// auxValue returns the value of auxiliary vector entry typ from w, a new
// image's stack read at its start, whose vector begins at word i (after
// the envp NULL). ok is false when w ends before the entry or AT_NULL.
func auxValue(w []byte, i int, typ uint64) (uint64, bool) {
	for ; (i+2)*8 <= len(w); i += 2 {
		t := binary.LittleEndian.Uint64(w[i*8:])
		if t == 0 {
			return 0, false
		}
		if t == typ {
			return binary.LittleEndian.Uint64(w[i*8+8:]), true
		}
	}
	return 0, false
}

// stackString returns the NUL-terminated string at addr of pid's memory,
// from w (read at base) when it holds it, else read anew; "" when it
// cannot be read or is longer than PATH_MAX.
func stackString(pid int, w []byte, base, addr uint64) string {
	if addr >= base && addr-base < uint64(len(w)) {
		if j := bytes.IndexByte(w[addr-base:], 0); j >= 0 {
			return string(w[addr-base : addr-base+uint64(j)])
		}
	}
	b, ok := readRemote(pid, addr, unix.PathMax)
	if !ok {
		return ""
	}
	if j := bytes.IndexByte(b, 0); j >= 0 {
		return string(b[:j])
	}
	return ""
}

// execFnFromAuxv reads the file name execve(2) was given from
// /proc/PID/auxv and pid's memory (the path when the stack could not be
// read directly); "" when unknown.
func execFnFromAuxv(dfd, pid int) string {
	fd, err := unix.Openat(dfd, "auxv", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	var buf [1024]byte
	n, _ := unix.Read(fd, buf[:])
	unix.Close(fd)
	if n <= 0 || strconv.IntSize != 64 {
		return ""
	}
	addr, ok := auxValue(buf[:n], 0, atExecFn)
	if !ok {
		return ""
	}
	return stackString(pid, nil, 0, addr)
}
