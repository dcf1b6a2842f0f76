package agentbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/internal/registry"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/policy"
)

// Option configures a Run (see New). Options are small values that compose;
// a bad value is an *OptionError from New.
type Option func(*options) error

// options is the configuration New builds from Options.
type options struct {
	agent                 string
	pushTokens            *PushTokens // WithPushTokens (pushtokens.go)
	policyFiles           []string
	userPolicy            string
	noUserPolicy          bool
	limits                policy.Limits
	network               *policy.Network
	bestEffort            bool
	allowWeaker           []string
	execPolicy            bool
	traceAll              bool
	sharedNetNS           bool
	approve               string
	approver              approval.Approver
	webhook               *approval.WebhookConfig
	auditPath             string
	auditWriter           *audit.Writer
	auditFailure          AuditFailure
	auditKey              string
	auditQuota            int
	allowHosts            []string
	internalHosts         []string
	secrets               []policy.SecretGrant
	secretHeaders         map[string][]string
	review                bool
	reviewDir             string
	hostCaches            *bool
	dir                   string
	grantRead             []string
	grantExec             []string
	grantWrite            []string
	toolchains            bool
	agentProfile          string
	noDiscover            bool
	noLimits              bool
	dirStrict             bool
	resolve               func(ctx context.Context, host string) ([]string, error)
	events                func(audit.Event)
	stdin, stdout, stderr *os.File
	ptyIn, ptyOut         *os.File
	env                   []string
	exe                   string
	killGrace             time.Duration
	forwardSignals        bool
	registryDir           string
	runID                 string
	warnings              io.Writer
	log                   io.Writer
	t0                    time.Time
	logf                  func(string, ...any)
	checkpoints           bool
	checkpointsExplicit   bool
	checkpointStore       string
	checkpointLimits      policy.Checkpoints
}

// DefaultAgent is the agent id of a run without WithAgent.
const DefaultAgent = "main"

func defaultOptions() options {
	return options{
		agent:       DefaultAgent,
		execPolicy:  true,
		auditPath:   audit.DefaultPath(),
		killGrace:   5 * time.Second,
		registryDir: registry.DefaultDir(),
		warnings:    os.Stderr,
		checkpoints: true,
	}
}

// WithAgent names the agent: its HOME and TMPDIR live in W/agents/ID.
func WithAgent(id string) Option {
	return func(o *options) error { o.agent = id; return nil }
}

// WithPolicyFiles adds policy files, layered above the project file in
// the order given.
func WithPolicyFiles(files ...string) Option {
	return func(o *options) error { o.policyFiles = append(o.policyFiles, files...); return nil }
}

// WithUserPolicy uses file as the user policy layer instead of
// $XDG_CONFIG_HOME/agentbox/policy.yaml.
func WithUserPolicy(file string) Option {
	return func(o *options) error { o.userPolicy = file; return nil }
}

// WithoutUserPolicy ignores the user policy layer.
func WithoutUserPolicy() Option {
	return func(o *options) error { o.noUserPolicy = true; return nil }
}

// WithLimits overrides the role's limits field by field (non-zero fields
// win): memory, CPUs, pids, timeout, file size, open files, approval wait.
func WithLimits(l policy.Limits) Option {
	return func(o *options) error {
		switch {
		case l.MemoryBytes < 0:
			return &OptionError{Option: "memory", Value: fmt.Sprint(l.MemoryBytes), Err: errors.New("must not be negative")}
		case l.CPUs < 0:
			return &OptionError{Option: "cpus", Value: fmt.Sprint(l.CPUs), Err: errors.New("must not be negative")}
		case l.Pids < 0:
			return &OptionError{Option: "pids", Value: fmt.Sprint(l.Pids), Err: errors.New("must not be negative")}
		case l.Timeout < 0:
			return &OptionError{Option: "timeout", Value: l.Timeout.String(), Err: errors.New("must not be negative")}
		}
		o.limits = o.limits.Overlay(l)
		return nil
	}
}

