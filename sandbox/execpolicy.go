//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/programs"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/command"
	"github.com/agentbox/agentbox/sandbox/approval"
)

// ExecPolicyConfig configures NewExecPolicy.
type ExecPolicyConfig struct {
	// Engine decides every program start. Required.
	Engine *policy.Engine
	// Approver answers "ask" decisions. nil means nobody can answer: ask
	// becomes deny, audited as ask_unavailable.
	Approver approval.Approver
	// Audit receives one event per decision. May be nil.
	Audit *audit.Writer
	// Emit, when set, receives the events instead of Audit (the CLI's
	// emitter adds agent, role and run and reports write errors).
	Emit func(audit.Event)
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
}

// ExecPolicy decides program starts for Supervise: identity, argv rewrite,
// git configuration and environment, the policy engine, approvals, git
// safety and audit. It is safe for concurrent use.
type ExecPolicy struct {
	cfg    ExecPolicyConfig
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	commits int // git commits allowed and not known to have failed

	auditOnce sync.Once
	auditCh   chan auditItem
}

// auditItem is an event for the audit goroutine, or (done != nil) a flush
// marker.
type auditItem struct {
	e    audit.Event
	done chan struct{}
}

// NewExecPolicy returns the exec policy for one run.
func NewExecPolicy(cfg ExecPolicyConfig) *ExecPolicy {
	if cfg.Role.Name == "" && cfg.Engine != nil {
		cfg.Role = cfg.Engine.Role()
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = approval.DefaultTimeout
	}
	if cfg.ProjectPolicy == "" && cfg.Workspace != "" {
		cfg.ProjectPolicy = policy.ProjectFile(cfg.Workspace)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ExecPolicy{cfg: cfg, ctx: ctx, cancel: cancel}
}

// Close cancels approvals still waiting (their programs are denied) and
// writes every queued audit event.
func (p *ExecPolicy) Close() {
	p.cancel()
	p.Flush()
}

// Flush returns once every audit event of decisions made so far has been
// written. Events are written by one goroutine, in decision order, so a
// tracee never waits for the log.
func (p *ExecPolicy) Flush() {
	if p.auditCh == nil {
		return
	}
	done := make(chan struct{})
	p.auditCh <- auditItem{done: done}
	<-done
}

// Supervisor returns the SuperviseFunc for sandbox.Config.Supervise:
// Supervise with this policy (DecideFast on the tracer thread, Decide for
// approvals), flushing the audit events before it returns.
func (p *ExecPolicy) Supervisor() SuperviseFunc {
	return func(ctx context.Context, start func() (int, error), release func() error) (syscall.WaitStatus, error) {
		defer p.Flush()
		return SuperviseWith(ctx, SuperviseOptions{Start: start, Release: release, Decide: p.Decide, DecideFast: p.DecideFast})
	}
}

// Commits returns the number of git commits counted against the role's
// max_commits so far.
func (p *ExecPolicy) Commits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commits
}

// decision is the outcome of deciding one exec before approvals.
type decision struct {
	res      policy.Result
	argv     []string // argv as decided (identity name first)
	git      bool
	commit   bool // a direct `git commit` that counts against max_commits
	extraWhy string
}

// Decide decides one program start (see Supervise). It never panics on
// hostile input; any internal failure denies.
func (p *ExecPolicy) Decide(ev *ExecEvent) Verdict { return p.finish(ev, p.decide(ev)) }

// DecideFast decides ev unless that needs an approver (ok=false). It never
// blocks: for Supervise's tracer thread.
func (p *ExecPolicy) DecideFast(ev *ExecEvent) (Verdict, bool) {
	d := p.decide(ev)
	if d.res.Decision == policy.Ask {
		return Verdict{}, false
	}
	return p.finish(ev, d), true
}

// finish applies approvals, git safety and audit to a decision.
func (p *ExecPolicy) finish(ev *ExecEvent, d decision) Verdict {
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
	case policy.Ask:
		dec, auditDecision, approver, why = p.ask(ev, d, why)
	}
	var v Verdict
	if dec == policy.Allow && d.commit {
		if msg := p.reserveCommit(); msg != "" {
			dec, auditDecision, why = policy.Deny, audit.DecisionDeny, msg
			d.res.Rule = nil
		} else {
			v.OnExit = p.commitExited
		}
	}
	p.audit(ev, d, auditDecision, why, approver)
	if dec == policy.Allow {
		v.Allow = true
		return v
	}
	return Verdict{Message: denyLine(d, auditDecision, why)}
}

