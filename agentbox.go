// Package agentbox runs a command — typically an AI coding agent — inside
// agentbox's sandbox: the kernel boundary of a workspace role (Landlock,
// seccomp, cgroups, rlimits, its own session) plus the exec policy, which
// decides every program the command starts (allow, ask an approver, deny)
// and records each decision in the audit log.
//
// It is the library behind `agentbox run`, with the lifecycle of os/exec:
//
//	r, err := agentbox.New("./ws", "developer", []string{"make", "test"},
//		agentbox.WithAudit("/var/log/agentbox/audit.jsonl"),
//		agentbox.WithApprover(myApprover))
//	if err != nil { ... }           // bad role, workspace, unsafe layout: nothing started
//	if err := r.Start(ctx); err != nil { ... }
//	res, err := r.Wait()            // res.ExitCode: the command's status (see Exit*)
//
// New loads the policy, resolves the workspace boundary and checks that
// nothing the run relies on (policy files, the audit log, the approval
// socket, the run registry) can be written from inside the sandbox; it
// starts nothing. Start launches the sandbox and returns once the command's
// process exists; Wait returns when it and every descendant are gone.
// Signal and Stop reach the command's process group. Every run is listed in
// a per-user registry while it runs (List, StopRun: `agentbox ps`/`stop`).
//
// Several runs may share one process and one audit log. See
// docs/architecture.md for how a run flows through the packages.
package agentbox

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/boundary"
	"github.com/agentbox/agentbox/egress"
	"github.com/agentbox/agentbox/execpolicy"
	"github.com/agentbox/agentbox/internal/registry"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
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
	argv []string
	o    options
	eng  *policy.Engine
	role policy.RoleInfo
	plan *boundary.Plan
	dir  string // the command's working directory (resolved; "" is W/target)
	// extraEnv are variables added to the sandbox's environment and its
	// pass-through list: what discovered toolchains need (PYENV_ROOT...)
	// and the caller's git identity (GIT_AUTHOR_NAME...).
	extraEnv []string
	id       string
	agent    *agentSetup // the agent profile applied, if any

	mu      sync.Mutex
	started bool
	pid     int
	pending atomic.Int32
	entry   registry.Entry

	registryWarned bool
	stopped        atomic.Bool
	commits        func() int
	pol            *execpolicy.Policy
	appr           *countingApprover
	proxy          *egress.Proxy
	emit           func(audit.Event) error
	sink           *auditSink

	cancel context.CancelFunc
	done   chan struct{}
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
}

