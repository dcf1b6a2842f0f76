//go:build linux && !amd64

package supervise

import "errors"

// exitViaVDSO is only implemented on amd64; elsewhere a denied process is
// killed with SIGKILL (its parent sees 128+9 instead of helper.ExitDenied).
func exitViaVDSO(pid, code int) error {
	return errors.New("exit via vdso: not implemented on this architecture")
}

func finishExit(pid, code int) (bool, error) {
	return false, errors.New("not implemented on this architecture")
}

// readArgEnvStack is only implemented on amd64; elsewhere argv and the
// environment are read from the ranges /proc/PID/stat names.
func readArgEnvStack(pid int) (argv, env []byte, execFn string, ok bool) {
	return nil, nil, "", false
}
