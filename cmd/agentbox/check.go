package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
	"github.com/urfave/cli/v3"
)

// Exit codes of `agentbox check` (docs/architecture.md, "A run"), next to exitBadInput/exitUsage.
const (
	exitCheckAllow = 0
	exitCheckAsk   = 3
	exitCheckDeny  = 4
)

// policyFlags are the flags that select a role and its policy layers.
func policyFlags(roleRequired bool) []cli.Flag {
	return []cli.Flag{
		// Inside a run the sandbox's environment names the run's role and
		// workspace, so the check the guide suggests decides as the run does.
		&cli.StringFlag{Name: "role", Aliases: []string{"r"}, Usage: "role `NAME` to decide for (see agentbox roles; inside a run: the run's, $AGENTBOX_ROLE)", Required: roleRequired, Sources: cli.EnvVars("AGENTBOX_ROLE")},
		&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "workspace `DIR`; its agentbox.yaml is the project policy layer (default: the one the current directory is in; inside a run: $AGENTBOX_WORKSPACE)", Sources: cli.EnvVars("AGENTBOX_WORKSPACE")},
		&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "extra policy `FILE` (agentbox, Chorus, Codelia, Forge, Claude Code settings or Codex .rules format), layered above the project file; repeatable"},
		&cli.StringFlag{Name: "user-policy", Usage: "user policy `FILE` (default $XDG_CONFIG_HOME/agentbox/policy.yaml if it exists)"},
		&cli.BoolFlag{Name: "no-user-policy", Usage: "ignore the user policy file"},
		&cli.BoolFlag{Name: "no-discover", Usage: "do not load the permission files of other agent tools (.claude/settings.json, ~/.codex/rules, .codelia/config.json, .src/forge/permissions.json, agent.json)"},
		checkpointsFlag(),
	}
}

// checkpointsFlag makes check, explain and the hook decide as a run with
// checkpoints on (agentbox run's default) or off does; inside a run, as
// that run does ($AGENTBOX_CHECKPOINTS).
func checkpointsFlag() cli.Flag {
	return &cli.StringFlag{Name: "checkpoints", Value: "on", Usage: "decide as a run with checkpoints `on` (the default of agentbox run: deleting and discarding work in target/ and feedback/ is undoable, so allowed) or off (asks)", Sources: cli.EnvVars("AGENTBOX_CHECKPOINTS")}
}

// hookCheckpointsFlag is checkpointsFlag for the hook, which decides
// real tool calls: outside a run nothing takes checkpoints, so undoable
// asks stay asks unless the run the hook is called in says it takes them
// ($AGENTBOX_CHECKPOINTS=on inside agentbox run).
func hookCheckpointsFlag() cli.Flag {
	return &cli.StringFlag{Name: "checkpoints", Value: "off", Usage: "`on` inside a run that takes checkpoints (set by agentbox run); off (the default) outside any: deleting and discarding work asks", Sources: cli.EnvVars("AGENTBOX_CHECKPOINTS")}
}

// checkWorkspace is the workspace check and explain decide in: --workspace,
// else the one the current directory is in (as agentbox run finds it), else
// none (built-in roles and the given files only).
func checkWorkspace(c *cli.Command) (string, error) {
	if ws := c.String("workspace"); ws != "" {
		return ws, nil
	}
	ws, err := boundary.FindWorkspace(".")
	var untrusted *boundary.UntrustedWorkspaceError
	switch {
	case errors.As(err, &untrusted):
		return "", err // a workspace the agent may have made: never silently used
	case err != nil:
		return "", nil
	}
	return ws, nil
}

// loadOptions selects the layers as agentbox run would: with a workspace,
// the other agent tools' permission files found in HOME, the workspace and
// the current project.
func loadOptions(c *cli.Command) (policy.LoadOptions, error) {
	ws, err := checkWorkspace(c)
	if err != nil {
		var none policy.LoadOptions
		return none, err
	}
	wd, _ := os.Getwd()
	return plan.Load(c.String("role"), plan.Selection{
		Files: c.StringSlice("policy"), UserFile: c.String("user-policy"), NoUserFile: c.Bool("no-user-policy"),
		NoDiscover: c.Bool("no-discover"), Workspace: ws, ProjectDir: wd,
		Checkpoints: c.String("checkpoints") != "off",
	}), nil
}

