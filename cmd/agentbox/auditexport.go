package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/export"
	"github.com/agentbox/agentbox/audit/fleet"
)

// exportFlags are the flags that say where and how to export (audit
// export, and run with --audit-export).
func exportFlags(prefix string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: prefix + "header", Usage: "send header `NAME=VALUE` with every export request (repeatable: authorization, tenant)"},
		&cli.StringFlag{Name: prefix + "format", Usage: "attribute names: `F` otel (default) or ocsf"},
		&cli.StringFlag{Name: prefix + "host", Usage: "host `NAME` the records carry (host.name; default this machine's)"},
		&cli.StringFlag{Name: prefix + "ca", Usage: "PEM `FILE` of the roots that sign the collector's TLS certificate (https:// and grpcs://)"},
	}
}

// newFollower makes the Follower exporting log to endpoint, from the
// flags exportFlags made.
func newFollower(ctx context.Context, c *cli.Command, prefix, log, endpoint string) (*export.Follower, error) {
	ep := export.Endpoint{URL: endpoint, CAFile: c.String(prefix + "ca"), Headers: map[string]string{}}
	for _, h := range c.StringSlice(prefix + "header") {
		k, v, err := export.ParseHeader(h)
		if err != nil {
			return nil, fmt.Errorf("--%sheader: %w", prefix, err)
		}
		ep.Headers[k] = v
	}
	format, err := export.ParseFormat(c.String(prefix + "format"))
	if err != nil {
		return nil, fmt.Errorf("--%sformat: %w", prefix, err)
	}
	host := c.String(prefix + "host")
	if host == "" {
		if host, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("host name: %w", err)
		}
	}
	abs, err := filepath.Abs(log)
	if err != nil {
		return nil, err
	}
	exp, err := export.NewExporter(ctx, ep)
	if err != nil {
		return nil, err
	}
	return &export.Follower{Log: abs, Exporter: exp, Format: format,
		Source: export.Source{Host: host, Log: abs}, Cursor: export.CursorPath(abs, endpoint)}, nil
}

func auditExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "send the audit log to an OpenTelemetry Collector (OTLP logs over HTTP or gRPC)",
		UsageText: "agentbox audit export --endpoint URL [--follow] [--file F] [--format otel|ocsf] [--header K=V]...",
		Description: "URL: http://HOST:4318 (OTLP/HTTP, path /v1/logs unless given), https://..., grpc://HOST:4317,\n" +
			"grpcs://.... Sends every line after the export's cursor (<log>.export-<id>, beside the log) and\n" +
			"moves the cursor when the collector acknowledged them: stopped and started again, it resumes\n" +
			"where it stopped. Without --follow it returns once the log's current end was sent (exit 1 if\n" +
			"the collector could not be reached within --timeout); with --follow it keeps sending new\n" +
			"lines until interrupted. Each record's body is the log line; run, seq, prev, kid and mac are\n" +
			"attributes, so `agentbox audit verify --otlp` can re-verify what the collector stored.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "audit log `FILE` (default " + audit.DefaultPath() + ")"},
			&cli.StringFlag{Name: "endpoint", Usage: "OTLP logs endpoint `URL`", Required: true},
			&cli.BoolFlag{Name: "follow", Usage: "keep sending new lines until interrupted"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "without --follow: give up after `D` when the collector cannot be reached"},
		}, exportFlags("")...),
		Action: auditExport,
	}
}

func auditExport(ctx context.Context, c *cli.Command) error {
	if err := auditNoArgs(c); err != nil {
		return err
	}
	log := c.String("file")
	if log == "" {
		log = audit.DefaultPath()
	}
	if log == "-" {
		return exitf(exitUsage, "export: --file - is not a file; export follows a log file")
	}
	if _, err := os.Stat(log); err != nil {
		return exitf(exitBadInput, "audit log %s: %v", log, err)
	}
	f, err := newFollower(ctx, c, "", log, c.String("endpoint"))
	if err != nil {
		return exitf(exitUsage, "export: %v", err)
	}
	defer f.Exporter.Shutdown(context.Background())
	var last error
	f.OnError = func(err error) {
		if last == nil || last.Error() != err.Error() {
			fmt.Fprintf(cliErr(c), "agentbox: export: %v (retrying)\n", err)
		}
		last = err
	}
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var stop chan struct{}
	if !c.Bool("follow") {
		stop = make(chan struct{})
		close(stop)
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeout(ctx, c.Duration("timeout"))
		defer tcancel()
	}
	err = f.Run(ctx, stop)
	s := f.Stats()
	fmt.Fprintf(cliErr(c), "agentbox: export: %d events sent to %s; acknowledged up to seq %d\n", s.Sent, c.String("endpoint"), s.LastSeq)
	switch {
	case err == nil:
		return nil
	case c.Bool("follow") && errors.Is(err, context.Canceled):
		return nil // interrupted: the cursor says where the next start resumes
	case errors.Is(err, context.DeadlineExceeded):
		return exitf(exitBadInput, "export: not all of %s was sent within %v (the next export resumes at seq %d)", log, c.Duration("timeout"), s.LastSeq+1)
	}
	return exitf(exitBadInput, "export: %v", err)
}

