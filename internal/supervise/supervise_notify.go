//go:build linux

package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/agentbox/agentbox/internal/fault"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"golang.org/x/sys/unix"
)

// Notify mode, the default (docs/architecture.md, "An exec event"): the
// tree is not traced. A seccomp filter in the sandbox turns every execve and
// execveat into a user notification; the supervisor seizes only the
// exec'ing thread (PTRACE_O_TRACEEXEC|EXITKILL), lets the syscall continue
// and decides at its PTRACE_EVENT_EXEC stop exactly as when every process
// is traced (a fresh address space: race-free). An allowed program is
// detached and runs untraced until its next exec. A fork costs nothing, a
// signal to a shell costs nothing: one notification and one ptrace stop per
// program start, against four stops (fork event, the child's first stop,
// exec event, SIGCHLD) when every process is traced.
//
// The notification is only a trigger: nothing is read at it (arguments
// could be rewritten by another thread after the CONTINUE); argv, the
// environment and the program are read at the exec stop.
//
// An exec can also fail after CONTINUE (a shell's PATH search tries
// directories in turn). So right after the CONTINUE the supervisor asks
// for PTRACE_INTERRUPT: a successful exec reports its exec stop first and
// the detach there clears the interrupt; a failed one returns towards user
// space and stops at once in PTRACE_EVENT_STOP, where it is detached. The
// single supervisor thread therefore knows that a seized thread reports
// soon and may block in wait4 for it; otherwise it blocks in poll(2) on the
// listener, the root's pidfd and an eventfd that slow decisions (approvals)
// write to. No goroutine hop, no timer on the exec path.
//
// Fail closed: if the supervisor dies, the listener closes and every later
// execve in the sandbox fails (ENOSYS); seized threads die (EXITKILL). A
// seize the kernel refuses fails the exec with EPERM. The filter also
// refuses seccomp(SECCOMP_SET_MODE_FILTER) with NEW_LISTENER: the most
// recently installed user-notification filter takes precedence, so a
// sandboxed process with a listener of its own on execve could answer its
// own exec notifications and start programs nobody decided.

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	data  struct {
		nr   int32
		arch uint32
		ip   uint64
		args [6]uint64
	}
}

// The structs must have the kernel's sizes, which helper.ExecNotifySupported
// checks against these constants.
var (
	_ [helper.SeccompNotifSize - unsafe.Sizeof(seccompNotif{})]byte
	_ [unsafe.Sizeof(seccompNotif{}) - helper.SeccompNotifSize]byte
	_ [helper.SeccompNotifRespSize - unsafe.Sizeof(seccompNotifResp{})]byte
	_ [unsafe.Sizeof(seccompNotifResp{}) - helper.SeccompNotifRespSize]byte
)

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// notifyLoopHook, when set (tests), runs on the supervisor's thread as the
// notify loop starts; what it returns runs as the loop ends.
var notifyLoopHook func() (undo func())

// notifyOptions are the ptrace options of a seized exec'ing thread.
const notifyOptions = unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACEEXEC

// notifyRespond answers a notification: continue the syscall (errno 0),
// or fail it with errno.
func notifyRespond(fd int, id uint64, errno unix.Errno) error {
	r := seccompNotifResp{id: id}
	if errno == 0 {
		r.flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else {
		r.error = -int32(errno)
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r)))
	if e != 0 {
		return e
	}
	return nil
}

