package agentbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/gitleft"
	"github.com/agentbox/agentbox/internal/gitsum"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/layer"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/internal/registry"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/shellquote"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
)

// Version is agentbox's version, recorded in every launch event (the CLI
// sets it from its build; "dev" otherwise).
var Version = "dev"

// Exit statuses of a run (Result.ExitCode), as `agentbox run` exits.
const (
	ExitTimeout  = sandbox.ExitTimeout  // the run's timeout fired
	ExitFailure  = sandbox.ExitFailure  // agentbox itself failed or refused to run
	ExitDenied   = sandbox.ExitDenied   // the command was denied or is not executable
	ExitNotFound = sandbox.ExitNotFound // the command was not found
)

// Run is one sandboxed run of a command. Create it with New; it is not
// reusable after Wait.
type Run struct {
	layer   *layer.Layer   // a review run's layer
	layerCh chan layerMade // the layer being made, until startReview takes it
	o       options
	plan    *plan.Plan // everything the run gets; never changed after New

	mu      sync.Mutex
	started bool
	pid     int
	pending atomic.Int32
	entry   registry.Entry

	registryWarned bool
	stopped        atomic.Bool
	judge          *judge.Judge // decides and asks: program starts, connections
	gitBefore      gitleft.Snapshot
	appr           *countingApprover
	proxy          *egress.Proxy
	procs          *egress.Processes  // the run's program starts, for the proxy's attribution
	pushes         *egress.PushTokens // approved pushes and their tokens (pushtokens.go)
	emit           func(audit.Event) error
	sink           *auditSink
	rec            *checkpoint.Recorder // nil: checkpoints off

	cancel context.CancelFunc
	done   chan struct{}
	gone   chan struct{} // closed after done, once the registry entry is gone (Wait)
	res    *Result
	err    error
	closer []func()
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the command's exit status; 128+N when it was killed by
	// signal N; ExitTimeout, ExitDenied, ExitNotFound as documented there.
	ExitCode int
	// Status is the raw wait status of the command.
	Status syscall.WaitStatus
	// TimedOut is true when the run's timeout fired.
	TimedOut bool
	// Stopped is true when Stop (or StopRun) ended the run.
	Stopped bool
	// OOMKills and PidsMaxHits are counted from the run's cgroup.
	OOMKills, PidsMaxHits int
	// Commits is the number of git commits counted against the role's
	// max_commits.
	Commits int
	// AuditError is the first error writing the run's audit log, and
	// AuditLost the number of events that could not be written; with the
	// default AuditFailClosed, ExitCode is then ExitFailure.
	AuditError error
	AuditLost  int

	// RunID and Workspace name the run, for the commands that look at
	// what it did afterwards (agentbox changes, undo, diff, apply).
	RunID, Workspace string
	// MemoryLimit and PidsLimit are the limits the run had (0: none), for
	// saying which one a kill came from.
	MemoryLimit, PidsLimit int64
	// Refused counts what the run's policy refused (program starts,
	// connections, requests, tool calls; denials and asks that were not
	// approved); FirstRefused names the first (action and rule, redacted).
	Refused      int
	FirstRefused string
	// Changed lists paths the run changed in the writable areas, start
	// to end ("target/a.go"; at most MaxChangedListed, ChangedCount is
	// all of them), from its checkpoints or, for a review run, its layer.
	// Checkpointed and Review say which of the two there is.
	Changed      []string
	ChangedCount int
	Checkpointed bool
	Review       bool
}

// MaxChangedListed bounds Result.Changed.
const MaxChangedListed = 10

// New prepares a run of argv in workspace under role. It loads the policy
// layers, resolves the boundary and checks the layout; nothing is started
// and nothing outside is changed. Errors name the option, file or path at
// fault; an unsafe layout is an *ExposedError. A process started as a
// run's helper whose main did not call MaybeRunHelper exits here, telling
// the launcher why, instead of starting a run of its own.
func New(workspace, role string, argv []string, opts ...Option) (*Run, error) {
	// Started as a run's helper, this program's main went on to start a
	// run of its own: say MaybeRunHelper is missing instead of recursing.
	sandbox.ExitIfUnwiredHelper()
	r := &Run{o: defaultOptions()}
	for _, opt := range opts {
		if err := opt(&r.o); err != nil {
			return nil, err
		}
	}
	p, err := plan.Build(r.o.planInput(workspace, role, argv))
	if err != nil {
		return nil, err
	}
	p.BestEffort = r.o.bestEffort
	r.plan = p
	return r, nil
}

