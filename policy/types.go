package policy

import (
	"strings"
	"time"
)

// Decision is the outcome of evaluating an action. The numeric order is the
// order of strictness: Allow < Ask < Deny, so max() of two decisions is the
// stricter one.
type Decision int

// Decisions, least strict first.
const (
	Allow Decision = iota
	Ask
	Deny
)

// String returns "allow", "ask" or "deny".
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "invalid"
}

// Layer is where a rule came from. Higher layers win ties between allow/ask
// rules of equal specificity (never over a deny).
type Layer int

// Layers, lowest precedence first.
const (
	LayerBuiltin Layer = iota // compiled into agentbox
	LayerRole                 // a role definition (built-in or from a file)
	LayerUser                 // $XDG_CONFIG_HOME/agentbox/policy.yaml
	LayerProject              // <workspace>/agentbox.yaml
	LayerFile                 // --policy FILE
	LayerSession              // "always" answers given during a run
)

// String returns the layer's name as printed in explanations and audit events.
func (l Layer) String() string {
	switch l {
	case LayerBuiltin:
		return "builtin"
	case LayerRole:
		return "role"
	case LayerUser:
		return "user"
	case LayerProject:
		return "project"
	case LayerFile:
		return "file"
	case LayerSession:
		return "session"
	}
	return "invalid"
}

// RuleRef identifies the rule behind a decision so it can be explained and audited.
type RuleRef struct {
	ID     string `json:"id"`     // e.g. "developer/git.push"
	Layer  Layer  `json:"-"`      // see LayerName
	Source string `json:"source"` // "builtin:developer" or "/path/file.yaml:12"
	// Description and Instead are the rule's description and what to do
	// instead (`instead:`), for the refusal text an agent reads.
	Description string `json:"-"`
	Instead     string `json:"-"`
	// Approver is the approver role whose members may answer the rule's
	// asks ("" anyone who reaches the approver).
	Approver string `json:"-"`
}

// Cited is how a refusal names the rule: "rule ID: description" ("rule
// ID" without one); "" for no rule.
func (r *RuleRef) Cited() string {
	switch {
	case r == nil || r.ID == "":
		return ""
	case r.Description != "":
		return "rule " + r.ID + ": " + r.Description
	}
	return "rule " + r.ID
}

// InsteadText is the " Instead: ...." sentence a refusal ends with when
// the rule says what to do instead ("" otherwise).
func (r *RuleRef) InsteadText() string {
	if r == nil || r.Instead == "" {
		return ""
	}
	return " Instead: " + strings.TrimSuffix(r.Instead, ".") + "."
}

// Access is what a role may do inside one workspace area, enforced by Landlock.
type Access string

// Access levels for workspace areas.
const (
	AccessNone      Access = "none" // not reachable at all
	AccessRead      Access = "ro"   // read files, list directories
	AccessReadExec  Access = "rx"   // read and execute
	AccessReadWrite Access = "rw"   // read, create, write, delete, rename
	AccessAll       Access = "rwx"  // read, write and execute
)

// FSGrants are a role's filesystem grants per workspace area (docs/architecture.md).
type FSGrants struct {
	Context     Access `json:"context" yaml:"context"`
	Target      Access `json:"target" yaml:"target"`
	Feedback    Access `json:"feedback" yaml:"feedback"`
	OwnAgent    Access `json:"own_agent" yaml:"own_agent"`       // agents/<id>
	OtherAgents Access `json:"other_agents" yaml:"other_agents"` // agents/* except own
	// ReadOnly lists gitignore-style globs relative to the workspace that stay
	// read-only even inside a writable area (e.g. "target/**/.git/hooks").
	ReadOnly []string `json:"readonly,omitempty" yaml:"readonly,omitempty"`
	// ExtraRead, ExtraExec and ExtraWrite are absolute paths outside the
	// workspace granted by the role: readable; readable and executable (a
	// toolchain); readable and writable (a cache the role shares). Empty for
	// built-in roles. `agentbox run --ro/--exec/--rw` add to them per run.
	ExtraRead  []string `json:"extra_read,omitempty" yaml:"extra_read,omitempty"`
	ExtraExec  []string `json:"extra_exec,omitempty" yaml:"extra_exec,omitempty"`
	ExtraWrite []string `json:"extra_write,omitempty" yaml:"extra_write,omitempty"`
	// RunRead, RunExec and RunWrite are the same grants given for one run
	// (`agentbox run --ro/--exec/--rw`); errors name the flag.
	RunRead  []string `json:"-" yaml:"-"`
	RunExec  []string `json:"-" yaml:"-"`
	RunWrite []string `json:"-" yaml:"-"`
}

