package sandbox

import (
	"syscall"
	"testing"
)

// SuperviseForTest runs argv in dir under Supervise (through this test
// binary's helper process), in notify mode when asked, and returns the
// root's status and stderr: for the external test package's benchmarks.
func SuperviseForTest(tb testing.TB, argv []string, dir string, decide func(*ExecEvent) Verdict, fast func(*ExecEvent) (Verdict, bool), notify bool) (syscall.WaitStatus, string) {
	notifyMode = notify
	defer func() { notifyMode = false }()
	r := supervise(tb, &run{argv: argv, dir: dir, decide: decide, fast: fast})
	return r.status, r.stderr
}