// startRunExport starts exporting the run's audit log in the background
// (run --audit-export): the run's program starts never wait on the
// network. finish waits up to d for what the run wrote to be sent;
// whatever is left stays behind the cursor for the next export.
func startRunExport(ctx context.Context, c *cli.Command, log string) (finish func(d time.Duration), err error) {
	if log == "-" || log == "" {
		return nil, errors.New("--audit-export needs the audit log in a file (not --audit -)")
	}
	if dir := filepath.Dir(log); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	// The log may not exist yet: the run creates it at launch.
	if fd, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		fd.Close()
	}
	f, err := newFollower(ctx, c, "audit-export-", log, c.String("audit-export"))
	if err != nil {
		return nil, err
	}
	f.WaitLock = true // another exporter of this log sends this run's lines too
	f.Poll = 50 * time.Millisecond
	warned := false
	f.OnError = func(err error) {
		if !warned {
			fmt.Fprintf(cliErr(c), "agentbox: warning: audit export: %v (the local log is kept; retrying)\n", err)
			warned = true
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- f.Run(rctx, stop) }()
	return func(d time.Duration) {
		close(stop)
		t := time.NewTimer(d)
		defer t.Stop()
		var err error
		select {
		case err = <-done:
		case <-t.C:
			cancel()
			err = <-done
		}
		cancel()
		f.Exporter.Shutdown(context.Background())
		switch {
		case err == nil:
		case errors.Is(err, export.ErrBusy):
			// Another agentbox exports this log; it sends this run's lines.
		default:
			s := f.Stats()
			fmt.Fprintf(cliErr(c), "agentbox: warning: audit export: sent up to seq %d; the rest stays behind the cursor for `agentbox audit export` (%v)\n", s.LastSeq, err)
		}
	}, nil
}

// fleetVerifyFlags are audit verify's flags for logs of many hosts.
func fleetVerifyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "otlp", Usage: "verify the records in `FILE`, an OpenTelemetry Collector file exporter's output (OTLP/JSON), per host (repeatable)"},
		&cli.StringSliceFlag{Name: "host-log", Usage: "verify `HOST=FILE`, a host's local log, as that host's (repeatable)"},
		&cli.StringSliceFlag{Name: "host-key", Usage: "`HOST=FILE`: the key of HOST's log (repeatable); a host's lines must be signed with its own key"},
		&cli.BoolFlag{Name: "fleet-json", Usage: "with --otlp/--host-log: print the per-host report as JSON"},
		&cli.StringSliceFlag{Name: "heads", Usage: "with --otlp/--host-log: check each host's chain reaches the head it published in `FILE` (agentbox audit head --json lines; repeatable)"},
	}
}

// fleetMode reports whether audit verify was asked about many hosts.
func fleetMode(c *cli.Command) bool {
	return len(c.StringSlice("otlp")) > 0 || len(c.StringSlice("host-log")) > 0
}

// auditVerifyFleet verifies the chains of many hosts: exported streams
// and local logs, each host's with its own keys.
func auditVerifyFleet(ctx context.Context, c *cli.Command) error {
	var lines []fleet.Line
	for _, name := range c.StringSlice("otlp") {
		f, err := os.Open(name)
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
		err = fleet.ReadOTLPJSON(f, name, func(l fleet.Line) { lines = append(lines, l) })
		f.Close()
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
	}
	for _, hl := range c.StringSlice("host-log") {
		host, name, err := fleet.ParseHostValue(hl)
		if err != nil {
			return exitf(exitUsage, "--host-log %v", err)
		}
		abs, _ := filepath.Abs(name)
		if err := readLogLines(name, func(b []byte, n int) {
			lines = append(lines, fleet.Line{Host: host, Log: abs, Bytes: b, Where: fmt.Sprintf("%s:%d", name, n)})
		}); err != nil {
			return exitf(exitBadInput, "%v", err)
		}
	}
	var keys fleet.Keys
	for _, hk := range c.StringSlice("host-key") {
		host, name, err := fleet.ParseHostValue(hk)
		if err != nil {
			return exitf(exitUsage, "--host-key %v", err)
		}
		k, err := audit.LoadKey(name, false)
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
		if err := keys.Add(host, k); err != nil {
			return exitf(exitUsage, "--host-key: %v", err)
		}
	}
	rep := fleet.Verify(lines, keys)
	if err := checkPublishedHeads(c, &rep, lines, keys); err != nil {
		return err
	}
	out := cliOut(c)
	if c.Bool("fleet-json") {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printFleet(out, rep)
	}
	if !rep.OK() {
		return exitf(exitBadInput, "audit verify: not every host's record is whole")
	}
	return nil
}

func printFleet(out io.Writer, rep fleet.Report) {
	for _, ch := range rep.Chains {
		verdict := "whole"
		if !ch.Whole {
			verdict = "NOT WHOLE"
		}
		fmt.Fprintf(out, "host %s: %s: %s: %d events (seq %d-%d), %d runs, %d MACs checked", ch.Host, ch.Log, verdict, ch.Lines, ch.FirstSeq, ch.LastSeq, ch.Runs, ch.MACs)
		if ch.Duplicate > 0 {
			fmt.Fprintf(out, ", %d received twice", ch.Duplicate)
		}
		fmt.Fprintln(out)
		for _, f := range ch.Findings {
			fmt.Fprintf(out, "  %s\n", audit.Printable(f.String()))
		}
	}
}

// readLogLines passes each line of a local log file (without newline) to fn.
func readLogLines(name string, fn func(b []byte, n int)) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	n := 0
	for len(b) > 0 {
		n++
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		fn(append([]byte(nil), b[:i]...), n)
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return nil
}