// WithTimeout ends the run after d (SIGTERM, kill grace, SIGKILL; the
// result is ExitTimeout).
func WithTimeout(d time.Duration) Option {
	return WithLimits(policy.Limits{Timeout: d})
}

// WithNetwork replaces the role's network grant (policy.Network{} is
// none); its host lists are added as session rules over the role's own,
// and imply network mode proxy.
func WithNetwork(n policy.Network) Option {
	return func(o *options) error { o.network = &n; return nil }
}

// WithoutDiscovery does not load the permission files other agent tools
// keep (Claude Code's settings.json, Codex rules, Codelia and Forge
// configs, a Chorus agent.json); see policy.LoadOptions.Discover.
func WithoutDiscovery() Option {
	return func(o *options) error { o.noDiscover = true; return nil }
}

// WithReadOnly grants the sandbox read access to these paths outside the
// workspace for this run (`agentbox run --ro`). Paths must exist, hold no
// symlink or "..", and not be inside the workspace.
func WithReadOnly(paths ...string) Option {
	return func(o *options) error { o.grantRead = append(o.grantRead, paths...); return nil }
}

// WithExecutable grants read and execute access (a toolchain) for this run
// (`agentbox run --exec`), with WithReadOnly's checks, and allows the
// programs there (programs the policy names are still decided by name).
func WithExecutable(paths ...string) Option {
	return func(o *options) error { o.grantExec = append(o.grantExec, paths...); return nil }
}

// WithWritable grants read and write access for this run (`agentbox run
// --rw`), with WithReadOnly's checks, and allows the file writes there; a
// path containing the workspace, the audit log or a policy file is refused.
func WithWritable(paths ...string) Option {
	return func(o *options) error { o.grantWrite = append(o.grantWrite, paths...); return nil }
}

// WithToolchains grants the per-user toolchains found on the caller's PATH
// (rustup and ~/.cargo/bin, pyenv, nvm, sdkman, ~/go/bin, ~/.local/bin,
// /opt/X/bin, /usr/local/X/bin) read and execute for this run and allows
// the programs in them (`agentbox run --toolchains`); their launchers get
// PYENV_ROOT and RUSTUP_HOME. Off by default: those entries are dropped from
// the sandbox's PATH and the system's programs are used. Caches and
// credentials (~/.cargo/credentials.toml, registries) are never granted.
func WithToolchains() Option {
	return func(o *options) error { o.toolchains = true; return nil }
}

// WithDir starts the command in dir, a directory inside the workspace
// areas the sandbox can read (context/, target/, feedback/, the agent's own
// area); anything else is an OptionError. Default: W/target.
func WithDir(dir string) Option {
	return func(o *options) error { o.dir, o.dirStrict = dir, true; return nil }
}

// WithCallerDir starts the command in dir when it lies inside the
// workspace areas the sandbox can read, and in W/target otherwise: what
// `agentbox run` does with the directory it was started from.
func WithCallerDir(dir string) Option {
	return func(o *options) error { o.dir, o.dirStrict = dir, false; return nil }
}

// WithAllowHosts allows connections to these host patterns for this run
// (example.com, *.example.com, host:port); implies network mode proxy when
// no network is given.
func WithAllowHosts(patterns ...string) Option {
	return func(o *options) error { o.allowHosts = append(o.allowHosts, patterns...); return nil }
}

// WithInternalHosts lets names matching patterns resolve to loopback,
// private or link-local addresses through the egress proxy (a service on
// the caller's network the role allows by name). Any other allowed name
// that resolves to such an address is refused: DNS rebinding would
// reach the host's own services.
func WithInternalHosts(patterns ...string) Option {
	return func(o *options) error { o.internalHosts = append(o.internalHosts, patterns...); return nil }
}

