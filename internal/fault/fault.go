// Package fault injects faults for the fault suite (sandbox/fault_test.go):
// when AGENTBOX_FAULT_INJECT names a point, agentbox kills itself with
// SIGKILL there, so a test can prove that nothing of the sandbox survives a
// crash at that exact point and the audit log stays verifiable.
package fault

import (
	"os"

	"golang.org/x/sys/unix"
)

// Points:
//
//	helper-started  the helper exists, held before exec (cgroup, supervisor attached)
//	exec-notify     the supervisor holds an exec'ing thread at its exec
//	                notification (notify mode), before seizing it
//	exec-stop       the supervisor holds a new program at its exec stop
//	proc-emfile     reading a new program's /proc entries fails with EMFILE
//	                (an error, not a kill: the program must be denied, audited)
//	apply-midway    a review layer's apply fails half way through its renames
//	                with EMFILE (an error, not a kill: target/ must be as it
//	                was, internal/layer)
//
// The helper and the sandbox never see the variable (their environments
// are replaced).
var faultAt = os.Getenv("AGENTBOX_FAULT_INJECT")

// Point kills agentbox with SIGKILL when the injected point is name.
func Point(name string) {
	if faultAt == name {
		unix.Kill(os.Getpid(), unix.SIGKILL)
	}
}

// Err returns the injected error of point name, or nil.
func Err(name string) error {
	if faultAt == name {
		return unix.EMFILE
	}
	return nil
}