// New prepares a run of argv in workspace under role. It loads the policy
// layers, resolves the boundary and checks the layout; nothing is started
// and nothing outside is changed. Errors name the option, file or path at
// fault; an unsafe layout is an *ExposedError.
func New(workspace, role string, argv []string, opts ...Option) (*Run, error) {
	r := &Run{argv: argv, o: defaultOptions()}
	for _, opt := range opts {
		if err := opt(&r.o); err != nil {
			return nil, err
		}
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, &OptionError{Option: "command", Err: errors.New("no command given")}
	}
	if err := boundary.ValidAgentID(r.o.agent); err != nil {
		return nil, &OptionError{Option: "agent", Value: r.o.agent, Err: err}
	}
	if r.o.execPolicy {
		// The exec supervisor's program-identity table (a scan of $PATH and
		// build IDs of the policed binaries) is built on the other CPU
		// while the policy loads, off the launch path.
		go sandbox.PrewarmIdentity()
	}
	eng, err := policy.Load(policy.LoadOptions{
		Role: role, Workspace: workspace,
		UserFile: r.o.userPolicy, NoUserFile: r.o.noUserPolicy, Files: r.o.policyFiles,
		// The permission files of other agent tools (Claude Code, Codex,
		// Codelia, Forge, Chorus) in HOME, the workspace and the project;
		// one the sandbox can write only restricts.
		Discover: !r.o.noDiscover, ProjectDir: discoverDir(workspace, r.o.dir), Home: sandbox.EnvValue(r.callerEnv(), "HOME"),
		Untrusted: UntrustedIn(workspace),
	})
	if err != nil {
		return nil, err
	}
	r.eng, r.role = eng, eng.Role()
	if nw := r.o.network; nw != nil {
		for _, l := range []struct {
			dec  policy.Decision
			pats []string
		}{{policy.Deny, nw.Deny}, {policy.Ask, nw.Ask}, {policy.Allow, nw.Allow}} {
			if err := eng.AddHostRules(l.dec, "WithNetwork", l.pats...); err != nil {
				return nil, &OptionError{Option: "network", Err: err}
			}
		}
		if len(nw.Allow)+len(nw.Ask)+len(nw.Deny) > 0 {
			nw.Proxy = true
		}
	}
	if len(r.o.allowHosts) > 0 {
		if err := eng.AllowHosts(r.o.allowHosts...); err != nil {
			return nil, &OptionError{Option: "allow-host", Err: err}
		}
		if r.o.network == nil && !r.role.Network.Proxy {
			r.o.network = &policy.Network{Proxy: true}
		}
		if r.o.network != nil && !r.o.network.Proxy {
			return nil, &OptionError{Option: "allow-host", Err: errors.New("hosts are decided in network mode proxy only; drop --network or give --network proxy")}
		}
	}
	if r.o.logf != nil {
		r.o.logf("policy loaded (%d files)", len(eng.Files()))
	}
	abs := func(ps []string) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			if a, err := filepath.Abs(p); err == nil && !strings.Contains(p, "..") {
				p = a
			}
			out = append(out, p)
		}
		return out
	}
	r.role.FS.RunRead = abs(r.o.grantRead)
	outer := r.callerEnv()
	tc := discoverToolchains(sandbox.EnvValue(outer, "PATH"), !r.o.toolchains)
	var tcDirs []string
	wsReal := r.workspaceReal(workspace)
	for _, d := range tc.dirs {
		if !strings.HasPrefix(d, wsReal+"/") {
			tcDirs = append(tcDirs, d)
		}
	}
	r.extraEnv = tc.env
	if !r.role.Git.NoHostIdentity {
		r.extraEnv = append(r.extraEnv, hostGitIdentity(outer)...)
	}
	r.role.Env = slices.Clone(r.role.Env)
	for _, kv := range r.extraEnv {
		name, _, _ := strings.Cut(kv, "=")
		r.role.Env = append(r.role.Env, name)
	}
	r.role.FS.RunExec = abs(append(slices.Clone(r.o.grantExec), tcDirs...))
	if err := eng.AllowPrograms("toolchains", tcDirs...); err != nil {
		return nil, &OptionError{Option: "toolchains", Err: err}
	}
	if err := eng.AllowPrograms("--exec", abs(r.o.grantExec)...); err != nil {
		return nil, &OptionError{Option: "exec", Err: err}
	}
	r.role.FS.RunWrite = abs(r.o.grantWrite)
	if err := eng.AllowWrites("--rw", r.role.FS.RunWrite...); err != nil {
		return nil, &OptionError{Option: "rw", Err: err}
	}
	if err := r.applyAgentProfile(outer, wsReal); err != nil {
		return nil, err
	}
	plan, err := boundary.Resolve(workspace, r.o.agent, r.role.FS)
	if err != nil {
		return nil, err
	}
	r.plan = plan
	if err := r.allowAgentSources(); err != nil {
		return nil, err
	}
	for _, kv := range r.agentEnv() {
		r.extraEnv = append(r.extraEnv, kv)
		name, _, _ := strings.Cut(kv, "=")
		r.role.Env = append(r.role.Env, name)
	}
	if err := r.checkLayout(); err != nil {
		return nil, err
	}
	if r.dir, err = r.workDir(); err != nil {
		return nil, err
	}
	r.id = r.o.runID
	if r.id == "" {
		r.id = sandbox.NewRunID()
	}
	return r, nil
}

// UntrustedIn returns the test for policy files the sandbox could have
// written in workspace: anything inside its target/, feedback/ or agents/
// (symlinks resolved). Such a discovered file only restricts (its deny and
// ask rules count, its allows do not).
func UntrustedIn(workspace string) func(string) bool {
	ws := workspace
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	return func(p string) bool {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		for _, a := range []string{"target", "feedback", "agents"} {
			if strings.HasPrefix(p, filepath.Join(ws, a)+"/") {
				return true
			}
		}
		return false
	}
}

