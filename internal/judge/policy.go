//go:build linux

package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/redact"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
)

// Config configures New.
type Config struct {
	// Engine decides every program start. Required.
	Engine *policy.Engine
	// Approver answers "ask" decisions. nil means nobody can answer: ask
	// becomes deny, audited as ask_unavailable.
	Approver approval.Approver
	// Audit receives one event per decision (the library's sink adds
	// agent, role and run). An error means the event could not be written.
	// May be nil: nothing is recorded.
	Audit audit.Sink
	// AuditFailOpen lets programs run after an event could not be written
	// (the run's --audit-failure continue). By default the exec policy
	// fails closed: the program whose event failed, and every later one,
	// is denied, so no program starts unaudited.
	AuditFailOpen bool
	// Role supplies git safety (max commits, commit message required);
	// the zero value means Engine.Role().
	Role policy.RoleInfo
	// Workspace is the run's workspace root; config files included from
	// outside it are not read (see gitcfg.go).
	Workspace string
	// ProjectPolicy is where "remember" answers are persisted
	// (default policy.ProjectFile(Workspace)).
	ProjectPolicy string
	// AgentID and RunID go into audit events and approval requests.
	AgentID, RunID string
	// ApprovalTimeout bounds each approval (default 120 s, then deny).
	ApprovalTimeout time.Duration
	// Checkpoints, when set, records the writable areas before each
	// command; its id goes into the command's audit event.
	Checkpoints Checkpointer
	// AgentFirst says the run's first program is an agent (an agent
	// profile applies): each program it starts is a command of its own.
	AgentFirst bool
	// Approvers says who may grant what (nil: the policy's, Engine's);
	// Owner is the workspace owner's uid (the grants' default holder) and
	// Invoker the uid of the process running the run (an approval.Func's
	// answers, and a role change the policy allows outright, count as
	// its).
	Approvers      *policy.Approvers
	Owner, Invoker int
	// Escalate builds the engine of another role for the run (same
	// policy files, same grants): agentbox escalate ROLE (escalate.go).
	// nil: role changes are refused.
	Escalate func(role string) (*policy.Engine, error)
	// Command and Dir are the run's command and the directory it starts
	// in: its first exec is decided ahead, result dropped (Prewarm).
	Command []string
	Dir     string
	// Self is agentbox's own executable: a start of it with the argument
	// escalate is a role change request, not a program to decide.
	Self string
	// Pushes, when set, records each allowed `git push` as a push grant
	// for its process tree (pushgrant.go): the egress proxy gives it a
	// token minted for that push.
	Pushes *egress.PushTokens
	// Boundary is the run's resolved boundary: a question about a program
	// that would write outside every writable area says approving cannot
	// make that work (net.go, wontWork). nil: not checked.
	Boundary *boundary.Plan
}

// Judge decides program starts for Supervise: identity, argv rewrite,
// git configuration and environment, the policy engine, approvals, git
// safety and audit. It is safe for concurrent use.
type Judge struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	commits    int               // git commits allowed and not known to have failed
	gitParents map[int]gitParent // allowed git porcelain running git children (gitinternal.go)
	gitKids    map[int]uint64    // children of such porcelain that have exec'd: pid -> start time
	newRepos   []string          // repositories git init/clone created (newrepo.go)
	lines      []lineApproval    // approved shell lines and the commands they showed (ask.go)
	units      map[int]unit      // commands checkpointed: pid -> unit (checkpoint.go)
	unitPidfds int               // pidfds units holds
	pidfdsFull bool              // at maxUnitPidfds after a prune; cleared when one is closed
	sawCommand bool

	// auditErr is the first audit write failure (nil while the log works).
	auditErr atomic.Pointer[error]

	// eng and role are the run's engine and role: replaced when a role
	// change is granted (escalate.go).
	eng  atomic.Pointer[policy.Engine]
	role atomic.Pointer[policy.RoleInfo]
	self selfID
}

// engine is the run's current engine.
func (p *Judge) engine() *policy.Engine { return p.eng.Load() }

// roleInfo is the run's current role.
func (p *Judge) roleInfo() policy.RoleInfo {
	if r := p.role.Load(); r != nil {
		return *r
	}
	return policy.RoleInfo{}
}

