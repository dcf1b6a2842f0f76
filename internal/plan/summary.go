package plan

import (
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/policytext"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/shellquote"
	"github.com/agentbox/agentbox/policy"
)

// Summary is one line saying what the run's command gets — role, areas,
// network, approver, limits — printed by `agentbox run` at launch (unless
// --quiet) so that, say, "no network" is never silent.
func (p *Plan) Summary() string { return p.summary(true) }

// summary is Summary; withID names the run in the undo hint (the guide,
// written once for every run of the agent, leaves it out).
func (p *Plan) summary(withID bool) string {
	fs := p.Role.FS
	parts := []string{"role " + p.Role.Name}
	if p.Profile != nil {
		parts = append(parts, "agent profile "+p.Profile.Profile.Name+" ("+p.Profile.How+")")
	}
	parts = append(parts,
		fmt.Sprintf("target/ %s, context/ %s, feedback/ %s", fs.Target, fs.Context, fs.Feedback))
	if g := pathGrants(fs); g != "" {
		parts = append(parts, g)
	}
	nw := p.Network
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
		if len(p.Secrets) > 0 {
			var ss []string
			for _, sc := range p.Secrets {
				ss = append(ss, sc.Name+"→"+strings.Join(sc.Hosts, ","))
			}
			parts = append(parts, "secrets brokered (the sandbox sees placeholders): "+strings.Join(ss, " "))
		}
		if p.Inspection != nil {
			parts = append(parts, "HTTPS read (requests decided, pushes refused): "+strings.Join(p.Inspection.Hosts, " "))
		}
		if len(p.PushHosts) > 0 {
			parts = append(parts, "push tokens: an approved git push to "+strings.Join(p.PushHosts, " ")+" gets one of its own")
		}
	case len(nw.TCPConnect) > 0:
		var ports []string
		for _, p := range nw.TCPConnect {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		parts = append(parts, "network: TCP ports "+strings.Join(ports, ",")+" to every host")
	default:
		parts = append(parts, "network: none (grant with --allow-host HOST or --network)")
	}
	var layered []string
	for _, c := range p.HostCaches {
		if c.Layer != nil {
			layered = append(layered, c.Tool)
			continue
		}
		parts = append(parts, "host "+c.Tool+" cache read-only: "+c.Dir)
	}
	if len(layered) > 0 {
		parts = append(parts, "host caches copy-on-write (writes stay in this agent's layer): "+strings.Join(layered, " "))
	}
	switch {
	case p.hasApprover:
		parts = append(parts, "asks answered by the embedding program")
	case p.approve == "" || p.approve == "none":
		parts = append(parts, "no approver: asks are denied")
	case p.approveNote != "":
		parts = append(parts, "approver "+p.approve+": "+p.approveNote)
	default:
		parts = append(parts, "approver "+p.approve)
	}
	if !p.execPolicy {
		parts = append(parts, "exec policy off")
	}
	undo := "agentbox undo " + p.ID
	if !withID {
		undo = "agentbox undo RUN"
	}
	switch {
	case p.Review != nil:
		id := p.ID
		if !withID {
			id = "RUN"
		}
		parts = append(parts, "review: target/ is the run's own layer (agentbox diff|apply|discard "+id+")")
	case p.Checkpoints == nil:
		parts = append(parts, "checkpoints off: deleting or discarding work asks")
	case !p.execPolicy:
		parts = append(parts, "checkpoints at start and end only (undo: "+undo+")")
	default:
		parts = append(parts, "checkpoints on (undo: "+undo+")")
	}
	parts = append(parts, "enforced: "+p.Ladder().Short())
	return "agentbox: " + strings.Join(parts, " · ")
}

// Ladder is what enforces each protection for this run on this machine
// and for this user (sandbox.NewLadder): the launch line says it short,
// the launch event whole.
func (p *Plan) Ladder() sandbox.Ladder {
	in := sandbox.LadderInput{ABI: sandbox.EffectiveLandlockABI(), Root: os.Geteuid() == 0 && sandbox.HasCapSysAdmin(),
		Proxy:      p.Network.Proxy,
		TCPGrants:  !p.Network.Proxy && len(p.Network.TCPConnect)+len(p.Network.TCPBind) > 0,
		BestEffort: p.BestEffort}
	if !in.Root {
		in.UserNS = sandbox.UserNSAvailable()
	}
	return sandbox.NewLadder(in)
}

// LaunchDetail is what the launch event records about agentbox and the
// policy in force: its version, a digest of the effective role (built-in
// rules, every layer and the run's grants) and the files it came from.
func (p *Plan) LaunchDetail(version string) map[string]string {
	sum := policytext.Digest(p.Engine.Effective())
	d := map[string]string{
		"agentbox_version": version,
		"policy_digest":    "sha256:" + hex.EncodeToString(sum[:]),
		"policy_sources":   strings.Join(append([]string{"builtin"}, p.Engine.Files()...), " "),
	}
	if p.Checkpoints != nil {
		d["checkpoints"] = p.Checkpoints.Dir
	}
	if len(p.Secrets) > 0 {
		// Names and hosts only: the values are in no event.
		var ss []string
		for _, sc := range p.Secrets {
			ss = append(ss, sc.Name+"@"+strings.Join(sc.Hosts, ",")+" ("+sc.Source+")")
		}
		d["secrets"] = strings.Join(ss, " ")
		var hs []string
		for _, sc := range p.Secrets {
			hs = append(hs, sc.Name+":"+strings.Join(sc.Headers, ","))
		}
		d["secret_headers"] = strings.Join(hs, " ")
	}
	if p.Inspection != nil {
		d["inspect"] = strings.Join(p.Inspection.Hosts, " ")
	}
	if len(p.PushHosts) > 0 {
		d["push_tokens"] = strings.Join(p.PushHosts, " ")
	}
	if p.Review != nil {
		d["review"] = p.Review.Root
	}
	return d
}

// pathGrants names the paths outside the workspace the run may reach, by
// access ("rw /home/u/.cache/go-build, rx /opt/go"); past four, the rest
// are counted.
func pathGrants(fs policy.FSGrants) string {
	var named []string
	for _, g := range []struct {
		access string
		paths  []string
	}{{"rw", fs.RunWrite}, {"rw", fs.ExtraWrite}, {"rx", fs.RunExec}, {"rx", fs.ExtraExec}, {"ro", fs.RunRead}, {"ro", fs.ExtraRead}} {
		for _, p := range g.paths {
			named = append(named, g.access+" "+shellquote.Sanitize(p))
		}
	}
	if len(named) > 4 {
		named = append(named[:4], "+"+strconv.Itoa(len(named)-4)+" more")
	}
	return strings.Join(named, ", ")
}
