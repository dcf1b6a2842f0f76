package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/replay"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

// auditCommand is `agentbox audit`: query, summarise and verify the audit log
// (docs/architecture.md). Query and report exit 0, or 1 when the log cannot be read
// or holds malformed lines (each is named on stderr as file:line; the rest is
// still printed); report also exits 1, after printing, when the hash chain
// does not verify. verify exits 0 when the chain is intact, 1 at the first
// broken line.
func auditCommand() *cli.Command {
	fileFlag := &cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "audit log to read (`FILE`, - for stdin; default " + audit.DefaultPath() + ")"}
	sinceFlag := &cli.StringFlag{Name: "since", Usage: "only events at or after `WHEN`: a duration back from now (90m, 1h, 7d) or a time (RFC 3339, or YYYY-MM-DD)"}
	filterFlags := []cli.Flag{
		&cli.StringFlag{Name: "agent", Usage: "only events of agent `ID`"},
		&cli.StringFlag{Name: "role", Usage: "only events of role `R`"},
		&cli.StringFlag{Name: "run", Usage: "only events of run `ID`"},
		&cli.StringFlag{Name: "event", Usage: "only events of kind `E` (launch, exec, git, ask, limit, exit, violation, tool, net, rotate)"},
		&cli.StringFlag{Name: "decision", Usage: "only decision `D`: allow; deny = every refusal (deny, ask_denied, ask_timeout, ask_unavailable); ask = every ask*; =VALUE exactly VALUE (=deny)"},
		&cli.StringFlag{Name: "until", Usage: "only events before `WHEN` (as --since)"},
		&cli.StringFlag{Name: "rule", Usage: "only events decided by rule `ID` (developer/git.push)"},
		&cli.StringFlag{Name: "action", Usage: "only events whose action matches `REGEX` (RE2, unanchored)"},
		&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "only events of runs in workspace `DIR` (as their launch events name it)"},
	}
	return &cli.Command{
		Name:      "audit",
		Usage:     "query, summarise and verify the audit log",
		UsageText: "agentbox audit [--file F] [--agent A] [--decision D] [--event E] [--since DUR|TIME] [--json]\nagentbox audit report [--file F] [--since ...] [--json]\nagentbox audit verify [--file F]",
		Description: "Without a subcommand, prints the matching events as a table (or JSON Lines with --json).\n" +
			"Malformed lines are reported on stderr with their line numbers and make the exit status 1.",
		Flags: append([]cli.Flag{fileFlag, sinceFlag,
			&cli.BoolFlag{Name: "json", Usage: "print matching events as JSON Lines"},
			&cli.BoolFlag{Name: "whole", Usage: "in ACTION, the whole command decided (a wrapper such as bash -c 'source ...; CMD' included), not the part that decided"},
		}, filterFlags...),
		Action: auditQuery,
		Commands: []*cli.Command{
			{
				Name:      "report",
				Usage:     "summarise the log for a security review",
				UsageText: "agentbox audit report [--file F] [--since DUR|TIME] [--agent A] [--json]",
				Description: "Counts per decision, event kind and agent; the most denied actions with their rules;\n" +
					"every ask and who answered it; limit hits; violations; and whether the hash chain verifies.",
				Flags: append([]cli.Flag{fileFlag, sinceFlag,
					&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
					&cli.StringFlag{Name: "html", Usage: "write the report as one self-contained HTML page to `FILE` (- for stdout) instead of the text report (runs, plot of decisions over time, top refusals and rules, approvals, hosts, integrity)"},
					&cli.BoolFlag{Name: "open", Usage: "open the --html page with xdg-open"},
				}, filterFlags...),
				Action: auditReport,
			},
			{
				Name:      "verify",
				Usage:     "check the log's hash chain and head file",
				UsageText: "agentbox audit verify [--file F] [ROTATED... CURRENT]",
				Description: "Exit 0: every line parses, sequence numbers and hashes chain, and the log ends where its\n" +
					"head file (<log>.head) says. Exit 1 names the first broken line and why (edited, deleted,\n" +
					"reordered or torn lines; truncation). The chain proves nothing against someone who can\n" +
					"rewrite both the log and its head file; keep the log outside every sandbox-writable area.\n" +
					"Given several files (oldest first: a.jsonl.2 a.jsonl.1 a.jsonl), each must continue the one\n" +
					"before: a rotated set verifies as one chain. A keyed log (its lines carry MACs) fails without\n" +
					"its key unless --chain-only says the MACs are not to be checked. A log (the current file of\n" +
					"a set) that holds lines but has no head file fails: nothing vouches for its end, so lines cut\n" +
					"off it would not show; --no-head accepts it (a log saved from stdout has none).",
				Flags: append([]cli.Flag{fileFlag,
					&cli.StringSliceFlag{Name: "key", Usage: "HMAC key `FILE` of a keyed log (repeatable, for rotated keys; default <log>.key or $AGENTBOX_AUDIT_KEY when it exists)"},
					&cli.BoolFlag{Name: "chain-only", Usage: "accept a keyed log whose key is not at hand: check the hash chain and head file only (a log recomputed without the key passes this)"},
					&cli.BoolFlag{Name: "no-head", Usage: "accept a log whose head file (<log>.head) is missing: the chain is checked, lines cut off its end cannot be detected"},
				}, fleetVerifyFlags()...),
				Action: auditVerify,
			},
			{
				Name:      "replay",
				Usage:     "re-decide the logged program starts and tool calls with another policy; print what would change",
				UsageText: "agentbox audit replay --policy F... [--role R] [--workspace W] [--file LOG] [--json]",
				Description: "Every exec, git and tool event is decided again with the inputs the live decision had: argv (with\n" +
					"the program's identity), cwd, the resolved executable, the loader/runtime variables recorded with it.\n" +
					"Prints each event whose decision changes (allow->deny, ask->allow, ...) and counts per transition.\n" +
					"Git aliases and repository config are not replayed (the repository may have changed).",
				Flags: []cli.Flag{fileFlag,
					&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "policy `FILE` to decide with (repeatable, layered as run --policy)"},
					&cli.StringFlag{Name: "role", Usage: "decide under role `R` instead of each event's own"},
					&cli.StringFlag{Name: "workspace", Usage: "workspace `DIR` when the log's launch events do not name one"},
					&cli.BoolFlag{Name: "user-policy", Usage: "include the user policy layer"},
					&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
				},
				Action: auditReplay,
			},
			{
				// Benchmarks (scripts/bench-audit.sh): a log of N realistic
				// events with a valid chain, written in batches.
				Name:      "synth",
				Hidden:    true,
				UsageText: "agentbox audit synth --file F --events N [--line-bytes B] [--keyed]",
				Flags: []cli.Flag{fileFlag, &cli.IntFlag{Name: "events", Value: 100000},
					&cli.IntFlag{Name: "line-bytes", Usage: "exec events of about B bytes"},
					&cli.BoolFlag{Name: "keyed", Usage: "sign it with <file>.key, as runs do"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					path := c.String("file")
					if path == "" || path == "-" {
						return exitf(exitUsage, "synth: give --file F")
					}
					open := audit.Open
					if c.Bool("keyed") {
						open = func(p string) (*audit.Writer, error) { return audit.OpenKeyed(p, "") }
					}
					w, err := open(path)
					if err != nil {
						return exitf(exitFailure, "%v", err)
					}
					defer w.Close()
					if err := audit.SynthesizeSized(w, c.Int("events"), c.Int("line-bytes")); err != nil {
						return exitf(exitFailure, "%v", err)
					}
					return nil
				},
			},
			auditExportCommand(), // auditexport.go
			auditHeadCommand(),   // audithead.go
			{
				Name:      "rotate",
				Usage:     "rotate the log: rename it to <log>.N and start a new one that continues its chain",
				UsageText: "agentbox audit rotate [--file F]",
				Description: "Running agentbox processes notice at their next event and continue in the new file.\n" +
					"logrotate works too (its default create mode, never copytruncate): a writer that finds its\n" +
					"file renamed or removed starts a new one whose first event names the old one.",
				Flags: []cli.Flag{fileFlag},
				Action: func(ctx context.Context, c *cli.Command) error {
					path, err := auditLogFile(c, "")
					if err != nil {
						return err
					}
					dst, err := audit.Rotate(path)
					if err != nil {
						return exitf(exitFailure, "%v", err)
					}
					fmt.Fprintf(cliOut(c), "rotated %s to %s; %s continues its chain\n", path, dst, path)
					return nil
				},
			},
		},
	}
}