// New returns the exec policy for one run.
func New(cfg Config) *Judge {
	if cfg.Role.Name == "" && cfg.Engine != nil {
		cfg.Role = cfg.Engine.Role()
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = approval.DefaultTimeout
	}
	if cfg.ProjectPolicy == "" && cfg.Workspace != "" {
		cfg.ProjectPolicy = policy.ProjectFile(cfg.Workspace)
	}
	if cfg.Approvers == nil && cfg.Engine != nil {
		cfg.Approvers = cfg.Engine.Approvers()
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &Judge{cfg: cfg, ctx: ctx, cancel: cancel, self: statSelf(cfg.Self)}
	j.eng.Store(cfg.Engine)
	role := cfg.Role
	j.role.Store(&role)
	return j
}

// Close cancels approvals still waiting (their programs are denied).
// Events are written as decisions are made (synchronously: a program
// starts only once its event is in the log), so nothing is left to flush;
// the pidfds of the processes it recorded as commands are closed.
func (p *Judge) Close() {
	p.cancel()
	p.closeUnits()
}

// AuditError returns the first error writing an audit event, or nil.
func (p *Judge) AuditError() error {
	if e := p.auditErr.Load(); e != nil {
		return *e
	}
	return nil
}

// writeEvent writes one event to the configured sink.
func (p *Judge) writeEvent(e audit.Event) error {
	return p.cfg.Audit.Emit(e)
}

// Supervisor returns the sandbox.SuperviseFunc for sandbox.Config.Supervise:
// Supervise with this policy (DecideFast on the tracer thread, Decide for
// approvals).
func (p *Judge) Supervisor() sandbox.SuperviseFunc {
	return func(ctx context.Context, h sandbox.Helper) (syscall.WaitStatus, error) {
		return supervise.Run(ctx, supervise.Options{Start: h.Start, Release: h.Release, ExecListener: h.ExecListener, HelperExe: h.Exe, Logf: h.Logf, Decide: p.Decide, DecideFast: p.DecideFast,
			Prewarm: func() { p.Prewarm(p.cfg.Command, p.cfg.Dir) }})
	}
}

// Prewarm decides argv, started in dir, the way the run's first exec of
// it will be decided by the policy engine, and drops the result: the
// rules' patterns it meets are compiled (they compile at first use) and
// the command tables it needs are built here, off the command's path,
// where the first exec paid for them (~0.3 ms of a launch). Only the
// engine is asked, which changes no state: nothing is audited, asked or
// remembered, and no checkpoint is taken (TestPrewarmDecidesNothing).
func (p *Judge) Prewarm(argv []string, dir string) {
	if len(argv) == 0 || argv[0] == "" || p.engine() == nil {
		return
	}
	defer func() { _ = recover() }() // the real decision meets it again and denies
	_ = p.engine().Decide(policy.Query{Argv: programArgv(identity.ExeBase(argv[0]), argv), ExecContext: policy.ExecContext{Cwd: dir}})
}

// programArgv is argv as the policy decides it when program prog runs
// it: named by prog (a multicall binary's applet by its argv[0]).
func programArgv(prog string, argv []string) []string {
	return identity.ProgramArgv(identity.Identity{Name: prog, Multicall: identity.IsMulticall(prog)}, argv)
}

// Commits returns the number of git commits counted against the role's
// max_commits so far.
func (p *Judge) Commits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commits
}

// decision is the outcome of deciding one exec before approvals.
type decision struct {
	res      policy.Result
	argv     []string // argv as decided (identity name first)
	git      bool
	gitSub   string // the git subcommand decided ("" if none)
	commit   bool   // a direct `git commit` that counts against max_commits
	extraWhy string
	// env are the environment variables that change what the program runs
	// (relevantEnv); envShown is them redacted entry by entry (a value
	// may hold spaces) and joined, for the audit event and the note;
	// envNote says they were present and allowed.
	env      []string
	envShown string
	envNote  string
	// checkpoint is the checkpoint the program runs after; newCheckpoint
	// says it was taken for this program (a command), not shared with
	// the command it runs in.
	checkpoint    string
	newCheckpoint bool
	// script is set when the program is a #! script run by its
	// interpreter: argv is the script's own.
	script scriptExec
	// askAudit and askApprover are an ask already put and answered
	// (a role change request): its audit decision and who answered.
	askAudit, askApprover string
}

// Decide decides one program start (see Supervise). It never panics on
// hostile input; any internal failure denies.
func (p *Judge) Decide(ev *supervise.ExecEvent) supervise.Verdict {
	d := p.decide(ev)
	p.unitOf(ev, &d)
	return p.finish(ev, d)
}

// unitOf finds the command the program belongs to (checkpoint.go).
func (p *Judge) unitOf(ev *supervise.ExecEvent, d *decision) {
	if p.cfg.Checkpoints != nil && d.res.Decision != policy.Deny && ev.Err == nil {
		d.checkpoint, d.newCheckpoint = p.commandOf(ev)
	}
}

