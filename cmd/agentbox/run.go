package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/userconf"
	"github.com/agentbox/agentbox/policy"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a command inside the kernel boundary of a role",
		ArgsUsage: "-- CMD [ARG...]",
		Description: "Runs CMD with Landlock (workspace areas, system allowlist, TCP ports, IPC scopes), seccomp,\n" +
			"no_new_privs, rlimits and cgroup limits, in its own session (and pty when stdin is a terminal).\n" +
			"Exit status: the command's; 128+N if killed by signal N; 124 timeout; 125 agentbox failed;\n" +
			"126 denied or not executable; 127 not found.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "role", Aliases: []string{"r"}, Usage: "role `NAME` (see `agentbox roles`)", Required: true},
			&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "workspace `DIR` (made by `agentbox init`; default: the workspace the current directory is in)"},
			&cli.StringFlag{Name: "agent-profile", Usage: "agent profile `NAME` (see `agentbox agents`): what the agent CLI needs — install path, read-only view of its login/settings, API keys and hosts; none for no profile (default: chosen from the command: claude, codex, gemini)"},
			&cli.StringFlag{Name: "agent", Usage: "agent `ID`: HOME and TMPDIR live in W/agents/ID", Value: agentbox.DefaultAgent},
			&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "extra policy `FILE`, layered above the project file; repeatable"},
			&cli.StringFlag{Name: "user-policy", Usage: "user policy `FILE` (default $XDG_CONFIG_HOME/agentbox/policy.yaml if it exists)"},
			&cli.BoolFlag{Name: "no-user-policy", Usage: "ignore the user policy file"},
			&cli.BoolFlag{Name: "no-discover", Usage: "do not load the permission files of other agent tools (.claude/settings.json, ~/.codex/rules, .codelia/config.json, .src/forge/permissions.json, agent.json)"},
			&cli.StringFlag{Name: "approve", Usage: "who answers ask decisions: `MODE` tty, socket:PATH, inbox[:PATH] (agentbox inbox) or none (default tty when stdin is a terminal, else none)"},
			&cli.StringSliceFlag{Name: "approve-webhook", Usage: "also post each ask, signed, to the webhook `URL` (a chat bot, an on-call tool), which answers through a one-time answer URL; repeatable; needs --webhook-secret and --webhook-identity (docs/operations.md)"},
			&cli.StringFlag{Name: "webhook-secret", Usage: "the webhooks' shared HMAC secret is in `FILE` (mode 600, at least 16 bytes; never on the command line)"},
			&cli.StringFlag{Name: "webhook-identity", Usage: "the unix `USER` (or uid:N) a webhook's answers count as: the policy's approvers block decides what it may grant"},
			&cli.StringFlag{Name: "webhook-listen", Usage: "serve the webhooks' answer URLs on `ADDR` (default 127.0.0.1:0, a free loopback port)"},
			&cli.StringFlag{Name: "webhook-answer-url", Usage: "answer URLs start with `BASE` instead of http://ADDR (a reverse proxy in front of --webhook-listen)"},
			&cli.StringFlag{Name: "timeout", Usage: "kill the run after `DURATION` (SIGTERM, 5s grace, SIGKILL; exit 124)"},
			&cli.StringFlag{Name: "memory", Usage: "memory limit `SIZE` (e.g. 512M, 2G)"},
			&cli.StringFlag{Name: "cpus", Usage: "CPU limit `N` (e.g. 1.5)"},
			&cli.StringFlag{Name: "pids", Usage: "process/thread limit `N`"},
			&cli.StringFlag{Name: "network", Usage: "`MODE` none; proxy (own network namespace, connections only through agentbox's egress proxy, decided by host); or tcp:PORT,... (coarse: every host on those ports)"},
			&cli.BoolFlag{Name: "shared-netns", Usage: "network mode proxy without a network namespace of the sandbox's own (a pod whose runtime refuses one): the egress proxy listens on 127.0.0.1:3128 of agentbox's namespace and Landlock holds the sandbox to that port; another host on that port is left to the pod's network policy (docs/operations.md)"},
			&cli.StringSliceFlag{Name: "ro", Usage: "also grant read access to `PATH` outside the workspace for this run (repeatable; no symlinks or ..)"},
			&cli.StringSliceFlag{Name: "exec", Usage: "also grant read and execute access to `PATH` (a toolchain) for this run (repeatable)"},
			&cli.StringSliceFlag{Name: "rw", Usage: "also grant read and write access to `PATH` for this run (repeatable; refused if it holds the workspace, the audit log or a policy file)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print the launch line (role, areas, network, approver) nor the end line (exit status and why, what was refused, what changed, how to undo)"},
			&cli.StringFlag{Name: "json-summary", Usage: "write how the run ended (the end line's facts, as JSON) to `FILE`"},
			&cli.BoolFlag{Name: "no-limits", Usage: "run without memory, CPU and process limits (cgroups) — for a regular user with no delegated cgroup; rlimits still apply"},
			&cli.BoolFlag{Name: "toolchains", Usage: "grant the per-user toolchains on PATH (rustup, pyenv, nvm, sdkman, ~/go/bin, ~/.local/bin, /opt/X/bin) read+execute and allow their programs"},
			&cli.StringFlag{Name: "cwd", Usage: "start the command in `DIR` (inside the workspace areas the sandbox can read; default: the current directory when it is inside them, else W/target)"},
			&cli.StringSliceFlag{Name: "secret", Usage: "broker the credential in variable `NAME@HOST`: the sandbox sees a placeholder, the egress proxy puts the real value into requests to HOST only (pattern as in --allow-host; repeat for more hosts; implies --network proxy)"},
			&cli.StringSliceFlag{Name: "secret-header", Usage: "put the brokered secret's value in request header `NAME:HEADER` only (instead of Authorization, X-Api-Key, Api-Key, X-Auth-Token, Private-Token); repeatable"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "allow connections to `HOST` for this run (example.com, *.example.com, host:port; repeatable; implies --network proxy)"},
			&cli.StringSliceFlag{Name: "allow-internal-host", Usage: "let names matching `HOST` resolve to loopback, private or link-local addresses (any other name that does is refused: DNS rebinding); repeatable"},
			&cli.StringSliceFlag{Name: "proxy-resolve", Usage: "make the egress proxy resolve `NAME=ADDR` (tests, local gateways)", Hidden: true},
			&cli.StringFlag{Name: "audit", Usage: "audit log `FILE` (- for stdout; default " + audit.DefaultPath() + ")"},
			&cli.StringFlag{Name: "audit-key", Usage: "HMAC key `FILE` signing the audit log (default <log>.key, created on first use; env AGENTBOX_AUDIT_KEY)"},
			&cli.IntFlag{Name: "audit-quota", HideDefault: true, Usage: "at most `N` decision events (program starts, git, connections) of this run in the audit log; past it the run fails as on an audit write failure (default 1000000; -1: no bound)"},
			&cli.StringFlag{Name: "audit-failure", Usage: "when the audit log cannot be written: `ACTION` deny (default: no further program starts, exit 125), stop (end the run at once) or continue (run on unaudited, count the lost events)"},
			&cli.StringFlag{Name: "host-caches", Usage: "`on` or off: the host's Go module cache read-only as a file:// GOPROXY, and its build and package caches (Go build, npm, pip, cargo, Maven) copy-on-write, the run's writes in this agent's own layer (default: the role's host_caches; developer: on)"},
			&cli.BoolFlag{Name: "no-host-caches", Usage: "the same as --host-caches off"},
			&cli.BoolFlag{Name: "review", Usage: "target/ is a copy-on-write view: the run's writes land in a layer of its own, for agentbox diff, apply or discard RUN afterwards"},
			&cli.StringFlag{Name: "review-store", Usage: "keep review layers in `DIR` (default ~/.local/state/agentbox/layers)"},
			&cli.StringFlag{Name: "checkpoints", Usage: "`on` (default) or off: a checkpoint of target/ and feedback/ before each command, for agentbox changes and agentbox undo; off makes deleting or discarding work ask"},
			&cli.StringFlag{Name: "checkpoint-store", Usage: "checkpoint store `DIR`, outside the workspace (default: ~/.local/state/agentbox/checkpoints/<workspace hash>)"},
			&cli.StringFlag{Name: "checkpoint-max-size", Usage: "prune the store's oldest checkpoints beyond `SIZE` (default 2G; role checkpoints.max_size)"},
			&cli.StringFlag{Name: "checkpoint-max-age", Usage: "prune checkpoints older than `DURATION` (default 336h; role checkpoints.max_age)"},
			&cli.StringFlag{Name: "allow-weaker", Usage: "run without the named `PROTECTIONS` where this kernel and user cannot enforce them (comma-separated: truncate,tcp,signals,abstract-unix,metadata); see agentbox doctor"},
			&cli.BoolFlag{Name: "best-effort", Usage: "run even when the kernel lacks a protection (older Landlock ABI, no cgroups), enforcing what is available"},
			&cli.BoolFlag{Name: "no-exec-policy", Usage: "run without the exec supervisor (no per-program allow/ask/deny; the kernel boundary still applies)"},
			&cli.BoolFlag{Name: "trace-all", Usage: "exec supervisor traces every process (fork, clone, exec), not only exec'ing threads: slower; if agentbox is killed, the whole sandbox dies with it"},
			&cli.BoolFlag{Name: "debug", Usage: "print launch timings to stderr", Hidden: true},
			&cli.StringFlag{Name: "audit-export", Usage: "also send the run's audit events to the OTLP logs endpoint `URL` (http://HOST:4318, grpc://HOST:4317, https://, grpcs://) in the background (by agentbox-export, beside agentbox); the local log stays the record; off: not the user settings' audit.export (agentbox audit export)"},
		}, exportFlags("audit-export-")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			err := runAction(ctx, c)
			var ee *exitError
			if err != nil && !errors.As(err, &ee) {
				// Argument errors of the CLI library: agentbox's own code, so
				// they cannot be taken for the command's exit status.
				return &exitError{code: exitRunUsage, err: err}
			}
			return err
		},
	}
}