// auditFilter builds the event filter from the query flags.
func auditFilter(c *cli.Command, now time.Time) (audit.Filter, error) {
	f := audit.Filter{
		Agent:    c.String("agent"),
		Role:     c.String("role"),
		Run:      c.String("run"),
		Event:    c.String("event"),
		Decision: c.String("decision"),
	}
	if ws := c.String("workspace"); ws != "" {
		if abs, err := filepath.Abs(ws); err == nil {
			ws = abs
		}
		if real, err := filepath.EvalSymlinks(ws); err == nil {
			ws = real
		}
		f.Workspace = ws
	}
	if s := c.String("since"); s != "" {
		t, err := parseSince(s, now)
		if err != nil {
			return f, exitf(exitUsage, "--since %q: %v", s, err)
		}
		f.Since = t
	}
	if s := c.String("until"); s != "" {
		t, err := parseSince(s, now)
		if err != nil {
			return f, exitf(exitUsage, "--until %q: %v", s, err)
		}
		f.Until = t
	}
	f.Rule = c.String("rule")
	if s := c.String("action"); s != "" {
		re, err := regexp.Compile(s)
		if err != nil {
			return f, exitf(exitUsage, "--action %q: %v", s, err)
		}
		f.Action = re
	}
	switch strings.TrimPrefix(f.Decision, "=") {
	case "", audit.DecisionAsk, audit.DecisionAllow, audit.DecisionDeny, audit.DecisionAskApproved,
		audit.DecisionAskDenied, audit.DecisionAskTimeout, audit.DecisionAskUnavailable:
	default:
		return f, exitf(exitUsage, "--decision %q: want allow, deny (every refusal), ask, ask_approved, ask_denied, ask_timeout, ask_unavailable, or =VALUE for exactly VALUE", f.Decision)
	}
	switch f.Event {
	case "", audit.EventLaunch, audit.EventExec, audit.EventGit, audit.EventAsk,
		audit.EventLimit, audit.EventExit, audit.EventViolation, audit.EventTool, audit.EventNet, audit.EventRotate:
	default:
		return f, exitf(exitUsage, "--event %q: want launch, exec, git, ask, limit, exit, violation, tool, net or rotate", f.Event)
	}
	return f, nil
}

