package judge

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/remember"
)

// answer is an approver's answer turned into a verdict.
type answer struct {
	decision policy.Decision // Allow or Deny
	audit    string          // the audit decision: ask_approved, ask_denied, ask_timeout, ask_unavailable
	approver string
	reason   string
}

// ask is the one path from an ask to a verdict, for every question the
// judge decides (program starts, connections): the request is completed
// with the run's ids and the rule that asked, redacted, put to the
// approver within the approval timeout, and the answer applied —
// "always" answers become session rules; "remember" saves a rule in the
// project policy when a fresh load would then allow, and otherwise counts
// as "always" (docs/approval-protocol.md); "remember deny" saves a deny.
// ctx ends the wait early (the run or the connection is over).
func (p *Judge) ask(ctx context.Context, req approval.Request, res policy.Result, why string) answer {
	return p.askFor(ctx, req, res, why, policy.Need{})
}

// askFor is ask with what an allowing answer must be backed by (need: a
// role change; the rule's approver role and an "always" answer's grant
// are added here). An answer its giver may not give is refused, audited
// with the identity and the missing grant, and the question is put again
// until someone who may answers, or the approval times out.
func (p *Judge) askFor(ctx context.Context, req approval.Request, res policy.Result, why string, need policy.Need) answer {
	if res.Rule != nil && res.Rule.Approver != "" {
		need.Approver = res.Rule.Approver
	}
	if p.cfg.Approver == nil {
		return answer{policy.Deny, audit.DecisionAskUnavailable, "", why + "; no approver (--approve none)"}
	}
	req.Agent, req.Role, req.Run = p.cfg.AgentID, p.roleInfo().Name, p.cfg.RunID
	req.Action, req.Reason = res.Action, why
	if res.Rule != nil {
		req.Rule, req.Layer = res.Rule.ID, res.Rule.Layer.String()
	}
	redactRequest(&req)
	if p.cfg.ProjectPolicy != "" && req.Remember == nil {
		// The exact rule each "remember" answer would save, for the
		// approver to see before choosing it (the terminal asks for
		// Enter after showing it).
		allow, err, deny := remember.Preview(p.engine(), p.cfg.ProjectPolicy, res.Action)
		req.Remember = &approval.InboxRemember{File: p.cfg.ProjectPolicy, Allow: allow, Deny: deny}
		if err != nil {
			req.Remember.AllowNote = err.Error()
		}
	}
	actx, cancel := context.WithTimeout(p.ctx, p.cfg.ApprovalTimeout)
	defer cancel()
	if ctx != p.ctx {
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
	}
	var resp approval.Response
	var err error
	refused := map[int]bool{}
	for {
		resp, err = p.cfg.Approver.Approve(actx, req)
		if err != nil || !resp.Answer.Allowed() {
			break
		}
		n := need
		n.Always = resp.Answer == approval.AllowAlways || resp.Answer == approval.Remember
		id := policy.Identity{UID: resp.UID, Known: resp.UIDKnown}
		if !id.Known {
			id = policy.Identity{UID: p.cfg.Invoker, Known: true} // the embedding program's own answer
		}
		gerr := p.cfg.Approvers.Check(id, p.cfg.Owner, n)
		if gerr == nil {
			break
		}
		if refused[id.UID] {
			// The same approver again (a terminal, a Go approver: nobody
			// else will answer): the question ends, denied.
			return answer{policy.Deny, audit.DecisionAskDenied, resp.Approver, why + "; " + gerr.Error()}
		}
		refused[id.UID] = true
		if p.cfg.Audit != nil {
			_ = p.writeEvent(audit.Event{Agent: p.cfg.AgentID, Role: p.roleInfo().Name, Run: p.cfg.RunID, Event: audit.EventAsk,
				Action: res.Action, Decision: audit.DecisionAnswerRefused, Approver: resp.Approver,
				Reason: "answer " + resp.Answer.String() + " refused: " + gerr.Error() + "; the question stays open"})
		}
		req.Reason = why + "; an answer by " + resp.Approver + " was refused (" + gerr.Error() + "): it needs an approver who may give it"
	}
	switch {
	case errors.Is(err, approval.ErrTimeout) || (err != nil && errors.Is(actx.Err(), context.DeadlineExceeded)):
		return answer{policy.Deny, audit.DecisionAskTimeout, "", why + "; approval timed out after " + p.cfg.ApprovalTimeout.String()}
	case errors.Is(err, approval.ErrUnavailable):
		return answer{policy.Deny, audit.DecisionAskUnavailable, "", why + "; " + err.Error()}
	case err != nil:
		return answer{policy.Deny, audit.DecisionAskDenied, "", why + "; approval failed: " + err.Error()}
	}
	sess := p.engine().Session()
	by := resp.Answer.String() + " by " + resp.Approver
	if !resp.Answer.Allowed() {
		note := ""
		switch resp.Answer {
		case approval.DenyAlways:
			sess.AddBy(policy.Deny, res.Action, by)
		case approval.RememberDeny:
			if p.cfg.ProjectPolicy == "" {
				sess.AddBy(policy.Deny, res.Action, by)
				note = "; not saved: no project policy file (denied for this run)"
			} else if prefix, err := remember.Deny(p.engine(), p.cfg.ProjectPolicy, res.Action, "denied always by "+resp.Approver+" at "+time.Now().UTC().Format(time.RFC3339)); err != nil {
				note = "; not saved: " + err.Error() + " (denied for this run)"
			} else {
				note = "; saved: deny command " + strconv.Quote(prefix) + " in " + p.cfg.ProjectPolicy
			}
		}
		return answer{policy.Deny, audit.DecisionAskDenied, resp.Approver, why + "; denied by " + resp.Approver + " (" + resp.Answer.String() + ")" + note}
	}
	note := "approved by " + resp.Approver + " (" + resp.Answer.String() + ")"
	switch resp.Answer {
	case approval.AllowAlways:
		p.allowSession(res, by)
	case approval.Remember:
		// Saved only if it really changes the next run's decision; the
		// audit event says exactly what was saved and where, or why not.
		switch prefix, err := p.remember(res.Action, resp.Prefix, resp.Approver); {
		case p.cfg.ProjectPolicy == "":
			note += "; not remembered: no project policy file (allowed for this run)"
		case err != nil:
			note += "; not remembered: " + err.Error() + " (allowed for this run)"
		default:
			note += "; remembered: allow command " + strconv.Quote(prefix) + " saved in " + p.cfg.ProjectPolicy
		}
		p.allowSession(res, by)
	}
	return answer{policy.Allow, audit.DecisionAskApproved, resp.Approver, why + "; " + note}
}