// DecideFast decides ev unless that needs an approver (ok=false). It never
// blocks: for Supervise's tracer thread.
func (p *Judge) DecideFast(ev *supervise.ExecEvent) (supervise.Verdict, bool) {
	d := p.decide(ev)
	p.unitOf(ev, &d)
	if d.res.Decision == policy.Ask || (d.res.Decision == policy.Allow && p.needsWalk(&d)) {
		return supervise.Verdict{}, false
	}
	return p.finish(ev, d), true
}

// finish applies approvals, git safety and audit to a decision.
func (p *Judge) finish(ev *supervise.ExecEvent, d decision) supervise.Verdict {
	dec := d.res.Decision
	approver := ""
	auditDecision := ""
	why := d.res.Reason
	if d.res.Floor != "" {
		why = strings.TrimSpace(why + "; " + d.res.Floor)
	}
	if d.extraWhy != "" {
		why = strings.TrimSpace(why + "; " + d.extraWhy)
	}
	switch dec {
	case policy.Allow:
		auditDecision = audit.DecisionAllow
	case policy.Deny:
		auditDecision = audit.DecisionDeny
		if d.askAudit != "" {
			auditDecision, approver = d.askAudit, d.askApprover
		}
	case policy.Ask:
		if w := p.wontWork(d.argv, ev.Cwd); w != "" {
			why += "; " + w
		}
		dec, auditDecision, approver, why = p.askExec(ev, d, why)
		if dec == policy.Allow {
			p.noteLine(ev, d.res, approver)
		}
	}
	var v supervise.Verdict
	if dec == policy.Allow && d.git {
		p.noteNewRepo(d.argv, ev.Cwd)
		p.noteGitParent(ev.Pid, d.gitSub)
	}

	if dec == policy.Allow && d.commit {
		if msg := p.reserveCommit(); msg != "" {
			dec, auditDecision, why = policy.Deny, audit.DecisionDeny, msg
			d.res.Rule = nil
		} else {
			v.OnExit = p.commitExited
		}
	}
	if failed := p.AuditError(); failed != nil && !p.cfg.AuditFailOpen && dec == policy.Allow {
		// The log is broken: nothing more starts unaudited.
		dec, auditDecision, why = policy.Deny, audit.DecisionDeny, auditFailedWhy(failed)
		d.res.Rule, d.extraWhy, d.res.Floor = nil, "", ""
		v.OnExit = nil
	}
	if dec == policy.Allow && p.cfg.Checkpoints != nil {
		id, err := p.checkpointFor(ev, identity.ExeBase(d.argv[0]), d.checkpoint, d.newCheckpoint)
		if err != nil {
			// Like an audit failure: never run unprotected silently.
			if v.OnExit != nil {
				p.commitExited(syscall.WaitStatus(1 << 8))
				v.OnExit = nil
			}
			dec, auditDecision, why = policy.Deny, audit.DecisionDeny, "no checkpoint could be taken ("+err.Error()+"): no program runs without one (--checkpoints off runs without undo)"
			// The parts' rules allowed it: the line says why it was denied.
			d.res.Rule, d.extraWhy, d.res.Floor, d.res.Segments = nil, "", "", nil
		} else {
			d.checkpoint = id
		}
	}
	seq, err := p.audit(ev, d, auditDecision, why, approver)
	if err == nil && d.newCheckpoint && dec == policy.Allow {
		p.linkCheckpoint(d.checkpoint, seq, ev)
	}
	if err != nil {
		p.auditErr.CompareAndSwap(nil, &err)
		if !p.cfg.AuditFailOpen && dec == policy.Allow {
			if v.OnExit != nil {
				p.commitExited(syscall.WaitStatus(1 << 8)) // the commit will not happen
			}
			dec, auditDecision, why = policy.Deny, audit.DecisionDeny, auditFailedWhy(err)
			// The parts' rules allowed it: the line says why it was denied.
			d.res.Rule, d.extraWhy, d.res.Floor, d.res.Segments = nil, "", "", nil
		}
	}
	if dec == policy.Allow {
		if d.git && d.gitSub == "push" {
			p.grantPush(ev, d.argv, approver)
		}
		v.Allow = true
		return v
	}
	return supervise.Verdict{Message: denyLine(d, auditDecision, why)}
}

// auditFailedWhy is the deny reason once the audit log cannot be written.
func auditFailedWhy(err error) string {
	cause := err.Error()
	if i := strings.LastIndex(cause, ": "); i >= 0 {
		cause = cause[i+2:] // "no space left on device"
	}
	return "audit log unwritable (" + cause + "): no program starts unaudited"
}