func loadEngine(c *cli.Command) (*policy.Engine, error) {
	o, err := loadOptions(c)
	if err != nil {
		return nil, exitf(exitBadInput, "%v", err)
	}
	e, err := load.Policy(o)
	if err != nil {
		return nil, exitf(exitBadInput, "%v", err)
	}
	return e, nil
}

func inputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "shell", Aliases: []string{"s"}, Usage: "decide a shell `LINE` (every command in it; the strictest wins)"},
		&cli.StringFlag{Name: "action", Aliases: []string{"a"}, Usage: "decide `ACTION`, an action string tool:<tool>:<detail> (e.g. tool:git:push origin main)"},
		&cli.StringFlag{Name: "cwd", Usage: "decide as if run in `DIR` (default: as agentbox run would start it — the current directory when it is inside the workspace, else W/target)"},
	}
}

// decisionDir is the directory relative paths of a command are decided
// against: --cwd, else what agentbox run would use (the current directory
// inside the workspace, else its target/), else the current directory.
func decisionDir(c *cli.Command) string {
	if d := c.String("cwd"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	cwd, _ := os.Getwd()
	ws, _ := checkWorkspace(c)
	if ws == "" {
		return cwd
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return cwd
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	if cwd == ws || strings.HasPrefix(cwd, ws+"/") {
		return cwd
	}
	return filepath.Join(ws, "target")
}

// input is what check/explain were asked about.
type input struct {
	cwd    string // the directory relative paths are decided against
	argv   []string
	shell  string
	action string
	stdin  bool
}

func readInput(c *cli.Command, allowStdin bool) (input, error) {
	in := input{cwd: decisionDir(c), argv: c.Args().Slice(), shell: c.String("shell"), action: c.String("action")}
	if allowStdin {
		in.stdin = c.Bool("stdin")
	}
	n := 0
	if len(in.argv) > 0 {
		n++
	}
	if c.IsSet("shell") {
		n++
	}
	if c.IsSet("action") {
		n++
	}
	if in.stdin {
		n++
	}
	if n != 1 {
		modes := "-- ARGV..., --shell LINE or --action ACTION"
		if allowStdin {
			modes = "-- ARGV..., --shell LINE, --action ACTION or --stdin"
		}
		return in, exitf(exitUsage, "give exactly one input: %s (see --help)", modes)
	}
	if c.IsSet("action") {
		if _, _, err := policy.ParseAction(in.action); err != nil {
			return in, exitf(exitBadInput, "--action: %v", err)
		}
	}
	return in, nil
}

func decisionExit(d policy.Decision) error {
	switch d {
	case policy.Allow:
		return nil
	case policy.Ask:
		return exitf(exitCheckAsk, "")
	}
	return exitf(exitCheckDeny, "")
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "decide a command or action against a role's policy without running it",
		ArgsUsage: "[-- ARGV...]",
		Description: `Decides allow, ask or deny exactly as the sandbox's exec supervisor would,
and says which rule decided. Give exactly one input:

   agentbox check --role developer -- git push origin main     one program start (argv)
   agentbox check --role developer --shell 'npm test && git push'
   agentbox check --role developer --action 'tool:create_file:target/a.go'
   agentbox check --role developer --stdin < actions.txt       one action per line

Exit status: 0 allow, 3 ask, 4 deny, 1 bad input (invalid policy file or
action), 2 usage. With --stdin the status is 0, or 1 if some line was not a
valid action; each line gets one JSON object on stdout (streamed, in order).

--json prints {"decision","action","rule":{"id","layer","source"},"reason",
"segments":[...]}; "segments" holds per-command results for shell lines.

Layers, lowest first: built-in role < user file < <workspace>/agentbox.yaml <
--policy files < session answers. A deny from any layer wins; otherwise the
most specific allow/ask rule decides (ties: ask over allow, then the higher
layer); nothing matched: the role's default. See 'agentbox explain'.`,
		Flags: append(append(policyFlags(true), inputFlags()...),
			&cli.BoolFlag{Name: "stdin", Usage: "read one action string per line from stdin, write one JSON object per line"},
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "print the result as JSON"},
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			in, err := readInput(c, true)
			if err != nil {
				return err
			}
			e, err := loadEngine(c)
			if err != nil {
				return err
			}
			out := c.Root().Writer
			if out == nil {
				out = os.Stdout
			}
			if in.stdin {
				reader := c.Root().Reader
				if reader == nil {
					reader = os.Stdin
				}
				bad, err := checkStream(e, reader, out)
				if err != nil {
					return exitf(exitFailure, "check --stdin: %v", err)
				}
				if bad > 0 {
					return exitf(exitBadInput, "check --stdin: %d line(s) were not valid actions", bad)
				}
				return nil
			}
			res := decideInput(e, in)
			if c.Bool("json") {
				fmt.Fprintf(out, "%s\n", res.AppendJSON(nil))
			} else {
				printResult(out, &res)
			}
			return decisionExit(res.Decision)
		},
	}
}

