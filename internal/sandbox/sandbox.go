// Package sandbox launches a command inside agentbox's kernel boundary
// (docs/architecture.md) and waits for it.
//
// # How a run is built
//
// Run starts a helper process (argv[0] = HelperArgv0; package
// sandbox/helper): the agentbox-helper binary next to the running
// executable when there is one, else the executable itself (/proc/self/exe,
// or Config.Exe), whose main calls MaybeRunHelper. The parent passes the
// helper its configuration (helper.Config, a small binary encoding) over an
// inherited pipe (fd 3), which the helper reads and closes. The helper, in
// this order:
//
//  1. checks that its parent is still the launcher (pdeathsig SIGKILL is set
//     at fork, so a launcher that dies later takes the helper with it),
//  2. sets rlimits (core 0, fsize, nofile), changes into W/target,
//  3. drops every capability (bounding, ambient, effective, permitted,
//     inheritable) when started with any, so a root launch is not root-capable
//     inside,
//  4. sets no_new_privs and applies Landlock (filesystem, TCP ports, IPC
//     scopes: see sandbox/helper/landlock.go), then the seccomp filter
//     and a small stacked filter of its own (installModeFilter: no
//     set-uid/set-gid chmod; no unix sockets below Landlock ABI 9),
//  5. blocks reading one "go" byte from fd 4, then execve's the command. On
//     exec failure it writes a one-line reason to stderr and exits 127 (not
//     found) or 126 (not executable / not allowed).
//
// Between 3 and 5 the parent puts the helper into its cgroup and (when
// Config.Supervise is set) attaches the exec supervisor, then releases it by
// writing the go byte. A status pipe (fd 5, close-on-exec) tells the parent
// whether the helper reached execve or why it did not.
//
// # Nothing outlives a run
//
// The launcher is a child subreaper (PR_SET_CHILD_SUBREAPER), so orphans of
// the command are re-parented to it. When the command exits, times out, or the
// launcher is told to stop, every remaining descendant is killed (cgroup kill
// when there is a cgroup, plus a /proc walk of the launcher's descendants) and
// reaped before Run returns. If the launcher itself is SIGKILLed, the helper's
// pdeathsig kills the command, the supervisor's PTRACE_O_EXITKILL (when used)
// kills every traced process, and stale cgroups are removed by the next run.
//
// # Exit status
//
// Result.ExitCode is the command's exit status; 128+N when it was killed by
// signal N; 124 when --timeout fired; 126 when it was denied or not
// executable; 127 when not found. Run returns an error (exit 125 in the CLI)
// only when agentbox itself could not build or run the sandbox.
//
// # Fail closed
//
// Every protection the configuration asks for is required: if the kernel
// cannot provide it (Landlock ABI, cgroups for limits, seccomp), Run refuses
// with one line naming what is missing and the flag (--best-effort) that
// accepts the weaker mode. BestEffort never drops no_new_privs, the seccomp
// filter or the environment scrub.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// Config describes one sandboxed run. Zero values are safe defaults: no
// network, no limits beyond rlimits, no timeout, stdio inherited.
type Config struct {
	// Argv is the command to run; Argv[0] is looked up in the sandbox's PATH.
	Argv []string
	// Plan is the resolved boundary: the workspace, the agent's areas and
	// the Landlock rule set (boundary.Resolve). Required.
	Plan *boundary.Plan
	// Role names the role in the sandbox's environment (AGENTBOX_ROLE) and
	// the launch event.
	Role string
	// PassEnv are the names (globs) of the caller's variables passed
	// through the environment scrub, beyond agentbox's own allowlist.
	PassEnv []string
	// Network is how the command reaches the network (zero: not at all).
	Network Network
	// Limits are the run's resource limits (zero fields: none).
	Limits Limits
	// Dir is the command's working directory: a directory inside the
	// workspace areas the sandbox can read (default W/target).
	Dir string
	// Markers are AGENTBOX_* variables (NAME=value) agentbox sets in the
	// sandbox, after the scrub that drops any from the caller's
	// environment.
	Markers []string
	// Review, when set, shows Plan.Target to the command as an overlay
	// whose upper layer is ReviewUpper (work directory ReviewWork, on the
	// same file system): the run's writes land there, not in target/.
	Review                  bool
	ReviewUpper, ReviewWork string
	// HostCaches are host caches shown copy-on-write (overlaycache.go).
	HostCaches []CacheLayer
	// CacheMounts are HostCaches' overlays made ahead by the launcher
	// (PrepareCacheMounts; nil: the helper mounts them). The run takes
	// them; the caller closes what a run that never started left
	// (CacheMounts.Close).
	CacheMounts *CacheMounts
	// BestEffort accepts a kernel without the Landlock ABI the role needs
	// or without usable cgroups, enforcing what is available.
	BestEffort bool
	// AllowWeaker names protections (WeakerNames) the run may do without
	// where neither Landlock nor a stand-in can enforce them here
	// (--allow-weaker): the per-protection form of BestEffort.
	AllowWeaker []string
	// NoCgroupLimits runs without the memory, CPU and process limits
	// (cgroups) and only those: what a regular user without a delegated
	// cgroup asks for with --no-limits. rlimits still apply.
	NoCgroupLimits bool
	// Stdin, Stdout, Stderr default to the launcher's own.
	Stdin, Stdout, Stderr *os.File
	// Setctty makes Stdin the command's controlling terminal (set it when
	// Stdin is the slave of the run's own pty; see PTY).
	Setctty bool
	// Started, when set, is called with the helper's pid right after it was
	// created and before it is released (e.g. to start the pty relay, which
	// closes agentbox's copy of the slave).
	Started func(pid int)
	// BeforeRelease, when set, is called after Started and before the
	// helper is released to exec the command: work that must be done
	// before the command runs but can overlap the helper's start (a run's
	// start checkpoint). An error ends the run before the command starts:
	// the helper is killed and Run returns the error.
	BeforeRelease func() error
	// BeforeConfig, when set, is called once the helper process exists
	// and before it is sent its configuration (it waits for that before
	// doing anything): work the configuration names but the helper's
	// start can overlap (a review run's layer directories). An error
	// kills the helper and Run returns it.
	BeforeConfig func() error
	// Env is the launcher's environment to scrub (default os.Environ()).
	Env []string
	// Exe is the binary started as the helper (default: agentbox-helper
	// next to the running executable, else /proc/self/exe, whose
	// main/TestMain must call MaybeRunHelper first).
	Exe string
	// KillGrace is how long a timed-out command gets between SIGTERM and
	// SIGKILL (default 5s).
	KillGrace time.Duration
	// Events receives the run's launch, limit, violation and exit events
	// (the caller stamps agent, role and run and records them). May be nil.
	Events func(Event)
	// Supervise, when set, owns the helper from start to finish: it must
	// call Start to create the (blocked) helper, attach to it, call Release
	// to let it exec, wait for everything below it until the root process
	// exits, and return the root's status. This is the hook for the exec
	// supervisor (sandbox/supervise*.go, docs/architecture.md). When nil, Run releases
	// the helper itself and waits with a plain wait loop (wait.go).
	Supervise SuperviseFunc
	// TraceAll makes the helper install no exec-notification filter, so
	// the supervisor traces every process (fork, clone and exec events):
	// what happens anyway on kernels without seccomp user notifications
	// (before 5.7). Slower, but if agentbox is SIGKILLed every process of
	// the sandbox dies with it (PTRACE_O_EXITKILL), not only the ones
	// being decided.
	TraceAll bool
	// RunID names the run in cgroup names and audit records (default:
	// generated).
	RunID string
	// Log, when set, receives debug lines (timings).
	Log io.Writer
	// T0 is the time the debug timings count from (default: when Run
	// starts); the CLI passes its own start so the lines cover policy
	// loading too.
	T0 time.Time
	// OnProxyListener receives the listener the sandbox's connections
	// arrive on when the network mode is proxy (Network.Proxy): the
	// caller serves its egress proxy on it (package egress) until the run
	// ends. Required for that mode.
	OnProxyListener func(net.Listener)
	// ForwardPorts are loopback ports of the caller's machine the sandbox
	// reaches at the same address (127.0.0.1:PORT) in its namespace (a
	// model gateway on loopback); OnForwardListener receives each port's
	// listener there, to be served through the egress proxy's decisions.
	ForwardPorts      []uint16
	OnForwardListener func(port uint16, l net.Listener)
	// LaunchDetail, when set, gives what is added to the launch event's
	// detail (the library adds agentbox's version and the policy digest
	// and sources). It is called once, after the helper is started: the
	// policy's digest (~0.3 ms of CPU) is then made while the helper sets
	// itself up, off the launch's serial path.
	LaunchDetail func() map[string]string
	// ForwardSignals passes SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to
	// this process on to the command's process group (what a CLI wants; an
	// embedder running several sandboxes leaves it off and uses its own
	// handling).
	ForwardSignals bool
	// Warnings receives one-line warnings for the user (protections
	// --best-effort let go, watched paths that changed). Default os.Stderr
	// (not Stderr, which may be the command's pty, closed by then).
	Warnings io.Writer
}