// parseSince accepts a duration back from now (Go syntax plus a "d" day
// suffix: 90m, 1h30m, 7d), an RFC 3339 time, or a date (YYYY-MM-DD, UTC).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err == nil && n >= 0 && n < 1e5 {
			return now.Add(-time.Duration(n * float64(24*time.Hour))), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, errors.New("want a duration (90m, 1h, 7d), an RFC 3339 time or YYYY-MM-DD")
	}
	return now.Add(-d), nil
}

// openAuditLog opens --file (default audit.DefaultPath()); "-" is stdin.
func openAuditLog(c *cli.Command) (io.ReadCloser, string, error) {
	path := c.String("file")
	if path == "" {
		path = audit.DefaultPath()
	}
	if path == "-" {
		return io.NopCloser(c.Root().Reader), "<stdin>", nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, path, exitf(exitBadInput, "audit log %s does not exist (nothing has been logged there yet; pick another with --file)", path)
		}
		return nil, path, exitf(exitBadInput, "open audit log: %v", err)
	}
	return f, path, nil
}

func cliOut(c *cli.Command) io.Writer {
	if w := c.Root().Writer; w != nil {
		return w
	}
	return os.Stdout
}

func cliErr(c *cli.Command) io.Writer {
	if w := c.Root().ErrWriter; w != nil {
		return w
	}
	return os.Stderr
}

func auditNoArgs(c *cli.Command) error {
	if c.Args().Len() > 0 {
		return exitf(exitUsage, "audit %s: unexpected argument %q", c.Name, c.Args().First())
	}
	return nil
}