// ID is the run's id, as in audit events, cgroup names and `agentbox ps`.
func (r *Run) ID() string { return r.plan.ID }

// Role is the effective, merged role the run uses.
func (r *Run) Role() policy.RoleInfo { return r.plan.Role }

// SessionRules lists the "always" answers given during the run, which
// RemoveSessionRule takes back (Forge's FR-5.4: session rules are added and
// removed during the session).
func (r *Run) SessionRules() []policy.RuleInfo { return r.plan.Engine.Session().Rules() }

// RemoveSessionRule removes an "always" answer (by the id SessionRules
// gives) for the rest of the run: the action is decided by the policy
// again.
func (r *Run) RemoveSessionRule(id string) error { return r.plan.Engine.Session().Remove(id) }

// Engine is the run's policy engine (for explaining decisions).
func (r *Run) Engine() *policy.Engine { return r.plan.Engine }

// Summary is one line saying what the run's command gets — role, areas,
// extra path grants, network, approver, limits — printed by `agentbox run`
// at launch (unless --quiet) so that, say, "no network" is never silent.
func (r *Run) Summary() string { return r.plan.Summary() }

// Pid is the command's pid once Start has returned (0 before). The command
// leads its own session and process group.
func (r *Run) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

// Escalate asks to move the running run to role (the Go API's agentbox
// escalate ROLE): decided as tool:self_edit:permissions:ROLE by the
// policy, an ask put to the run's approver, the answer counting only
// from someone whose grants include role (the policy's approvers, else
// the workspace owner or root); an allow counts as the invoking user's.
// Once granted, the programs started afterwards, connections and
// requests are decided as role; the kernel boundary stays as launched.
func (r *Run) Escalate(role, reason string) error {
	r.mu.Lock()
	j := r.judge
	r.mu.Unlock()
	if j == nil || !r.o.execPolicy {
		return errors.New("agentbox: Escalate needs a started run with the exec policy")
	}
	return j.Escalate(role, reason)
}

// Pending is the number of approvals the run is waiting for now.
func (r *Run) Pending() int { return int(r.pending.Load()) }

// Start launches the sandbox and returns once the command's process exists
// (held until the supervisor is attached, then released). Cancelling ctx
// stops the run like Stop with the run's kill grace. Start returns an error,
// and the run is over, if anything the run needs cannot be set up.
func (r *Run) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("agentbox: Start called twice")
	}
	r.started = true
	r.mu.Unlock()

	ctx, r.cancel = context.WithCancel(ctx)
	r.done, r.gone = make(chan struct{}), make(chan struct{})
	fail := func(err error) error {
		r.dropPendingLayer()
		r.cleanup()
		r.cancel()
		r.err = err
		close(r.done)
		r.unregister()
		close(r.gone)
		return err
	}

	p := r.plan
	r.layerCh = r.makeLayer()
	// The host caches' overlays are made from here on, off the helper's
	// path; the launcher hands them to the helper. The Go runtime's
	// thread for locked threads is made meanwhile too, off the path.
	sandbox.PrestartThreads()
	cacheMounts := sandbox.PrepareCacheMounts(p.CacheLayers())
	r.closer = append(r.closer, cacheMounts.Close)
	if err := r.prepareFiles(); err != nil {
		return fail(err)
	}
	emit, err := r.openAudit()
	if err != nil {
		return fail(err)
	}
	r.emit = emit
	cfg := p.Sandbox(Version)
	cfg.BestEffort, cfg.NoCgroupLimits = r.o.bestEffort, r.o.noLimits
	cfg.AllowWeaker, cfg.CacheMounts = r.o.allowWeaker, cacheMounts
	cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.Exe = r.o.stdin, r.o.stdout, r.o.stderr, r.o.exe
	cfg.KillGrace, cfg.ForwardSignals, cfg.Log, cfg.T0, cfg.Warnings = r.o.killGrace, r.o.forwardSignals, r.o.log, r.o.t0, r.o.warnings
	cfg.Events = func(e sandbox.Event) {
		_ = emit(audit.Event{Event: e.Kind, Pid: e.Pid, Argv: e.Argv, Cwd: e.Cwd, Limit: e.Limit,
			Reason: e.Reason, Exit: e.Exit, Signal: e.Signal, Detail: e.Detail})
	}
	var pauser approval.Pauser
	if r.o.ptyIn != nil {
		pty, err := r.attachPTY(ctx, &cfg)
		if err != nil {
			return fail(err)
		}
		pauser = pty
	}
	if err := r.buildApprover(pauser); err != nil {
		return fail(err)
	}
	cfg.BeforeRelease = r.startCheckpoints()
	if err := r.startReview(&cfg); err != nil {
		return fail(err)
	}
	r.judge = r.newJudge()
	if r.o.execPolicy {
		if err := supervise.PtraceAvailable(); err != nil {
			return fail(fmt.Errorf("exec policy: %w; use --no-exec-policy to run with the kernel boundary only", err))
		}
		cfg.Supervise = r.judge.Supervisor()
		cfg.TraceAll = r.o.traceAll
	}
	if err := r.setUpEgress(&cfg, emit); err != nil {
		return fail(err)
	}
	return r.launch(ctx, cfg)
}