// WithSecret brokers the caller's variable name for the hosts (patterns as
// in a network allow list): the sandbox's name holds a placeholder, and
// the egress proxy, terminating TLS for those hosts, puts the real value
// in its place in their requests' credential headers only (Authorization,
// X-Api-Key, Api-Key, X-Auth-Token, Private-Token). A request carrying
// the placeholder anywhere else is refused and audited; the value in an
// answer is replaced by the placeholder. The
// variable must be set in the run's environment (WithEnv, else the
// process's); a pattern matching every host is refused.
func WithSecret(name string, hosts ...string) Option {
	return func(o *options) error {
		g := policy.SecretGrant{Name: name, Hosts: hosts, Source: "--secret"}
		if err := policy.CheckSecretGrant(g); err != nil {
			return &OptionError{Option: "secret", Value: name, Err: err}
		}
		o.secrets = append(o.secrets, g)
		return nil
	}
}

// WithSecretHeaders declares the request headers the value of the
// brokered secret name goes in (over its default set: Authorization,
// X-Api-Key, Api-Key, X-Auth-Token, Private-Token, or an agent profile
// API's own header): an API reading its key from another header.
func WithSecretHeaders(name string, headers ...string) Option {
	return func(o *options) error {
		if o.secretHeaders == nil {
			o.secretHeaders = map[string][]string{}
		}
		o.secretHeaders[name] = append(o.secretHeaders[name], headers...)
		return nil
	}
}

// WithHostCaches offers (or withholds) the host's caches — the Go module
// cache read-only as a file:// GOPROXY, the build and package caches (Go
// build, npm, pip, cargo, Maven) copy-on-write with the run's writes in
// the agent's own layer — whatever the role's host_caches says.
func WithHostCaches(on bool) Option {
	return func(o *options) error { o.hostCaches = &on; return nil }
}

// WithResolver makes the egress proxy resolve host names with fn instead
// of the system resolver (tests; a local gateway for a name).
func WithResolver(fn func(ctx context.Context, host string) ([]string, error)) Option {
	return func(o *options) error { o.resolve = fn; return nil }
}

// WithoutCgroupLimits runs without the role's memory, CPU and process
// limits (cgroups) and nothing else weaker: for a regular user with no
// delegated cgroup (`agentbox run --no-limits`). rlimits still apply, and
// the launch event says the limits were not applied.
func WithoutCgroupLimits() Option {
	return func(o *options) error { o.noLimits = true; return nil }
}

// WithAllowWeaker accepts running without the named protections
// (sandbox.WeakerNames: truncate, tcp, signals, abstract-unix, metadata)
// where neither Landlock nor a stand-in (a namespace, seccomp) can enforce
// them on this kernel for this user: the per-protection form of
// WithBestEffort. The launch line still lists what is not enforced.
func WithAllowWeaker(names ...string) Option {
	return func(o *options) error {
		for _, n := range names {
			if _, err := sandbox.ParseAllowWeaker(n); err != nil {
				return err
			}
		}
		o.allowWeaker = append(o.allowWeaker, names...)
		return nil
	}
}

// WithBestEffort accepts a kernel without a protection the role asks for
// (older Landlock ABI, no cgroups), enforcing what is available and saying
// what was let go.
func WithBestEffort() Option {
	return func(o *options) error { o.bestEffort = true; return nil }
}

// WithoutExecPolicy runs without the exec supervisor: no per-program
// decisions; the kernel boundary still applies.
func WithoutExecPolicy() Option {
	return func(o *options) error { o.execPolicy = false; return nil }
}

// WithTraceAll makes the exec supervisor trace every process of the
// sandbox (ptrace fork, clone and exec events) instead of seizing only
// exec'ing threads on their seccomp notification: slower, but if agentbox
// is SIGKILLed every process of the sandbox dies with it. Kernels without
// seccomp user notifications (before 5.7) get this mode anyway.
func WithTraceAll() Option {
	return func(o *options) error { o.traceAll = true; return nil }
}

