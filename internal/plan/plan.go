// Package plan builds a run's plan: one immutable value holding everything
// a run will get — the role after the run's grants, the boundary, the
// network, limits and environment, the agent profile's views, the policy
// engine and its digest — from the workspace, role, command and the
// caller's options. Build runs once, before anything starts; nothing
// changes the Plan afterwards. The launch line (Summary), the launch
// event (LaunchDetail), the sandbox's configuration and the egress proxy
// all read it, so they cannot disagree.
//
// It is also the one place that turns a caller's selection of policy
// files into policy.LoadOptions (Load): run, check, explain, the hook and
// replay decide with the same layers.
package plan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// Input is what a plan is built from: the caller's options as plain
// values (package agentbox fills it from its Options).
type Input struct {
	Workspace string
	Role      string
	Argv      []string
	Agent     string // agent id (W/agents/ID)
	Policy    Selection

	// Env is the caller's environment the sandbox's is built from (nil:
	// os.Environ()).
	Env []string
	// Dir is the caller's directory; with DirStrict a directory outside
	// the readable areas is an error, else the command starts in W/target.
	Dir       string
	DirStrict bool

	// Network replaces the role's network grant when non-nil; its host
	// lists are added as run grants and imply mode proxy.
	Network    *policy.Network
	AllowHosts []string
	// InternalHosts are host patterns whose names may resolve to
	// loopback or private addresses (--allow-internal-host).
	InternalHosts []string
	// Limits override the role's limits field by field (non-zero wins).
	Limits policy.Limits

	// Secrets are brokered credentials the caller grants (--secret
	// NAME@HOST); the role's network block and the agent profile add
	// theirs.
	Secrets []policy.SecretGrant
	// SecretHeaders declare the request headers a brokered secret's value
	// goes in (--secret-header NAME:HEADER), over its default set.
	SecretHeaders map[string][]string
	// PushHosts are the hosts whose receive-pack requests get a token per
	// approved push (the user's push.tokens): read by the proxy.
	PushHosts []string
	// PushCommands are the mint and revoke commands' files: they run
	// outside the sandbox, so none may lie where it can write.
	PushCommands []string

	GrantRead, GrantWrite, GrantExec []string
	Toolchains                       bool
	// HostCaches offers the host's package caches read-only (nil: the
	// role's host_caches setting).
	HostCaches   *bool
	AgentProfile string // "" auto, "none", or a name

	// What must stay out of the sandbox's reach (layout checks).
	AuditPath, AuditKey string // "" no log; "-" stdout
	AuditWriterPath     string // the path of a caller's audit writer
	HasAuditWriter      bool
	Approve             string // the approver spec (tty, socket:PATH, none)
	HasApprover         bool   // a Go approver was given
	RegistryDir         string

	// Checkpoints turns checkpoints on (the role's checkpoints.enabled:
	// false turns them off unless CheckpointsExplicit); CheckpointStore
	// is the store ("" checkpoint.DefaultDir); CheckpointLimits override
	// the role's budget and exclusions field by field.
	Checkpoints, CheckpointsExplicit bool
	CheckpointStore                  string
	CheckpointLimits                 policy.Checkpoints

	// Review keeps the run's writes to target/ in a layer of its own
	// (applied or discarded afterwards); ReviewDir is where layers are
	// kept ("" layer.DefaultRoot).
	Review    bool
	ReviewDir string

	ExecPolicy bool
	HelperExe  string // the helper binary (WithHelper; "" the default)
	RunID      string
	Logf       func(string, ...any)
}

