package supervise

import (
	"syscall"
	"testing"
)

// SuperviseForTest runs argv in dir under Supervise (through this test
// binary's helper process), in notify mode when asked, and returns the
// root's status and stderr: for the external test package's benchmarks.
//
// With mechanismOnly, nothing is read at an exec stop (each event carries
// only its pid) and fast decides on that: what the seccomp notification,
// the seize and the exec stop cost alone, the floor under any policy.
func SuperviseForTest(tb testing.TB, argv []string, dir string, decide func(*ExecEvent) Verdict, fast func(*ExecEvent) (Verdict, bool), notify, mechanismOnly bool) (syscall.WaitStatus, string) {
	notifyMode = notify
	defer func() { notifyMode = false }()
	if mechanismOnly {
		inspectExec = func(pid int) (*ExecEvent, error) { return &ExecEvent{Pid: pid, Tgid: pid}, nil }
		defer func() { inspectExec = readExecEvent }()
	}
	r := supervise(tb, &run{argv: argv, dir: dir, decide: decide, fast: fast})
	return r.status, r.stderr
}