// Limits are a run's resource limits; a zero field is no limit. Memory,
// CPU and process limits need a cgroup (internal/cgroup); the rest are
// rlimits and the launcher's own timer.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	MaxFileSize int64         // RLIMIT_FSIZE bytes
	NoFile      uint64        // RLIMIT_NOFILE (default 4096)
	Timeout     time.Duration // the whole run
}

// Network is how the sandbox reaches the network: not at all (the zero
// value), TCP ports to every host (Landlock), or only through the egress
// proxy in a network namespace of its own (Proxy; OnProxyListener serves it).
type Network struct {
	Proxy      bool
	TCPConnect []uint16
	TCPBind    []uint16
}

// Event is one thing the launcher records about a run: its launch, a limit
// it hit, a violation seen after it, its exit. Kind is the audit event name
// ("launch", "limit", "violation", "exit").
type Event struct {
	Kind   string
	Pid    int
	Argv   []string
	Cwd    string
	Limit  string // which limit ("timeout", "memory", "pids")
	Reason string
	Exit   *int
	Signal string // the signal that ended the command ("SIGKILL")
	Detail map[string]string
}

// Event kinds.
const (
	EventLaunch    = "launch"
	EventLimit     = "limit"
	EventViolation = "violation"
	EventExit      = "exit"
)

