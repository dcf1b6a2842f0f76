package main

import (
	"fmt"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/execpolicy"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// execRun describes the run to the exec supervisor hook.
type execRun struct {
	Workspace, Agent, RunID string
	// Pauser is the pty relay when the command has a pty: a tty approval
	// prompt holds it while it reads the user's answer. nil otherwise.
	Pauser approval.Pauser
}

func init() { execSupervisor = newExecSupervisor }

// newExecSupervisor wires the exec policy (sandbox.ExecPolicy) into a run:
// every program start inside the sandbox is decided against eng, "ask"
// goes to the approver named by --approve, and each decision is one audit
// event (through emit, which adds agent, role and run).
func newExecSupervisor(eng *policy.Engine, approve string, emit func(audit.Event), run execRun) (sandbox.SuperviseFunc, error) {
	if err := sandbox.PtraceAvailable(); err != nil {
		return nil, fmt.Errorf("exec policy: %w", err)
	}
	var appr approval.Approver
	if approve != "none" {
		a, err := approval.New(approve, approval.Options{Pauser: run.Pauser})
		if err != nil {
			return nil, err
		}
		appr = a
	}
	role := eng.Role()
	timeout := role.Limits.ApprovalWait
	if timeout <= 0 {
		timeout = approval.DefaultTimeout
	}
	pol := execpolicy.New(execpolicy.Config{
		Engine: eng, Approver: appr, Emit: emit, Role: role,
		Workspace: run.Workspace, AgentID: run.Agent, RunID: run.RunID,
		ApprovalTimeout: max(timeout, time.Second),
	})
	return pol.Supervisor(), nil
}
