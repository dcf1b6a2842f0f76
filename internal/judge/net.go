package judge

import (
	"context"
	"strconv"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/policy"
)

// DecideHost decides a connection to host:port through the egress proxy
// (egress.Config.Decide).
func (p *Judge) DecideHost(host string, port int) policy.Result {
	return p.engine().Decide(policy.Query{Host: host, Port: port})
}

// AskHost asks the run's approver about a connection the policy asks
// about (egress.Config.Ask), through the same path as a program start:
// an "always" or "remember" answer is not asked again in the run.
func (p *Judge) AskHost(ctx context.Context, host string, port int, res policy.Result) egress.Verdict {
	req := approval.Request{Program: "network connection (egress proxy)", Argv: []string{host + ":" + strconv.Itoa(port)}}
	a := p.ask(ctx, req, res, res.Reason)
	return egress.Verdict{Allow: a.decision == policy.Allow, Decision: a.audit, Approver: a.approver, Reason: a.reason}
}

// DecideRequest decides one HTTP request the egress proxy read
// (egress.Config.DecideRequest): the network block's request rules.
func (p *Judge) DecideRequest(r egress.Request) policy.Result {
	return p.engine().Decide(policy.Query{Action: r.Action()})
}

// AskRequest asks the run's approver about a request the policy asks
// about (egress.Config.AskRequest).
func (p *Judge) AskRequest(ctx context.Context, r egress.Request, res policy.Result) egress.Verdict {
	req := approval.Request{Program: "HTTP request (egress proxy)", Argv: []string{r.Method, r.Scheme + "://" + r.Host + ":" + strconv.Itoa(r.Port) + r.Path}}
	a := p.ask(ctx, req, res, res.Reason)
	return egress.Verdict{Allow: a.decision == policy.Allow, Decision: a.audit, Approver: a.approver, Reason: a.reason}
}

// DecidePush decides a git push the egress proxy saw on the wire (git
// smart HTTP's receive-pack, egress.Config.DecidePush) as the command
// `git push URL`: the role's push rule, whatever program sent it.
func (p *Judge) DecidePush(r egress.Request) policy.Result {
	return p.engine().Decide(policy.Query{Argv: []string{"git", "push", r.Repo}})
}