// Plan is a run, fully prepared. It is never changed after Build.
type Plan struct {
	// BestEffort: the run was started with --best-effort (the launch
	// line's protections say what that lets go).
	BestEffort bool
	ID         string
	Argv       []string
	Agent      string
	// Role is the merged role with the run's grants: FS.Run* hold --ro,
	// --rw, --exec, toolchain and agent profile paths; Env the names passed
	// through.
	Role policy.RoleInfo
	// Engine decides; it holds the run's grants as session-layer rules.
	Engine *policy.Engine
	// Grants are the rules the run added to the policy (for Summary and
	// the audit log).
	Grants policy.Grants
	// Boundary is the resolved workspace and the Landlock rule set.
	Boundary *boundary.Plan
	// Network is the effective network grant (the role's, or the run's
	// replacement; mode proxy when hosts were granted).
	Network policy.Network
	// Limits are the role's limits with the run's overrides.
	Limits policy.Limits
	// ExtraEnv are NAME=value settings added to the sandbox's environment
	// (toolchain variables, git identity, the profile's set_env); their
	// names are in Role.Env.
	ExtraEnv []string
	// CallerEnv is the environment the sandbox's is scrubbed from.
	CallerEnv []string
	// Markers are agentbox's own AGENTBOX_* variables for the sandbox
	// (AGENTBOX_CHECKPOINTS, AGENTBOX_RUN, AGENTBOX_SUPERVISED).
	Markers []string
	// Dir is the command's working directory ("" is W/target).
	Dir string
	// Profile is the agent profile applied, nil if none.
	Profile *Profile
	// Checkpoints is how the run's checkpoints are taken; nil: off.
	Checkpoints *Checkpoints
	// Secrets are the credentials the run brokers (secrets.go).
	Secrets []Secret
	// Inspection is how the egress proxy reads HTTPS; nil: it reads none.
	Inspection *Inspection
	// PushHosts are Input.PushHosts in a run whose network goes through
	// the proxy (nil otherwise): their HTTPS is read.
	PushHosts []string
	// Review is set for a review run (its writes land in a layer).
	Review *Review
	// HostCaches are the host package caches the run reads; CacheNotes
	// say why one is not offered.
	HostCaches []HostCache
	CacheNotes []string
	// coldHint: host caches are off; placeCacheLayers may note a cold
	// agent build cache.
	coldHint bool

	// loopback are granted 127.0.0.1:PORT hosts forwarded into the
	// sandbox's network namespace (profile.go, Forwards).
	loopback []uint16

	// ahead brings checkLayout the paths walked while the policy loaded
	// (Build; nil: none); host is what the host's caches and git identity
	// gave by then (nil: asked in pathGrants).
	ahead chan *layoutAhead
	host  *hostAhead

	approve     string
	approveNote string // why the approver cannot answer (tty without a terminal)
	hasApprover bool
	execPolicy  bool
}

// Build prepares a run: loads the policy, applies the run's grants and
// agent profile, resolves the boundary, checks the layout and the working
// directory. Nothing is started and nothing outside is changed. Errors
// name the option, file or path at fault (*OptionError, *ExposedError).
func Build(in Input) (*Plan, error) {
	p, err := newPlan(in)
	if err != nil {
		return nil, err
	}
	// The system allowlist's rules (an lstat of each of ~45 paths, their
	// symlinks resolved) are made on another goroutine while the policy
	// loads; boundary.ResolveWith waits for them. The channel is buffered:
	// a Build that fails first leaves no goroutine behind once it ends.
	//
	// After them, on the same goroutine, the host's caches and git
	// identity are learnt and the paths of the layout check the run's
	// input alone names are walked (resolveAhead; checkLayout takes them
	// when they are ready by then). The exec supervisor's program-identity
	// table is not built here: it is first needed at the command's first
	// exec, and supervise.Run builds it while the helper sets itself up,
	// when the launcher has a CPU to spare.
	sysRules := make(chan []boundary.Rule, 1)
	hostCh := make(chan *hostAhead, 1)
	p.ahead = make(chan *layoutAhead, 1)
	env := p.CallerEnv
	go func() {
		sysRules <- boundary.SystemRules()
		hostCh <- learnHostAhead(env, in)
		p.ahead <- resolveAhead(in)
	}()
	sel := in.Policy
	sel.Workspace, sel.ProjectDir, sel.Home = in.Workspace, discoverDir(in.Workspace, in.Dir), sandbox.EnvValue(p.CallerEnv, "HOME")
	base, err := load.Policy(Load(in.Role, sel))
	if err != nil {
		return nil, err
	}
	if in.Logf != nil {
		in.Logf("policy loaded (%d files)", len(base.Files()))
	}
	// The host's caches and git identity, when learnt by now (else
	// pathGrants asks itself).
	select {
	case p.host = <-hostCh:
	default:
	}
	role := base.Role()
	role.Env = slices.Clone(role.Env)
	// net.mode is how the sandbox reaches the network (proxy, TCP ports);
	// the hosts are rules of the engine.
	net := netChoice{mode: role.Network, given: in.Network != nil}
	if net.given {
		net.mode = *in.Network
	}

	// The run's own grants.
	var g policy.Grants
	if err := networkGrants(in, role.Network.Proxy, &net, &g); err != nil {
		return nil, err
	}
	wsReal := realPath(in.Workspace)
	if err := p.pathGrants(in, &role, wsReal, &g); err != nil {
		return nil, err
	}
	prof, err := p.applyProfile(base, in, &role, wsReal, &net, &g)
	if err != nil {
		return nil, err
	}
	for _, kv := range p.ExtraEnv {
		name, _, _ := strings.Cut(kv, "=")
		role.Env = append(role.Env, name)
	}

	system := func() []boundary.Rule { return <-sysRules }
	if p.Boundary, err = boundary.ResolveWith(in.Workspace, in.Agent, role.FS, system); err != nil {
		return nil, err
	}
	p.profileInHome(prof, &role, &g)
	p.placeCacheLayers(&role)
	eng := base
	if !g.Empty() {
		if eng, err = base.WithGrants(g); err != nil {
			return nil, grantError(err)
		}
	}
	nw, err := effectiveNetwork(in, eng, net.mode)
	if err != nil {
		return nil, err
	}
	p.Engine, p.Grants, p.Network = eng, g, nw
	role.Network = nw
	p.Limits = role.Limits.Overlay(in.Limits)
	role.Limits = p.Limits
	p.Role = role

	if err := p.planRunParts(in); err != nil {
		return nil, err
	}
	p.setMarkers()
	return p, nil
}