// runFlags are the parsed, validated values of run's flags.
type runFlags struct {
	timeout time.Duration
	limits  policy.Limits
	network *policy.Network
	approve string
	webhook *approval.WebhookConfig
}

// parseRunFlags validates every flag value before anything is applied.
func parseRunFlags(fl flagReader) (*runFlags, error) {
	f := &runFlags{}
	var err error
	if s := fl.String("timeout"); s != "" {
		f.timeout, err = time.ParseDuration(s)
		if err != nil || f.timeout <= 0 {
			return nil, exitf(exitRunUsage, "--timeout %q: want a positive duration such as 90s or 10m", s)
		}
		f.limits.Timeout = f.timeout
	}
	if s := fl.String("memory"); s != "" {
		n, err := policy.ParseSize(s)
		if err != nil || n < 1<<20 {
			return nil, exitf(exitRunUsage, "--memory %q: want a size of at least 1M such as 512M or 2G", s)
		}
		f.limits.MemoryBytes = n
	}
	if s := fl.String("cpus"); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || !(n >= 0.01 && n <= 4096) {
			return nil, exitf(exitRunUsage, "--cpus %q: want a number of CPUs such as 0.5 or 2", s)
		}
		f.limits.CPUs = n
	}
	if s := fl.String("pids"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return nil, exitf(exitRunUsage, "--pids %q: want a positive number of processes", s)
		}
		f.limits.Pids = n
	}
	if s := fl.String("network"); s != "" {
		n, err := parseNetwork(s)
		if err != nil {
			return nil, exitf(exitRunUsage, "--network %q: %v", s, err)
		}
		f.network = &n
	}
	f.approve = fl.String("approve")
	if f.approve == "" {
		f.approve = "none"
		if isTerminal(os.Stdin) {
			f.approve = "tty"
		}
	}
	if err := approval.CheckSpec(f.approve); err != nil {
		return nil, exitf(exitRunUsage, "%v", err)
	}
	if f.webhook, err = parseWebhookFlags(fl); err != nil {
		return nil, err
	}
	if err := boundary.ValidAgentID(fl.String("agent")); err != nil {
		return nil, exitf(exitRunUsage, "--agent: %v", err)
	}
	return f, nil
}

