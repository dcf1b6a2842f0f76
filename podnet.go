package agentbox

import (
	"fmt"
	"net"
	"strconv"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// landlockTCPABI is the first Landlock ABI with TCP connect and bind rules:
// without them nothing holds the sandbox to the proxy's port in a shared
// network namespace.
const landlockTCPABI = 4

// shareNetNS sets up network mode proxy without a network namespace of the
// sandbox's own (WithSharedNetNS): the egress proxy listens on loopback of
// agentbox's own namespace, at the port the sandbox's proxy variables name,
// and the sandbox gets a TCP grant of that one port in place of the
// namespace. It refuses what would let the sandbox past the proxy there:
// a kernel without Landlock TCP rules, TCP ports granted to every host,
// loopback ports forwarded into the (absent) namespace.
func (r *Run) shareNetNS(cfg *sandbox.Config, p *plan.Plan, emit func(audit.Event) error) error {
	if abi := sandbox.LandlockABI(); abi < landlockTCPABI {
		return fmt.Errorf("--shared-netns: holding the sandbox to the egress proxy's port needs Landlock TCP rules (ABI %d, Linux 6.7); this kernel has ABI %d: run with a network namespace (--network proxy without --shared-netns) or --network none", landlockTCPABI, abi)
	}
	if len(cfg.Network.TCPConnect) > 0 {
		return fmt.Errorf("--shared-netns: TCP ports %v are granted to every host, which outside a network namespace of the sandbox's own would reach past the egress proxy; drop them from the role or the run", cfg.Network.TCPConnect)
	}
	if fw := p.Forwards(); len(fw) > 0 {
		return fmt.Errorf("--shared-netns: loopback ports %v are granted, which without a network namespace the sandbox would reach directly, past the egress proxy's decisions; drop them or run with a network namespace", fw)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sandbox.ProxyPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--shared-netns: the egress proxy's listener: %w", err)
	}
	cfg.Network.Proxy = false
	cfg.Network.TCPConnect = []uint16{sandbox.ProxyPort}
	// The proxy variables buildEnv sets in mode proxy, set here after the
	// scrub (the launcher sees a TCP grant, not mode proxy).
	u := "http://" + addr
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
		"npm_config_proxy", "npm_config_https_proxy"} {
		cfg.Markers = append(cfg.Markers, k+"="+u)
	}
	cfg.Markers = append(cfg.Markers, "NODE_USE_ENV_PROXY=1", "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
	r.serveEgress(emit)(ln)
	return nil
}