// newPlan checks the command and the agent id and starts the plan: its
// run id (made unless given) and the caller's environment.
func newPlan(in Input) (*Plan, error) {
	if len(in.Argv) == 0 || in.Argv[0] == "" {
		return nil, &OptionError{Option: "command", Err: errors.New("no command given")}
	}
	if err := boundary.ValidAgentID(in.Agent); err != nil {
		return nil, &OptionError{Option: "agent", Value: in.Agent, Err: err}
	}
	p := &Plan{Argv: in.Argv, Agent: in.Agent, approve: in.Approve, hasApprover: in.HasApprover, execPolicy: in.ExecPolicy, ID: in.RunID}
	if p.ID == "" {
		p.ID = sandbox.NewRunID()
	}
	p.CallerEnv = in.Env
	if p.CallerEnv == nil {
		p.CallerEnv = osEnviron()
	}
	return p, nil
}

// netChoice is the network mode a run gets and whether the run asked for
// one (then a grant needing the proxy does not switch to it).
type netChoice struct {
	mode  policy.Network
	given bool
}

// networkGrants adds the hosts the run grants (WithNetwork's lists,
// --allow-host, the hosts brokered secrets go to) to g, switching to
// network mode proxy where the run asked for no mode and the role's is
// not proxy already (roleProxy); a grant the asked-for mode cannot carry
// is an error naming its option.
func networkGrants(in Input, roleProxy bool, net *netChoice, g *policy.Grants) error {
	if n := in.Network; n != nil {
		for _, l := range []struct {
			dec  policy.Decision
			pats []string
		}{{policy.Deny, n.Deny}, {policy.Ask, n.Ask}, {policy.Allow, n.Allow}} {
			if len(l.pats) > 0 {
				g.Hosts = append(g.Hosts, policy.HostGrant{Decision: l.dec, Source: "WithNetwork", Patterns: l.pats})
			}
		}
		if len(n.Allow)+len(n.Ask)+len(n.Deny) > 0 {
			net.mode.Proxy = true
		}
	}
	if len(in.AllowHosts) > 0 {
		g.Hosts = append(g.Hosts, policy.HostGrant{Decision: policy.Allow, Source: "--allow-host", Patterns: in.AllowHosts})
		if !net.given && !roleProxy {
			net.mode, net.given = policy.Network{Proxy: true}, true
		}
		if !net.mode.Proxy {
			return &OptionError{Option: "allow-host", Err: errors.New("hosts are decided in network mode proxy only; drop --network or give --network proxy")}
		}
	}
	for _, sg := range in.Secrets {
		// A host a secret is brokered for is one the run may reach.
		src := sg.Source
		if src == "" {
			src = "--secret"
		}
		g.Hosts = append(g.Hosts, policy.HostGrant{Decision: policy.Allow, Source: src, Patterns: sg.Hosts})
		if !net.given && !roleProxy {
			net.mode, net.given = policy.Network{Proxy: true}, true
		}
		if !net.mode.Proxy {
			return &OptionError{Option: "secret", Value: sg.Name, Err: errors.New("brokered secrets need network mode proxy; drop --network or give --network proxy")}
		}
	}
	return nil
}