// Network is a role's network grant. The zero value means no network at all.
type Network struct {
	// TCPConnect lists TCP ports the sandbox may connect to.
	TCPConnect []uint16 `json:"tcp_connect,omitempty" yaml:"tcp_connect,omitempty"`
	// TCPBind lists TCP ports the sandbox may bind.
	TCPBind []uint16 `json:"tcp_bind,omitempty" yaml:"tcp_bind,omitempty"`
	// Proxy sends the sandbox's connections through agentbox's egress
	// proxy: its own network namespace with only loopback and the proxy;
	// each connection is decided by host (tool:net actions; policy/host.go).
	Proxy bool `json:"proxy,omitempty"`
	// Allow, Ask and Deny are host patterns (example.com, *.example.com,
	// host:port) decided so; Default decides unlisted hosts (deny unless
	// set). They imply Proxy.
	Allow   []string  `json:"allow,omitempty"`
	Ask     []string  `json:"ask,omitempty"`
	Deny    []string  `json:"deny,omitempty"`
	Default *Decision `json:"-"`
	// Internal are host patterns whose names may resolve to loopback,
	// private, link-local or unique-local addresses. Any other allowed
	// name that does is refused (DNS rebinding would reach services on
	// the host or its network); an allow entry naming an address itself
	// needs no entry here.
	Internal []string `json:"internal,omitempty"`
	// RatePerMinute limits new connections per host (0: no limit).
	RatePerMinute int `json:"rate_per_minute,omitempty"`
	// Inspect are host patterns whose TLS the egress proxy terminates (with
	// a CA of the run's own that the sandbox trusts), so that their requests
	// are decided by Requests and a git push to them is refused on the wire.
	// A brokered secret's hosts and the hosts Requests name are inspected
	// too.
	Inspect []string `json:"inspect,omitempty"`
	// Requests decide single requests (method, host, path) on inspected
	// hosts and plain http://.
	Requests []RequestRule `json:"requests,omitempty"`
	// Secrets are credentials agentbox brokers: the sandbox's variable of
	// each name holds a placeholder; the proxy puts the caller's real value
	// in its place in requests to the listed hosts only.
	Secrets []SecretGrant `json:"secrets,omitempty"`
}

// SecretGrant is one brokered credential: the variable NAME (its value is
// read from the caller's environment at launch) and the host patterns the
// real value may be sent to.
type SecretGrant struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
	// Source says where the grant came from (a policy file and line,
	// --secret, agent-profile:NAME).
	Source string `json:"source,omitempty"`
}

// Limits are resource limits for a run. Zero means "not limited by the role".
type Limits struct {
	MemoryBytes  int64         `json:"memory_bytes,omitempty"`
	CPUs         float64       `json:"cpus,omitempty"`
	Pids         int64         `json:"pids,omitempty"`
	MaxFileSize  int64         `json:"max_file_size,omitempty"` // RLIMIT_FSIZE bytes
	NoFile       uint64        `json:"nofile,omitempty"`        // RLIMIT_NOFILE
	Timeout      time.Duration `json:"timeout,omitempty"`       // whole run
	ApprovalWait time.Duration `json:"approval_timeout,omitempty"`
}

// Overlay returns l with every non-zero field of o put over it: how a run's
// flags or options override the role's limits field by field.
func (l Limits) Overlay(o Limits) Limits {
	if o.MemoryBytes != 0 {
		l.MemoryBytes = o.MemoryBytes
	}
	if o.CPUs != 0 {
		l.CPUs = o.CPUs
	}
	if o.Pids != 0 {
		l.Pids = o.Pids
	}
	if o.MaxFileSize != 0 {
		l.MaxFileSize = o.MaxFileSize
	}
	if o.NoFile != 0 {
		l.NoFile = o.NoFile
	}
	if o.Timeout != 0 {
		l.Timeout = o.Timeout
	}
	if o.ApprovalWait != 0 {
		l.ApprovalWait = o.ApprovalWait
	}
	return l
}