// askOutcome names why an ask ended in a deny, for the deny line.
var askOutcome = map[string]string{
	audit.DecisionAskUnavailable: "needs approval, no approver",
	audit.DecisionAskTimeout:     "approval timed out",
	audit.DecisionAskDenied:      "approval denied",
}

// denyLine is the one line the denied process gets on its stderr:
// "agentbox: denied: git push origin main (rule developer/git.push)".
func denyLine(d decision, auditDecision, why string) string {
	cmd := clipLine(command.Join(d.argv), 200)
	if o := askOutcome[auditDecision]; o != "" {
		first := d.res.Reason
		switch {
		case d.extraWhy != "":
			first = d.extraWhy
		case d.res.Floor != "":
			first = d.res.Floor
		case d.res.Rule != nil && d.res.Rule.ID != "":
			first = "rule " + d.res.Rule.ID
		}
		return fmt.Sprintf("agentbox: denied: %s (%s: %s)", cmd, o, clipLine(first, 200))
	}
	if d.res.Rule != nil && d.res.Rule.ID != "" {
		return fmt.Sprintf("agentbox: denied: %s (rule %s)", cmd, d.res.Rule.ID)
	}
	return fmt.Sprintf("agentbox: denied: %s (%s)", cmd, clipLine(why, 200))
}

func clipLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// decide computes the policy decision for ev without side effects.
func (p *ExecPolicy) decide(ev *ExecEvent) (d decision) {
	defer func() {
		if r := recover(); r != nil {
			d.res = policy.Result{Decision: policy.Deny, Reason: fmt.Sprintf("internal error deciding %s: %v", ev.Program, r)}
		}
	}()
	prog := ev.Program
	if prog == "" {
		prog = exeBase(ev.Exe)
	}
	id := Identity{Name: prog, Multicall: multicall(prog)}
	d.argv = ProgramArgv(id, ev.Argv)
	if p.cfg.Engine == nil {
		d.res = policy.Result{Decision: policy.Deny, Reason: "no policy engine"}
		return d
	}
	if prog == LoaderName && !loaderQuery(ev.Argv) {
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
		if policedName(prog) || exe == "" || !filepath.IsAbs(exe) {
			exe = ""
		}
		d.res = p.cfg.Engine.DecideExecAt(d.argv, ev.Cwd, exe)
		return d
	}
	d.git = true
	envArgs, envRuns := gitEnvArgs(ev.Env)
	argv := append([]string{"git"}, envArgs...)
	argv = append(argv, d.argv[1:]...)
	d.res, d.commit = p.decideGit(argv, ev, 0)
	if len(envRuns) > 0 {
		if d.res.Decision == policy.Allow {
			d.res.Decision = policy.Ask
		}
		d.extraWhy = "the environment makes git run programs: " + strings.Join(envRuns, ", ")
	}
	return d
}

// policedNames are the names in PolicedPrograms, for policedName.
var policedNames = func() map[string]bool {
	m := make(map[string]bool, len(PolicedPrograms))
	for _, n := range PolicedPrograms {
		m[n] = true
	}
	return m
}()

