package agentbox

import (
	"fmt"
	"strconv"
	"strings"
)

// Summary is one line saying what the run's command gets — role, areas,
// network, approver, limits — printed by `agentbox run` at launch (unless
// --quiet) so that, say, "no network" is never silent.
func (r *Run) Summary() string {
	role := r.eng.Role()
	fs := role.FS
	parts := []string{"role " + role.Name}
	if r.agent != nil {
		parts = append(parts, "agent profile "+r.agent.profile.Name+" ("+r.agent.how+")")
	}
	parts = append(parts,
		fmt.Sprintf("target/ %s, context/ %s, feedback/ %s", fs.Target, fs.Context, fs.Feedback))
	if n := len(fs.RunRead) + len(fs.RunExec) + len(fs.RunWrite) + len(fs.ExtraRead) + len(fs.ExtraExec) + len(fs.ExtraWrite); n > 0 {
		parts = append(parts, strconv.Itoa(n)+" extra path grant(s)")
	}
	nw := role.Network
	if r.o.network != nil {
		nw.Proxy, nw.TCPConnect = r.o.network.Proxy, r.o.network.TCPConnect
	}
	switch {
	case nw.Proxy:
		hosts := strings.Join(nw.Allow, " ")
		if hosts == "" {
			hosts = "no hosts allowed"
		}
		if len(nw.Ask) > 0 {
			hosts += "; ask " + strings.Join(nw.Ask, " ")
		}
		parts = append(parts, "network through the egress proxy: "+hosts)
	case len(nw.TCPConnect) > 0:
		var ports []string
		for _, p := range nw.TCPConnect {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		parts = append(parts, "network: TCP ports "+strings.Join(ports, ",")+" to every host")
	default:
		parts = append(parts, "network: none (grant with --allow-host HOST or --network)")
	}
	switch {
	case r.o.approver != nil:
		parts = append(parts, "asks answered by the embedding program")
	case r.o.approve == "" || r.o.approve == "none":
		parts = append(parts, "no approver: asks are denied")
	default:
		parts = append(parts, "approver "+r.o.approve)
	}
	if !r.o.execPolicy {
		parts = append(parts, "exec policy off")
	}
	return "agentbox: " + strings.Join(parts, " · ")
}
