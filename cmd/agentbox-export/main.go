// Command agentbox-export sends an agentbox audit log to an OpenTelemetry
// Collector (OTLP logs over HTTP or gRPC) with the OpenTelemetry Go SDK's
// exporters (audit/export). It is a binary of its own so agentbox does not
// link the SDK, gRPC and protobuf: they cost every launch ~3.5 ms of
// package initialisation and a third of the binary. agentbox starts it
// from beside its own executable:
//
//   - `agentbox audit export ...` execs it with the flags it was given;
//   - `agentbox run --audit-export URL` (or audit.export in the user's
//     config.yaml) starts it with --run as a follower of the run's local
//     log: the run writes its log only, and never waits on the network;
//     when the run ends it closes this process's stdin, and what the run
//     wrote is sent within --drain.
//
// The endpoint and its headers come from the flags, else from agentbox
// (AGENTBOX_EXPORT_CONFIG, JSON: not the command line, which every user of
// the machine can read), else from the user's config.yaml (audit.export).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/export"
	"github.com/agentbox/agentbox/internal/userconf"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitNotSent = 1 // not everything was sent (the cursor says where the next export resumes)
	exitUsage   = 2 // bad flags or configuration
)

type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{code, fmt.Sprintf(format, args...)}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := &cli.Command{
		Name:      "agentbox-export",
		Usage:     "send an agentbox audit log to an OpenTelemetry Collector (OTLP logs over HTTP or gRPC)",
		UsageText: "agentbox-export [--endpoint URL] [--follow] [--file F] [--format otel|ocsf] [--header K=V]...",
		Description: "URL: http://HOST:4318 (OTLP/HTTP, path /v1/logs unless given), https://..., grpc://HOST:4317,\n" +
			"grpcs://.... Without --endpoint, audit.export of the user's config.yaml. Sends every line after the\n" +
			"export's cursor (<log>.export-<id>, beside the log) and moves the cursor when the collector\n" +
			"acknowledged them: stopped and started again, it resumes where it stopped. agentbox audit export\n" +
			"runs this; agentbox run --audit-export starts it with --run (docs/operations.md).",
		Writer: stdout, ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "audit log `FILE` (default " + audit.DefaultPath() + ")"},
			&cli.StringFlag{Name: "endpoint", Usage: "OTLP logs endpoint `URL`"},
			&cli.BoolFlag{Name: "follow", Usage: "keep sending new lines until interrupted"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "without --follow: give up after `D` when the collector cannot be reached"},
			&cli.StringSliceFlag{Name: "header", Usage: "send header `NAME=VALUE` with every export request (repeatable)"},
			&cli.StringFlag{Name: "format", Usage: "attribute names: `F` otel (default) or ocsf"},
			&cli.StringFlag{Name: "host", Usage: "host `NAME` the records carry (default this machine's)"},
			&cli.StringFlag{Name: "ca", Usage: "PEM `FILE` of the roots that sign the collector's TLS certificate"},
			&cli.BoolFlag{Name: "run", Usage: "follow a run's log: say ready on stdout, send until stdin ends, then what is written within --drain"},
			&cli.DurationFlag{Name: "drain", Value: 10 * time.Second, Usage: "with --run: after stdin ends, send what the log holds for at most `D`"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() > 0 {
				return fail(exitUsage, "takes no arguments (got %q)", c.Args().First())
			}
			if c.Bool("run") {
				return follow(ctx, c, stdin, stdout, stderr)
			}
			return exportOnce(ctx, c, stderr)
		},
	}
	err := app.Run(ctx, args)
	if err == nil {
		return 0
	}
	code := exitUsage
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintf(stderr, "agentbox: export: %v\n", err)
	return code
}

// config is where and how to send, from the flags, agentbox's handover,
// or the user's config.yaml, in that order.
func config(c *cli.Command) (userconf.Export, error) {
	if c.String("endpoint") != "" {
		e := userconf.Export{URL: c.String("endpoint"), Format: c.String("format"), Host: c.String("host"), CA: c.String("ca"), Headers: map[string]string{}}
		for _, h := range c.StringSlice("header") {
			k, v, err := userconf.ParseHeader(h)
			if err != nil {
				return e, fmt.Errorf("--header: %w", err)
			}
			e.Headers[k] = v
		}
		return e, e.Check()
	}
	for _, f := range []string{"header", "format", "host", "ca"} {
		if c.IsSet(f) {
			return userconf.Export{}, fmt.Errorf("--%s without --endpoint", f)
		}
	}
	if js := os.Getenv(userconf.ExportEnv); js != "" {
		var e userconf.Export
		if err := json.Unmarshal([]byte(js), &e); err != nil {
			return e, fmt.Errorf("%s: not an export configuration: %v", userconf.ExportEnv, err)
		}
		return e, e.Check()
	}
	s, path, err := userconf.Load()
	if err != nil {
		return userconf.Export{}, err
	}
	if s.Export == nil {
		where := "the user's config.yaml"
		if path != "" {
			where = path
		}
		return userconf.Export{}, fmt.Errorf("no --endpoint, and no audit.export in %s", where)
	}
	return *s.Export, nil
}