// askOutcome names why an ask ended in a deny, for the deny line.
var askOutcome = map[string]string{
	audit.DecisionAskUnavailable: "needs approval, no approver",
	audit.DecisionAskTimeout:     "approval timed out",
	audit.DecisionAskDenied:      "approval denied",
}

// denyLine is the one line the denied process gets on its stderr, written
// for the agent that reads it: the part of the command that was decided
// (not the shell wrapper around it), the rule with its description, and
// what to do instead when the rule says so:
// "agentbox: denied: git push origin main (rule developer/git.push: agents
// never push; the workspace owner does) Instead: commit your work...".
func denyLine(d decision, auditDecision, why string) string {
	whole := command.Join(d.argv)
	part := d.res.DecidingPart()
	text := policy.ActionText(part.Action)
	if text == "" || d.extraWhy != "" {
		text, part = whole, d.res
	}
	var reason string
	if o := askOutcome[auditDecision]; o != "" {
		first := part.Reason
		switch {
		case d.extraWhy != "":
			first = d.extraWhy
		case part.Floor != "":
			first = part.Floor
		case part.Rule.Cited() != "":
			first = part.Rule.Cited()
		}
		reason = o + ": " + first
	} else if rw := part.Rule.Cited(); rw != "" && part.Floor == "" && d.extraWhy == "" {
		reason = rw
	} else {
		reason = why
		if part.Floor != "" && d.extraWhy == "" {
			reason = part.Floor
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox: denied: %s (%s)", capfield.Line(text, 300), capfield.Line(reason, 300))
	if text != whole {
		fmt.Fprintf(&b, " in: %s", capfield.Line(whole, 160))
	}
	b.WriteString(capfield.Line(part.Rule.InsteadText(), 320))
	return b.String()
}

// decide computes the policy decision for ev without side effects.
func (p *Judge) decide(ev *supervise.ExecEvent) (d decision) {
	if role, ok := p.escalation(ev); ok {
		return p.escalationDecision(ev, role)
	}
	defer func() {
		if r := recover(); r != nil {
			d.res = policy.Result{Decision: policy.Deny, Reason: fmt.Sprintf("internal error deciding %s: %v", ev.Program, r)}
		}
	}()
	if ev.Err != nil {
		d.argv = []string{"?"}
		d.res = policy.Result{Decision: policy.Deny, Action: "tool:exec:?",
			Reason: fmt.Sprintf("the new program of pid %d could not be inspected (%v): a program agentbox cannot see does not run", ev.Pid, ev.Err)}
		return d
	}
	firstOfChild := p.firstExecOfChild(ev.Pid, ev.Ppid)
	prog := ev.Program
	if prog == "" {
		prog = identity.ExeBase(ev.Exe)
	}
	var sc scriptExec
	if ev.ScriptArg > 0 && ev.ScriptArg < len(ev.Argv) {
		// A #! script: the kernel runs its interpreter with the script's
		// path in the caller's argv[0]. What runs is the script, decided
		// as `check` decides it (named by the script, its own argv); the
		// interpreter words are how it runs (policy.ExecContext.Interp).
		sc = newScriptExec(ev)
		prog = identity.ExeBase(sc.path)
	}
	d.argv = programArgv(prog, ev.Argv)
	if sc.path != "" {
		d.argv, d.script = programArgv(prog, ev.Argv[ev.ScriptArg:]), sc
	}
	if p.engine() == nil {
		d.res = policy.Result{Decision: policy.Deny, Reason: "no policy engine"}
		return d
	}
	if prog == identity.LoaderName && !loaderQuery(ev.Argv) {
		d.res = policy.Result{Decision: policy.Deny, Action: "tool:exec:" + command.Join(d.argv),
			Reason: "running the dynamic loader directly is refused: the program it loads is not exec'd, so it cannot be identified race-free"}
		return d
	}
	if d.argv[0] != "git" {
		// The engine may decide a program by where it lives (`program:`
		// rules: what the developer built in target/, gcc's cc1 in
		// /usr/lib/gcc). A policed program (a copy of git or curl, a shell)
		// is decided by what it is, never by where it was put, so its file
		// is not given; for a shell running a script the engine takes the
		// script's path from argv.
		exe := ev.Exe
		if sc.path != "" {
			exe = sc.path
		}
		if identity.IsPoliced(prog) || exe == "" || !filepath.IsAbs(exe) {
			exe = ""
		}
		d.res = p.engine().Decide(policy.Query{Argv: d.argv, ExecContext: policy.ExecContext{Cwd: ev.Cwd, Exe: exe,
			LookPath: LookPath(sandbox.EnvValue(ev.Env, "PATH"), ev.Cwd), Exists: Overwritable,
			Interp: sc.interp, Aliases: sc.aliases}})

	} else {
		d.git = true
		envArgs, envRuns := command.GitEnvArgs(ev.Env)
		argv := append([]string{"git"}, envArgs...)
		argv = append(argv, d.argv[1:]...)
		d.res, d.commit = p.decideGit(argv, ev, 0)
		if g, err := command.ParseGit(argv); err == nil {
			d.gitSub = g.Sub
			if res, ok := p.gitChildOf(ev.Ppid, g.Sub, d.res); ok && firstOfChild && len(envRuns) == 0 {
				d.res = res
			}
		}
		if len(envRuns) > 0 {
			if d.res.Decision == policy.Allow {
				d.res.Decision = policy.Ask
			}
			d.extraWhy = "the environment makes git run programs: " + strings.Join(envRuns, ", ")
		}
	}
	// Loader and runtime variables in the new image's environment: what
	// the decision above trusted (that git is git) holds only if nothing
	// else is loaded into it. Same rule as for shell lines (policy/envrule.go).
	d.env = relevantEnv(ev.Env)
	if len(d.env) > 0 {
		shown, _ := redact.Argv(d.env)
		d.envShown = strings.Join(shown, " ")
	}
	env := p.engine().DecideEnv(d.argv[0], ev.Env, ev.Cwd)
	if sc.path != "" {
		// The interpreter reads the runtime variables (NODE_OPTIONS for a
		// node script): decided for it too.
		if ienv := p.engine().DecideEnv(prog0(ev), ev.Env, ev.Cwd); ienv.Decision > env.Decision {
			env = ienv
		}
	}
	if env.Decision > policy.Allow && env.Decision >= d.res.Decision {
		if env.Decision > d.res.Decision {
			d.res.Decision, d.res.Rule, d.res.Floor = env.Decision, nil, env.Floor
		}
		d.extraWhy = strings.TrimPrefix(d.extraWhy+"; "+env.Reason, "; ")
	} else if env.Decision == policy.Allow && len(d.env) > 0 && d.res.Decision == policy.Allow {
		d.envNote = "allowed with " + d.envShown
	}
	if d.res.Decision == policy.Ask && d.extraWhy == "" {
		if why, ok := p.coveredByLine(ev, d.res); ok {
			d.res.Decision, d.res.Rule, d.res.Reason = policy.Allow, nil, why
		}
	}
	return d
}

// relevantEnv lists the variables of env that change what a program runs
// or loads (loader, runtime and git variables), for the audit event and
// the approval request: what the decision was made on. Git's variables
// that only label or display (inertGitVar) are left out: an approver is
// shown what could change what runs, not who the commit names.
func relevantEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if command.IsInjectionVar(name) || strings.HasPrefix(name, "GIT_") && !inertGitVar(name) {
			out = append(out, capfield.Line(kv, 200))
		}
	}
	return out
}