// discoverDir is the project directory discovery looks in: the run's
// directory when it is inside the workspace.
func discoverDir(workspace, dir string) string {
	ws, err := filepath.Abs(workspace)
	if err != nil || dir == "" {
		return ""
	}
	if d, err := filepath.Abs(dir); err == nil && strings.HasPrefix(d, ws+"/") {
		return d
	}
	return ""
}

// checkLayout refuses a run in which the sandbox could edit what judges it:
// the policy files, the audit log (or read it), the approval socket and the
// run registry must all lie outside the areas the sandbox can write.
func (r *Run) checkLayout() error {
	for _, f := range r.eng.Files() {
		if w, area := r.plan.Writable(f); w {
			return &ExposedError{What: "policy file", Path: f, Area: area, Access: "write"}
		}
	}
	if p := r.o.auditPath; p != "" && p != "-" && r.o.auditWriter == nil {
		if w, area := r.plan.Writable(p); w {
			return &ExposedError{What: "audit log", Path: p, Area: area, Access: "write"}
		}
		if rd, area := r.plan.Readable(p); rd {
			return &ExposedError{What: "audit log", Path: p, Area: area, Access: "read"}
		}
	}
	if kp := audit.KeyPath(r.o.auditPath, r.o.auditKey); kp != "" && r.o.auditWriter == nil && r.o.auditPath != "" {
		if w, area := r.plan.Writable(kp); w {
			return &ExposedError{What: "audit key", Path: kp, Area: area, Access: "write"}
		}
		if rd, area := r.plan.Readable(kp); rd {
			return &ExposedError{What: "audit key", Path: kp, Area: area, Access: "read"}
		}
	}
	if w := r.o.auditWriter; w != nil && w.Path() != "" && w.Path() != "-" {
		if ok, area := r.plan.Writable(w.Path()); ok {
			return &ExposedError{What: "audit log", Path: w.Path(), Area: area, Access: "write"}
		}
	}
	if sock, ok := strings.CutPrefix(r.o.approve, "socket:"); ok {
		if w, area := r.plan.Writable(sock); w {
			return &ExposedError{What: "approval socket", Path: sock, Area: area, Access: "write"}
		}
	}
	if r.o.registryDir != "" {
		if w, area := r.plan.Writable(r.o.registryDir); w {
			return &ExposedError{What: "run registry", Path: r.o.registryDir, Area: area, Access: "write"}
		}
	}
	return nil
}

// ID is the run's id, as in audit events, cgroup names and `agentbox ps`.
func (r *Run) ID() string { return r.id }

// Role is the effective, merged role the run uses.
func (r *Run) Role() policy.RoleInfo { return r.role }

// SessionRules lists the "always" answers given during the run, which
// RemoveSessionRule takes back (Forge's FR-5.4: session rules are added and
// removed during the session).
func (r *Run) SessionRules() []policy.RuleInfo { return r.eng.SessionRules() }

// RemoveSessionRule removes an "always" answer (by the id SessionRules
// gives) for the rest of the run: the action is decided by the policy
// again.
func (r *Run) RemoveSessionRule(id string) error { return r.eng.RemoveSessionRule(id) }

// Engine is the run's policy engine (for explaining decisions).
func (r *Run) Engine() *policy.Engine { return r.eng }