// parseWebhookFlags reads --approve-webhook and its settings; the
// secret comes from a file only.
func parseWebhookFlags(fl flagReader) (*approval.WebhookConfig, error) {
	urls := fl.StringSlice("approve-webhook")
	if len(urls) == 0 {
		for _, n := range []string{"webhook-secret", "webhook-identity", "webhook-listen", "webhook-answer-url"} {
			if fl.IsSet(n) {
				return nil, exitf(exitRunUsage, "--%s: no --approve-webhook URL to go with it", n)
			}
		}
		return nil, nil
	}
	if fl.String("webhook-secret") == "" {
		return nil, exitf(exitRunUsage, "--approve-webhook: needs --webhook-secret FILE (the shared HMAC secret)")
	}
	secret, err := approval.ReadWebhookSecret(fl.String("webhook-secret"))
	if err != nil {
		return nil, exitf(exitRunUsage, "--webhook-secret: %v", err)
	}
	cfg := &approval.WebhookConfig{URLs: urls, Secret: secret, Identity: fl.String("webhook-identity"),
		Listen: fl.String("webhook-listen"), AnswerBase: fl.String("webhook-answer-url")}
	if err := cfg.Check(); err != nil {
		return nil, exitf(exitRunUsage, "--approve-webhook: %v", err)
	}
	return cfg, nil
}