func decideInput(e *policy.Engine, in input) policy.Result {
	switch {
	case len(in.argv) > 0:
		return e.Decide(policy.Query{Argv: in.argv, ExecContext: judge.ArgvContext(in.argv, in.cwd, os.Getenv("PATH"))})
	case in.action == "":
		// Bare command names are located through PATH as the exec
		// supervisor does it for a shell line (a program of the project in
		// node_modules/.bin, say).
		return e.Decide(policy.Query{Shell: in.shell, ExecContext: policy.ExecContext{Cwd: in.cwd, LookPath: judge.LookPath(os.Getenv("PATH"), in.cwd), Exists: judge.Overwritable}})
	default:
		return e.Decide(policy.Query{Action: in.action})
	}
}

func printResult(w io.Writer, r *policy.Result) {
	fmt.Fprintf(w, "%s: %s\n", r.Decision, r.Action)
	fmt.Fprintf(w, "  %s\n", r.Reason)
	if r.Rule != nil {
		fmt.Fprintf(w, "  rule %s, layer %s, %s\n", r.Rule.ID, r.Rule.Layer, r.Rule.Source)
	}
	if r.Floor != "" {
		fmt.Fprintf(w, "  raised to at least ask: %s\n", r.Floor)
	}
	for _, s := range r.Segments {
		fmt.Fprintf(w, "  - %s: %s", s.Decision, s.Action)
		if s.Rule != nil {
			fmt.Fprintf(w, "  (%s)", s.Rule.ID)
		}
		if s.Floor != "" {
			fmt.Fprintf(w, "  [%s]", s.Floor)
		}
		fmt.Fprintln(w)
	}
}

// checkStream decides one action per line of r and writes one JSON object
// per line to w. Output is buffered and flushed whenever the input has no
// more data ready, so it streams through pipes and still runs at full speed
// on files. Invalid lines produce {"error": ...} objects and are counted.
func checkStream(e *policy.Engine, r io.Reader, w io.Writer) (bad int, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	bw := bufio.NewWriterSize(w, 1<<16)
	buf := make([]byte, 0, 4096)
	for {
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return bad, err
			}
		}
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			// a very long line: collect it whole
			long := append([]byte(nil), line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			s := strings.TrimRight(string(line), "\r\n")
			buf = buf[:0]
			if _, _, perr := policy.ParseAction(s); perr != nil {
				bad++
				buf = append(buf, `{"error":`...)
				buf = policy.AppendJSONString(buf, perr.Error())
				buf = append(buf, `,"action":`...)
				buf = policy.AppendJSONString(buf, s)
				buf = append(buf, '}', '\n')
			} else {
				res := e.Decide(policy.Query{Action: s})
				buf = res.AppendJSON(buf)
				buf = append(buf, '\n')
			}
			if _, err := bw.Write(buf); err != nil {
				return bad, err
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return bad, bw.Flush()
			}
			return bad, rerr
		}
	}
}