// Pid is the command's pid once Start has returned (0 before). The command
// leads its own session and process group.
func (r *Run) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
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
	r.done = make(chan struct{})
	fail := func(err error) error {
		r.cleanup()
		r.cancel()
		r.err = err
		close(r.done)
		return err
	}

	if err := r.writeGuide(); err != nil && r.o.warnings != nil {
		fmt.Fprintf(r.o.warnings, "agentbox: warning: the guide for the agent was not written: %v\n", err)
	}
	if err := r.prepareAgentHome(); err != nil && r.o.warnings != nil {
		fmt.Fprintf(r.o.warnings, "agentbox: warning: agent profile %s: %v\n", r.agent.profile.Name, err)
	}
	emit, err := r.openAudit()
	if err != nil {
		return fail(err)
	}
	r.emit = emit
	cfg := sandbox.Config{
		Argv: r.argv, Role: r.role, Workspace: r.plan.Workspace, AgentID: r.o.agent, Plan: r.plan, Dir: r.dir,
		Network: r.o.network, Limits: r.o.limits, BestEffort: r.o.bestEffort, NoCgroupLimits: r.o.noLimits, RunID: r.id,
		Stdin: r.o.stdin, Stdout: r.o.stdout, Stderr: r.o.stderr, Env: r.sandboxEnv(), Exe: r.o.exe,
		KillGrace: r.o.killGrace, ForwardSignals: r.o.forwardSignals, Log: r.o.log, T0: r.o.t0,
		Warnings: r.o.warnings, Audit: func(e audit.Event) { _ = emit(e) },
		LaunchDetail: r.launchDetail(),
	}
	var pauser approval.Pauser
	var relayDone chan struct{}
	if r.o.ptyIn != nil {
		pty, err := sandbox.OpenPTY()
		if err != nil {
			return fail(err)
		}
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
		pauser = pty
	}
	if err := r.buildApprover(pauser); err != nil {
		return fail(err)
	}
	if r.o.execPolicy {
		sup, err := r.execSupervisor(emit)
		if err != nil {
			return fail(err)
		}
		cfg.Supervise = sup
		cfg.TraceAll = r.o.traceAll
	}
	if cfg.Network != nil && cfg.Network.Proxy || cfg.Network == nil && r.role.Network.Proxy {
		cfg.OnProxyListener = r.serveEgress(emit)
		if r.agent != nil && len(r.agent.forward) > 0 {
			cfg.ForwardPorts = r.agent.forward
			cfg.OnForwardListener = func(port uint16, l net.Listener) {
				r.mu.Lock()
				p := r.proxy
				r.mu.Unlock()
				go p.Forward(l, loopbackHost, int(port))
			}
		}
	}

	// The command's process exists but is held until released: record it
	// (pid, registry entry) now, so nothing about it can end first.
	startedCh := make(chan int, 1)
	userStarted := cfg.Started
	cfg.Started = func(pid int) {
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
	r.sink = &auditSink{w: w, agent: r.o.agent, role: r.role.Name, run: r.id, events: r.o.events, warn: r.o.warnings}
	r.sink.warnFirst = r.o.auditFailure == AuditFailContinue
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
		a, err := approval.New(r.o.approve, approval.Options{Pauser: pauser})
		if err != nil {
			return &OptionError{Option: "approve", Value: r.o.approve, Err: err}
		}
		if c, ok := a.(io.Closer); ok {
			r.closer = append(r.closer, func() { c.Close() })
		}
		appr = a
	}
	if appr != nil {
		r.appr = &countingApprover{a: appr, r: r}
	}
	return nil
}