// parseNetwork parses --network: "none", or "tcp:" followed by a
// comma-separated list of TCP ports (1-65535) the sandbox may connect to.
func parseNetwork(s string) (policy.Network, error) {
	if s == "none" {
		return policy.Network{}, nil
	}
	if s == "proxy" {
		return policy.Network{Proxy: true}, nil
	}
	list, ok := strings.CutPrefix(s, "tcp:")
	if !ok || list == "" {
		return policy.Network{}, errors.New("want none, proxy or tcp:PORT[,PORT...]")
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
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return exitf(exitRunUsage, "run: no command given (usage: agentbox run --role R --workspace W -- CMD...)")
	}
	// One index of run's flags for every question below (cli's own
	// lookup walks every flag's names at each).
	fl := indexFlags(c)
	flags, err := parseRunFlags(fl)
	if err != nil {
		return err
	}
	// The user settings file may make --no-limits the default (limits:
	// off); --no-limits=false given on the command line still asks for
	// limits.
	settings, settingsPath, err := userconf.Load()
	if err != nil {
		return exitf(exitRunUsage, "%v", err)
	}
	opts, err := runOptions(c, fl, flags, settings, settingsPath, t0)
	if err != nil {
		return err
	}
	ws := fl.String("workspace")
	if ws == "" {
		// Started from a project inside a workspace (W/target/proj): the
		// workspace is found by walking up, as the hook finds it.
		if ws, err = boundary.FindWorkspace("."); err != nil {
			return exitf(exitRunUsage, "run: %v; give --workspace DIR", err)
		}
	}
	r, err := agentbox.New(ws, fl.String("role"), argv, opts...)
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	if e, ok, err := runExport(fl, settings); err != nil { // auditexport.go
		return exitf(exitRunUsage, "%v", err)
	} else if ok {
		log := fl.String("audit")
		if log == "" {
			log = audit.DefaultPath()
		}
		finish, err := startRunExport(c, log, e)
		if err != nil {
			return exitf(exitRunUsage, "--audit-export: %v", err)
		}
		defer finish(10 * time.Second)
	}
	if err := r.Start(ctx); err != nil {
		return exitf(exitFailure, "%v%s", err, limitsHint(err, settingsPath))
	}
	if !fl.Bool("quiet") {
		fmt.Fprintln(cliErr(c), r.Summary())
	}
	res, err := r.Wait()
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	if !fl.Bool("quiet") {
		fmt.Fprint(cliErr(c), endLines(res))
	}
	if f := fl.String("json-summary"); f != "" {
		if err := writeSummary(f, res); err != nil {
			fmt.Fprintf(cliErr(c), "agentbox: warning: --json-summary: %v\n", err)
		}
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode, err: errors.New("")}
	}
	return nil
}