// prepareFiles writes what the run's command finds before it starts: the
// notes on the host caches, the guide for the agent, the agent profile's
// home and the egress proxy's CA bundle (the only one whose failure ends
// the run).
func (r *Run) prepareFiles() error {
	p := r.plan
	for _, n := range p.CacheNotes {
		if r.o.warnings != nil {
			fmt.Fprintf(r.o.warnings, "agentbox: %s\n", n)
		}
	}
	if err := p.WriteGuide(); err != nil && r.o.warnings != nil {
		fmt.Fprintf(r.o.warnings, "agentbox: warning: the guide for the agent was not written: %v\n", err)
	}
	if err := p.PrepareHome(); err != nil && r.o.warnings != nil {
		fmt.Fprintf(r.o.warnings, "agentbox: warning: agent profile %s: %v\n", p.Profile.Profile.Name, err)
	}
	return p.WriteCABundle()
}

// attachPTY gives the command a pseudo-terminal of its own whose output
// is relayed to the caller's (WithPTY) from the command's start until
// every process of the run is gone.
func (r *Run) attachPTY(ctx context.Context, cfg *sandbox.Config) (*sandbox.PTY, error) {
	pty, err := sandbox.OpenPTY()
	if err != nil {
		return nil, err
	}
	var relayDone chan struct{}
	r.closer = append(r.closer, func() {
		if relayDone != nil {
			<-relayDone // every process is gone: the relay drains the output
		}
		pty.Close()
	})
	s := pty.Slave()
	cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.Setctty = s, s, s, true
	in, out := r.o.ptyIn, r.o.ptyOut
	relayDone = make(chan struct{})
	cfg.Started = func(int) {
		go func() {
			defer close(relayDone)
			_ = pty.Relay(ctx, in, out)
		}()
	}
	return pty, nil
}

// setUpEgress wires the run's egress proxy (network mode proxy): in a
// network namespace shared with other runs (WithSharedNetNS), or the
// run's own, with its forwarded ports.
func (r *Run) setUpEgress(cfg *sandbox.Config, emit func(audit.Event) error) error {
	p := r.plan
	if !p.Network.Proxy {
		return nil
	}
	if r.o.sharedNetNS {
		return r.shareNetNS(cfg, p, emit)
	}
	r.attributeConnections(cfg)
	cfg.OnProxyListener = r.serveEgress(emit)
	if fw := p.Forwards(); len(fw) > 0 {
		cfg.ForwardPorts = fw
		cfg.OnForwardListener = func(port uint16, l net.Listener) {
			r.mu.Lock()
			px := r.proxy
			r.mu.Unlock()
			if in := p.Inspects(); in != nil && in(plan.LoopbackHost, int(port)) {
				scheme := "http"
				if p.ForwardTLS(port) {
					scheme = "https"
				}
				go px.ForwardHTTP(l, plan.LoopbackHost, int(port), scheme)
				return
			}
			go px.Forward(l, plan.LoopbackHost, int(port))
		}
	}
	return nil
}