// WithSharedNetNS runs network mode proxy without a network namespace of
// the sandbox's own, for a pod whose runtime refuses new namespaces
// (RuntimeDefault seccomp, no CAP_SYS_ADMIN, no user namespaces): the
// egress proxy listens on 127.0.0.1:3128 of agentbox's own network
// namespace (the pod's) and Landlock's TCP rules hold the sandbox to that
// one port, with UDP and other protocols refused by the seccomp filter as
// always. Host rules, brokered secrets, request rules and push refusal
// are the proxy's, as with a namespace. What the namespace gave and this
// does not: a connection to another host on port 3128 is left to the
// pod's network isolation (a NetworkPolicy), and other containers of the
// pod reach the proxy too. Needs Landlock ABI 4 (refused otherwise, even
// with WithBestEffort); granted loopback ports and TCP ports to every
// host are refused with it.
func WithSharedNetNS() Option {
	return func(o *options) error { o.sharedNetNS = true; return nil }
}

// WithApprove names the approver as `agentbox run --approve` does: "tty"
// (prompt on /dev/tty), "socket:PATH" (JSON-lines protocol, see
// docs/approval-protocol.md), "inbox[:PATH]" (an approval inbox,
// docs/inbox.md) or "none" (every ask is denied, audited as
// ask_unavailable, the default).
func WithApprove(spec string) Option {
	return func(o *options) error {
		if err := approval.CheckSpec(spec); err != nil {
			return &OptionError{Option: "approve", Value: spec, Err: errors.New("want tty, socket:PATH, inbox[:PATH] or none")}
		}
		o.approve = spec
		return nil
	}
}

// WithApprover answers the run's ask decisions through a Go value (see
// approval.Func); it takes precedence over WithApprove.
func WithApprover(a approval.Approver) Option {
	return func(o *options) error { o.approver = a; return nil }
}

// WithWebhook also puts each ask to webhooks (agentbox run
// --approve-webhook URL): a signed JSON payload with a one-time answer
// URL the run serves (docs/operations.md, "Approvals by webhook"). The
// webhook answers as cfg.Identity, whose grants the policy's approvers
// block decides; the first answer from it or the run's other approver
// counts. Its refusals and failed deliveries are audited; a webhook that
// cannot be reached never allows.
func WithWebhook(cfg approval.WebhookConfig) Option {
	return func(o *options) error {
		if err := cfg.Check(); err != nil {
			return &OptionError{Option: "approve-webhook", Err: err}
		}
		o.webhook = &cfg
		return nil
	}
}

// WithAudit writes the run's audit events to the JSON-lines log at path
// ("-" for standard output; default audit.DefaultPath()). "" disables the
// log (events still reach WithEvents).
func WithAudit(path string) Option {
	return func(o *options) error { o.auditPath = path; o.auditWriter = nil; return nil }
}

// WithAuditWriter writes the run's audit events to w, which several runs
// may share (the hash chain stays intact; the caller closes w).
func WithAuditWriter(w *audit.Writer) Option {
	return func(o *options) error { o.auditWriter = w; o.auditPath = ""; return nil }
}

// WithAuditKey names the HMAC key file that signs the run's audit log
// (default <log>.key, created on first use; see audit/key.go).
func WithAuditKey(path string) Option {
	return func(o *options) error { o.auditKey = path; return nil }
}

// WithAuditFailure says what the run does when its audit log cannot be
// written (see AuditFailure; default AuditFailClosed).
func WithAuditFailure(f AuditFailure) Option {
	return func(o *options) error { o.auditFailure = f; return nil }
}

// WithAuditQuota bounds the decision events (program starts, git,
// connections, tool calls) the run may write to the audit log (default
// DefaultAuditQuota; a negative n: no bound). Past it the run fails as on
// an audit write failure (see WithAuditFailure), so a run flooding a
// shared log cannot fill its disk and starve the other runs.
func WithAuditQuota(n int) Option {
	return func(o *options) error { o.auditQuota = n; return nil }
}

