package agentbox

// A run while it runs, beside its launch (run.go): its audit sink, what an
// approval inbox is told of it, the egress proxy's listener when it shares
// agentbox's network namespace, and its --debug timing lines.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/internal/redact"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/remember"
	"golang.org/x/sys/unix"
)

// AuditFailure says what a run does when its audit log cannot be written
// (a full or failing file system): the reference is the Linux audit
// daemon's disk_full_action / disk_error_action.
type AuditFailure int

const (
	// AuditFailClosed (the default): the program whose event could not be
	// written, and every later program start, is denied with a reason
	// naming the audit failure; the command's tree otherwise runs to its
	// end, and the run ends with ExitFailure and one line saying why.
	AuditFailClosed AuditFailure = iota
	// AuditFailStop ends the whole run at once (Stop), then as
	// AuditFailClosed.
	AuditFailStop
	// AuditFailContinue keeps running unaudited, with one warning line
	// and the number of events lost at the end. Explicit opt-in only.
	AuditFailContinue
)

// ParseAuditFailure parses the --audit-failure values deny, stop, continue.
func ParseAuditFailure(s string) (AuditFailure, bool) {
	switch s {
	case "deny", "":
		return AuditFailClosed, true
	case "stop":
		return AuditFailStop, true
	case "continue":
		return AuditFailContinue, true
	}
	return 0, false
}

// lowSpaceBytes is when the audit log's file system counts as nearly full
// (auditd's space_left default is 75 MB): one warning, ahead of failure.
const lowSpaceBytes = 64 << 20

// auditSink writes a run's events: it stamps agent, role and run, writes,
// passes each event to the WithEvents callback, and keeps the run's audit
// health: the first write error, the number of events lost after it, and
// whether the low-space warning was given. It never prints a line per
// event.
type auditSink struct {
	w                 *audit.Writer // nil: no log
	agent, role, run  string
	events            func(audit.Event)
	warn              io.Writer
	onFail            func(error) // called once, at the first failure
	mu                sync.Mutex
	err               error
	lost, written     int
	lowWarned, failed bool
	warnFirst         bool // print a line at the first failure (continue mode)
	// quota bounds the decision events (exec, git, net, tool) one run may
	// write (0: DefaultAuditQuota): a run that floods the shared log with
	// program starts would fill its disk, and then every run writing
	// there is denied. Past it the run fails as on a write failure; its
	// limit, violation and exit events are still written.
	quota     int
	decisions int
	// recent are the run's last decided commands, for the approval
	// inbox, oldest first (redacted when read: Recent).
	recent []recentCmd
	// refused counts the run's decisions that refused something (a
	// program, a connection, a request, a tool call), firstRefused says
	// the first: the end line's "2 refused (first: ...)".
	refused      int
	firstRefused string
}

type recentCmd struct{ decision, action string }

// refusal is the count of refused decisions and the first one named
// (action and rule, redacted as in the log).
func (s *auditSink) refusal() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, s.firstRefused
}

// refusedDecision reports an audit decision that kept something from
// happening: a denial, or an ask nobody could answer or answered no.
func refusedDecision(d string) bool {
	switch d {
	case audit.DecisionDeny, audit.DecisionAskDenied, audit.DecisionAskTimeout, audit.DecisionAskUnavailable:
		return true
	}
	return false
}

// recentKept is how many of the run's last commands the inbox is shown.
const recentKept = 10

// Recent returns the run's last decided commands, oldest first, as
// "decision: action", redacted as in the audit log.
func (s *auditSink) Recent() []string {
	s.mu.Lock()
	kept := append([]recentCmd(nil), s.recent...)
	s.mu.Unlock()
	out := make([]string, len(kept))
	for i, c := range kept {
		a, _ := redact.Text(c.action)
		out[i] = c.decision + ": " + capfield.Value(a, 400)
	}
	return out
}

// DefaultAuditQuota is the number of decision events one run may write
// to the audit log (about 300-500 MB): far above any build's program
// starts, far below a disk.
const DefaultAuditQuota = 1_000_000

// ErrAuditQuota is the audit failure of a run that used up its quota of
// decision events (WithAuditQuota).
var ErrAuditQuota = errors.New("the run wrote its quota of decision events to the audit log (WithAuditQuota, --audit-quota)")

func (s *auditSink) emit(e audit.Event) error {
	_, err := s.EmitSeq(e)
	return err
}

// Emit writes e (audit.Sink).
func (s *auditSink) Emit(e audit.Event) error { return s.emit(e) }