// runOptions turns run's flags and the user's settings into the library's
// options, in one place so each flag's meaning is read once.
func runOptions(c *cli.Command, fl flagReader, flags *runFlags, settings userconf.Settings, settingsPath string, t0 time.Time) ([]agentbox.Option, error) {
	opts := []agentbox.Option{
		agentbox.WithAgent(fl.String("agent")),
		agentbox.WithPolicyFiles(fl.StringSlice("policy")...),
		agentbox.WithUserPolicy(fl.String("user-policy")),
		agentbox.WithLimits(flags.limits),
		agentbox.WithApprove(flags.approve),
		agentbox.WithSignalForwarding(),
		agentbox.WithAgentProfile(fl.String("agent-profile")),
	}
	if flags.webhook != nil {
		opts = append(opts, agentbox.WithWebhook(*flags.webhook))
	}
	if fl.Bool("no-user-policy") {
		opts = append(opts, agentbox.WithoutUserPolicy())
	}
	if fl.Bool("no-discover") {
		opts = append(opts, agentbox.WithoutDiscovery())
	}
	if fl.Bool("no-limits") || (!fl.IsSet("no-limits") && settings.NoLimits) {
		opts = append(opts, agentbox.WithoutCgroupLimits())
	}
	if pt := settings.Push; pt != nil {
		// The user's push.tokens: a token per approved git push.
		opts = append(opts, agentbox.WithPushTokens(agentbox.PushTokens{Mint: pt.Mint, Revoke: pt.Revoke, Timeout: pt.Timeout,
			Hosts: pt.Hosts, Protected: pt.Protected, Source: fmt.Sprintf("%s:%d", settingsPath, pt.Line)}))
	}
	if !fl.IsSet("no-limits") && settings.NoLimits && !fl.Bool("quiet") {
		fmt.Fprintf(cliErr(c), "agentbox: limits off by %s:%d (%s: off); rlimits still apply\n", settingsPath, settings.Line, userconf.Key)
	}
	for _, group := range []func(flagReader, *runFlags) ([]agentbox.Option, error){boundaryOptions, egressOptions, auditOptions, checkpointOptions} {
		more, err := group(fl, flags)
		if err != nil {
			return nil, err
		}
		opts = append(opts, more...)
	}
	// Warnings and limit lines go where the CLI's own lines go.
	opts = append(opts, agentbox.WithWarnings(cliErr(c)))
	if fl.Bool("trace-all") {
		opts = append(opts, agentbox.WithTraceAll())
	}
	if fl.Bool("debug") {
		opts = append(opts, agentbox.WithDebugLog(os.Stderr, t0))
	}
	// A terminal on stdin gets the command its own pty (no injection into
	// the outer terminal, working job control); otherwise plain stdio.
	if isTerminal(os.Stdin) {
		opts = append(opts, agentbox.WithPTY(os.Stdin, os.Stdout))
	}
	return opts, nil
}

// boundaryOptions: what the sandbox's boundary lets in (paths, the working
// directory, host caches, review, what weaker protection is accepted).
func boundaryOptions(fl flagReader, _ *runFlags) ([]agentbox.Option, error) {
	var opts []agentbox.Option
	if p := fl.StringSlice("ro"); len(p) > 0 {
		opts = append(opts, agentbox.WithReadOnly(p...))
	}
	if p := fl.StringSlice("exec"); len(p) > 0 {
		opts = append(opts, agentbox.WithExecutable(p...))
	}
	if p := fl.StringSlice("rw"); len(p) > 0 {
		opts = append(opts, agentbox.WithWritable(p...))
	}
	if fl.Bool("toolchains") {
		opts = append(opts, agentbox.WithToolchains())
	}
	if d := fl.String("cwd"); d != "" {
		opts = append(opts, agentbox.WithDir(d))
	} else if wd, err := os.Getwd(); err == nil {
		opts = append(opts, agentbox.WithCallerDir(wd))
	}
	switch v := fl.String("host-caches"); {
	case fl.Bool("no-host-caches") && v == "on":
		return nil, exitf(exitRunUsage, "--no-host-caches and --host-caches on: give one")
	case fl.Bool("no-host-caches"):
		opts = append(opts, agentbox.WithHostCaches(false))
	case v == "":
	case v == "on" || v == "off":
		opts = append(opts, agentbox.WithHostCaches(v == "on"))
	default:
		return nil, exitf(exitRunUsage, "--host-caches %q: want on or off", v)
	}
	if fl.Bool("review") {
		opts = append(opts, agentbox.WithReview())
	}
	if d := fl.String("review-store"); d != "" {
		opts = append(opts, agentbox.WithReviewStore(d))
	}
	if v := fl.String("allow-weaker"); v != "" {
		names, err := sandbox.ParseAllowWeaker(v)
		if err != nil {
			return nil, exitf(exitRunUsage, "%v", err)
		}
		opts = append(opts, agentbox.WithAllowWeaker(names...))
	}
	if fl.Bool("best-effort") {
		opts = append(opts, agentbox.WithBestEffort())
	}
	if fl.Bool("no-exec-policy") {
		opts = append(opts, agentbox.WithoutExecPolicy())
	}
	return opts, nil
}

