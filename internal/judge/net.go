package judge

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/command"
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

// installers are package managers' subcommands that fetch from the
// network (the command parser gives only network clients such as curl
// and git fetch the network category): program → subcommands.
var installers = map[string][]string{
	"pip": {"install", "download", "wheel"}, "pip3": {"install", "download", "wheel"},
	"npm": {"install", "i", "ci", "add", "update", "upgrade"}, "yarn": {"add", "install", "upgrade"},
	"pnpm": {"add", "install", "i", "update"}, "go": {"get", "mod download"},
	"cargo": {"install", "fetch", "update"}, "gem": {"install", "update"},
	"apt": {"install", "update"}, "apt-get": {"install", "update"},
	"uv": {"add", "sync", "pip install"}, "poetry": {"add", "install", "update"},
	"bundle": {"install", "update"}, "composer": {"install", "require", "update"},
}

// wontWork says why approving an asked program start cannot do what the
// program is for in this run ("" when nothing says so): a network client
// or a package install when the run has no network at all, a file it
// would write or delete outside every area the sandbox may write. The
// kernel refuses either whatever the approver answers, so the prompt
// says so, with the flag that would make it work; the question is still
// put (the program may do something useful locally: curl file://, git
// fetch from a path, pip install ./pkg), never refused on this guess.
func (p *Judge) wontWork(argv []string, cwd string) string {
	if len(argv) == 0 {
		return ""
	}
	var notes []string
	nw := p.roleInfo().Network
	offline := !nw.Proxy && len(nw.TCPConnect) == 0
	seenNet := false
	for _, it := range command.FromArgv(argv, cwd) {
		tool, detail, _ := policy.ParseAction(it.Action)
		if offline && !seenNet && (slices.Contains(it.Categories, "network") || installs(it.Argv)) {
			seenNet = true
			what := detail
			if tool == "git" {
				what = "git " + detail
			}
			notes = append(notes, "cannot work in this run: "+capfield.Line(what, 80)+" reaches the network and the run has none (network: none); approving only lets it start (to reach a host: agentbox run --allow-host HOST, or --network proxy)")
		}
		if b := p.cfg.Boundary; b != nil && (tool == "create_file" || tool == "delete") && filepath.IsAbs(detail) {
			if ok, _ := b.Writable(detail); !ok {
				notes = append(notes, "cannot work in this run: "+capfield.Line(detail, 120)+" is outside every area the sandbox may write (Landlock refuses the "+map[string]string{"create_file": "write", "delete": "deletion"}[tool]+"); approving only lets it start (to write there: agentbox run --rw DIR)")
			}
		}
	}
	return strings.Join(notes, "; ")
}

// installs reports whether argv is a package manager subcommand that
// fetches packages (installers).
func installs(argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	rest := strings.Join(argv[1:], " ")
	for _, sub := range installers[filepath.Base(argv[0])] {
		if rest == sub || strings.HasPrefix(rest, sub+" ") {
			return true
		}
	}
	return false
}
