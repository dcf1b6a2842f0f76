package agentbox

import (
	"errors"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/policy"
)

// PushTokens configures the token minted for each approved `git push`
// (the user's settings file, push.tokens; docs/operations.md, "Push
// tokens"): the run's egress proxy gives the approved push's process tree,
// and no other process, a token the Mint command issued for that push,
// and Revoke is told of it when the push's process exits (or the run
// ends).
type PushTokens struct {
	// Mint prints a token for one push; it reads a JSON request on stdin
	// (run, push, host, repository, refs). Argv, absolute path first.
	Mint []string
	// Revoke reads {run, push, id, token} on stdin once the push is over
	// (nil: tokens are left to expire).
	Revoke []string
	// Timeout bounds each mint and revoke (0: 10 s).
	Timeout time.Duration
	// Hosts are the host patterns whose receive-pack requests get the
	// token; their HTTPS is read by the proxy.
	Hosts []string
	// Protected are the branches a push without a refspec may not take
	// (nil: main, master).
	Protected []string
	// Source names where the configuration came from, for errors.
	Source string
}

// WithPushTokens gives each approved git push a token of its own
// (PushTokens). It applies to runs whose network goes through the egress
// proxy; the hosts must still be allowed to be reached.
func WithPushTokens(pt PushTokens) Option {
	return func(o *options) error {
		if len(pt.Mint) == 0 {
			return &OptionError{Option: "push-tokens", Value: pt.Source, Err: errors.New("no mint command")}
		}
		if _, err := policy.HostMatcher(pt.Hosts); err != nil || len(pt.Hosts) == 0 {
			if err == nil {
				err = errors.New("no hosts")
			}
			return &OptionError{Option: "push-tokens", Value: pt.Source, Err: err}
		}
		if pt.Protected == nil {
			pt.Protected = []string{"main", "master"}
		}
		o.pushTokens = &pt
		return nil
	}
}

// newPushTokens is the run's table of push grants and tokens (nil when no
// push tokens are configured or the run has no egress proxy).
func (r *Run) newPushTokens() *egress.PushTokens {
	pt := r.o.pushTokens
	if pt == nil || len(r.plan.PushHosts) == 0 {
		return nil
	}
	hosts, _ := policy.HostMatcher(r.plan.PushHosts) // checked by WithPushTokens
	t := egress.NewPushTokens(egress.PushTokenConfig{Mint: pt.Mint, Revoke: pt.Revoke, Timeout: pt.Timeout, Hosts: hosts,
		Protected: pt.Protected, RunID: r.plan.ID, Env: r.plan.CallerEnv, Audit: r.sink})
	r.closer = append(r.closer, t.Close)
	return t
}
