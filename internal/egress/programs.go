package egress

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// Program is one program's own network rights (policy `programs:`):
// connections attributed to a process decided as it, or started below it
// (Config.Processes), may reach Hosts, and they alone hold the secrets
// that name it (Secret.Programs). Any other process's connection to a host only a
// program is granted, or any other process presenting such a secret's
// placeholder, is refused.
type Program struct {
	Name   string
	Source string // where the block was written, for the audit event
	// Match reports whether a program decided as name, at path, is this.
	Match func(name, path string) bool
	// Only: the program reaches Hosts alone and holds only its own
	// secrets; otherwise Hosts and its secrets come on top of the run's.
	Only  bool
	Hosts func(host string, port int) bool
}

// grantOf is the Program whose rights o's process holds: that of the
// nearest program start, its own or an ancestor's, that some Program
// names — children inherit a program's rights unless they are decided as
// another program with rights of its own (nil: none, or o unknown).
func (p *Proxy) grantOf(o *Origin) *Program {
	if o == nil || len(p.cfg.Programs) == 0 {
		return nil
	}
	for _, l := range o.chain {
		for i := range p.cfg.Programs {
			if g := &p.cfg.Programs[i]; g.Match(l.name, l.path) {
				return g
			}
		}
	}
	return nil
}

// rule names a program's block as the rule behind a decision.
func (g *Program) rule() *policy.RuleRef {
	return &policy.RuleRef{ID: "programs/" + g.Name, Source: g.Source}
}

// decideHost is the answer for a connection from o to host:port: the
// program's own hosts first; a program with mode only reaches nothing
// else; a host that is some program's own is refused to every other
// process unless the run's rules allow it for all.
func (p *Proxy) decideHost(o *Origin, host string, port int) policy.Result {
	g := p.grantOf(o)
	if g != nil {
		if g.Hosts != nil && g.Hosts(host, port) {
			return policy.Result{Decision: policy.Allow, Rule: g.rule(), Reason: fmt.Sprintf("%s:%d is a host of program %s, and %s holds its rights", host, port, g.Name, o.Who())}
		}
		if g.Only {
			return policy.Result{Decision: policy.Deny, Rule: g.rule(), Reason: fmt.Sprintf("%s is program %s, which may reach only its own hosts (mode only)", o.Who(), g.Name)}
		}
	}
	res := p.cfg.Decide(host, port)
	if res.Decision == policy.Allow {
		return res
	}
	for i := range p.cfg.Programs {
		if other := &p.cfg.Programs[i]; other != g && other.Hosts != nil && other.Hosts(host, port) {
			return policy.Result{Decision: policy.Deny, Rule: other.rule(), Reason: fmt.Sprintf("%s:%d is reached only by program %s; the connection came from %s", host, port, other.Name, o.Who())}
		}
	}
	return res
}

// holds reports whether the process o may use secret s: a program's
// secret only its program; the run's secrets any process but one of a
// program with mode only.
func (p *Proxy) holdsSecret(o *Origin, s Secret) bool {
	g := p.grantOf(o)
	if len(s.Programs) == 0 {
		return g == nil || !g.Only
	}
	return g != nil && slices.Contains(s.Programs, g.Name)
}

// notHeld says why o may not present s's placeholder.
func notHeld(o *Origin, s Secret) string {
	if len(s.Programs) == 0 {
		return fmt.Sprintf("the request carries the placeholder of secret %s, the run's, from %s, whose program may use only its own secrets (mode only)", s.Name, o.Who())
	}
	return fmt.Sprintf("the request carries the placeholder of secret %s, which is program %s's only, from %s", s.Name, strings.Join(s.Programs, ", "), o.Who())
}