// launch starts the sandbox and returns once the command's process
// exists, or with the error that ended the run before it did.
func (r *Run) launch(ctx context.Context, cfg sandbox.Config) error {
	// The command's process exists but is held until released: record it
	// (pid, registry entry) now, so nothing about it can end first.
	// What the run leaves for the human's git is judged against what was
	// there before it: scanned while the helper starts, finished before
	// the command is released.
	leftCh := make(chan gitleft.Snapshot, 1)
	go func() { leftCh <- gitleft.Scan(r.plan.WritableRoots()) }()
	startedCh := make(chan int, 1)
	userStarted := cfg.Started
	cfg.Started = func(pid int) {
		r.gitBefore = <-leftCh
		r.mu.Lock()
		r.pid = pid
		r.mu.Unlock()
		r.register(pid)
		if userStarted != nil {
			userStarted(pid)
		}
		startedCh <- pid
	}
	go func() {
		res, err := sandbox.Run(ctx, cfg)
		r.finish(res, err)
	}()
	select {
	case <-startedCh:
		return nil
	case <-r.done:
		if r.err != nil {
			return r.err
		}
		return errors.New("agentbox: the run ended before its command started")
	}
}

// openAudit opens the run's audit sink and returns the emitter that stamps
// agent, role and run on every event, writes it and passes it to the
// WithEvents callback.
func (r *Run) openAudit() (func(audit.Event) error, error) {
	w := r.o.auditWriter
	if w == nil && r.o.auditPath != "" {
		if r.o.auditPath != "-" {
			if err := os.MkdirAll(filepath.Dir(r.o.auditPath), 0o700); err != nil {
				return nil, &OptionError{Option: "audit", Value: r.o.auditPath, Err: err}
			}
		}
		aw, err := audit.OpenKeyed(r.o.auditPath, r.o.auditKey)
		if err != nil {
			return nil, &OptionError{Option: "audit", Value: r.o.auditPath, Err: err}
		}
		w = aw
		r.closer = append(r.closer, func() { aw.Close() })
	}
	r.sink = &auditSink{w: w, agent: r.plan.Agent, role: r.plan.Role.Name, run: r.plan.ID, events: r.o.events, warn: r.o.warnings}
	r.sink.warnFirst = r.o.auditFailure == AuditFailContinue
	r.sink.quota = r.o.auditQuota
	if r.o.auditFailure == AuditFailStop {
		r.sink.onFail = func(error) { go r.Stop(0) }
	}
	return r.sink.emit, nil
}

// buildApprover sets up the run's approver (WithApprover, or the one
// WithApprove names), shared by the exec policy and the egress proxy.
func (r *Run) buildApprover(pauser approval.Pauser) error {
	appr := r.o.approver
	if appr == nil && r.o.approve != "" && r.o.approve != "none" {
		// Those the approvers block names may connect to the socket too
		// (their answers are still checked against their grants).
		uids := append([]int{os.Getuid(), 0}, r.plan.Engine.Approvers().UIDs()...)
		a, err := approval.New(r.o.approve, approval.Options{Pauser: pauser, AllowedUIDs: uids, Inbox: r.inboxInfo(), Warnings: r.o.warnings})
		if err != nil {
			return &OptionError{Option: "approve", Value: r.o.approve, Err: err}
		}
		if n, ok := a.(approval.RulesNotifier); ok {
			r.plan.Engine.Session().Notify(n.RulesChanged)
		}
		if c, ok := a.(io.Closer); ok {
			r.closer = append(r.closer, func() { c.Close() })
		}
		appr = a
	}
	if r.o.webhook != nil {
		cfg := *r.o.webhook
		cfg.Audit = r.webhookAudit
		w, err := approval.NewWebhook(cfg)
		if err != nil {
			return &OptionError{Option: "approve-webhook", Err: err}
		}
		r.closer = append(r.closer, func() { w.Close() })
		if appr == nil {
			appr = w
		} else {
			appr = approval.Any(appr, w)
		}
	}
	if appr != nil {
		r.appr = &countingApprover{a: appr, r: r}
	}
	return nil
}

