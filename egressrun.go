package agentbox

import (
	"net"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/egress"
)

// serveEgress returns the hook that serves the run's egress proxy on the
// listener the sandbox's network namespace hands out (network mode proxy):
// hosts decided by the policy, asks through the run's approver, every
// connection audited.
func (r *Run) serveEgress(emit func(audit.Event) error) func(net.Listener) {
	return func(l net.Listener) {
		cfg := egress.Config{
			Decide:        r.judge.DecideHost,
			Audit:         audit.SinkFunc(emit),
			Resolve:       r.o.resolve,
			RatePerMinute: r.plan.Network.RatePerMinute,
		}
		if r.appr != nil {
			cfg.Ask = r.judge.AskHost
		}
		p := egress.New(cfg)
		r.mu.Lock()
		r.proxy = p
		r.mu.Unlock()
		r.closer = append(r.closer, func() { p.Close() })
		go p.Serve(l)
	}
}
