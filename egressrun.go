package agentbox

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/egress"
	"github.com/agentbox/agentbox/policy"
)

// serveEgress returns the hook that serves the run's egress proxy on the
// listener the sandbox's network namespace hands out (network mode proxy):
// hosts decided by the policy, asks through the run's approver, every
// connection audited.
func (r *Run) serveEgress(emit func(audit.Event) error) func(net.Listener) {
	return func(l net.Listener) {
		cfg := egress.Config{
			Decide:        func(h string, p int) policy.Result { return r.plan.Engine.Decide(policy.Query{Host: h, Port: p}) },
			Emit:          emit,
			Resolve:       r.o.resolve,
			RatePerMinute: r.plan.Network.RatePerMinute,
		}
		if r.appr != nil {
			cfg.Ask = r.askHost
		}
		p := egress.New(cfg)
		r.mu.Lock()
		r.proxy = p
		r.mu.Unlock()
		r.closer = append(r.closer, func() { p.Close() })
		go p.Serve(l)
	}
}

// askHost asks the run's approver about a connection to host:port.
func (r *Run) askHost(ctx context.Context, host string, port int, res policy.Result) egress.Verdict {
	timeout := r.plan.Limits.ApprovalWait
	if timeout <= 0 {
		timeout = approval.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, max(timeout, time.Second))
	defer cancel()
	action := policy.NetAction(host, port)
	req := approval.Request{Agent: r.plan.Agent, Role: r.plan.Role.Name, Run: r.plan.ID, Program: "network connection (egress proxy)",
		Argv: []string{host + ":" + strconv.Itoa(port)}, Action: action, Reason: res.Reason}
	if res.Rule != nil {
		req.Rule, req.Layer = res.Rule.ID, res.Rule.Layer.String()
	}
	resp, err := r.appr.Approve(ctx, req)
	switch {
	case errors.Is(err, approval.ErrTimeout) || err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return egress.Verdict{Decision: audit.DecisionAskTimeout, Reason: res.Reason + "; approval timed out"}
	case errors.Is(err, approval.ErrUnavailable):
		return egress.Verdict{Decision: audit.DecisionAskUnavailable, Reason: res.Reason + "; " + err.Error()}
	case err != nil:
		return egress.Verdict{Decision: audit.DecisionAskDenied, Reason: res.Reason + "; approval failed: " + err.Error()}
	}
	if !resp.Answer.Allowed() {
		if resp.Answer == approval.DenyAlways || resp.Answer == approval.RememberDeny {
			r.plan.Engine.Session().Add(policy.Deny, action)
		}
		return egress.Verdict{Decision: audit.DecisionAskDenied, Approver: resp.Approver, Reason: res.Reason + "; denied by " + resp.Approver}
	}
	if resp.Answer.Always() {
		r.plan.Engine.Session().Add(policy.Allow, action)
	}
	return egress.Verdict{Allow: true, Decision: audit.DecisionAskApproved, Approver: resp.Approver, Reason: res.Reason + "; approved by " + resp.Approver}
}