// pathGrants adds the run's path grants to role and g: --ro, the
// toolchains discovered on PATH and --exec (programs), --rw (writes), and
// plans the host caches and the host's git identity.
func (p *Plan) pathGrants(in Input, role *policy.RoleInfo, wsReal string, g *policy.Grants) error {
	role.FS.RunRead = absPaths(in.GrantRead)
	tc := discoverToolchains(sandbox.EnvValue(p.CallerEnv, "PATH"), !in.Toolchains)
	var tcDirs []string
	for _, d := range tc.dirs {
		if !strings.HasPrefix(d, wsReal+"/") {
			tcDirs = append(tcDirs, d)
		}
	}
	p.ExtraEnv = tc.env
	if err := p.planHostCaches(in, role, wsReal); err != nil {
		return err
	}
	if !role.Git.NoHostIdentity {
		if p.host != nil {
			p.ExtraEnv = append(p.ExtraEnv, p.host.gitIdentity...)
		} else {
			p.ExtraEnv = append(p.ExtraEnv, hostGitIdentity(p.CallerEnv)...)
		}
	}
	execDirs := absPaths(in.GrantExec)
	role.FS.RunExec = append(slices.Clone(execDirs), absPaths(tcDirs)...)
	if len(tcDirs) > 0 {
		g.Programs = append(g.Programs, policy.PathGrant{Source: "toolchains", Why: "a program of a toolchain discovered on PATH", Dirs: tcDirs})
	}
	if len(execDirs) > 0 {
		g.Programs = append(g.Programs, policy.PathGrant{Source: "--exec", Why: "a program under a directory granted with --exec", Dirs: execDirs})
	}
	role.FS.RunWrite = absPaths(in.GrantWrite)
	if len(role.FS.RunWrite) > 0 {
		g.Writes = append(g.Writes, policy.PathGrant{Source: "--rw", Dirs: role.FS.RunWrite})
	}
	return nil
}

// applyProfile selects the run's agent profile (nil: none) and adds what
// it grants to role and g: the agent CLI's install (exec, read), its
// environment names and hosts (switching to network mode proxy where the
// run asked for no mode and has none).
func (p *Plan) applyProfile(base *policy.Engine, in Input, role *policy.RoleInfo, wsReal string, net *netChoice, g *policy.Grants) (*Profile, error) {
	prof, err := selectProfile(base, in, p.CallerEnv, p.host)
	if err != nil || prof == nil {
		return nil, err
	}
	pg, err := prof.apply(sandbox.EnvValue(p.CallerEnv, "HOME"), wsReal, p.CallerEnv)
	if err != nil {
		return nil, err
	}
	role.FS.RunExec = append(role.FS.RunExec, pg.exec...)
	role.FS.RunRead = append(role.FS.RunRead, pg.read...)
	role.Env = append(role.Env, prof.Profile.Env...)
	if len(pg.exec) > 0 {
		g.Programs = append(g.Programs, policy.PathGrant{Source: "agent-profile:" + prof.Profile.Name, Why: "the agent CLI's own install", Dirs: pg.exec})
	}
	if len(prof.Hosts) > 0 {
		g.Hosts = append(g.Hosts, policy.HostGrant{Decision: policy.Allow, Source: "agent-profile:" + prof.Profile.Name, Patterns: prof.Hosts})
		if !net.given && !net.mode.Proxy && len(net.mode.TCPConnect) == 0 {
			net.mode, net.given = policy.Network{Proxy: true}, true
		}
	}
	p.Profile = prof
	return prof, nil
}