// auditLogFile checks the arguments of a subcommand that works on the log
// file itself (rotate, export) and returns its --file (default
// audit.DefaultPath()): "-" is refused (why, when given, says why), a
// file that cannot be stat'd is bad input.
func auditLogFile(c *cli.Command, why string) (string, error) {
	if err := auditNoArgs(c); err != nil {
		return "", err
	}
	path := c.String("file")
	if path == "" {
		path = audit.DefaultPath()
	}
	if path == "-" {
		return "", exitf(exitUsage, "%s: --file - is not a file%s", c.Name, why)
	}
	if _, err := os.Stat(path); err != nil {
		return "", exitf(exitBadInput, "audit log %s: %v", path, err)
	}
	return path, nil
}

// openAuditQuery checks a query's arguments and flags and opens the log.
func openAuditQuery(c *cli.Command) (audit.Filter, io.ReadCloser, string, error) {
	if err := auditNoArgs(c); err != nil {
		return audit.Filter{}, nil, "", err
	}
	filter, err := auditFilter(c, time.Now())
	if err != nil {
		return filter, nil, "", err
	}
	rc, name, err := openAuditLog(c)
	return filter, rc, name, err
}

func auditQuery(ctx context.Context, c *cli.Command) error {
	filter, rc, name, err := openAuditQuery(c)
	if err != nil {
		return err
	}
	defer rc.Close()
	out := cliOut(c)
	errw := cliErr(c)
	var tw *tabwriter.Writer
	var enc *json.Encoder
	width := terminalWidth(out)
	if c.Bool("json") {
		enc = json.NewEncoder(out)
		enc.SetEscapeHTML(false)
	} else {
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tAGENT\tEVENT\tDECISION\tACTION\tRULE/REASON")
	}
	bad := 0
	err = audit.Scan(rc, filter, func(e audit.Event) error {
		if enc != nil {
			return enc.Encode(e)
		}
		act := eventAction(&e)
		if d := e.Detail["decided"]; d != "" && !c.Bool("whole") {
			act = d // the part that decided, not the agent CLI's wrapper around it
		}
		action, why := auditCell(act), auditCell(ruleReason(&e))
		if width > 0 {
			// TIME, AGENT, EVENT, DECISION take about 60 columns; the rest
			// is shared by ACTION (2/3) and RULE/REASON (1/3).
			room := max(width-60, 30)
			action, why = clip(action, room*2/3), clip(why, room-room*2/3)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format("2006-01-02T15:04:05Z"),
			clip(auditCell(e.Agent), 16), auditCell(e.Event), auditCell(e.Decision), action, why)
		return nil
	}, func(le *audit.LineError) error {
		bad++
		le.File = name
		fmt.Fprintf(errw, "agentbox: %s\n", audit.Printable(le.Error()))
		return nil
	})
	if tw != nil {
		tw.Flush()
	}
	if err != nil {
		return exitf(exitBadInput, "read %s: %v", name, err)
	}
	if bad > 0 {
		return exitf(exitBadInput, "%s: %d malformed line(s), reported above", name, bad)
	}
	return nil
}

// eventAction is what the table shows in ACTION: the action, else the argv,
// else the limit or exit status, so every kind of event says what happened.
func eventAction(e *audit.Event) string {
	switch {
	case e.Action != "":
		return e.Action
	case len(e.Argv) > 0:
		return strings.Join(e.Argv, " ")
	case e.Limit != "":
		return "limit:" + e.Limit
	case e.Exit != nil && e.Signal != "":
		return fmt.Sprintf("exit %d (%s)", *e.Exit, e.Signal)
	case e.Exit != nil:
		return fmt.Sprintf("exit %d", *e.Exit)
	case e.Signal != "":
		return "signal " + e.Signal
	}
	return ""
}

func ruleReason(e *audit.Event) string {
	var parts []string
	if e.Rule != "" {
		parts = append(parts, e.Rule)
	}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	if e.Approver != "" {
		parts = append(parts, "approver "+e.Approver)
	}
	return strings.Join(parts, ": ")
}

// auditCell makes log text safe for a terminal table: escapes control characters
// (the text may come from sandboxed code) and shows empty as "-".
func auditCell(s string) string {
	if s == "" {
		return "-"
	}
	return audit.Printable(s)
}

