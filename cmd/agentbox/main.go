// Command agentbox launches AI coding agents (or any command) inside a
// kernel-enforced workspace sandbox and decides every program they start
// against a role policy. This package only parses flags, wires the policy,
// sandbox and audit packages together, and formats output.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/shellquote"
	"github.com/urfave/cli/v3"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes shared by every subcommand (docs/architecture.md, "A run"). check uses its own
// 0/3/4 decision codes on top of exitBadInput and exitUsage.
const (
	exitBadInput = 1   // a policy file, action or path is invalid
	exitUsage    = 2   // wrong flags or arguments
	exitFailure  = 125 // agentbox itself failed (run)
	exitDenied   = 126 // the command was denied (run)
	exitNotFound = 127 // the command was not found (run)
	// exitRunUsage is run's code for wrong flags or arguments: 125, not 2,
	// so it cannot be mistaken for the command's own exit status 2.
	exitRunUsage = exitFailure
)

// exitError carries an exit code out of a subcommand's Action.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitf returns an error that makes agentbox print "agentbox: <msg>" and exit with code.
func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

func newApp() *cli.Command { return newAppFor(nil) }

// commands are agentbox's subcommands, in the order help lists them.
var commands = []struct {
	name string
	make func() *cli.Command
}{
	{"run", runCommand}, {"ps", psCommand}, {"stop", stopCommand}, {"init", initCommand},
	{"check", checkCommand}, {"explain", explainCommand}, {"policy", policyCommand},
	{"roles", rolesCommand}, {"agents", agentsCommand}, {"audit", auditCommand},
	{"changes", changesCommand}, {"undo", undoCommand},
	{"diff", diffCommand}, {"apply", applyCommand}, {"discard", discardCommand}, {"escalate", escalateCommand},
	{"inbox", inboxCommand}, {"hook", hookCommand}, {"quarantine", quarantineCommand}, {"doctor", doctorCommand}, {"version", versionCommand},
}

// newAppFor builds the command tree for args (os.Args). When args[1] names
// a subcommand, the tree holds only that one: the CLI library sets up every
// command and flag of its tree before parsing, ~0.3 ms of CPU a launch
// would pay for the eleven commands it does not run. Help, completion and
// anything else get the whole tree.
func newAppFor(args []string) *cli.Command {
	var cmds []*cli.Command
	for _, c := range commands {
		if len(args) > 1 && args[1] == c.name {
			cmds = []*cli.Command{c.make()}
			break
		}
	}
	if cmds == nil {
		for _, c := range commands {
			cmds = append(cmds, c.make())
		}
	}
	app := &cli.Command{
		Name:                  "agentbox",
		Usage:                 "run AI coding agents inside a kernel-enforced, policy-checked sandbox",
		Version:               version,
		EnableShellCompletion: true,
		Commands:              cmds,
	}
	setUsageErrors(app)
	return app
}

// setUsageErrors makes a flag error one line naming the flag and pointing
// to --help (not the whole help text), exiting 125 under run and 2
// elsewhere.
func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(ctx context.Context, cmd *cli.Command, err error, _ bool) error {
		code := exitUsage
		for _, p := range cmd.Lineage() {
			if p.Name == "run" {
				code = exitRunUsage
			}
		}
		name := cmd.FullName()
		return exitf(code, "%s: %v (see %s --help)", strings.TrimPrefix(name, "agentbox "), err, name)
	}
	for _, sub := range c.Commands {
		setUsageErrors(sub)
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print agentbox's version",
		Action: func(ctx context.Context, c *cli.Command) error {
			fmt.Fprintf(c.Root().Writer, "agentbox %s\n", version)
			return nil
		},
	}
}

func main() {
	if agentbox.MaybeRunHelper() {
		return // unreachable in practice: the helper execs or exits
	}
	agentbox.Version = version
	stop := startProfile(os.Getenv("AGENTBOX_CPUPROFILE"))
	err := newAppFor(os.Args).Run(context.Background(), os.Args)
	stop()
	os.Exit(exitCode(err))
}

// startProfile writes a CPU profile of this agentbox process to path
// (AGENTBOX_CPUPROFILE, for the performance work: go tool pprof reads
// it); "" profiles nothing. The returned function ends it.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: AGENTBOX_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(os.Stderr, "agentbox: AGENTBOX_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// exitCode prints err (one line, escaped: it may name a path or argv the
// agent chose) and maps it to agentbox's exit code.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(os.Stderr, "agentbox: %s\n", shellquote.Sanitize(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintf(os.Stderr, "agentbox: %s\n", shellquote.Sanitize(err.Error()))
	return exitUsage
}