// webhookAudit writes what a webhook approver reports: refused answers
// as answer_refused, deliveries without a decision (the ask's own
// outcome is the judge's event).
func (r *Run) webhookAudit(e approval.WebhookEvent) {
	d := ""
	if e.Kind == approval.WebhookRefused {
		d = audit.DecisionAnswerRefused
	}
	det := map[string]string{"webhook": e.Kind}
	if e.URL != "" {
		det["webhook_url"] = e.URL
	}
	if e.Request != "" {
		det["request"] = e.Request
	}
	_ = r.sink.emit(audit.Event{Event: audit.EventAsk, Action: e.Action, Decision: d, Reason: e.Reason, Approver: "webhook:" + r.o.webhook.Identity, Detail: det})
}

// newJudge builds the run's judge: every program start and connection is
// decided against the plan's engine; asks go to the run's approver.
func (r *Run) newJudge() *judge.Judge {
	cfg := judge.Config{
		Engine: r.plan.Engine, Audit: r.sink, Role: r.plan.Role, AuditFailOpen: r.o.auditFailure == AuditFailContinue,
		Workspace: r.plan.Workspace(), AgentID: r.plan.Agent, RunID: r.plan.ID,
		ApprovalTimeout: r.plan.Limits.ApprovalWait, Boundary: r.plan.Boundary,
		Command: r.plan.Argv, Dir: r.plan.Dir,
	}
	if r.appr != nil {
		cfg.Approver = r.appr
	}
	cfg.Approvers, cfg.Owner, cfg.Invoker = r.plan.Engine.Approvers(), r.plan.Owner(), os.Getuid()
	if r.o.execPolicy {
		cfg.Escalate = r.plan.EngineFor
		cfg.Self, _ = os.Executable()
	}
	if r.plan.Checkpoints != nil {
		cfg.Checkpoints = recorder{r}
		cfg.AgentFirst = r.plan.Profile != nil
	}
	if r.plan.Network.Proxy {
		r.pushes = r.newPushTokens()
		cfg.Pushes = r.pushes
	}
	j := judge.New(cfg)
	r.closer = append(r.closer, j.Close)
	return j
}

// serveEgress returns the hook that serves the run's egress proxy on the
// listener the sandbox's network namespace hands out (network mode proxy):
// hosts decided by the policy, asks through the run's approver, every
// connection audited.
func (r *Run) serveEgress(emit func(audit.Event) error) func(net.Listener) {
	return func(l net.Listener) {
		internal, _ := policy.HostMatcher(r.plan.Network.Internal) // checked by plan.Build
		cfg := egress.Config{
			Internal:      internal,
			Decide:        r.judge.DecideHost,
			Audit:         audit.SinkFunc(emit),
			Resolve:       r.o.resolve,
			RatePerMinute: r.plan.Network.RatePerMinute,
		}
		if r.appr != nil {
			cfg.Ask = r.judge.AskHost
			cfg.AskRequest = r.judge.AskRequest
		}
		cfg.DecideRequest, cfg.DecidePush = r.judge.DecideRequest, r.judge.DecidePush
		if ins := r.plan.Inspection; ins != nil {
			cfg.Authority, cfg.Terminate = ins.Authority, r.plan.Inspects()
			cfg.Secrets = r.plan.EgressSecrets()
		}
		cfg.Refused = r.refusedNotice()
		cfg.Processes = r.procs
		cfg.Programs = r.plan.EgressPrograms()
		cfg.PushTokens = r.pushes
		p := egress.New(cfg)
		r.mu.Lock()
		r.proxy = p
		r.mu.Unlock()
		r.closer = append(r.closer, func() { p.Close() })
		go p.Serve(l)
	}
}

// attributeConnections records every program start the exec supervisor
// allows into the run's process table, so the egress proxy can say which
// process and program opened each connection (egress.Processes). Without
// the exec policy no program start is seen: connections are attributed
// to their process only.
func (r *Run) attributeConnections(cfg *sandbox.Config) {
	procs := egress.NewProcesses()
	r.procs = procs
	r.closer = append(r.closer, func() { procs.Close() })
	inner := cfg.Supervise
	if inner == nil {
		return
	}
	observe := func(ev *supervise.ExecEvent) {
		name, path := policy.ProgramName(ev.Argv, ev.ScriptArg, ev.Program, ev.Exe, ev.Cwd)
		procs.Exec(ev.Pid, ev.Start, ev.Ppid, name, path)
	}
	cfg.Supervise = func(ctx context.Context, h sandbox.Helper) (syscall.WaitStatus, error) {
		return inner(supervise.WithObserver(ctx, observe), h)
	}
}