// remember saves an allow rule for action in the project policy.
func (p *Judge) remember(action, prefix, approver string) (string, error) {
	if p.cfg.ProjectPolicy == "" {
		return "", nil
	}
	return remember.Allow(p.engine(), p.cfg.ProjectPolicy, action, prefix, "remembered approval by "+approver+" at "+time.Now().UTC().Format(time.RFC3339))
}

// An approved shell line covers the commands it showed: approving
// `sh -c 'chmod 600 f'` once is approving the `chmod 600 f` it runs, so
// that start is not asked again. The cover is exact (the same action
// string as an item of the line, every part of it that asks included)
// and holds only inside the process tree of the approved line (the
// process itself after its exec, or a descendant of it, named by pid and
// start time so a reused pid does not count), only while that process
// lives. Nothing else is allowed by it: another command, the same
// command elsewhere, or the same command with an environment that
// itself asks (a loader variable the line did not show) is decided as
// before.
type lineApproval struct {
	pid     int
	start   uint64
	line    string          // the approved action, for the reason
	by      string          // the approver
	actions map[string]bool // the line's items
}

// maxLines bounds the approved lines kept; past it, those of processes
// gone are dropped, then the oldest.
const maxLines = 256

// maxTreeDepth bounds the walk from a program up to an approved line.
const maxTreeDepth = 64

// noteLine records an approved program start whose decision had parts
// (a shell line): its items, for the process tree it runs in.
func (p *Judge) noteLine(ev *supervise.ExecEvent, res policy.Result, by string) {
	if len(res.Segments) == 0 {
		return
	}
	start := ev.Start
	if start == 0 {
		st, err := procfs.StartTime(ev.Pid)
		if err != nil {
			return
		}
		start = st
	}
	l := lineApproval{pid: ev.Pid, start: start, line: res.Action, by: by, actions: map[string]bool{}}
	for _, s := range res.Segments {
		if s.Action != "" && s.Decision != policy.Deny {
			l.actions[s.Action] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) >= maxLines {
		kept := p.lines[:0]
		for _, o := range p.lines {
			if procfs.Alive(o.pid, o.start) {
				kept = append(kept, o)
			}
		}
		p.lines = kept
		if len(p.lines) >= maxLines {
			p.lines = p.lines[1:]
		}
	}
	p.lines = append(p.lines, l)
}

// coveredByLine reports whether res, an ask for ev, is one of the
// commands an approved line showed, run inside that line's process
// tree; why says which line.
func (p *Judge) coveredByLine(ev *supervise.ExecEvent, res policy.Result) (string, bool) {
	p.mu.Lock()
	lines := slices.Clone(p.lines)
	p.mu.Unlock()
	if len(lines) == 0 {
		return "", false
	}
	var cands []lineApproval
	for _, l := range lines {
		if !l.actions[res.Action] {
			continue
		}
		ok := true
		for _, s := range res.Segments {
			if s.Decision == policy.Ask && s.Action != res.Action && !l.actions[s.Action] {
				ok = false
			}
		}
		if ok {
			cands = append(cands, l)
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	// The program's own process and its ancestors, each named by pid and
	// start time.
	pid, start := ev.Pid, ev.Start
	for depth := 0; pid > 1 && depth < maxTreeDepth; depth++ {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return "", false
		}
		if start == 0 || depth > 0 {
			start = st.StartTime
		}
		for _, l := range cands {
			if l.pid == pid && l.start == start {
				return "approved as part of the line " + policy.ActionText(l.line) + " (pid " + strconv.Itoa(l.pid) + ", " + l.by + ")", true
			}
		}
		pid = st.Ppid
	}
	return "", false
}