// newFollower makes the Follower of the log at name for e.
func newFollower(ctx context.Context, e userconf.Export, name string) (*export.Follower, error) {
	format, err := export.ParseFormat(e.Format)
	if err != nil {
		return nil, err
	}
	host := e.Host
	if host == "" {
		if host, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("host name: %w", err)
		}
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	exp, err := export.NewExporter(ctx, export.Endpoint{URL: e.URL, CAFile: e.CA, Headers: e.Headers})
	if err != nil {
		return nil, err
	}
	return &export.Follower{Log: abs, Exporter: exp, Format: format,
		Source: export.Source{Host: host, Log: abs}, Cursor: export.CursorPath(abs, e.URL)}, nil
}

func logPath(c *cli.Command) (string, error) {
	name := c.String("file")
	if name == "" {
		name = audit.DefaultPath()
	}
	if name == "-" {
		return "", fail(exitUsage, "--file - is not a file; export follows a log file")
	}
	return name, nil
}

// exportOnce is agentbox audit export: send what is not sent yet (and,
// with --follow, what comes) until interrupted.
func exportOnce(ctx context.Context, c *cli.Command, stderr io.Writer) error {
	name, err := logPath(c)
	if err != nil {
		return err
	}
	if _, err := os.Stat(name); err != nil {
		return fail(exitNotSent, "audit log %s: %v", name, err)
	}
	e, err := config(c)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	f, err := newFollower(ctx, e, name)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	defer f.Exporter.Shutdown(context.Background())
	var last error
	f.OnError = func(err error) {
		if last == nil || last.Error() != err.Error() {
			fmt.Fprintf(stderr, "agentbox: export: %v (retrying)\n", err)
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
	fmt.Fprintf(stderr, "agentbox: export: %d events sent to %s; acknowledged up to seq %d\n", s.Sent, e.URL, s.LastSeq)
	switch {
	case err == nil:
		return nil
	case c.Bool("follow") && errors.Is(err, context.Canceled):
		return nil // interrupted: the cursor says where the next start resumes
	case errors.Is(err, context.DeadlineExceeded):
		return fail(exitNotSent, "not all of %s was sent within %v (the next export resumes at seq %d)", name, c.Duration("timeout"), s.LastSeq+1)
	}
	return fail(exitNotSent, "%v", err)
}

// Ready is the line --run writes on stdout once its configuration is
// good; anything else (or nothing) means it is not following.
const Ready = "agentbox-export ready"

// follow is --run: a run's follower. It says Ready, sends the log's lines
// as the run writes them, and when stdin ends (the run ended, or agentbox
// died) sends what the log holds within --drain, then exits. It runs at a
// the lowest CPU priority (nice 19) and on one CPU at a time: on a machine
// with few CPUs the run's own work goes first, and the backlog (in the
// log, not in memory) is sent as CPU frees up; what the drain leaves is
// sent by the next export, from the cursor.
func follow(ctx context.Context, c *cli.Command, stdin io.Reader, stdout, stderr io.Writer) error {
	name, err := logPath(c)
	if err != nil {
		return err
	}
	e, err := config(c)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	f, err := newFollower(ctx, e, name)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	defer f.Exporter.Shutdown(context.Background())
	lowPriority()
	f.WaitLock = true // another exporter of this log sends this run's lines too
	f.Poll = 50 * time.Millisecond
	warned := false
	f.OnError = func(err error) {
		if !warned {
			fmt.Fprintf(stderr, "agentbox: warning: audit export: %v (the local log is kept; retrying)\n", err)
			warned = true
		}
	}
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer cancel()
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP) // the run's end is stdin's end
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, bufio.NewReader(stdin))
		close(stop)
		t := time.NewTimer(c.Duration("drain"))
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := fmt.Fprintln(stdout, Ready); err != nil {
		return fail(exitUsage, "telling agentbox it is ready: %v", err)
	}
	err = f.Run(ctx, stop)
	switch {
	case err == nil, errors.Is(err, export.ErrBusy):
		// Sent, or another exporter of this log sends this run's lines.
		return nil
	}
	s := f.Stats()
	return fail(exitNotSent, "sent up to seq %d; the rest stays behind the cursor for `agentbox audit export` (%v)", s.LastSeq, err)
}

// lowPriority moves the process to nice 19 and one CPU at a time. Linux
// keeps a nice value per thread, so each of the runtime's threads is
// reniced (threads made later inherit it from the thread making them).
func lowPriority() {
	runtime.GOMAXPROCS(1)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		_ = unix.Setpriority(unix.PRIO_PROCESS, 0, 19)
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, 19)
		}
	}
}
