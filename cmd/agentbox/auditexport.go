package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/fleet"
	"github.com/agentbox/agentbox/internal/userconf"
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

// ExportBinary is the program that exports: agentbox links no
// OpenTelemetry code (its package initialisation cost every launch), so
// export runs in agentbox-export, installed beside agentbox.
const ExportBinary = "agentbox-export"

// exportBinaryEnv names another agentbox-export (tests; a build whose
// binaries are not side by side).
const exportBinaryEnv = "AGENTBOX_EXPORT_BIN"

// exportBinary finds agentbox-export: $AGENTBOX_EXPORT_BIN, else beside
// agentbox's executable. Missing, the error is one line naming it.
func exportBinary() (string, error) {
	if p := os.Getenv(exportBinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s (%s=%s) is not there: %v", ExportBinary, exportBinaryEnv, p, err)
		}
		return p, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find %s: %v", ExportBinary, err)
	}
	p := filepath.Join(filepath.Dir(self), ExportBinary)
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not installed beside %s (it sends the export: make build or make install puts it there)", ExportBinary, self)
	}
	return p, nil
}

// exportConfig is where and how to export, from the flags exportFlags
// made and the endpoint URL given.
func exportConfig(c flagReader, prefix, endpoint string) (userconf.Export, error) {
	e := userconf.Export{URL: endpoint, Format: c.String(prefix + "format"), Host: c.String(prefix + "host"), CA: c.String(prefix + "ca")}
	for _, h := range c.StringSlice(prefix + "header") {
		k, v, err := userconf.ParseHeader(h)
		if err != nil {
			return e, fmt.Errorf("--%sheader: %w", prefix, err)
		}
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		e.Headers[k] = v
	}
	if e.CA != "" {
		abs, err := filepath.Abs(e.CA)
		if err != nil {
			return e, err
		}
		e.CA = abs
	}
	return e, e.Check()
}

// exportEnv is the environment agentbox-export is started with: agentbox's
// and the configuration in userconf.ExportEnv (its headers may be
// credentials: not on a command line, which every user can read).
func exportEnv(e userconf.Export) ([]string, error) {
	js, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, userconf.ExportEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, userconf.ExportEnv+"="+string(js)), nil
}

func auditExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "send the audit log to an OpenTelemetry Collector (OTLP logs over HTTP or gRPC)",
		UsageText: "agentbox audit export [--endpoint URL] [--follow] [--file F] [--format otel|ocsf] [--header K=V]...",
		Description: "URL: http://HOST:4318 (OTLP/HTTP, path /v1/logs unless given), https://..., grpc://HOST:4317,\n" +
			"grpcs://...; without --endpoint, audit.export of the user settings file. Sends every line after the\n" +
			"export's cursor (<log>.export-<id>, beside the log) and moves the cursor when the collector\n" +
			"acknowledged them: stopped and started again, it resumes where it stopped. Without --follow it\n" +
			"returns once the log's current end was sent (exit 1 if the collector could not be reached within\n" +
			"--timeout); with --follow it keeps sending new lines until interrupted. Each record's body is the\n" +
			"log line; run, seq, prev, kid and mac are attributes, so `agentbox audit verify --otlp` can\n" +
			"re-verify what the collector stored. The sending is done by agentbox-export, installed beside\n" +
			"agentbox (agentbox links no OpenTelemetry code).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "audit log `FILE` (default " + audit.DefaultPath() + ")"},
			&cli.StringFlag{Name: "endpoint", Usage: "OTLP logs endpoint `URL` (default audit.export's url in the user settings file)"},
			&cli.BoolFlag{Name: "follow", Usage: "keep sending new lines until interrupted"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "without --follow: give up after `D` when the collector cannot be reached"},
		}, exportFlags("")...),
		Action: auditExport,
	}
}