// policedName reports whether an identity name is a policed program's
// (Identifier names every copy of a policed binary by one of these; a
// versioned interpreter such as python3.12 counts too).
func policedName(name string) bool {
	if policedNames[name] || multicall(name) || name == LoaderName {
		return true
	}
	if c, k := programs.Canonical(name); c != name && k&programs.Policed != 0 {
		return true
	}
	return DefaultIdentifier().knows(name)
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
func (p *ExecPolicy) decideGit(argv []string, ev *ExecEvent, depth int) (policy.Result, bool) {
	eng := p.cfg.Engine
	res := eng.DecideExec(argv, ev.Cwd)
	g, err := command.ParseGit(argv)
	if err != nil || g.Sub == "" {
		return res, false
	}
	if len(g.Globals) > 0 {
		// Rules are written for "git push ...": decide the subcommand
		// without the global options too, and keep the stricter answer
		// (the full argv carries the -c/--exec-path floors).
		plain := append([]string{"git", g.Sub}, g.Args...)
		res = stricter(res, eng.DecideExec(plain, ev.Cwd))
	}
	if pushPlumbing[g.Sub] {
		// send-pack is push without the porcelain; receive-pack is the
		// other end of a push into a local repository. Either is decided
		// as a push too, so a role that denies push denies them.
		res = stricter(res, eng.DecideExec(append([]string{"git", "push"}, g.Args...), ev.Cwd))
	}
	if gitCommands[g.Sub] {
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
			r = eng.DecideShell(line)
			if depth == 0 {
				r.Reason = "git alias " + g.Sub + " runs a shell command: " + r.Reason
			}
		} else {
			words, err := splitAliasCmdline(v)
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

// pushPlumbing are git commands that push by another name.
var pushPlumbing = map[string]bool{"send-pack": true, "receive-pack": true, "http-push": true}

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
func (p *ExecPolicy) aliasValues(g command.Git, ev *ExecEvent) (vals []string, notes []string) {
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
	env := envMap(ev.Env)
	dir := ev.Cwd
	gitDir := env["GIT_DIR"]
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
	home := env["HOME"]
	l := &gitConfigLoader{home: home, seen: map[string]bool{}}
	if p.cfg.Workspace != "" {
		l.roots = append(l.roots, p.cfg.Workspace)
	}
	if home != "" {
		l.roots = append(l.roots, home)
	}
	if env["GIT_CONFIG_NOSYSTEM"] == "" {
		sys := "/etc/gitconfig"
		if s := env["GIT_CONFIG_SYSTEM"]; s != "" {
			sys = s
			l.loadFile(s, p.allowedTop(l, s), 0)
		} else {
			l.loadFile(sys, true, 0)
		}
	}
	if gl := env["GIT_CONFIG_GLOBAL"]; gl != "" {
		l.loadFile(gl, p.allowedTop(l, gl), 0)
	} else {
		xdg := env["XDG_CONFIG_HOME"]
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
	if c := env["GIT_CONFIG"]; c != "" {
		l.loadFile(c, p.allowedTop(l, c), 0)
	}
	for _, e := range l.entries {
		if e.Key == want {
			vals = append(vals, e.Value)
		}
	}
	for _, e := range gitEnvConfig(ev.Env) {
		if e.Key == want {
			vals = append(vals, e.Value)
		}
	}
	return vals, l.notes
}

// allowedTop says whether a config file named by the environment may be
// read: only under the workspace or HOME.
func (p *ExecPolicy) allowedTop(l *gitConfigLoader, path string) bool {
	if l.allowed(path) {
		return true
	}
	l.notes = append(l.notes, "config file outside the workspace not read: "+path)
	return false
}

// gitEnvConfig returns the configuration the environment passes to git:
// GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/VALUE_n.
func gitEnvConfig(env []string) []gitConfigEntry {
	m := envMap(env)
	var out []gitConfigEntry
	if s := m["GIT_CONFIG_PARAMETERS"]; s != "" {
		es, err := parseConfigParameters(s)
		out = append(out, es...)
		if err != nil {
			out = append(out, gitConfigEntry{Key: "agentbox.unparsable", Value: err.Error(), Src: "GIT_CONFIG_PARAMETERS"})
		}
	}
	if n, err := strconv.Atoi(m["GIT_CONFIG_COUNT"]); err == nil && n > 0 {
		n = min(n, 1000)
		for i := 0; i < n; i++ {
			k, ok := m["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			if !ok {
				break
			}
			out = append(out, gitConfigEntry{Key: normalizeConfigKey(k), Value: m["GIT_CONFIG_VALUE_"+strconv.Itoa(i)], Src: "GIT_CONFIG_KEY_" + strconv.Itoa(i)})
		}
	}
	return out
}

// gitEnvVarKeys are environment variables equivalent to a config key.
var gitEnvVarKeys = []struct{ env, key string }{
	{"GIT_SSH_COMMAND", "core.sshCommand"},
	{"GIT_SSH", "core.sshCommand"},
	{"GIT_PAGER", "core.pager"},
	{"GIT_EDITOR", "core.editor"},
	{"GIT_SEQUENCE_EDITOR", "sequence.editor"},
	{"GIT_ASKPASS", "core.askPass"},
	{"GIT_PROXY_COMMAND", "core.gitProxy"},
	{"GIT_EXTERNAL_DIFF", "diff.external"},
	{"GIT_TEMPLATE_DIR", "init.templateDir"},
}

// systemGitExecPaths are exec paths git itself exports to its children.
var systemGitExecPaths = map[string]bool{"/usr/lib/git-core": true, "/usr/libexec/git-core": true, "/usr/local/libexec/git-core": true}

// harmlessProgram are values of pager/editor variables that run nothing
// of interest (agents set GIT_PAGER=cat, GIT_EDITOR=true).
var harmlessProgram = map[string]bool{"": true, "cat": true, "true": true, ":": true}

// gitEnvArgs translates what the environment tells git into the equivalent
// global options (`-c k=v`, `--git-dir=`, ...), so the engine decides the
// git run as it will really behave, and lists the variables that make git
// run programs (at least ask).
func gitEnvArgs(env []string) (args []string, runs []string) {
	m := envMap(env)
	for _, e := range gitEnvConfig(env) {
		args = append(args, "-c", e.Key+"="+e.Value)
	}
	for _, kv := range gitEnvVarKeys {
		v, ok := m[kv.env]
		if !ok {
			continue
		}
		if !harmlessProgram[strings.TrimSpace(v)] {
			args = append(args, "-c", kv.key+"="+v)
			runs = append(runs, kv.env)
		}
	}
	if v, ok := m["GIT_EXEC_PATH"]; ok && !systemGitExecPaths[filepath.Clean(v)] {
		args = append(args, "--exec-path="+v)
		runs = append(runs, "GIT_EXEC_PATH")
	}
	for _, kv := range [][2]string{{"GIT_DIR", "--git-dir"}, {"GIT_WORK_TREE", "--work-tree"}, {"GIT_NAMESPACE", "--namespace"}} {
		if v, ok := m[kv[0]]; ok && v != "" {
			args = append(args, kv[1]+"="+v)
		}
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG"} {
		if v, ok := m[k]; ok && v != "" && v != "/dev/null" {
			runs = append(runs, k)
		}
	}
	return args, runs
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}

// commitChecks applies seed 004's commit message requirement.
func (p *ExecPolicy) commitChecks(res policy.Result, args []string) policy.Result {
	if !p.cfg.Role.Git.CommitMessageRequired || res.Decision == policy.Deny {
		return res
	}
	if ok, why := commitHasMessage(args); !ok {
		return policy.Result{Decision: policy.Deny, Action: res.Action,
			Reason: "commit message required (role " + p.cfg.Role.Name + "): " + why}
	}
	return res
}

// commitLongOpts are git commit's long options (for unique-prefix matching).
var commitLongOpts = []string{
	"all", "patch", "reuse-message", "reedit-message", "fixup", "squash", "reset-author", "short", "branch",
	"porcelain", "long", "null", "file", "author", "date", "message", "template", "signoff", "no-signoff",
	"trailer", "cleanup", "edit", "no-edit", "amend", "no-post-rewrite", "include", "only", "pathspec-from-file",
	"pathspec-file-nul", "untracked-files", "verbose", "quiet", "dry-run", "status", "no-status", "gpg-sign",
	"no-gpg-sign", "no-verify", "verify", "allow-empty", "allow-empty-message", "interactive",
}

// commitHasMessage reports whether `git commit ARGS` is given its message
// without an editor: -m/--message (non-empty), -F/--file, -C/--reuse-message,
// --fixup, or --amend/--no-edit reusing one.
func commitHasMessage(args []string) (bool, string) {
	has, empty, amend, noEdit, dry := false, false, false, false, false
	long := func(s string) (string, string, bool) {
		name, val, hasVal := strings.Cut(s, "=")
		var match string
		for _, o := range commitLongOpts {
			if o == name {
				return o, val, hasVal
			}
			if strings.HasPrefix(o, name) {
				if match != "" {
					return "", "", false // ambiguous: git refuses it
				}
				match = o
			}
		}
		return match, val, hasVal
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		next := func() (string, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := long(a[2:])
			switch name {
			case "message", "file", "reuse-message", "fixup", "author", "date", "template", "trailer",
				"cleanup", "untracked-files", "pathspec-from-file", "gpg-sign", "reedit-message", "squash":
				if !hasVal && name != "untracked-files" && name != "gpg-sign" {
					val, hasVal = next()
				}
				switch name {
				case "message":
					if val == "" {
						empty = true
					} else {
						has = true
					}
				case "file", "reuse-message", "fixup":
					if hasVal {
						has = true
					}
				}
			case "amend":
				amend = true
			case "no-edit":
				noEdit = true
			case "dry-run":
				dry = true
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := a[j]
				if strings.IndexByte("mFCcSt", c) >= 0 { // options with a value
					val := a[j+1:]
					if val == "" && c != 'S' {
						val, _ = next()
					}
					switch c {
					case 'm':
						if val == "" {
							empty = true
						} else {
							has = true
						}
					case 'F', 'C':
						has = true
					}
					break
				}
			}
		}
	}
	switch {
	case has || dry:
		return true, ""
	case amend && noEdit:
		return true, ""
	case empty:
		return false, "the message given is empty"
	}
	return false, "give it with -m/-F/-C (no editor inside the sandbox)"
}

// reserveCommit counts one commit against max_commits; it returns a deny
// reason when the limit is reached.
func (p *ExecPolicy) reserveCommit() string {
	max := p.cfg.Role.Git.MaxCommits
	p.mu.Lock()
	defer p.mu.Unlock()
	if max > 0 && p.commits >= max {
		return fmt.Sprintf("max commits per run reached (%d, role %s)", max, p.cfg.Role.Name)
	}
	p.commits++
	return ""
}

// commitExited releases the reservation of a commit that failed.
func (p *ExecPolicy) commitExited(status syscall.WaitStatus) {
	if status.Exited() && status.ExitStatus() == 0 {
		return
	}
	p.mu.Lock()
	p.commits--
	p.mu.Unlock()
}

// ask consults the approver; it returns the final decision, the audit
// decision, the approver and the reason.
func (p *ExecPolicy) ask(ev *ExecEvent, d decision, why string) (policy.Decision, string, string, string) {
	if p.cfg.Approver == nil {
		return policy.Deny, audit.DecisionAskUnavailable, "", why + "; no approver (--approve none)"
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.ApprovalTimeout)
	defer cancel()
	req := approval.Request{
		Agent: p.cfg.AgentID, Role: p.cfg.Role.Name, Run: p.cfg.RunID, Pid: ev.Pid,
		Program: ev.Exe, Argv: ev.Argv, Cwd: ev.Cwd, Action: d.res.Action, Reason: why,
	}
	if ev.Program != exeBase(ev.Exe) {
		req.Program = ev.Exe + " (" + ev.Program + ")"
	}
	if d.res.Rule != nil {
		req.Rule, req.Layer = d.res.Rule.ID, d.res.Rule.Layer.String()
	}
	resp, err := p.cfg.Approver.Approve(ctx, req)
	switch {
	case errors.Is(err, approval.ErrTimeout) || (err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)):
		return policy.Deny, audit.DecisionAskTimeout, "", why + "; approval timed out after " + p.cfg.ApprovalTimeout.String()
	case errors.Is(err, approval.ErrUnavailable):
		return policy.Deny, audit.DecisionAskUnavailable, "", why + "; " + err.Error()
	case err != nil:
		return policy.Deny, audit.DecisionAskDenied, "", why + "; approval failed: " + err.Error()
	}
	if !resp.Answer.Allowed() {
		if resp.Answer == approval.DenyAlways {
			p.cfg.Engine.AddSessionRule(policy.Deny, d.res.Action)
		}
		return policy.Deny, audit.DecisionAskDenied, resp.Approver, why + "; denied by " + resp.Approver + " (" + resp.Answer.String() + ")"
	}
	note := "approved by " + resp.Approver + " (" + resp.Answer.String() + ")"
	switch resp.Answer {
	case approval.AllowAlways:
		p.allowSession(d.res)
	case approval.Remember:
		prefix, ok := policy.RememberPrefix(d.res.Action)
		if resp.Prefix != "" {
			prefix = resp.Prefix
		}
		if ok && policy.SafeToRemember(d.res.Action) && p.cfg.ProjectPolicy != "" {
			if err := policy.AppendProjectRule(p.cfg.ProjectPolicy, policy.Allow, prefix, "remembered approval by "+resp.Approver); err != nil {
				note += "; not remembered: " + err.Error()
			} else {
				note += "; remembered " + prefix + " in " + p.cfg.ProjectPolicy
			}
			p.allowSession(d.res)
		} else {
			note += "; not remembered: unsafe to remember as a prefix (allowed once)"
		}
	}
	return policy.Allow, audit.DecisionAskApproved, resp.Approver, why + "; " + note
}

// allowSession adds session allow rules for an approved action and for
// each of its parts that asked (a deletion item of `rm x`, say), so the
// same command is not asked again in this run.
func (p *ExecPolicy) allowSession(res policy.Result) {
	p.cfg.Engine.AddSessionRule(policy.Allow, res.Action)
	for _, s := range res.Segments {
		if s.Decision == policy.Ask && s.Action != "" {
			p.cfg.Engine.AddSessionRule(policy.Allow, s.Action)
		}
	}
}

// audit writes the decision's event.
func (p *ExecPolicy) audit(ev *ExecEvent, d decision, dec, why, approver string) {
	if p.cfg.Audit == nil && p.cfg.Emit == nil {
		return
	}
	e := audit.Event{
		Agent: p.cfg.AgentID, Role: p.cfg.Role.Name, Run: p.cfg.RunID,
		Event: audit.EventExec, Pid: ev.Pid, Ppid: ev.Ppid, Cwd: ev.Cwd, Action: d.res.Action,
		Argv: ev.Argv, Exe: ev.Exe, Decision: dec, Reason: why, Approver: approver,
	}
	if d.git {
		e.Event = audit.EventGit
	}
	if d.res.Rule != nil {
		e.Rule, e.Layer = d.res.Rule.ID, d.res.Rule.Layer.String()
	}
	if ev.Program != "" && ev.Program != exeBase(ev.Exe) {
		e.Detail = map[string]string{"program": ev.Program}
	}
	if d.res.Rule != nil && d.res.Rule.Source != "" {
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		e.Detail["rule_source"] = d.res.Rule.Source
	}
	p.auditOnce.Do(func() {
		p.auditCh = make(chan auditItem, 1024)
		go func() {
			for it := range p.auditCh {
				if it.done != nil {
					close(it.done)
					continue
				}
				if p.cfg.Emit != nil {
					p.cfg.Emit(it.e)
				} else {
					_ = p.cfg.Audit.Write(it.e)
				}
			}
		}()
	})
	p.auditCh <- auditItem{e: e}
}

// gitCommands are git's builtins and the commands git ships: git runs them
// before it looks for an alias of the same name, so only other words are
// alias candidates.
var gitCommands = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Fields(`add am annotate apply archive bisect--helper blame branch bugreport bundle cat-file
check-attr check-ignore check-mailmap check-ref-format checkout checkout--worker checkout-index cherry cherry-pick
clean clone column commit commit-graph commit-tree config count-objects credential credential-cache
credential-cache--daemon credential-store describe diagnose diff diff-files diff-index diff-tree difftool
env--helper fast-export fast-import fetch fetch-pack fmt-merge-msg for-each-ref for-each-repo format-patch fsck
fsck-objects fsmonitor--daemon gc get-tar-commit-id grep hash-object help hook index-pack init init-db
interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file
merge-index merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs merge-subtree merge-tree mktag
mktree multi-pack-index mv name-rev notes pack-objects pack-redundant pack-refs patch-id pickaxe prune
prune-packed pull push range-diff read-tree rebase receive-pack reflog remote remote-ext remote-fd repack replace
rerere reset restore rev-list rev-parse revert rm send-pack shortlog show show-branch show-index show-ref
sparse-checkout stage stash status stripspace submodule--helper switch symbolic-ref tag unpack-file
unpack-objects update-index update-ref update-server-info upload-archive upload-archive--writer upload-pack var
verify-commit verify-pack verify-tag version whatchanged worktree write-tree add--interactive bisect daemon
difftool--helper filter-branch http-backend http-fetch http-push imap-send instaweb merge-octopus
merge-one-file merge-resolve mergetool quiltimport remote-ftp remote-ftps remote-http remote-https request-pull
sh-i18n--envsubst shell submodule subtree web--browse send-email p4 svn cvsimport cvsserver archimport gui citool
lfs scalar --exec-path --html-path --man-path --info-path --list-cmds`) {
		m[s] = true
	}
	return m
}()