func auditReport(ctx context.Context, c *cli.Command) error {
	filter, rc, name, err := openAuditQuery(c)
	if err != nil {
		return err
	}
	defer rc.Close()
	// Integrity is part of a review: the chain of the whole file is
	// verified in the same pass that builds the report.
	integrity := "not checked (log read from stdin)"
	var broken error
	var rep *audit.Report
	if name == "<stdin>" {
		rep, err = audit.Summarize(rc, filter)
		if err != nil {
			return exitf(exitBadInput, "read %s: %v", name, err)
		}
	}
	fixMalformed := func() {
		for i, m := range rep.Malformed {
			rep.Malformed[i] = name + ":" + strings.TrimPrefix(m, "line ")
		}
	}
	if name != "<stdin>" {
		var res audit.VerifyResult
		var verr error
		rep, res, verr, err = audit.SummarizeFile(name, filter)
		if err != nil {
			return exitf(exitBadInput, "read %s: %v", name, err)
		}
		switch {
		case verr != nil:
			integrity = "BROKEN: " + verr.Error()
			broken = verr
		case len(res.Warnings) > 0:
			integrity = fmt.Sprintf("chain intact over %d lines; %s", res.Lines, strings.Join(res.Warnings, "; "))
		default:
			integrity = fmt.Sprintf("chain intact over %d lines, end matches the head file", res.Lines)
		}
		switch {
		case verr != nil:
		case res.MACsChecked > 0:
			integrity += fmt.Sprintf("; keyed: %d MACs checked", res.MACsChecked)
		case res.KeyMissing:
			integrity += "; keyed, but its key was not found: MACs NOT checked (a log recomputed without the key would look the same)"
		case res.Unkeyed:
			integrity += "; unkeyed: anyone who can write the log could recompute it"
		}
	}
	fixMalformed()
	rep.File, rep.Integrity = name, integrity
	out := cliOut(c)
	page := c.String("html")
	if page == "-" {
		// The page on stdout, and nothing else there.
		if err := rep.WriteHTML(out); err != nil {
			return exitf(exitFailure, "--html -: %v", err)
		}
	} else if page != "" {
		f, err := os.OpenFile(page, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return exitf(exitBadInput, "--html %s: %v", page, err)
		}
		werr := rep.WriteHTML(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return exitf(exitFailure, "--html %s: %v", page, werr)
		}
		fmt.Fprintf(cliErr(c), "agentbox: report written to %s\n", page)
		if c.Bool("open") {
			if err := exec.Command("xdg-open", page).Start(); err != nil {
				fmt.Fprintf(cliErr(c), "agentbox: --open: %v (open %s in a browser)\n", err, page)
			}
		}
	}
	if c.Bool("json") {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if page == "" {
		if err := rep.WriteText(out); err != nil {
			return err
		}
	}
	if len(rep.Malformed) > 0 {
		return exitf(exitBadInput, "%s: %d malformed line(s), listed in the report", name, len(rep.Malformed))
	}
	if broken != nil {
		return exitf(exitBadInput, "%s: integrity check failed: %s (see agentbox audit verify)", name, audit.Printable(broken.Error()))
	}
	return nil
}

func auditVerify(ctx context.Context, c *cli.Command) error {
	if fleetMode(c) {
		return auditVerifyFleet(ctx, c) // auditexport.go
	}
	path := c.String("file")
	files := c.Args().Slice()
	if len(files) > 0 && path != "" {
		return exitf(exitUsage, "verify: give the log with --file or as arguments, not both")
	}
	if path == "" && len(files) == 0 {
		path = audit.DefaultPath()
	}
	var res audit.VerifyResult
	var err error
	if len(files) == 1 {
		path = files[0]
	}
	if len(files) == 0 {
		files = []string{path}
	}
	keyFiles := c.StringSlice("key")
	if len(keyFiles) == 0 {
		if kp := audit.KeyPath(files[len(files)-1], ""); kp != "" {
			if _, err := os.Stat(kp); err == nil {
				keyFiles = []string{kp}
			}
		}
	}
	var keys []audit.Key
	for _, kf := range keyFiles {
		k, err := audit.LoadKey(kf, false)
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
		keys = append(keys, k)
	}
	vo := audit.VerifyOptions{Keys: keys, NoHead: c.Bool("no-head")}
	switch {
	case len(files) > 1:
		path = strings.Join(files, " ")
		res, err = audit.VerifyFilesWith(vo, files...)
	case path == "-":
		res, err = audit.VerifyKeyed(c.Root().Reader, nil, keys)
		path = "<stdin>"
	default:
		if _, serr := os.Stat(path); serr != nil {
			return exitf(exitBadInput, "audit log %s: %v", path, serr)
		}
		res, err = audit.VerifyFilesWith(vo, path)
	}
	var ve *audit.VerifyError
	if errors.As(err, &ve) {
		if errors.Is(err, audit.ErrHeadMissing) {
			return exitf(exitBadInput, "%s: %s; --no-head verifies the chain without it", path, audit.Printable(ve.Reason))
		}
		if ve.Line > 0 {
			return exitf(exitBadInput, "%s:%d: %s", path, ve.Line, audit.Printable(ve.Reason))
		}
		return exitf(exitBadInput, "%s: %s", path, audit.Printable(ve.Reason))
	}
	if err != nil {
		return exitf(exitBadInput, "verify %s: %v", path, err)
	}
	if res.KeyMissing && !c.Bool("chain-only") {
		return exitf(exitBadInput, "%s: keyed log, but its key was not found (<log>.key, --key): the MACs cannot be checked, and a log recomputed without the key would pass; give --key FILE, or --chain-only to check the hash chain alone", path)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(cliErr(c), "agentbox: warning: %s: %s\n", path, w)
	}
	if res.KeyMissing {
		fmt.Fprintf(cliErr(c), "agentbox: warning: %s: --chain-only: the MACs were NOT checked; only the hash chain and head file were\n", path)
	}
	if res.Unkeyed {
		fmt.Fprintf(cliErr(c), "agentbox: warning: %s: unkeyed log: anyone who can write it could recompute a chain that verifies (new logs are keyed: <log>.key)\n", path)
	}
	head := "no head file"
	if res.HeadUsed {
		head = "head file matches"
	}
	if res.MACsChecked > 0 {
		head += fmt.Sprintf(", %d MACs checked", res.MACsChecked)
	}
	if res.KeyMissing {
		head += ", MACs not checked (--chain-only)"
	}
	fmt.Fprintf(cliOut(c), "ok: %s: %d events, chain intact, last seq %d, %s\n", path, res.Lines, res.LastSeq, head)
	return nil
}

// terminalWidth is the width of the terminal out writes to, or 0 when it
// is not a terminal (a pipe or file gets whole lines). $COLUMNS overrides.
func terminalWidth(out io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := out.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
}

func auditReplay(ctx context.Context, c *cli.Command) error {
	if err := auditNoArgs(c); err != nil {
		return err
	}
	rc, name, err := openAuditLog(c)
	if err != nil {
		return err
	}
	defer rc.Close()
	rep, err := replay.Replay(rc, replay.Options{
		Policies: c.StringSlice("policy"), Role: c.String("role"),
		Workspace: c.String("workspace"), UserPolicy: c.Bool("user-policy"),
	})
	if err != nil {
		return exitf(exitBadInput, "replay %s: %v", name, err)
	}
	out := cliOut(c)
	if c.Bool("json") {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	for _, ch := range rep.Changed {
		rule := ch.NowRule
		if rule == "" {
			rule = "-"
		}
		fmt.Fprintf(out, "seq %d run %s agent %s: %s -> %s  %s  (%s: %s)\n", ch.Seq, auditCell(ch.Run), auditCell(ch.Agent),
			ch.Was, ch.Now, auditCell(ch.Action), rule, clip(auditCell(ch.Why), 120))
	}
	keys := make([]string, 0, len(rep.Counts))
	for k := range rep.Counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, rep.Counts[k]))
	}
	summary := "no change"
	if len(parts) > 0 {
		summary = strings.Join(parts, ", ")
	}
	fmt.Fprintf(out, "%d events re-decided, %d would change: %s\n", rep.Decided, len(rep.Changed), summary)
	if rep.Skipped > 0 {
		fmt.Fprintf(cliErr(c), "agentbox: warning: %d events skipped: %s\n", rep.Skipped, rep.SkipReason)
	}
	return nil
}