// SuperviseFunc is the exec supervisor's entry point; see Config.Supervise.
type SuperviseFunc func(ctx context.Context, h Helper) (syscall.WaitStatus, error)

// Helper is the sandbox helper as Run hands it to Config.Supervise.
type Helper struct {
	// Start creates the helper, which blocks before its execve.
	Start func() (pid int, err error)
	// Release lets the helper exec the command.
	Release func() error
	// ExecListener is set when the helper installs the exec-notification
	// filter (the default where the kernel has seccomp user notifications,
	// unless Config.TraceAll): after Start it returns the filter's
	// listener fd, to be passed as supervise.Options.ExecListener.
	ExecListener func() (int, error)
	// Exe is the file the helper runs (agentbox-helper, or agentbox
	// itself), to be passed as supervise.Options.HelperExe.
	Exe string
	// Logf receives the launcher's debug lines (Config.Log), or is nil.
	Logf func(format string, args ...any)
}

// Result is the outcome of a run that agentbox itself carried out.
type Result struct {
	// ExitCode is the status agentbox should exit with (docs/architecture.md, "A run").
	ExitCode int
	// Status is the raw wait status of the command (zero if it never ran).
	Status syscall.WaitStatus
	// TimedOut is true when the run's timeout fired.
	TimedOut bool
	// OOMKills and PidsMaxHits are counted from the run's cgroup.
	OOMKills, PidsMaxHits int
	// Pid is the command's pid (the helper that exec'd it).
	Pid int
}

// Exit codes (docs/architecture.md, "A run").
const (
	ExitTimeout  = 124
	ExitFailure  = helper.ExitFailure
	ExitDenied   = helper.ExitDenied
	ExitNotFound = helper.ExitNotFound
)

// NewRunID returns a fresh random run id (12 hex digits), as used in
// cgroup names, audit events and the run registry.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run launches cfg.Argv inside the sandbox and waits until it and every
// descendant are gone. See the package documentation for the sequence and
// the exit status.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	l, err := newLauncher(cfg)
	if err != nil {
		return nil, err
	}
	return l.run(ctx)
}