func ptraceInterrupt(tid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_INTERRUPT, uintptr(tid), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// notifyLoop serves exec notifications and the seized threads until the
// root (a child of this thread, untraced between its execs) exits.
func (t *tracer) notifyLoop(nfd int) (syscall.WaitStatus, error) {
	if notifyLoopHook != nil {
		defer notifyLoopHook()()
	}
	pfd, err := unix.PidfdOpen(t.root, 0)
	if err != nil {
		return 0, fmt.Errorf("supervise: pidfd_open of the root %d: %w", t.root, err)
	}
	defer unix.Close(pfd)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return 0, fmt.Errorf("supervise: eventfd: %w", err)
	}
	// Slow decisions write to it from their goroutines; an *os.File makes
	// a write after the loop ends fail instead of hitting a reused fd.
	t.wake = os.NewFile(uintptr(efd), "agentbox-supervisor-wake")
	defer t.wake.Close()
	// The sandbox's root (its own mount namespace when agentbox runs as
	// root), for execMissing: every process of the sandbox shares it (no
	// chroot, no new mount namespaces inside).
	t.rootDir = -1
	if fd, err := unix.Open("/proc/"+strconv.Itoa(t.root)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		t.rootDir = fd
		defer unix.Close(fd)
	}
	fds := []unix.PollFd{
		{Fd: int32(nfd), Events: unix.POLLIN},
		{Fd: int32(efd), Events: unix.POLLIN},
		{Fd: int32(pfd), Events: unix.POLLIN},
	}
	for {
		// Ptrace events and exits. While a seized thread is between its
		// CONTINUE and its exec or interrupt stop, or a denied or killed
		// one is on its way to exit (t.dying), an event is imminent: block
		// for it.
		for {
			flags := waitAll | unix.WNOHANG
			if len(t.execing) > 0 || len(t.denying) > 0 || len(t.dying) > 0 {
				flags = waitAll
			}
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, flags, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("supervise: wait4: %w (root pid %d lost)", err, t.root)
			}
			if pid == 0 {
				break
			}
			if done, status := t.handle(pid, uint32(ws)); done {
				return status, nil
			}
		}
		t.drainResults()
		// A program kept traced to see its exit (Verdict.OnExit) reports
		// signal stops only through wait4: look again every millisecond
		// while one runs.
		timeout := -1
		if len(t.onExit) > 0 {
			timeout = 1
		}
		_, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("supervise: poll: %w", err)
		}
		if fds[1].Revents != 0 {
			var b [8]byte
			_, _ = unix.Read(efd, b[:])
			t.drainResults()
		}
		switch {
		case fds[0].Revents&unix.POLLIN != 0:
			t.recvNotice(nfd)
		case fds[0].Revents != 0:
			// POLLHUP: no task uses the filter any more; nothing will
			// be notified again.
			fds[0].Fd = -1
		}
	}
}

// recvNotice reads one exec notification, seizes the exec'ing thread and
// lets its execve continue; the decision comes at its exec stop.
func (t *tracer) recvNotice(nfd int) {
	var n seccompNotif
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(nfd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		// EINTR, or ENOENT: the thread was interrupted or killed before
		// we read it (an interrupted execve restarts and notifies again).
		return
	}
	fault.Point("exec-notify")
	tid := int(n.pid)
	if n.data.nr == unix.SYS_EXECVE && t.execMissing(tid, n.data.args[0]) {
		// Nothing to run there: fail it as the kernel would, without a
		// seize and a stop (a shell's PATH search tries each directory).
		_ = notifyRespond(nfd, n.id, unix.ENOENT)
		return
	}
	if _, seized := t.tracees[tid]; !seized {
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, uintptr(notifyOptions), 0, 0)
		switch e {
		case 0:
			t.tracees[tid] = struct{}{}
		case unix.ESRCH:
			// Killed while waiting: it will not exec.
			_ = notifyRespond(nfd, n.id, unix.ESRCH)
			return
		default:
			// Cannot trace it: refuse the exec (fail closed).
			t.logf("supervise: cannot seize exec'ing thread %d: %v", tid, e)
			_ = notifyRespond(nfd, n.id, unix.EPERM)
			return
		}
	}
	t.execing[tid] = struct{}{}
	if err := notifyRespond(nfd, n.id, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		// The listener refused the answer: the exec cannot be let
		// through undecided; end the thread.
		_ = unix.Kill(tid, unix.SIGKILL)
	}
	// Either the exec stop comes first (the detach there clears this),
	// or the thread stops on its way back to user space.
	if err := ptraceInterrupt(tid); err != nil && err != unix.ESRCH {
		_ = unix.Kill(tid, unix.SIGKILL)
	}
}

// execMissing reports whether the absolute path an execve names certainly
// does not exist in the sandbox's file system view. It is only a hint read
// from the thread's memory (racy by nature): answering ENOENT when it holds
// lets nothing run, and any doubt — a relative path, a symbolic link on the
// way (which could lead through /proc/self, resolved as the supervisor's),
// an unreadable string — answers false, and the exec goes the normal way.
func (t *tracer) execMissing(tid int, addr uint64) bool {
	if t.rootDir < 0 || addr == 0 {
		return false
	}
	var buf [512]byte
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err != nil || n <= 1 || buf[0] != '/' {
		return false
	}
	end := bytes.IndexByte(buf[:n], 0)
	if end <= 1 {
		return false
	}
	fd, err := unix.Openat2(t.rootDir, string(buf[1:end]), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == nil {
		unix.Close(fd)
		return false
	}
	return err == unix.ENOENT
}

// execFailed handles a stop of a seized thread whose exec did not happen
// (it failed, or a signal interrupted it and it will restart): it runs on
// untraced, with the signal of a signal-delivery stop passed on.
func (t *tracer) execFailed(pid, sig, event int) {
	if event != 0 || sig == int(unix.SIGTRAP) {
		sig = 0 // our interrupt, or a group-stop (kept across the detach)
	}
	if err := ptraceDetach(pid, sig); err == nil || err == unix.ESRCH {
		delete(t.tracees, pid)
	}
}

func ptraceDetach(pid, sig int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(pid), 0, uintptr(sig), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
