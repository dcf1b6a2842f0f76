//go:build linux && amd64

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Hybrid mode (docs/architecture.md, "An exec event"): instead of tracing
// the whole tree (a stop for every fork, clone and signal), a seccomp
// filter in the sandbox turns every execve/execveat into a user
// notification. The supervisor then seizes only the exec'ing thread
// (PTRACE_O_TRACEEXEC|EXITKILL), lets the syscall continue, and decides at
// its PTRACE_EVENT_EXEC stop exactly as in full mode (fresh address space:
// race-free); an allowed program is detached and runs untraced.
//
// The notification itself is only a trigger: argv is never read at the
// syscall-entry stop (CONTINUE is racy by design), only at the exec stop.
// Fail closed: if the supervisor dies, the listener closes and every later
// execve in the sandbox fails (ENOSYS); seized threads die (EXITKILL).
// An exec that fails after CONTINUE (PATH search) leaves the thread seized
// until its next exec or its exit; that costs signal stops, not safety.
// Processes never seized are not tracked: when the root exits, the
// launcher's cgroup kill ends them.

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

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// installExecNotify installs, on the calling thread, a seccomp filter that
// turns execve and execveat into user notifications, and returns the
// listener fd (close-on-exec). The caller needs no_new_privs or
// CAP_SYS_ADMIN, must exec from this same thread (lock it), and must hand
// the fd to SuperviseOptions.Notify before its first exec: with nobody
// listening, exec fails with ENOSYS.
func installExecNotify() (int, error) {
	const (
		ldW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		x32   = 0x40000000
		notif = unix.SECCOMP_RET_USER_NOTIF
	)
	prog := []unix.SockFilter{
		{Code: ldW, K: 4}, // arch
		{Code: jeq, Jt: 1, K: unix.AUDIT_ARCH_X86_64},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ldW, K: 0}, // nr
		{Code: jeq, Jt: 4, K: unix.SYS_EXECVE},
		{Code: jeq, Jt: 3, K: unix.SYS_EXECVEAT},
		{Code: jeq, Jt: 2, K: x32 | 520}, // x32 execve
		{Code: jeq, Jt: 1, K: x32 | 545}, // x32 execveat
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: notif},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, fmt.Errorf("seccomp(SET_MODE_FILTER, NEW_LISTENER) for exec notifications: %w", e)
	}
	return int(fd), nil
}

// hybridOptions are the ptrace options of a seized exec'ing thread.
const hybridOptions = unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACEEXEC

// notice is one exec notification.
type notice struct {
	id  uint64
	tid int
}

// recvNotices reads notifications from fd until it fails (closed).
func recvNotices(fd int, out chan<- notice, done <-chan struct{}) {
	for {
		var n seccompNotif
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
		if e == unix.EINTR || e == unix.ENOENT {
			continue
		}
		if e != 0 {
			return
		}
		select {
		case out <- notice{id: n.id, tid: int(n.pid)}:
		case <-done:
			return
		}
	}
}

// notifyRespond answers a notification: continue the syscall, or fail it
// with errno.
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

// hybridLoop serves exec notifications and the seized threads until the
// root (a real child of this thread, not traced) exits.
func (t *tracer) hybridLoop(nfd int) (syscall.WaitStatus, error) {
	notices := make(chan notice, 64)
	go recvNotices(nfd, notices, t.done)
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, unix.SIGCHLD)
	defer signal.Stop(sigchld)
	tick := time.NewTicker(50 * time.Millisecond) // safety net for a lost wakeup
	defer tick.Stop()
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, waitAll|unix.WNOHANG, nil)
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
		select {
		case <-sigchld:
		case <-tick.C:
		case n := <-notices:
			t.onNotice(nfd, n)
		case r := <-t.results:
			t.apply(r)
		}
	}
}

// onNotice seizes the exec'ing thread, then lets its execve continue; the
// decision comes at its exec stop.
func (t *tracer) onNotice(nfd int, n notice) {
	if _, ok := t.tracees[n.tid]; !ok {
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(n.tid), 0, uintptr(hybridOptions), 0, 0)
		switch {
		case e == 0:
			t.tracees[n.tid] = struct{}{}
		case e == unix.ESRCH:
			// Gone (killed while waiting): nothing will exec.
		default:
			// Cannot trace it: refuse the exec (fail closed).
			_ = notifyRespond(nfd, n.id, unix.EPERM)
			return
		}
	}
	if err := notifyRespond(nfd, n.id, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		_ = unix.Kill(n.tid, unix.SIGKILL)
	}
}

// installExecNotifySupported reports whether this kernel offers seccomp
// user notifications with CONTINUE (Linux 5.5+), without installing
// anything: SECCOMP_GET_NOTIF_SIZES answers only where they exist.
func installExecNotifySupported() (bool, error) {
	var sizes [3]uint16
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, 3 /* SECCOMP_GET_NOTIF_SIZES */, 0, uintptr(unsafe.Pointer(&sizes)))
	if e != 0 {
		return false, fmt.Errorf("seccomp user notifications unavailable: %w", e)
	}
	if sizes[0] != uint16(unsafe.Sizeof(seccompNotif{})) || sizes[1] != uint16(unsafe.Sizeof(seccompNotifResp{})) {
		return false, fmt.Errorf("seccomp notification sizes %v differ from this build's", sizes)
	}
	return true, nil
}
