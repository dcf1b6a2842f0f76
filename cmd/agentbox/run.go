package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/boundary"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// defaultAgentID names the agent when --agent is not given.
const defaultAgentID = "main"

// execSupervisor builds the exec supervisor (DESIGN §4) for a run: it
// returns the sandbox.Config.Supervise hook that decides every exec against
// eng, asks the approver named by --approve, and writes exec/ask/deny audit
// events through emit. It is set by execpolicy.go; nil (or --no-exec-policy)
// runs without the exec policy — the kernel boundary still applies.
var execSupervisor func(eng *policy.Engine, approve string, emit func(audit.Event), run execRun) (sandbox.SuperviseFunc, error)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a command inside the kernel boundary of a role",
		ArgsUsage: "-- CMD [ARG...]",
		Description: "Runs CMD with Landlock (workspace areas, system allowlist, TCP ports, IPC scopes), seccomp,\n" +
			"no_new_privs, rlimits and cgroup limits, in its own session (and pty when stdin is a terminal).\n" +
			"Exit status: the command's; 128+N if killed by signal N; 124 timeout; 125 agentbox failed;\n" +
			"126 denied or not executable; 127 not found.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "role", Aliases: []string{"r"}, Usage: "role `NAME` (see `agentbox roles`)", Required: true},
			&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "workspace `DIR` (made by `agentbox init`)", Required: true},
			&cli.StringFlag{Name: "agent", Usage: "agent `ID`: HOME and TMPDIR live in W/agents/ID", Value: defaultAgentID},
			&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "extra policy `FILE`, layered above the project file; repeatable"},
			&cli.StringFlag{Name: "user-policy", Usage: "user policy `FILE` (default $XDG_CONFIG_HOME/agentbox/policy.yaml if it exists)"},
			&cli.BoolFlag{Name: "no-user-policy", Usage: "ignore the user policy file"},
			&cli.StringFlag{Name: "approve", Usage: "who answers ask decisions: `MODE` tty, socket:PATH or none (default tty when stdin is a terminal, else none)"},
			&cli.StringFlag{Name: "timeout", Usage: "kill the run after `DURATION` (SIGTERM, 5s grace, SIGKILL; exit 124)"},
			&cli.StringFlag{Name: "memory", Usage: "memory limit `SIZE` (e.g. 512M, 2G)"},
			&cli.StringFlag{Name: "cpus", Usage: "CPU limit `N` (e.g. 1.5)"},
			&cli.StringFlag{Name: "pids", Usage: "process/thread limit `N`"},
			&cli.StringFlag{Name: "network", Usage: "`MODE` none or tcp:PORT,... (TCP connect ports; UDP stays refused)"},
			&cli.StringFlag{Name: "audit", Usage: "audit log `FILE` (- for stdout; default " + audit.DefaultPath() + ")"},
			&cli.BoolFlag{Name: "best-effort", Usage: "run even when the kernel lacks a protection (older Landlock ABI, no cgroups), enforcing what is available"},
			&cli.BoolFlag{Name: "no-exec-policy", Usage: "run without the exec supervisor (no per-program allow/ask/deny; the kernel boundary still applies)"},
			&cli.BoolFlag{Name: "debug", Usage: "print launch timings to stderr", Hidden: true},
		},
		Action: runAction,
	}
}

// runFlags are the parsed, validated values of run's flags.
type runFlags struct {
	timeout time.Duration
	limits  policy.Limits
	network *policy.Network
	approve string
}

// parseRunFlags validates every flag value before anything is applied.
func parseRunFlags(c *cli.Command) (*runFlags, error) {
	f := &runFlags{}
	var err error
	if s := c.String("timeout"); s != "" {
		f.timeout, err = time.ParseDuration(s)
		if err != nil || f.timeout <= 0 {
			return nil, exitf(exitUsage, "--timeout %q: want a positive duration such as 90s or 10m", s)
		}
		f.limits.Timeout = f.timeout
	}
	if s := c.String("memory"); s != "" {
		n, err := policy.ParseSize(s)
		if err != nil || n < 1<<20 {
			return nil, exitf(exitUsage, "--memory %q: want a size of at least 1M such as 512M or 2G", s)
		}
		f.limits.MemoryBytes = n
	}
	if s := c.String("cpus"); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || !(n >= 0.01 && n <= 4096) {
			return nil, exitf(exitUsage, "--cpus %q: want a number of CPUs such as 0.5 or 2", s)
		}
		f.limits.CPUs = n
	}
	if s := c.String("pids"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return nil, exitf(exitUsage, "--pids %q: want a positive number of processes", s)
		}
		f.limits.Pids = n
	}
	if s := c.String("network"); s != "" {
		n, err := parseNetwork(s)
		if err != nil {
			return nil, exitf(exitUsage, "--network %q: %v", s, err)
		}
		f.network = &n
	}
	f.approve = c.String("approve")
	if f.approve == "" {
		f.approve = "none"
		if isTerminal(os.Stdin) {
			f.approve = "tty"
		}
	}
	if f.approve != "tty" && f.approve != "none" && !(strings.HasPrefix(f.approve, "socket:") && len(f.approve) > len("socket:")) {
		return nil, exitf(exitUsage, "--approve %q: want tty, socket:PATH or none", f.approve)
	}
	if err := boundary.ValidAgentID(c.String("agent")); err != nil {
		return nil, exitf(exitUsage, "--agent: %v", err)
	}
	return f, nil
}