// profileInHome adds what the agent profile names in the agent's home
// (known once the boundary is resolved): its sources and source files,
// and the environment it sets there.
func (p *Plan) profileInHome(prof *Profile, role *policy.RoleInfo, g *policy.Grants) {
	if prof == nil {
		return
	}
	if len(prof.Profile.Sources) > 0 {
		var dirs []string
		for _, s := range prof.Profile.Sources {
			dirs = append(dirs, filepath.Join(p.Boundary.Home, s))
		}
		g.Sources = append(g.Sources, policy.PathGrant{Source: "agent-profile:" + prof.Profile.Name, Dirs: dirs})
	}
	if len(prof.Profile.SourceFiles) > 0 {
		g.SourceFiles = append(g.SourceFiles, policy.SourceFileGrant{Source: "agent-profile:" + prof.Profile.Name,
			Home: p.Boundary.Home, Rel: prof.Profile.SourceFiles})
	}
	for _, kv := range prof.setEnv(p.Boundary.Home) {
		p.ExtraEnv = append(p.ExtraEnv, kv)
		name, _, _ := strings.Cut(kv, "=")
		role.Env = append(role.Env, name)
	}
}

// effectiveNetwork is the run's network: the engine's host lists (the
// role's and the grants'), the mode and rate the run asked for, and the
// internal hosts it lets resolve to internal addresses.
func effectiveNetwork(in Input, eng *policy.Engine, mode policy.Network) (policy.Network, error) {
	nw := eng.Role().Network
	nw.Proxy, nw.TCPConnect, nw.TCPBind = mode.Proxy, mode.TCPConnect, mode.TCPBind
	if in.Network != nil && in.Network.RatePerMinute > 0 {
		nw.RatePerMinute = in.Network.RatePerMinute
	}
	nw.Internal = slices.Concat(nw.Internal, in.InternalHosts)
	if in.Network != nil {
		nw.Internal = slices.Concat(nw.Internal, in.Network.Internal)
	}
	if _, err := policy.HostMatcher(nw.Internal); err != nil {
		return nw, &OptionError{Option: "allow-internal-host", Err: err}
	}
	if len(in.InternalHosts) > 0 && !nw.Proxy {
		return nw, &OptionError{Option: "allow-internal-host", Value: strings.Join(in.InternalHosts, " "),
			Err: errors.New("lets a name resolve to an internal address through the egress proxy, but the run's network is " + networkWord(nw) + ": add --allow-host " + in.InternalHosts[0] + " (or --network proxy)")}
	}
	return nw, nil
}

// planRunParts checks the layout and plans the rest of the run: its
// working directory, the approver's terminal, forwarded ports, secrets,
// review layer or checkpoints.
func (p *Plan) planRunParts(in Input) error {
	if err := p.checkLayout(in); err != nil {
		return err
	}
	var err error
	if p.Dir, err = workDir(p.Boundary, in.Dir, in.DirStrict); err != nil {
		return err
	}
	if in.Approve == "tty" && !in.HasApprover {
		// Asked for, but nobody can answer: said at launch, not found out
		// at the first ask.
		if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
			p.approveNote = "no terminal (" + err.Error() + "): asks are denied"
		} else {
			f.Close()
		}
	}
	if err := p.planForwards(in); err != nil {
		return err
	}
	if err := p.planSecrets(in); err != nil {
		return err
	}
	if err := p.planReview(in); err != nil {
		return err
	}
	if p.Review == nil {
		// A review run's layer is its undo: no checkpoints of target/.
		if err := p.planCheckpoints(in); err != nil {
			return err
		}
	}
	// Undoable asks allow while the run can be undone: checkpoints, or a
	// review run (nothing lands in target/ before an apply).
	p.Engine.SetCheckpoints(p.Checkpoints != nil || p.Review != nil)
	return nil
}

// setMarkers sets the environment markers the agent's own decision
// tools read.
func (p *Plan) setMarkers() {
	// The agent's own decision tools (agentbox hook, check) decide as the
	// run does. A hint only: the agent can change it, and the exec
	// supervisor decides with the run's engine regardless.
	cpOn := "off"
	if p.Checkpoints != nil || p.Review != nil {
		cpOn = "on"
	}
	p.Markers = append(p.Markers, "AGENTBOX_CHECKPOINTS="+cpOn, "AGENTBOX_RUN="+p.ID)
	if p.execPolicy {
		// agentbox escalate inside says whether a supervisor decides.
		p.Markers = append(p.Markers, "AGENTBOX_SUPERVISED=1")
	}
}