// refusedNotice says once on stderr when the proxy refuses one of the
// agent profile's own API hosts: an agent CLI that ignores its base URL
// otherwise retries in silence ("Reconnecting…") while the refusals show
// only in the audit log.
func (r *Run) refusedNotice() func(host string, port int, v egress.Verdict) {
	prof := r.plan.Profile
	if prof == nil || r.o.warnings == nil || len(prof.Profile.Hosts) == 0 {
		return nil
	}
	own, err := policy.HostMatcher(prof.Profile.Hosts)
	if err != nil {
		return nil
	}
	var mu sync.Mutex
	said := map[string]bool{}
	return func(host string, port int, v egress.Verdict) {
		if !own(host, port) {
			return
		}
		mu.Lock()
		first := !said[host]
		said[host] = true
		mu.Unlock()
		if !first {
			return
		}
		rule := ""
		if v.Rule != "" {
			rule = " (rule " + v.Rule + ")"
		}
		hint := "allow it with " + shellquote.Command([]string{"--allow-host", host})
		if len(prof.Profile.BaseURLEnv) > 0 {
			hint += ", or check that the agent honours " + strings.Join(prof.Profile.BaseURLEnv, "/") + " (README: agent CLIs)"
		}
		fmt.Fprintf(r.o.warnings, "agentbox: %s called its API host %s:%d, refused%s: %s; %s\n", prof.Profile.Name, shellquote.Sanitize(host), port, rule, shellquote.Sanitize(v.Reason), hint)
	}
}

// countingApprover keeps the run's pending-approval count (and its registry
// entry) current.
type countingApprover struct {
	a approval.Approver
	r *Run
}

func (c *countingApprover) Approve(ctx context.Context, req approval.Request) (approval.Response, error) {
	c.r.pending.Add(1)
	c.r.updateRegistry()
	defer func() {
		c.r.pending.Add(-1)
		c.r.updateRegistry()
	}()
	return c.a.Approve(ctx, req)
}

// register records the started run in the per-user registry.
func (r *Run) register(pid int) {
	if r.o.registryDir == "" {
		return
	}
	self, _ := registry.StartTime(os.Getpid())
	ps, _ := registry.StartTime(pid)
	r.mu.Lock()
	r.entry = registry.Entry{
		ID: r.plan.ID, Agent: r.plan.Agent, Role: r.plan.Role.Name, Workspace: r.plan.Workspace(), Argv: r.plan.Argv,
		Started: time.Now().UTC(), Launcher: os.Getpid(), LauncherStart: self, Pid: pid, PidStart: ps,
		Audit: r.auditPathForEntry(), Review: r.plan.Review != nil,
	}
	r.mu.Unlock()
	r.updateRegistry()
}

func (r *Run) auditPathForEntry() string {
	if r.o.auditWriter != nil {
		return r.o.auditWriter.Path()
	}
	return r.o.auditPath
}

// updateRegistry rewrites the run's entry (pending count changed).
func (r *Run) updateRegistry() {
	if r.o.registryDir == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entry.ID == "" {
		return
	}
	r.entry.Pending = int(r.pending.Load())
	if err := registry.Put(r.o.registryDir, r.entry); err != nil && !r.registryWarned {
		r.registryWarned = true
		fmt.Fprintf(r.o.warnings, "agentbox: warning: %v (agentbox ps/stop will not see this run)\n", err)
	}
}