// inertGitVar reports whether a GIT_ variable makes git run, load, read
// or write nothing else: the commit's names and dates, progress and
// prompt settings, and GIT_SSL_CAINFO (trusted roots: the run's CA
// bundle when the proxy reads HTTPS). Every other GIT_ variable is
// shown (GIT_DIR, GIT_SSH_COMMAND, GIT_EDITOR, GIT_TRACE, which may name
// a file to write...).
func inertGitVar(name string) bool {
	switch name {
	case "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
		"GIT_SSL_CAINFO", "GIT_TERMINAL_PROMPT", "GIT_MERGE_VERBOSITY",
		"GIT_PROGRESS_DELAY", "GIT_FLUSH", "GIT_HTTP_USER_AGENT", "GIT_ADVICE":
		return true
	}
	return strings.HasPrefix(name, "GIT_PS1_")
}

// loaderQuery reports whether an ld.so invocation only inspects
// (ldd uses --list / --verify), without running a program.
func loaderQuery(argv []string) bool {
	for _, a := range argv[1:] {
		switch a {
		case "--list", "--verify", "--help", "--version", "--list-tunables", "--list-diagnostics":
			return true
		}
		if !strings.HasPrefix(a, "--") {
			return false
		}
	}
	return false
}

const maxAliasDepth = 10