// grantError names the option whose grant could not be compiled.
func grantError(err error) error {
	var ge *policy.GrantError
	if !errors.As(err, &ge) {
		return err
	}
	switch src := ge.Source; {
	case src == "WithNetwork":
		return &OptionError{Option: "network", Err: ge.Err}
	case strings.HasPrefix(src, "agent-profile:"):
		return &OptionError{Option: "agent-profile", Value: strings.TrimPrefix(src, "agent-profile:"), Err: ge.Err}
	default:
		return &OptionError{Option: strings.TrimPrefix(src, "--"), Err: ge.Err}
	}
}

// SandboxEnv is the environment the sandbox's is scrubbed from: the
// caller's plus ExtraEnv (whose names are in Role.Env).
func (p *Plan) SandboxEnv() []string {
	if len(p.ExtraEnv) == 0 {
		return p.CallerEnv
	}
	env := make([]string, 0, len(p.CallerEnv)+len(p.ExtraEnv))
	for _, kv := range p.CallerEnv {
		if !p.brokered(kv) { // a brokered secret's real value never goes in
			env = append(env, kv)
		}
	}
	return append(env, p.ExtraEnv...)
}

// Workspace is the workspace's absolute, resolved path.
func (p *Plan) Workspace() string { return p.Boundary.Workspace }

// absPaths makes paths absolute, leaving one holding ".." as given (the
// boundary refuses it with its own message).
func absPaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if a, err := filepath.Abs(p); err == nil && !strings.Contains(p, "..") {
			p = a
		}
		out = append(out, p)
	}
	return out
}

// realPath is p absolute with symlinks resolved (as far as possible).
func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := evalSymlinks(p); err == nil {
		return real
	}
	return p
}

// Sandbox is the mechanism's configuration of the plan: plain values (the
// boundary, limits, network mode, environment); the caller adds stdio and
// callbacks. version goes into the launch event.
func (p *Plan) Sandbox(version string) sandbox.Config {
	l := p.Limits
	return sandbox.Config{
		Argv: p.Argv, Plan: p.Boundary, Role: p.Role.Name, PassEnv: p.Role.Env, Dir: p.Dir, RunID: p.ID,
		Network: sandbox.Network{Proxy: p.Network.Proxy, TCPConnect: p.Network.TCPConnect, TCPBind: p.Network.TCPBind},
		Limits: sandbox.Limits{MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, Pids: l.Pids, MaxFileSize: l.MaxFileSize,
			NoFile: l.NoFile, Timeout: l.Timeout},
		Env:          p.SandboxEnv(),
		Markers:      p.Markers,
		HostCaches:   p.cacheLayers(),
		LaunchDetail: func() map[string]string { return p.LaunchDetail(version) },
	}
}

// CacheLayers are the host caches' copy-on-write layers the run mounts
// (Sandbox's HostCaches), for making their overlays ahead
// (sandbox.PrepareCacheMounts).
func (p *Plan) CacheLayers() []sandbox.CacheLayer { return p.cacheLayers() }

// WritableRoots are the directories the sandbox can write that the human
// uses afterwards: target/, feedback/ and the --rw grants (the agent's
// own area is its HOME, not scanned).
func (p *Plan) WritableRoots() []string {
	return append([]string{p.Boundary.Target, p.Boundary.Feedback}, p.Role.FS.RunWrite...)
}

// EngineFor builds the engine of role for this run, with the same policy
// files and the run's grants: a granted role change (agentbox escalate).
func (p *Plan) EngineFor(role string) (*policy.Engine, error) {
	opts := p.Engine.LoadOptions()
	opts.Role = role
	base, err := load.Policy(opts)
	if err != nil {
		return nil, err
	}
	eng := base
	if !p.Grants.Empty() {
		if eng, err = base.WithGrants(p.Grants); err != nil {
			return nil, err
		}
	}
	eng.SetCheckpoints(p.Checkpoints != nil || p.Review != nil)
	return eng, nil
}

// Owner is the uid owning the workspace: without an approvers block, the
// one (with root) who may grant a role change or an "always" answer.
func (p *Plan) Owner() int {
	var st unix.Stat_t
	if unix.Stat(p.Boundary.Workspace, &st) != nil {
		return 0
	}
	return int(st.Uid)
}