// GitSafety holds the role's (docs/policy.md) git safety measures.
type GitSafety struct {
	MaxCommits            int  `json:"max_commits,omitempty"` // per run; 0 = unlimited
	CommitMessageRequired bool `json:"commit_message_required,omitempty"`
	// NoHostIdentity keeps the caller's git identity (user.name and
	// user.email of ~/.gitconfig) out of the sandbox (`host_identity: false`).
	NoHostIdentity bool `json:"no_host_identity,omitempty"`
}

// DeletionSafety holds the role's (docs/policy.md) deletion rules: path globs (relative to the
// workspace, gitignore-style) whose deletion is forbidden, needs approval, or
// is always fine.
type DeletionSafety struct {
	Forbidden       []string `json:"forbidden,omitempty"`
	RequireApproval []string `json:"require_approval,omitempty"`
	AutoApprove     []string `json:"auto_approve,omitempty"`
}

// RoleInfo is the non-rule part of an effective (merged) role: everything the
// sandbox needs to build the kernel boundary. Rules live in the compiled engine.
type RoleInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Extends     string   `json:"extends,omitempty"`
	Default     Decision `json:"-"`
	FS          FSGrants `json:"filesystem"`
	Network     Network  `json:"network"`
	Limits      Limits   `json:"limits"`
	Env         []string `json:"env,omitempty"` // variables passed through
	// InjectEnv are loader/runtime variables (LD_LIBRARY_PATH, PYTHONPATH)
	// a program that is not sensitive may be started with, pointing
	// anywhere, without asking (see policy/envrule.go).
	InjectEnv []string       `json:"inject_env,omitempty"`
	Git       GitSafety      `json:"git"`
	Deletions DeletionSafety `json:"deletions"`
	// Checkpoints are the role's undo settings.
	Checkpoints Checkpoints `json:"checkpoints"`
	// Review: the role's runs write into a layer of their own, applied or
	// discarded afterwards (agentbox run --review).
	Review bool `json:"review,omitempty"`
	// HostCaches offers the host's package caches read-only (the Go
	// module cache as a file:// GOPROXY): builds and test suites work
	// without network.
	HostCaches bool `json:"host_caches,omitempty"`
	// UnknownPrograms: a program no rule names is allowed while the run
	// can be undone (checkpoints on, or a review run) instead of taking
	// the role's default, unless it is a network client, changes
	// privilege, signals other processes or reaches devices
	// (unknown_programs: allow).
	UnknownPrograms bool `json:"unknown_programs,omitempty"`
	// Programs are rights of single programs: hosts and secrets that
	// follow the program, not the run (programs.go).
	Programs []ProgramGrant `json:"programs,omitempty"`
}

// Checkpoints are the role's (docs/policy.md) undo settings: a checkpoint
// of target/ and feedback/ before each command the agent starts, kept in
// a store outside the workspace. Zero fields take agentbox's defaults.
type Checkpoints struct {
	// Off turns checkpoints off (`enabled: false`): the role then asks
	// before every spelling of deleting or discarding work.
	Off bool `json:"off,omitempty"`
	// MaxBytes and MaxAge bound the workspace's store; the oldest
	// checkpoints are pruned first.
	MaxBytes int64         `json:"max_size,omitempty"`
	MaxAge   time.Duration `json:"max_age,omitempty"`
	// Exclude are directory names left out (they replace the defaults,
	// node_modules, .venv...); MaxFileSize leaves out larger files.
	Exclude     []string `json:"exclude,omitempty"`
	MaxFileSize int64    `json:"max_file_size,omitempty"`
}

// Overlay returns c with every set field of o put over it.
func (c Checkpoints) Overlay(o Checkpoints) Checkpoints {
	if o.Off {
		c.Off = true
	}
	if o.MaxBytes != 0 {
		c.MaxBytes = o.MaxBytes
	}
	if o.MaxAge != 0 {
		c.MaxAge = o.MaxAge
	}
	if o.Exclude != nil {
		c.Exclude = o.Exclude
	}
	if o.MaxFileSize != 0 {
		c.MaxFileSize = o.MaxFileSize
	}
	return c
}