// egressOptions: the network, its hosts and the brokered secrets.
func egressOptions(fl flagReader, flags *runFlags) ([]agentbox.Option, error) {
	var opts []agentbox.Option
	if flags.network != nil {
		opts = append(opts, agentbox.WithNetwork(*flags.network))
	}
	if hosts := fl.StringSlice("allow-internal-host"); len(hosts) > 0 {
		opts = append(opts, agentbox.WithInternalHosts(hosts...))
	}
	if hosts := fl.StringSlice("allow-host"); len(hosts) > 0 {
		opts = append(opts, agentbox.WithAllowHosts(hosts...))
	}
	for _, s := range fl.StringSlice("secret") {
		name, host, ok := strings.Cut(s, "@")
		if !ok || name == "" || host == "" {
			return nil, exitf(exitRunUsage, "--secret %q: want NAME@HOST (the variable holding the credential and the host it is for)", s)
		}
		opts = append(opts, agentbox.WithSecret(name, host))
	}
	for _, s := range fl.StringSlice("secret-header") {
		name, header, ok := strings.Cut(s, ":")
		if !ok || name == "" || header == "" {
			return nil, exitf(exitRunUsage, "--secret-header %q: want NAME:HEADER (a brokered secret and the request header its value goes in)", s)
		}
		opts = append(opts, agentbox.WithSecretHeaders(name, header))
	}
	if pairs := fl.StringSlice("proxy-resolve"); len(pairs) > 0 {
		m := map[string]string{}
		for _, p := range pairs {
			name, addr, ok := strings.Cut(p, "=")
			if !ok || name == "" || addr == "" {
				return nil, exitf(exitRunUsage, "--proxy-resolve %q: want NAME=ADDR", p)
			}
			m[strings.ToLower(name)] = addr
		}
		opts = append(opts, agentbox.WithResolver(func(ctx context.Context, host string) ([]string, error) {
			if a, ok := m[host]; ok {
				return []string{a}, nil
			}
			return nil, fmt.Errorf("%s: not in --proxy-resolve", host)
		}))
	}
	if fl.Bool("shared-netns") {
		opts = append(opts, agentbox.WithSharedNetNS())
	}
	return opts, nil
}

// auditOptions: where the audit log goes, its key, quota and what a
// failure to write it does.
func auditOptions(fl flagReader, _ *runFlags) ([]agentbox.Option, error) {
	var opts []agentbox.Option
	if p := fl.String("audit"); p != "" {
		opts = append(opts, agentbox.WithAudit(p))
	}
	if s := fl.String("audit-key"); s != "" {
		opts = append(opts, agentbox.WithAuditKey(s))
	}
	if n := fl.Int("audit-quota"); n != 0 {
		opts = append(opts, agentbox.WithAuditQuota(int(n)))
	}
	if s := fl.String("audit-failure"); s != "" {
		f, ok := agentbox.ParseAuditFailure(s)
		if !ok {
			return nil, exitf(exitRunUsage, "--audit-failure %q: want deny, stop or continue", s)
		}
		opts = append(opts, agentbox.WithAuditFailure(f))
	}
	return opts, nil
}

// checkpointOptions: checkpoints on or off, their store and budget.
func checkpointOptions(fl flagReader, _ *runFlags) ([]agentbox.Option, error) {
	var opts []agentbox.Option
	switch s := fl.String("checkpoints"); s {
	case "", "on":
		opts = append(opts, agentbox.WithCheckpoints(fl.String("checkpoint-store"), s == "on"))
	case "off":
		opts = append(opts, agentbox.WithoutCheckpoints())
	default:
		return nil, exitf(exitRunUsage, "--checkpoints %q: want on or off", s)
	}
	var cl policy.Checkpoints
	var err error
	if s := fl.String("checkpoint-max-size"); s != "" {
		if cl.MaxBytes, err = policy.ParseSize(s); err != nil || cl.MaxBytes <= 0 {
			return nil, exitf(exitRunUsage, "--checkpoint-max-size %q: want a size like 500M or 2G", s)
		}
	}
	if s := fl.String("checkpoint-max-age"); s != "" {
		if cl.MaxAge, err = time.ParseDuration(s); err != nil || cl.MaxAge <= 0 {
			return nil, exitf(exitRunUsage, "--checkpoint-max-age %q: want a duration like 72h", s)
		}
	}
	return append(opts, agentbox.WithCheckpointLimits(cl)), nil
}

// limitsHint completes a refusal for want of cgroups: how to make running
// without limits the default (the user settings file and its key), and
// the systemd-run prefix that gives agentbox a delegated cgroup where
// systemd runs on cgroup v2. "" for any other error.
func limitsHint(err error, settingsPath string) string {
	var ue *cgroup.UnavailableError
	if !errors.As(err, &ue) {
		return ""
	}
	var h string
	if settingsPath != "" {
		h = fmt.Sprintf("; to make that the default, put `%s: off` in %s", userconf.Key, settingsPath)
	}
	if s := ue.Hint(); s != "" {
		h += "; or start agentbox in a delegated cgroup of its own: " + s
	}
	return h
}