// WithEvents calls fn with every audit event of the run (launch, each exec
// decision, limits, exit) after it was written. fn must not block for
// long: exec decisions wait for it.
func WithEvents(fn func(audit.Event)) Option {
	return func(o *options) error { o.events = fn; return nil }
}

// WithStdio sets the command's standard streams (default: this process's).
func WithStdio(stdin, stdout, stderr *os.File) Option {
	return func(o *options) error { o.stdin, o.stdout, o.stderr = stdin, stdout, stderr; return nil }
}

// WithPTY gives the command a pty of its own, relayed to and from the
// given terminal (window size, job control; keys the command injects stay
// in its own pty). A tty approver pauses the relay while it prompts.
func WithPTY(in, out *os.File) Option {
	return func(o *options) error { o.ptyIn, o.ptyOut = in, out; return nil }
}

// WithEnv is the environment the sandbox's environment is scrubbed from
// (default os.Environ()).
func WithEnv(env []string) Option {
	return func(o *options) error { o.env = env; return nil }
}

// WithHelper names the binary started as the sandbox helper: an
// agentbox-helper (cmd/agentbox-helper) of the same build, or a program
// whose main (or TestMain) calls MaybeRunHelper first. Default:
// agentbox-helper next to the running executable, else the executable
// itself.
func WithHelper(exe string) Option {
	return func(o *options) error { o.exe = exe; return nil }
}

// WithKillGrace is how long a stopped or timed-out command gets between
// SIGTERM and SIGKILL (default 5 s).
func WithKillGrace(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return &OptionError{Option: "kill grace", Value: d.String(), Err: errors.New("want a positive duration")}
		}
		o.killGrace = d
		return nil
	}
}

// WithSignalForwarding passes SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to
// this process on to the command (what a CLI wants; off by default).
func WithSignalForwarding() Option {
	return func(o *options) error { o.forwardSignals = true; return nil }
}

// WithRegistry lists the run in the run registry at dir (default
// registry's per-user directory); "" keeps it out of `agentbox ps`.
func WithRegistry(dir string) Option {
	return func(o *options) error { o.registryDir = dir; return nil }
}

// WithRunID sets the run id (default: 12 random hex digits).
func WithRunID(id string) Option {
	return func(o *options) error { o.runID = id; return nil }
}

// WithWarnings receives one-line warnings for the user (protections
// --best-effort let go, audit write failures). Default os.Stderr.
func WithWarnings(w io.Writer) Option {
	return func(o *options) error { o.warnings = w; return nil }
}

// WithDebugLog writes launch timings, counted from t0, to w.
func WithDebugLog(w io.Writer, t0 time.Time) Option {
	return func(o *options) error {
		o.log, o.t0 = w, t0
		o.logf = func(format string, args ...any) {
			fmt.Fprintf(w, "agentbox: %7.2fms "+format+"\n", append([]any{float64(time.Since(t0).Microseconds()) / 1000}, args...)...)
		}
		return nil
	}
}