// auditExport checks the flags and execs agentbox-export with them.
func auditExport(ctx context.Context, c *cli.Command) error {
	log, err := auditLogFile(c, "; export follows a log file")
	if err != nil {
		return err
	}
	var e userconf.Export
	if c.String("endpoint") == "" {
		if err := noExportFlags(c, ""); err != nil {
			return exitf(exitUsage, "export: %v", err)
		}
		s, path, err := userconf.Load()
		if err != nil {
			return exitf(exitUsage, "export: %v", err)
		}
		if s.Export == nil {
			return exitf(exitUsage, "export: no --endpoint, and no audit.export in %s", path)
		}
		e = *s.Export
	} else if e, err = exportConfig(c, "", c.String("endpoint")); err != nil {
		return exitf(exitUsage, "export: %v", err)
	}
	bin, err := exportBinary()
	if err != nil {
		return exitf(exitUsage, "export: %v", err)
	}
	env, err := exportEnv(e)
	if err != nil {
		return exitf(exitFailure, "export: %v", err)
	}
	args := []string{ExportBinary, "--file", log, "--timeout", c.Duration("timeout").String()}
	if c.Bool("follow") {
		args = append(args, "--follow")
	}
	err = syscall.Exec(bin, args, env)
	return exitf(exitFailure, "export: exec %s: %v", bin, err)
}

// startRunExport starts agentbox-export as a follower of the run's log
// (run --audit-export, or audit.export in the user settings): the run
// writes its local log only and never waits on the network. finish tells
// the follower the run ended (closes its stdin) and waits until it has
// sent what the run wrote, at most d; what is left stays behind the
// cursor for the next export.
func startRunExport(c *cli.Command, log string, e userconf.Export) (finish func(d time.Duration), err error) {
	if log == "-" || log == "" {
		return nil, errors.New("the audit log must be a file to export it (not --audit -)")
	}
	bin, err := exportBinary()
	if err != nil {
		return nil, err
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
	env, err := exportEnv(e)
	if err != nil {
		return nil, err
	}
	const drain = 10 * time.Second
	cmd := exec.Command(bin, "--run", "--file", log, "--drain", drain.String())
	cmd.Env = env
	cmd.Stderr = cliErr(c)
	// Its own process group: a ^C at the terminal is the run's to handle;
	// the follower ends when the run closes its stdin.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", bin, err)
	}
	done := make(chan error, 1)
	ready := make(chan bool, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		ready <- strings.TrimSpace(line) == exportReady
		io.Copy(io.Discard, r)
		done <- cmd.Wait()
	}()
	// Its configuration is checked before the run starts (no network:
	// the exporter connects when it first sends).
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case ok := <-ready:
		if ok {
			break
		}
		stdin.Close()
		<-done // its one line on stderr said why
		return nil, fmt.Errorf("%s did not start", ExportBinary)
	case <-t.C:
		stdin.Close()
		cmd.Process.Kill()
		<-done
		return nil, fmt.Errorf("%s did not start within %v", ExportBinary, drain)
	}
	return func(d time.Duration) {
		stdin.Close()
		t := time.NewTimer(d + 2*time.Second) // its own drain is d
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			cmd.Process.Kill()
			<-done
		}
	}, nil
}

// runExport is the export a run asks for: --audit-export URL (off: none),
// else audit.export of the user settings file.
func runExport(c flagReader, settings userconf.Settings) (userconf.Export, bool, error) {
	url := c.String("audit-export")
	if url == "" || url == "off" {
		if err := noExportFlags(c, "audit-export-"); err != nil {
			return userconf.Export{}, false, err
		}
		if url == "off" || settings.Export == nil {
			return userconf.Export{}, false, nil
		}
		return *settings.Export, true, nil
	}
	e, err := exportConfig(c, "audit-export-", url)
	if err != nil {
		return e, false, fmt.Errorf("--audit-export: %v", err)
	}
	return e, true, nil
}

// noExportFlags refuses exportFlags given without an endpoint to go with.
func noExportFlags(c flagReader, prefix string) error {
	for _, f := range []string{"header", "format", "host", "ca"} {
		if c.IsSet(prefix + f) {
			return fmt.Errorf("--%s%s without an endpoint URL to go with it", prefix, f)
		}
	}
	return nil
}

// exportReady is the line agentbox-export --run writes when it follows.
const exportReady = "agentbox-export ready"

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
