//go:build linux

package judge

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
)

// A role change from inside a run: the agent runs `agentbox escalate ROLE
// [--reason TEXT]`. That start of agentbox's own executable is not a
// program to decide but the request itself: it is decided as
// tool:self_edit:permissions:ROLE by the run's policy; an allow counts as
// the invoking user's grant, an ask goes to the approver, whose answer
// counts only if its giver may grant ROLE (policy's approvers). Once
// granted, the judge decides every later program start, connection and
// request with ROLE's engine (the run's grants kept) and records the
// change; the program itself then runs and says so. The kernel boundary
// stays the one the run was launched with: Landlock cannot widen the
// rules of running processes, nor a sandbox narrow itself from outside
// (a new run with --role ROLE has ROLE's).

// selfID names agentbox's own executable by device and inode.
type selfID struct{ dev, ino uint64 }

func statSelf(path string) selfID {
	var st syscall.Stat_t
	if path == "" || syscall.Stat(path, &st) != nil {
		return selfID{}
	}
	return selfID{uint64(st.Dev), st.Ino}
}

// escalation reports a start of agentbox's own executable as
// `agentbox escalate ROLE ...` and the role asked for.
func (p *Judge) escalation(ev *supervise.ExecEvent) (string, bool) {
	if p.self == (selfID{}) || ev.Err != nil || len(ev.Argv) < 2 || ev.Argv[1] != "escalate" {
		return "", false
	}
	if statSelf(ev.Exe) != p.self {
		return "", false
	}
	if len(ev.Argv) < 3 {
		return "", true
	}
	return ev.Argv[2], true
}

// restrictive reports a role a run may always move to: it writes nothing
// of the workspace, reaches no network and denies what it does not name
// (the Chorus preset locked is one).
func restrictive(r policy.RoleInfo) bool {
	fs := r.FS
	ro := func(a policy.Access) bool { return a == "ro" || a == "none" || a == "" }
	return ro(fs.Target) && ro(fs.Feedback) && !r.Network.Proxy && len(r.Network.TCPConnect) == 0 &&
		len(r.Network.TCPBind) == 0 && r.Default == policy.Deny
}

// Escalate is a role change asked for through the Go API (Run.Escalate):
// decided and gated exactly as `agentbox escalate ROLE` inside the run.
func (p *Judge) Escalate(role, reason string) error {
	argv := []string{"agentbox", "escalate", role}
	if reason != "" {
		argv = append(argv, "--reason", reason)
	}
	d := p.changeRole(argv, 0, "", role)
	if d.res.Decision == policy.Allow {
		return nil
	}
	why := d.extraWhy
	if why == "" {
		why = d.res.Reason
	}
	return fmt.Errorf("role change to %s refused: %s", role, why)
}

// escalationDecision decides a role change request and, when granted,
// makes it.
func (p *Judge) escalationDecision(ev *supervise.ExecEvent, role string) decision {
	return p.changeRole(ev.Argv, ev.Pid, ev.Cwd, role)
}

// changeRole decides a role change to role asked for by argv (agentbox
// escalate ROLE [--reason TEXT]) and, when granted, makes it.
func (p *Judge) changeRole(argv []string, pid int, cwd, role string) decision {
	d := decision{argv: argv}
	action := "tool:self_edit:permissions:" + role
	deny := func(why string) decision {
		d.res = policy.Result{Decision: policy.Deny, Action: action}
		d.extraWhy = why
		return d
	}
	from := p.roleInfo().Name
	switch {
	case role == "" || strings.HasPrefix(role, "-"):
		return deny("escalate: which role? (agentbox escalate ROLE [--reason TEXT])")
	case p.cfg.Escalate == nil:
		return deny("escalate: this run cannot change its role (no exec policy in charge of it)")
	case role == from:
		return deny("escalate: the run's role is " + role + " already")
	}
	eng, err := p.cfg.Escalate(role)
	if err != nil {
		return deny("escalate: " + err.Error())
	}
	res := p.engine().Decide(policy.Query{Action: action})
	need := policy.Need{Role: role}
	reason := ""
	if len(argv) > 3 {
		reason = flagValue(argv[3:], "--reason")
	}
	approver := ""
	if restrictive(eng.Role()) {
		// Narrowing always works: a role that writes and reaches nothing.
		res = policy.Result{Decision: policy.Allow, Action: action, Reason: "a move to a role that writes nothing of the workspace and reaches no network"}
		need = policy.Need{}
	}
	switch res.Decision {
	case policy.Deny:
		d.res = res
		return d
	case policy.Allow:
		// Allowed by the policy: the grant is the invoking user's.
		if err := p.cfg.Approvers.Check(policy.Identity{UID: p.cfg.Invoker, Known: true}, p.cfg.Owner, need); err != nil {
			return deny("escalate to " + role + ": allowed by the policy, but " + err.Error())
		}
		approver = "policy (run by uid " + fmt.Sprint(p.cfg.Invoker) + ")"
	case policy.Ask:
		req := approval.Request{Pid: pid, Program: "role change (agentbox escalate)", Argv: argv, Cwd: cwd}
		why := "the agent asks to move the run from role " + from + " to role " + role
		if reason != "" {
			why += ": " + reason
		}
		a := p.askFor(p.ctx, req, res, why, need)
		if a.decision != policy.Allow {
			d.res = policy.Result{Decision: policy.Deny, Action: action, Rule: res.Rule, Reason: a.reason}
			d.askAudit, d.askApprover = a.audit, a.approver
			return d
		}
		approver = a.approver
	}
	p.eng.Store(eng)
	ri := eng.Role()
	p.role.Store(&ri)
	if p.cfg.Audit != nil {
		_ = p.writeEvent(audit.Event{Agent: p.cfg.AgentID, Role: role, Run: p.cfg.RunID, Event: audit.EventRole,
			Pid: pid, Action: action, Decision: audit.DecisionAllow, Approver: approver,
			Reason: "role changed from " + from + " to " + role + " for the programs started from now on; the kernel boundary stays role " + from + "'s",
			Detail: map[string]string{"from": from, "to": role, "granted_by": approver, "reason": reason}})
	}
	d.res = policy.Result{Decision: policy.Allow, Action: action, Reason: "role change to " + role + " granted by " + approver}
	return d
}

// flagValue returns the value of --name VALUE or --name=VALUE in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