// parseNetwork parses --network: "none", or "tcp:" followed by a
// comma-separated list of TCP ports (1-65535) the sandbox may connect to.
func parseNetwork(s string) (policy.Network, error) {
	if s == "none" {
		return policy.Network{}, nil
	}
	list, ok := strings.CutPrefix(s, "tcp:")
	if !ok || list == "" {
		return policy.Network{}, errors.New("want none or tcp:PORT[,PORT...]")
	}
	var n policy.Network
	for _, p := range strings.Split(list, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 16)
		if err != nil || v == 0 {
			return policy.Network{}, fmt.Errorf("port %q: want a number from 1 to 65535", p)
		}
		if !slices.Contains(n.TCPConnect, uint16(v)) {
			n.TCPConnect = append(n.TCPConnect, uint16(v))
		}
	}
	return n, nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func runAction(ctx context.Context, c *cli.Command) error {
	t0 := time.Now()
	debugf := func(format string, args ...any) {
		if c.Bool("debug") {
			fmt.Fprintf(os.Stderr, "agentbox: %7.2fms "+format+"\n", append([]any{float64(time.Since(t0).Microseconds()) / 1000}, args...)...)
		}
	}
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return exitf(exitUsage, "run: no command given (usage: agentbox run --role R --workspace W -- CMD...)")
	}
	flags, err := parseRunFlags(c)
	if err != nil {
		return err
	}
	ws := c.String("workspace")
	agent := c.String("agent")
	if execSupervisor != nil && !c.Bool("no-exec-policy") {
		// The exec supervisor's program-identity table (a scan of $PATH and
		// build IDs of the policed binaries) is built on the other CPU
		// while the policy loads, off the launch path.
		go sandbox.PrewarmIdentity()
	}
	eng, err := policy.Load(policy.LoadOptions{
		Role:       c.String("role"),
		Workspace:  ws,
		UserFile:   c.String("user-policy"),
		NoUserFile: c.Bool("no-user-policy"),
		Files:      c.StringSlice("policy"),
	})
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	debugf("policy loaded (%d files)", len(eng.Files()))
	role := eng.Role()
	plan, err := boundary.Resolve(ws, agent, role.FS)
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	debugf("workspace resolved")
	// Policy files and the audit log are privilege boundaries: the sandbox
	// must not be able to edit them (or, for the log, read it).
	for _, f := range eng.Files() {
		if w, rule := plan.Writable(f); w {
			return exitf(exitFailure, "policy file %s is writable from the sandbox (inside %s); move it out of the writable areas", f, rule)
		}
	}
	auditPath := c.String("audit")
	if auditPath == "" {
		auditPath = audit.DefaultPath()
	}
	if auditPath != "-" {
		if w, rule := plan.Writable(auditPath); w {
			return exitf(exitFailure, "--audit %s: inside %s, which the sandbox can write; put the audit log outside the workspace areas", auditPath, rule)
		}
		if r, rule := plan.Readable(auditPath); r {
			return exitf(exitFailure, "--audit %s: inside %s, which the sandbox can read; put the audit log outside the workspace areas", auditPath, rule)
		}
		if err := os.MkdirAll(filepath.Dir(auditPath), 0o700); err != nil {
			return exitf(exitFailure, "--audit %s: %v", auditPath, err)
		}
	}
	aw, err := audit.Open(auditPath)
	if err != nil {
		return exitf(exitFailure, "--audit %s: %v", auditPath, err)
	}
	defer aw.Close()
	debugf("audit log opened")

	var runID [6]byte
	_, _ = readRandom(runID[:])
	id := fmt.Sprintf("%x", runID)
	emit := func(e audit.Event) {
		e.Agent, e.Role, e.Run = agent, role.Name, id
		if err := aw.Write(e); err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: audit log %s: %v\n", auditPath, err)
		}
	}

	cfg := sandbox.Config{
		Argv:       argv,
		Role:       role,
		Workspace:  ws,
		AgentID:    agent,
		Plan:       plan,
		Network:    flags.network,
		Limits:     flags.limits,
		BestEffort: c.Bool("best-effort"),
		RunID:      id,
		Audit: func(r sandbox.Record) {
			emit(audit.Event{Event: r.Event, Pid: r.Pid, Argv: r.Argv, Cwd: r.Cwd, Exit: r.Exit,
				Signal: r.Signal, Limit: r.Limit, Reason: r.Reason, Detail: r.Detail})
		},
	}
	if c.Bool("debug") {
		cfg.Log = os.Stderr
		cfg.T0 = t0
	}
	// A terminal on stdin gets the command its own pty (no injection into
	// the outer terminal, working job control); otherwise plain stdio.
	var relayDone chan struct{}
	runInfo := execRun{Workspace: ws, Agent: agent, RunID: id}
	if isTerminal(os.Stdin) {
		pty, err := sandbox.OpenPTY()
		if err != nil {
			return exitf(exitFailure, "%v", err)
		}
		defer pty.Close()
		s := pty.Slave()
		cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.Setctty = s, s, s, true
		cfg.Started = func(int) {
			relayDone = make(chan struct{})
			go func() {
				defer close(relayDone)
				_ = pty.Relay(ctx, os.Stdin, os.Stdout)
			}()
		}
		runInfo.Pauser = pty
	}
	// The exec policy (DESIGN §4): every program start is decided against
	// the role; asks go to the approver named by --approve.
	if sock, ok := strings.CutPrefix(flags.approve, "socket:"); ok {
		if w, rule := plan.Writable(sock); w {
			return exitf(exitFailure, "--approve %s: inside %s, which the sandbox can write; put the socket outside the workspace areas", flags.approve, rule)
		}
	}
	if execSupervisor != nil && !c.Bool("no-exec-policy") {
		sup, err := execSupervisor(eng, flags.approve, emit, runInfo)
		if err != nil {
			return exitf(exitFailure, "%v", err)
		}
		cfg.Supervise = sup
		debugf("exec supervisor ready")
	}

	res, err := sandbox.Run(ctx, cfg)
	if relayDone != nil {
		<-relayDone // every process is gone: the relay has drained the output
	}
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode, err: errors.New("")}
	}
	return nil
}