// execSupervisor builds the exec policy of the run: every program start is
// decided against the engine; asks go to the run's approver.
func (r *Run) execSupervisor(emit func(audit.Event) error) (sandbox.SuperviseFunc, error) {
	if err := sandbox.PtraceAvailable(); err != nil {
		return nil, fmt.Errorf("exec policy: %w; use --no-exec-policy to run with the kernel boundary only", err)
	}
	var appr approval.Approver
	if r.appr != nil {
		appr = r.appr
	}
	pol := execpolicy.New(execpolicy.Config{
		Engine: r.eng, Approver: appr, Emit: emit, Role: r.role, AuditFailOpen: r.o.auditFailure == AuditFailContinue,
		Workspace: r.plan.Workspace, AgentID: r.o.agent, RunID: r.id,
		ApprovalTimeout: r.role.Limits.ApprovalWait,
	})
	r.closer = append(r.closer, pol.Close)
	r.commits = pol.Commits
	r.pol = pol
	return pol.Supervisor(), nil
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
		ID: r.id, Agent: r.o.agent, Role: r.role.Name, Workspace: r.plan.Workspace, Argv: r.argv,
		Started: time.Now().UTC(), Launcher: os.Getpid(), LauncherStart: self, Pid: pid, PidStart: ps,
		Audit: r.auditPathForEntry(),
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
	if r.pol != nil && r.emit != nil {
		// Repositories git created during the run are the agent's own:
		// report the ones whose hooks or config would run programs.

		for _, line := range execpolicy.CheckNewRepos(r.pol.NewRepos()) {
			r.emit(audit.Event{Event: audit.EventViolation, Reason: line})
			fmt.Fprintf(r.o.warnings, "agentbox: warning: %s\n", line)
		}
	}
	r.cleanup()
	if err != nil {
		r.err = err
	} else {
		r.res = &Result{ExitCode: res.ExitCode, Status: res.Status, TimedOut: res.TimedOut,
			OOMKills: res.OOMKills, PidsMaxHits: res.PidsMaxHits, Stopped: r.stopped.Load()}
		if r.commits != nil {
			r.res.Commits = r.commits()
		}
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
}

// cleanup closes what Start opened, in reverse order, and removes the
// registry entry.
func (r *Run) cleanup() {
	if r.o.registryDir != "" {
		r.mu.Lock()
		r.entry.ID = ""
		r.mu.Unlock()
		_ = registry.Remove(r.o.registryDir, r.id)
	}
	for i := len(r.closer) - 1; i >= 0; i-- {
		r.closer[i]()
	}
	r.closer = nil
}

// Wait waits for the run to end — the command and every descendant gone,
// audit events written — and returns its result. An error means agentbox
// itself could not carry out the run (the CLI exits ExitFailure).
func (r *Run) Wait() (*Result, error) {
	if r.done == nil {
		return nil, errors.New("agentbox: Wait called before Start")
	}
	<-r.done
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
// returns.
func MaybeRunHelper() bool { return sandbox.MaybeRunHelper() }

// launchDetail is what the launch event records about agentbox and the
// policy in force: its version, a digest of the effective role (built-in
// rules and every layer merged) and the policy files it came from.
func (r *Run) launchDetail() map[string]string {
	sum := r.eng.Effective().Digest()
	return map[string]string{
		"agentbox_version": Version,
		"policy_digest":    "sha256:" + hex.EncodeToString(sum[:]),
		"policy_sources":   strings.Join(append([]string{"builtin"}, r.eng.Files()...), " "),
	}
}

// workDir resolves WithDir/WithCallerDir: the directory, symlinks
// resolved, when it lies inside the workspace and the sandbox can read it.
func (r *Run) workDir() (string, error) {
	if r.o.dir == "" {
		return "", nil
	}
	bad := func(why string) (string, error) {
		if !r.o.dirStrict {
			return "", nil // the caller's directory is outside: W/target
		}
		return "", &OptionError{Option: "cwd", Value: r.o.dir, Err: errors.New(why)}
	}
	abs, err := filepath.Abs(r.o.dir)
	if err != nil {
		return bad(err.Error())
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return bad(err.Error())
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return bad("not a directory")
	}
	if real != r.plan.Workspace && !strings.HasPrefix(real, r.plan.Workspace+"/") {
		return bad("outside the workspace " + r.plan.Workspace)
	}
	if ok, _ := r.plan.Readable(real); !ok {
		return bad("not inside an area the sandbox can read (context/, target/, feedback/, the agent's own area)")
	}
	return real, nil
}

// callerEnv is the environment the sandbox's is built from.
func (r *Run) callerEnv() []string {
	if r.o.env == nil {
		return os.Environ()
	}
	return r.o.env
}

// workspaceReal is the workspace with symlinks resolved (as given if it
// cannot be).
func (r *Run) workspaceReal(ws string) string {
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		return real
	}
	return ws
}

// sandboxEnv is the environment the sandbox's is scrubbed from, plus
// extraEnv (whose names New adds to the role's pass-through list).
func (r *Run) sandboxEnv() []string {
	if len(r.extraEnv) == 0 {
		return r.o.env
	}
	return append(slices.Clone(r.callerEnv()), r.extraEnv...)
}

// LookPath returns the PATH search the exec supervisor uses to locate a
// bare command name of a shell line (policy.ExecContext.LookPath), for
// callers deciding lines the same way (agentbox check --shell).
func LookPath(pathEnv, cwd string) func(name string) string {
	return execpolicy.LookPath(pathEnv, cwd)
}
