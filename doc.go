// Package agentbox runs a command — typically an AI coding agent — inside
// agentbox's sandbox: the kernel boundary of a workspace role (Landlock,
// seccomp, cgroups, rlimits, its own session) plus the exec policy, which
// decides every program the command starts (allow, ask an approver, deny)
// and records each decision in the audit log.
//
// It is the library behind `agentbox run`, with the lifecycle of os/exec:
//
//	r, err := agentbox.New("./ws", "developer", []string{"make", "test"},
//		agentbox.WithAudit("/var/log/agentbox/audit.jsonl"),
//		agentbox.WithApprover(myApprover))
//	if err != nil { ... }           // bad role, workspace, unsafe layout: nothing started
//	if err := r.Start(ctx); err != nil { ... }
//	res, err := r.Wait()            // res.ExitCode: the command's status (see Exit*)
//
// New loads the policy, resolves the workspace boundary and checks that
// nothing the run relies on (policy files, the audit log, the approval
// socket, the run registry) can be written from inside the sandbox; it
// starts nothing. Start launches the sandbox and returns once the command's
// process exists; Wait returns when it and every descendant are gone.
// Signal and Stop reach the command's process group. Every run is listed in
// a per-user registry while it runs (List, StopRun: `agentbox ps`/`stop`).
//
// Several runs may share one process and one audit log. See
// docs/architecture.md for how a run flows through the packages.
package agentbox
