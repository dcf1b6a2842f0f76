//go:build linux

package helper

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// buildExecNotifyFilter is the filter InstallExecNotify installs. Other
// architectures are left to the main filter (which kills them).
func buildExecNotifyFilter() ([]unix.SockFilter, error) {
	var p bpfProgram
	p.LoadAbs(seccompDataArch)
	p.JumpEq(seccompAuditArch, "", "allow")
	p.LoadAbs(seccompDataNr)
	p.JumpEq(unix.SYS_EXECVE, "notify", "")
	p.JumpEq(unix.SYS_EXECVEAT, "notify", "")
	p.JumpEq(unix.SYS_SECCOMP, "", "allow")
	p.LoadAbs(argLo(0))
	p.JumpEq(unix.SECCOMP_SET_MODE_FILTER, "", "allow")
	p.LoadAbs(argLo(1))
	p.JumpSet(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, "eperm", "allow")
	p.Label("allow")
	p.Ret(retAllow)
	p.Label("eperm")
	p.Ret(retEPERM)
	p.Label("notify")
	p.Ret(unix.SECCOMP_RET_USER_NOTIF)
	return p.Assemble()
}

// InstallExecNotify installs, on the calling thread, the filter that turns
// execve and execveat into user notifications, and returns the listener fd
// (close-on-exec). The caller needs no_new_privs or CAP_SYS_ADMIN, must
// exec from this same thread (lock it), and must hand the fd to the
// supervisor before its first exec: with nobody listening, exec fails
// with ENOSYS.
func InstallExecNotify() (int, error) {
	filter, err := buildExecNotifyFilter()
	if err != nil {
		return -1, fmt.Errorf("seccomp: building the exec notification filter: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if e != 0 {
		return -1, fmt.Errorf("seccomp(SET_MODE_FILTER, NEW_LISTENER) for exec notifications: %w", e)
	}
	return int(fd), nil
}

// Sizes of struct seccomp_notif and struct seccomp_notif_resp as the
// supervisor declares them (internal/supervise checks its structs against
// these); the kernel's must match.
const (
	SeccompNotifSize     = 80
	SeccompNotifRespSize = 24
)

// ExecNotifySupported reports whether this kernel can run the notify-mode
// exec supervisor: seccomp user notifications with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE (Linux 5.5; probed through
// SECCOMP_FILTER_FLAG_TSYNC_ESRCH, 5.7) and this build's structure sizes.
// Otherwise the supervisor traces every process. Nothing is installed by
// the probe.
func ExecNotifySupported() error {
	var sizes [3]uint16
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sizes))); e != 0 {
		return fmt.Errorf("seccomp user notifications unavailable: %w", e)
	}
	if sizes[0] != SeccompNotifSize || sizes[1] != SeccompNotifRespSize {
		return fmt.Errorf("seccomp notification sizes %v differ from this build's", sizes)
	}
	// A NULL program with known flags fails with EFAULT, unknown flags
	// with EINVAL, before anything is installed.
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH, 0)
	if e != unix.EFAULT {
		return fmt.Errorf("seccomp user notifications with CONTINUE need Linux 5.7 (probe: %v)", e)
	}
	return nil
}