// finish records the outcome of sandbox.Run and releases everything the
// run holds.
func (r *Run) finish(res *sandbox.Result, err error) {
	var gitAfter chan gitleft.Snapshot
	if r.gitBefore != nil && r.emit != nil {
		// Every process of the run is gone (sandbox.Run returned): the
		// areas are scanned beside the end checkpoint (both only read
		// them) and reported below, before Wait returns.
		roots := r.plan.WritableRoots()
		if r.judge != nil {
			roots = append(roots, r.judge.NewRepos()...) // wherever git init or clone made one
		}
		gitAfter = make(chan gitleft.Snapshot, 1)
		go func() { gitAfter <- gitleft.Scan(roots) }()
	}
	r.finishCheckpoints(res, err)
	if gitAfter != nil {
		// What would make the human's git run a program, written during
		// the run, is reported now, before anyone uses git there.
		for _, f := range gitleft.Compare(r.gitBefore, <-gitAfter) {
			r.emit(audit.Event{Event: audit.EventViolation, Reason: f.String() + "; written during the run",
				Detail: map[string]string{"path": f.Path, "git": f.What}})
			// Path and What are the agent's: escaped for the terminal, and
			// the suggested command quoted so pasting it runs only that.
			fmt.Fprintf(r.o.warnings, "agentbox: warning: %s: %s, written during the run; git would run it outside the sandbox: review it, or %s\n",
				shellquote.Sanitize(f.Path), shellquote.Sanitize(f.What), shellquote.Command(f.Command()))
		}
	}
	r.cleanup()
	if err != nil {
		r.err = err
		// Wait returns a Result with its error too: callers can always
		// read the exit status (ExitFailure) and what is known of the run.
		r.res = &Result{ExitCode: ExitFailure, Stopped: r.stopped.Load()}
		r.summarize(r.res)
	} else {
		r.res = &Result{ExitCode: res.ExitCode, Status: res.Status, TimedOut: res.TimedOut,
			OOMKills: res.OOMKills, PidsMaxHits: res.PidsMaxHits, Stopped: r.stopped.Load()}
		if r.judge != nil {
			r.res.Commits = r.judge.Commits()
		}
		r.summarize(r.res)
		if r.sink != nil {
			if aerr, lost := r.sink.health(); aerr != nil {
				r.res.AuditError, r.res.AuditLost = aerr, lost
				path := r.sink.w.Path()
				if r.o.auditFailure == AuditFailContinue {
					fmt.Fprintf(r.o.warnings, "agentbox: warning: audit log %s failed (%v): %d events lost; the run continued unaudited (--audit-failure continue)\n", path, aerr, lost)
				} else {
					r.res.ExitCode = ExitFailure
					fmt.Fprintf(r.o.warnings, "agentbox: audit log %s failed (%v): no program started after that, %d events lost; exit %d\n", path, aerr, lost, ExitFailure)
				}
			}
		}
	}
	r.cancel()
	close(r.done)
	r.unregister()
	close(r.gone)
}

// summarize fills res's account of the run: what was refused and what
// changed. The changes come from the checkpoint store (the first
// checkpoint against the last) or the review layer; a failure to read
// them leaves them out, it does not fail the run.
func (r *Run) summarize(res *Result) {
	res.RunID, res.Workspace = r.plan.ID, r.plan.Workspace()
	res.MemoryLimit, res.PidsLimit = r.plan.Limits.MemoryBytes, r.plan.Limits.Pids
	if r.sink != nil {
		res.Refused, res.FirstRefused = r.sink.refusal()
	}
	var paths []string
	switch {
	case r.plan.Review != nil:
		res.Review = true
		if ch, err := review.LayerChanges(r.plan.Review.Root, r.plan.ID); err == nil {
			for _, c := range ch {
				paths = append(paths, c.Path)
			}
		}
	case r.rec != nil:
		res.Checkpointed = true
		if ch, err := r.rec.NetChanges(); err == nil {
			for _, c := range ch {
				paths = append(paths, c.Path)
			}
		}
	}
	res.ChangedCount = len(paths)
	res.Changed = shownChanges(paths)
}

// shownChanges orders a run's changed paths for its end line: the files
// first, then each repository's .git internals as one entry ("proj/.git:
// 13 files"), at most MaxChangedListed.
func shownChanges(paths []string) []string {
	var files, dirs []string
	inGit := map[string]int{}
	for _, p := range paths {
		if d := gitsum.GitDirOf(p); d != "" {
			if inGit[d] == 0 {
				dirs = append(dirs, d)
			}
			inGit[d]++
			continue
		}
		files = append(files, p)
	}
	for _, d := range dirs {
		files = append(files, fmt.Sprintf("%s: %d %s", d, inGit[d], map[bool]string{true: "file", false: "files"}[inGit[d] == 1]))
	}
	return files[:min(len(files), MaxChangedListed)]
}