func readRandom(b []byte) (int, error) {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Read(b)
}

// projectTemplate is the commented project policy `init` writes.
const projectTemplate = `# agentbox project policy for this workspace (layer "project").
# It sits above the built-in roles and the user file and below --policy
# files and session answers. Deny rules from any layer always win.
# agentbox refuses to run if this file is writable from inside the sandbox
# or writable by group/others.
version: 1

# rules:
#   # Never let agents push; a human reviews target/ first.
#   - decision: deny
#     command: git push
#     description: pushing is done by a human
#
#   # Running the test suite needs no approval.
#   - decision: allow
#     command: go test
#
#   # Ask before anything touches the network.
#   - decision: ask
#     command: curl
`

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a workspace: context/ target/ feedback/ agents/ and agentbox.yaml",
		ArgsUsage: "DIR",
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return exitf(exitUsage, "init: want exactly one workspace DIR")
			}
			dir := c.Args().First()
			created, err := initWorkspace(dir)
			if err != nil {
				return exitf(exitBadInput, "%v", err)
			}
			for _, p := range created {
				fmt.Fprintf(c.Root().Writer, "created %s\n", p)
			}
			if len(created) == 0 {
				fmt.Fprintf(c.Root().Writer, "workspace %s is complete\n", dir)
			}
			return nil
		},
	}
}

// initWorkspace creates the workspace layout and project policy, leaving
// existing parts alone. It refuses a DIR that is a file or an area that is a
// symlink or a file.
func initWorkspace(dir string) ([]string, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("init %s: exists and is not a directory", dir)
	}
	var created []string
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("init: %v", err)
		}
		created = append(created, dir)
	}
	for _, a := range boundary.Areas {
		p := filepath.Join(dir, a)
		st, err := os.Lstat(p)
		switch {
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			return created, fmt.Errorf("init: %s is a symlink; areas must be real directories", p)
		case err == nil && !st.IsDir():
			return created, fmt.Errorf("init: %s exists and is not a directory", p)
		case err == nil:
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return created, fmt.Errorf("init: %v", err)
		}
		created = append(created, p+"/")
	}
	pf := filepath.Join(dir, "agentbox.yaml")
	f, err := os.OpenFile(pf, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	switch {
	case errors.Is(err, os.ErrExist):
		return created, nil
	case err != nil:
		return created, fmt.Errorf("init: %v", err)
	}
	if _, err := f.WriteString(projectTemplate); err != nil {
		f.Close()
		return created, fmt.Errorf("init: writing %s: %v", pf, err)
	}
	if err := f.Close(); err != nil {
		return created, fmt.Errorf("init: writing %s: %v", pf, err)
	}
	return append(created, pf), nil
}

// maybeRunHelper runs the in-sandbox helper when agentbox re-executed itself
// for that purpose (argv[0] == sandbox.HelperArgv0); it execs the command or
// exits and never returns true to a caller that continues.
func maybeRunHelper() bool { return sandbox.MaybeRunHelper() }
