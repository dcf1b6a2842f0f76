//go:build linux && !amd64

package sandbox

import (
	"errors"
	"syscall"
)

// exitViaVDSO is only implemented on amd64; elsewhere a denied process is
// killed with SIGKILL (its parent sees 128+9 instead of ExitDenied).
func exitViaVDSO(pid, code int) error {
	return errors.New("exit via vdso: not implemented on this architecture")
}

func finishExit(pid, code int) (bool, error) {
	return false, errors.New("not implemented on this architecture")
}

// installExecNotify (hybrid mode) is only implemented on amd64.
func installExecNotify() (int, error) {
	return -1, errors.New("exec notifications: not implemented on this architecture")
}

func (t *tracer) hybridLoop(nfd int) (syscall.WaitStatus, error) {
	return 0, errors.New("hybrid supervision: not implemented on this architecture")
}

// installExecNotifySupported: hybrid mode is amd64-only.
func installExecNotifySupported() (bool, error) {
	return false, errors.New("exec notifications: not implemented on this architecture")
}