// decideGit decides a git argv (argv[0] == "git"), resolving aliases of
// unknown subcommands from -c, the environment and the repository's config.
// commit reports a direct `git commit` (counted for max_commits).
func (p *Judge) decideGit(argv []string, ev *supervise.ExecEvent, depth int) (policy.Result, bool) {
	eng := p.engine()
	res := eng.Decide(policy.Query{Argv: argv, ExecContext: policy.ExecContext{Cwd: ev.Cwd}})
	g, err := command.ParseGit(argv)
	if err != nil || g.Sub == "" {
		return res, false
	}
	if len(g.Globals) > 0 {
		// Rules are written for "git push ...": decide the subcommand
		// without the global options too, and keep the stricter answer
		// (the full argv carries the -c/--exec-path floors).
		plain := append([]string{"git", g.Sub}, g.Args...)
		res = stricter(res, eng.Decide(policy.Query{Argv: plain, ExecContext: policy.ExecContext{Cwd: ev.Cwd}}))
	}
	if command.IsGitPushPlumbing(g.Sub) {
		// send-pack is push without the porcelain; receive-pack is the
		// other end of a push into a local repository. Either is decided
		// as a push too, so a role that denies push denies them.
		res = stricter(res, eng.Decide(policy.Query{Argv: append([]string{"git", "push"}, g.Args...), ExecContext: policy.ExecContext{Cwd: ev.Cwd}}))
	}
	if command.IsGitCommand(g.Sub) {
		if g.Sub == "commit" {
			res = p.commitChecks(res, g.Args)
			return res, depth == 0
		}
		return res, false
	}
	// Not a git command: an alias, or a dashed external (git-<sub> in
	// PATH, which is an exec of its own and decided when it happens).
	values, notes := p.aliasValues(g, ev)
	if len(values) == 0 {
		return res, false
	}
	if depth >= maxAliasDepth {
		return policy.Result{Decision: policy.Deny, Action: res.Action, Reason: "git alias " + g.Sub + " nests deeper than " + strconv.Itoa(maxAliasDepth) + " (a loop?)"}, false
	}
	var worst policy.Result
	worst.Decision = -1
	for _, v := range values {
		var r policy.Result
		if strings.HasPrefix(v, "!") {
			line := strings.TrimPrefix(v, "!")
			if len(g.Args) > 0 {
				line += " " + command.Join(g.Args)
			}
			r = eng.Decide(policy.Query{Shell: line})
			if depth == 0 {
				r.Reason = "git alias " + g.Sub + " runs a shell command: " + r.Reason
			}
		} else {
			words, err := command.SplitGitAlias(v)
			if err != nil || len(words) == 0 {
				r = policy.Result{Decision: policy.Ask, Action: res.Action, Reason: "git alias " + g.Sub + " cannot be parsed"}
			} else {
				exp := []string{"git"}
				for _, o := range g.Globals {
					exp = append(exp, globalWords(o)...)
				}
				exp = append(exp, words...)
				exp = append(exp, g.Args...)
				r, _ = p.decideGit(exp, ev, depth+1)
				if r.Decision > policy.Allow && depth == 0 {
					r.Reason = "git alias " + g.Sub + " expands to " + command.Join(words) + ": " + r.Reason
				}
			}
		}
		if r.Decision > worst.Decision {
			worst = r
		}
	}
	if len(notes) > 0 && worst.Decision == policy.Allow {
		worst.Decision = policy.Ask
		worst.Floor = strings.Join(notes, "; ")
	}
	return worst, false
}

// stricter returns the stricter of two results (deny > ask > allow); at
// equal decisions the one naming a rule.
func stricter(a, b policy.Result) policy.Result {
	if b.Decision > a.Decision || (b.Decision == a.Decision && a.Rule == nil && b.Rule != nil) {
		return b
	}
	return a
}

// globalWords renders a parsed git global option back as argv words.
func globalWords(o command.GlobalOpt) []string {
	switch {
	case !o.HasValue:
		return []string{o.Name}
	case o.Name == "-C" || o.Name == "-c":
		return []string{o.Name, o.Value}
	default:
		return []string{o.Name + "=" + o.Value}
	}
}