// unregister removes the run's registry entry, last: `agentbox stop`
// (StopRun) returns once it is gone, and by then the run has ended
// entirely (Done is closed, every closer has run). Wait returns after it
// (gone), so a caller of Wait no longer finds the run listed.
func (r *Run) unregister() {
	if r.o.registryDir != "" {
		r.mu.Lock()
		r.entry.ID = ""
		r.mu.Unlock()
		_ = registry.Remove(r.o.registryDir, r.plan.ID)
	}
}

// cleanup closes what Start opened, in reverse order.
func (r *Run) cleanup() {
	for i := len(r.closer) - 1; i >= 0; i-- {
		r.closer[i]()
	}
	r.closer = nil
}

// Wait waits for the run to end — the command and every descendant gone,
// audit events written — and returns its result. An error means agentbox
// itself could not carry out the run (the CLI exits ExitFailure); the
// Result is never nil, with ExitCode ExitFailure then.
func (r *Run) Wait() (*Result, error) {
	if r.done == nil {
		return &Result{ExitCode: ExitFailure}, errors.New("agentbox: Wait called before Start")
	}
	<-r.gone
	return r.res, r.err
}

// Done is closed when the run has ended.
func (r *Run) Done() <-chan struct{} { return r.done }

// Signal sends sig to the command's process group (what a terminal's
// Ctrl-C would reach). It fails before Start and after the run ended.
func (r *Run) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("agentbox: unsupported signal %v", sig)
	}
	pid := r.Pid()
	if pid == 0 {
		return errors.New("agentbox: run not started")
	}
	select {
	case <-r.done:
		return errors.New("agentbox: run already ended")
	default:
	}
	return signalGroup(pid, s)
}

func signalGroup(pid int, s syscall.Signal) error {
	err := syscall.Kill(-pid, s)
	if err2 := syscall.Kill(pid, s); err != nil && err2 != nil {
		return fmt.Errorf("agentbox: signal %v to %d: %w", s, pid, err2)
	}
	return nil
}

// Stop ends the run: SIGTERM to the command's process group, then SIGKILL
// after grace (default: the run's kill grace, 5 s) if it has not exited;
// whatever it left behind is killed and reaped before Wait returns. Stop
// waits for the run to end and is a no-op on a run that has ended.
func (r *Run) Stop(grace time.Duration) error {
	pid := r.Pid()
	if pid == 0 {
		return errors.New("agentbox: run not started")
	}
	if grace <= 0 {
		grace = r.o.killGrace
	}
	r.stopped.Store(true)
	_ = signalGroup(pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
		return nil
	case <-t.C:
	}
	_ = signalGroup(pid, syscall.SIGKILL)
	<-r.done
	return nil
}

// MaybeRunHelper must be the first call in the main (or TestMain) of any
// program that starts runs: unless an agentbox-helper binary sits next to
// the program (or WithHelper names one), agentbox starts the program's own
// binary as the sandbox helper, which applies the kernel boundary and execs
// the command. It returns false in the normal case; in the helper it never
// returns. It also runs the checkpoint store's change journal
// (internal/checkpoint, journal.go) when started as one: a program whose
// main calls it is one a run may start as the journal.
func MaybeRunHelper() bool {
	if checkpoint.MaybeRunJournal() {
		return true
	}
	wired.Store(true)
	return sandbox.MaybeRunHelper()
}

// wired is true once MaybeRunHelper was called (and returned): the
// running executable may then be started as the checkpoint journal.
var wired atomic.Bool

// Init creates a workspace at dir — context/ target/ feedback/ agents/ and
// a commented project policy agentbox.yaml — leaving existing parts alone,
// and returns what it created. It refuses a dir that is a file, or an area
// that is a symlink or a file. A workspace made here, by its owner, is one
// whose agentbox.yaml a run may trust.
func Init(dir string) ([]string, error) { return boundary.Init(dir) }