// EmitSeq writes e and returns the seq it got (audit.SeqSink; 0 when
// there is no log or the write failed).
func (s *auditSink) EmitSeq(e audit.Event) (uint64, error) {
	e.Agent, e.Run = s.agent, s.run
	if e.Role == "" {
		e.Role = s.role // a run's role, unless a granted role change says otherwise (the judge's)
	}
	var err error
	switch e.Event {
	case audit.EventExec, audit.EventGit, audit.EventNet, audit.EventTool:
		if s.w == nil {
			break
		}
		quota := s.quota
		if quota == 0 {
			quota = DefaultAuditQuota
		}
		s.mu.Lock()
		s.decisions++
		over := quota > 0 && s.decisions > quota
		s.mu.Unlock()
		if over {
			err = ErrAuditQuota
		}
	}
	if s.w != nil && err == nil {
		e.Seq, err = s.w.WriteSeq(e)
	}
	s.mu.Lock()
	switch e.Event {
	case audit.EventExec, audit.EventGit, audit.EventNet, audit.EventTool:
		if refusedDecision(e.Decision) {
			s.refused++
			if s.firstRefused == "" {
				what := e.Action
				if part := e.Detail["decided"]; part != "" {
					what = part // the part of a line that decided (git push in sh -c '...; git push')
				}
				if what == "" {
					what = strings.Join(e.Argv, " ")
				}
				if e.Rule != "" {
					what += " (rule " + e.Rule + ")"
				}
				red, _ := redact.Text(what)
				s.firstRefused = capfield.Value(red, 200)
			}
		}
	}
	switch e.Event {
	case audit.EventExec, audit.EventGit:
		what := e.Action
		if what == "" {
			what = strings.Join(e.Argv, " ")
		}
		if len(s.recent) == recentKept {
			s.recent = append(s.recent[:0], s.recent[1:]...)
		}
		s.recent = append(s.recent, recentCmd{e.Decision, what})
	}
	var first error
	if err != nil {
		s.lost++
		if s.err == nil {
			s.err = err
			first = err
			if s.warnFirst {
				// --audit-failure continue: say so now, not only at the end.
				fmt.Fprintf(s.warn, "agentbox: warning: audit log %s cannot be written (%v); running on unaudited\n", s.w.Path(), err)
			}
		}
	} else if s.w != nil {
		s.written++
		if !s.lowWarned && s.written%256 == 1 && s.w.Path() != "-" {
			var st unix.Statfs_t
			if unix.Statfs(filepath.Dir(s.w.Path()), &st) == nil {
				if free := st.Bavail * uint64(st.Bsize); free < lowSpaceBytes {
					s.lowWarned = true
					fmt.Fprintf(s.warn, "agentbox: warning: audit log %s: only %d MiB left on its file system\n", s.w.Path(), free>>20)
				}
			}
		}
	}
	s.mu.Unlock()
	if first != nil && s.onFail != nil {
		s.onFail(first)
	}
	if s.events != nil {
		s.events(e)
	}
	return e.Seq, err
}

// health returns the first write error and the number of events lost.
func (s *auditSink) health() (error, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err, s.lost
}

// inboxInfo is what the run tells an approval inbox (--approve inbox):
// who it is, where its audit log and project policy are, its session
// rules (listed and revocable there) and, with each ask, its last
// commands and the files it has changed so far.
func (r *Run) inboxInfo() approval.InboxInfo {
	ws := r.plan.Workspace()
	info := approval.InboxInfo{
		Attach: approval.InboxAttach{
			Run: r.plan.ID, Agent: r.plan.Agent, Role: r.plan.Role.Name, Workspace: ws,
			Command: r.plan.Argv, Audit: r.auditPathForEntry(), Pid: os.Getpid(), Started: time.Now().UTC(),
		},
		Rules: func() []approval.InboxRule {
			var out []approval.InboxRule
			for _, ri := range r.plan.Engine.Session().Rules() {
				out = append(out, approval.InboxRule{ID: ri.ID, Decision: ri.Decision, Match: ri.Matcher, By: ri.By, At: ri.At})
			}
			return out
		},
		Revoke: func(id, by string) error {
			if err := r.RemoveSessionRule(id); err != nil {
				return err
			}
			if r.sink != nil {
				_ = r.sink.emit(audit.Event{Event: audit.EventRevoke, Rule: id, Approver: by,
					Reason: "session rule revoked: the action is decided by the policy again"})
			}
			return nil
		},
		Context: func() (recent, changed []string) {
			if r.sink != nil {
				recent = r.sink.Recent()
			}
			return recent, r.changedSoFar()
		},
	}
	if ws != "" {
		file := policy.ProjectFile(ws)
		info.Attach.Policy = file
		info.Preview = func(req approval.Request) *approval.InboxRemember {
			allow, err, deny := remember.Preview(r.plan.Engine, file, req.Action)
			p := &approval.InboxRemember{File: file, Allow: allow, Deny: deny}
			if err != nil {
				p.AllowNote = err.Error()
			}
			return p
		}
	}
	return info
}

// changedSoFar lists the paths the run has changed (as of its last
// checkpoint, or its review layer now), the last 20.
func (r *Run) changedSoFar() []string {
	var paths []string
	switch {
	case r.plan.Review != nil:
		ch, err := r.Changes()
		if err != nil {
			return nil
		}
		for _, c := range ch {
			paths = append(paths, string(c.Kind)+" "+c.Path)
		}
	case r.plan.Checkpoints != nil:
		steps, _, err := checkpoint.Changes(r.plan.Checkpoints.Dir, r.plan.ID)
		if err != nil {
			return nil
		}
		for _, st := range steps {
			for _, c := range st.Changes {
				e := string(c.Kind) + " " + c.Path
				if !slices.Contains(paths, e) {
					paths = append(paths, e)
				}
			}
		}
	}
	if len(paths) > 20 {
		paths = paths[len(paths)-20:]
	}
	return paths
}

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

// debugf writes one --debug timing line (WithDebugLog).
func (r *Run) debugf(format string, args ...any) {
	if r.o.log != nil {
		fmt.Fprintf(r.o.log, "agentbox: %7.2fms "+format+"\n", append([]any{float64(time.Since(r.o.t0).Microseconds()) / 1000}, args...)...)
	}
}