// aliasValues returns every value alias.<sub> has in any config source git
// would read for this run: -c options, GIT_CONFIG_* environment, the
// repository config, the global and system files (with includes).
func (p *Judge) aliasValues(g command.Git, ev *supervise.ExecEvent) (vals []string, notes []string) {
	want := "alias." + strings.ToLower(g.Sub)
	for _, o := range g.Globals {
		if o.Name == "-c" {
			k, v, has := strings.Cut(o.Value, "=")
			if strings.EqualFold(k, want) {
				if !has {
					v = "true"
				}
				vals = append(vals, v)
			}
		}
	}
	dir := ev.Cwd
	gitDir := envValue(ev.Env, "GIT_DIR")
	for _, o := range g.Globals {
		switch o.Name {
		case "-C":
			if filepath.IsAbs(o.Value) {
				dir = o.Value
			} else {
				dir = filepath.Join(dir, o.Value)
			}
		case "--git-dir":
			gitDir = o.Value
		}
	}
	home := envValue(ev.Env, "HOME")
	l := &gitConfigLoader{home: home, seen: map[string]bool{}}
	if p.cfg.Workspace != "" {
		l.roots = append(l.roots, p.cfg.Workspace)
	}
	if home != "" {
		l.roots = append(l.roots, home)
	}
	if envValue(ev.Env, "GIT_CONFIG_NOSYSTEM") == "" {
		sys := "/etc/gitconfig"
		if s := envValue(ev.Env, "GIT_CONFIG_SYSTEM"); s != "" {
			sys = s
			l.loadFile(s, p.allowedTop(l, s), 0)
		} else {
			l.loadFile(sys, true, 0)
		}
	}
	if gl := envValue(ev.Env, "GIT_CONFIG_GLOBAL"); gl != "" {
		l.loadFile(gl, p.allowedTop(l, gl), 0)
	} else {
		xdg := envValue(ev.Env, "XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg != "" {
			l.loadFile(filepath.Join(xdg, "git", "config"), p.allowedTop(l, xdg), 0)
		}
		if home != "" {
			l.loadFile(filepath.Join(home, ".gitconfig"), p.allowedTop(l, home), 0)
		}
	}
	if gd := findGitDir(dir, gitDir); gd != "" {
		l.roots = append(l.roots, gd)
		l.loadFile(filepath.Join(gd, "config"), true, 0)
		l.loadFile(filepath.Join(gd, "config.worktree"), true, 0)
	}
	if c := envValue(ev.Env, "GIT_CONFIG"); c != "" {
		l.loadFile(c, p.allowedTop(l, c), 0)
	}
	for _, e := range l.entries {
		if e.Key == want {
			vals = append(vals, e.Value)
		}
	}
	for _, e := range command.GitEnvConfig(ev.Env) {
		if e.Key == want {
			vals = append(vals, e.Value)
		}
	}
	return vals, l.notes
}

// allowedTop says whether a config file named by the environment may be
// read: only under the workspace or HOME.
func (p *Judge) allowedTop(l *gitConfigLoader, path string) bool {
	if l.allowed(path) {
		return true
	}
	l.notes = append(l.notes, "config file outside the workspace not read: "+path)
	return false
}

// envValue is the value of key in env as a program sees it (the last
// entry wins, as with getenv on a list execve was given).
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// commitChecks applies the role's (docs/policy.md) commit message requirement.
func (p *Judge) commitChecks(res policy.Result, args []string) policy.Result {
	if !p.roleInfo().Git.CommitMessageRequired || res.Decision == policy.Deny {
		return res
	}
	if ok, why := command.GitCommitHasMessage(args); !ok {
		return policy.Result{Decision: policy.Deny, Action: res.Action,
			Reason: "commit message required (role " + p.roleInfo().Name + "): " + why}
	}
	return res
}

// reserveCommit counts one commit against max_commits; it returns a deny
// reason when the limit is reached.
func (p *Judge) reserveCommit() string {
	max := p.roleInfo().Git.MaxCommits
	p.mu.Lock()
	defer p.mu.Unlock()
	if max > 0 && p.commits >= max {
		return fmt.Sprintf("max commits per run reached (%d, role %s)", max, p.roleInfo().Name)
	}
	p.commits++
	return ""
}

// commitExited releases the reservation of a commit that failed.
func (p *Judge) commitExited(status syscall.WaitStatus) {
	if status.Exited() && status.ExitStatus() == 0 {
		return
	}
	p.mu.Lock()
	p.commits--
	p.mu.Unlock()
}

// askExec consults the approver about a program start; it returns the
// final decision, the audit decision, the approver and the reason.
func (p *Judge) askExec(ev *supervise.ExecEvent, d decision, why string) (policy.Decision, string, string, string) {
	req := approval.Request{
		Pid: ev.Pid, Program: ev.Exe, Argv: ev.Argv, Cwd: ev.Cwd, Env: d.env, Identified: identifiedText(ev),
		Parent: parentCmdline(ev.Ppid),
	}
	if ev.Program != identity.ExeBase(ev.Exe) {
		req.Program = ev.Exe + " (" + ev.Program + ")"
	}
	a := p.ask(p.ctx, req, d.res, why)
	return a.decision, a.audit, a.approver, a.reason
}