// planInput turns the options into the plan's input.
func (o *options) planInput(workspace, role string, argv []string) plan.Input {
	in := plan.Input{
		Workspace: workspace, Role: role, Argv: argv, Agent: o.agent,
		Policy: plan.Selection{Files: o.policyFiles, UserFile: o.userPolicy, NoUserFile: o.noUserPolicy, NoDiscover: o.noDiscover},
		Env:    o.env, Dir: o.dir, DirStrict: o.dirStrict,
		Network: o.network, AllowHosts: o.allowHosts, InternalHosts: o.internalHosts, Limits: o.limits,
		Secrets: o.secrets, SecretHeaders: o.secretHeaders, Review: o.review, ReviewDir: o.reviewDir, HostCaches: o.hostCaches,
		GrantRead: o.grantRead, GrantWrite: o.grantWrite, GrantExec: o.grantExec,
		Toolchains: o.toolchains, AgentProfile: o.agentProfile,
		AuditPath: o.auditPath, AuditKey: o.auditKey, HasAuditWriter: o.auditWriter != nil,
		Approve: o.approve, HasApprover: o.approver != nil, RegistryDir: o.registryDir,
		ExecPolicy: o.execPolicy, HelperExe: o.exe, RunID: o.runID, Logf: o.logf,
		Checkpoints: o.checkpoints, CheckpointsExplicit: o.checkpointsExplicit,
		CheckpointStore: o.checkpointStore, CheckpointLimits: o.checkpointLimits,
	}
	if o.pushTokens != nil {
		in.PushHosts = o.pushTokens.Hosts
		in.PushCommands = []string{o.pushTokens.Mint[0]}
		if len(o.pushTokens.Revoke) > 0 {
			in.PushCommands = append(in.PushCommands, o.pushTokens.Revoke[0])
		}
	}
	if o.auditWriter != nil {
		in.AuditWriterPath = o.auditWriter.Path()
	}
	if o.webhook != nil && (in.Approve == "" || in.Approve == "none") {
		in.Approve = "webhook" // the launch line names it
	}
	return in
}

// AgentProfileAuto and AgentProfileNone are the special values of
// WithAgentProfile: choose by the command's identity (the default), or
// apply no profile.
const (
	AgentProfileAuto = ""
	AgentProfileNone = plan.AgentProfileNone
)

// WithAgentProfile applies the named agent profile (`agentbox agents`;
// `agentbox run --agent-profile NAME`) to the run, AgentProfileNone none;
// by default the profile is chosen from the command (claude, codex,
// gemini). A profile lets the agent CLI start: its install directory, a
// read-only view of the user's login and settings in the agent's HOME, its
// API keys and base URL passed through, its API hosts through the egress
// proxy. Everything it starts is still decided by the role.
func WithAgentProfile(name string) Option {
	return func(o *options) error { o.agentProfile = name; return nil }
}

// WithCheckpoints sets where a run's checkpoints go: before each command
// the agent starts, target/ and feedback/ are recorded, so that Undo can
// put back what any command changed. Runs take checkpoints by default,
// in the workspace's default store (under ~/.local/state/agentbox);
// store ("" that default) must lie outside the workspace. The role's
// `checkpoints: enabled: false` turns them off unless explicit is true
// (--checkpoints on).
func WithCheckpoints(store string, explicit bool) Option {
	return func(o *options) error {
		o.checkpoints, o.checkpointsExplicit, o.checkpointStore = true, explicit, store
		return nil
	}
}

// WithCheckpointLimits overrides the role's checkpoint budget and
// exclusions field by field (--checkpoint-max-size, --checkpoint-max-age).
func WithCheckpointLimits(c policy.Checkpoints) Option {
	return func(o *options) error {
		if c.MaxBytes < 0 || c.MaxAge < 0 || c.MaxFileSize < 0 {
			return &OptionError{Option: "checkpoint-max-size", Err: errors.New("negative checkpoint budget")}
		}
		o.checkpointLimits = c
		return nil
	}
}

// WithoutCheckpoints runs without checkpoints (--checkpoints off): no
// undo, and the role's undoable asks about deleting or discarding work
// stand.
func WithoutCheckpoints() Option {
	return func(o *options) error {
		o.checkpoints, o.checkpointsExplicit = false, false
		return nil
	}
}

// OptionError is a bad option value (or command), found before anything
// started.
type OptionError = plan.OptionError

// ExposedError refuses a run in which the sandbox could reach something
// that judges it: a policy file, the audit log, the approval socket or the
// run registry inside an area the sandbox can write (or, for the audit
// log, read).
type ExposedError = plan.ExposedError