// parentCmdline reads the command line of the process that started a
// held program (the shell line a command came from), for the approver;
// nil when it cannot be read. At most 8 KiB.
func parentCmdline(ppid int) []string {
	if ppid <= 1 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	if len(b) > 8<<10 {
		b = b[:8<<10]
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// allowSession adds session allow rules for an approved action and for
// each of its parts that asked (a deletion item of `rm x`, say), so the
// same command is not asked again in this run.
func (p *Judge) allowSession(res policy.Result, by string) {
	p.engine().Session().AddBy(policy.Allow, res.Action, by)
	for _, s := range res.Segments {
		if s.Decision == policy.Ask && s.Action != "" {
			p.engine().Session().AddBy(policy.Allow, s.Action, by)
		}
	}
}

// audit writes the decision's event before the program may start.
func (p *Judge) audit(ev *supervise.ExecEvent, d decision, dec, why, approver string) (uint64, error) {
	if p.cfg.Audit == nil {
		return 0, nil
	}
	e := audit.Event{
		Agent: p.cfg.AgentID, Role: p.roleInfo().Name, Run: p.cfg.RunID,
		Event: audit.EventExec, Pid: ev.Pid, Ppid: ev.Ppid, Cwd: ev.Cwd, Action: d.res.Action,
		Argv: ev.Argv, Exe: ev.Exe, Decision: dec, Reason: why, Approver: approver,
	}
	if d.git {
		e.Event = audit.EventGit
	}
	if part := d.res.DecidingPart(); part.Action != "" && part.Action != d.res.Action {
		// A wrapped line (Claude Code's bash -c 'source snapshot; eval CMD'):
		// the part that decided, which the audit table shows.
		e.Detail = map[string]string{"decided": part.Action}
	}
	if d.res.Rule != nil {
		e.Rule, e.Layer = d.res.Rule.ID, d.res.Rule.Layer.String()
	}
	if d.script.path != "" {
		// What ran (the interpreter, Argv and Exe as the kernel has them)
		// and what was decided (the script, Action): both on record.
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail["script"] = d.script.given
		e.Detail["interpreter"] = command.Join(d.script.interp)
	}
	if ev.Program != "" && ev.Program != identity.ExeBase(ev.Exe) {
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail["program"] = ev.Program
	}
	if len(d.env) > 0 {
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		// What the decision was made on, and a warning when something that
		// can change the program's behaviour after the decision was there.
		e.Detail["env"] = d.envShown
		if d.envNote != "" {
			e.Detail["env_note"] = d.envNote
		}
	}
	if ev.Via != "" {
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail["identified_by"] = ev.Via
	}
	if d.res.Rule != nil && d.res.Rule.Source != "" {
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail["rule_source"] = d.res.Rule.Source
	}
	if d.checkpoint != "" {
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail["checkpoint"] = d.checkpoint
	}
	if ss, ok := p.cfg.Audit.(audit.SeqSink); ok {
		return ss.EmitSeq(e)
	}
	return 0, p.writeEvent(e)
}

// identifiedText says how the program was identified, for approvers:
// "git (same file as /usr/bin/git)", "git (a copy of it: same content)".
func identifiedText(ev *supervise.ExecEvent) string {
	switch ev.Via {
	case "file":
		return ev.Program + " (the installed binary)"
	case "content":
		return ev.Program + " (a copy: same content as the installed binary)"
	case "build-id":
		return ev.Program + " (a modified copy: same ELF build id)"
	case "elf":
		return ev.Program + " (recognised by its ELF structure)"
	case "name", "":
		return identity.ExeBase(ev.Exe) + " (unknown program: named by its file)"
	}
	return ev.Program + " (" + ev.Via + ")"
}

// redactRequest removes secrets from what an approver is shown (the
// prompt may be on a shared terminal or logged by the approval client);
// "[REDACTED:<rule>]" marks each. A remembered prefix never holds one: a
// secret is never a command's first two words' pattern worth saving.
func redactRequest(req *approval.Request) {
	req.Argv, _ = redact.Argv(req.Argv)
	if len(req.Parent) > 0 {
		req.Parent, _ = redact.Argv(req.Parent)
	}
	req.Action, _ = redact.Text(req.Action)
	req.Reason, _ = redact.Text(req.Reason)
	if len(req.Env) > 0 {
		env := make([]string, len(req.Env))
		for i, kv := range req.Env {
			env[i], _ = redact.Text(kv)
		}
		req.Env = env
	}
}
