package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/fleet"
	"github.com/agentbox/agentbox/internal/collectortest"
)

var exportBin struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// exportBinaryForTest builds cmd/agentbox-export once per test process.
func exportBinaryForTest(t *testing.T) string {
	t.Helper()
	exportBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentbox-export-bin-")
		if err != nil {
			exportBin.err = err
			return
		}
		exportBin.path = filepath.Join(dir, ExportBinary)
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", exportBin.path, "../agentbox-export")
		exportBin.out, exportBin.err = cmd.CombinedOutput()
	})
	if exportBin.err != nil {
		t.Fatalf("go build ../agentbox-export: %v\n%s", exportBin.err, exportBin.out)
	}
	return exportBin.path
}

// TestRunAuditExport: a real run with --audit-export starts agentbox-export
// as a follower of its log, and every event reaches a real OpenTelemetry
// Collector by the time the run has exited (OTLP/HTTP); a second run takes
// the endpoint (gRPC, OCSF names) from the user settings file and sends
// the whole log there (a new endpoint's cursor is at its start);
// `agentbox audit export` execs agentbox-export; the chain re-verifies
// from what the collector wrote; the header's secret is in neither the
// audit log nor what agentbox printed; without agentbox-export the run is
// refused in one line naming it.
func TestRunAuditExport(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	t0 := time.Now()
	bin := exportBinaryForTest(t)
	t.Logf("agentbox-export built in %v", time.Since(t0).Round(time.Millisecond))
	colDir := t.TempDir()
	col := collectortest.Start(t, colDir)
	home := t.TempDir()
	const secret = "Bearer s3cr3t-export-t0ken"
	cfg := filepath.Join(home, "agentbox", "config.yaml")
	os.MkdirAll(filepath.Dir(cfg), 0o700)
	if err := os.WriteFile(cfg, []byte("audit:\n  export:\n    url: grpc://"+col.GRPC+"\n    format: ocsf\n    host: ci-7\n    headers: {X-Token: '"+secret+"'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--role", "clitest", "--workspace", ws, "--policy", roleFile, "--no-user-policy", "--approve", "none", "--audit", auditFile}
	agentbox := func(env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(append(os.Environ(), "AGENTBOX_TEST_MAIN=1", "XDG_CONFIG_HOME="+home), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		t.Logf("agentbox %s: %v", args[0], time.Since(t0).Round(time.Millisecond))
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	withBin := []string{exportBinaryEnv + "=" + bin}
	var printed strings.Builder

	// The flags: OTLP/HTTP, a header, a host name.
	out, code := agentbox(withBin, append(base, "--audit-export", "http://"+col.HTTP, "--audit-export-header", "Authorization="+secret,
		"--audit-export-host", "ci-7", "--", "/bin/sh", "-c", "/bin/true; /bin/true")...)
	printed.WriteString(out)
	if code != 0 {
		t.Fatalf("run with --audit-export: exit %d\n%s", code, out)
	}
	n1 := logLines(t, auditFile)
	// The run waited for its follower: all of its lines are at the
	// collector (WaitReceived polls only for the file exporter's flush).
	col.WaitReceived(n1)

	// The settings file: gRPC, OCSF. A new endpoint's cursor is at the
	// log's start: the first run's lines go there too.
	out, code = agentbox(withBin, append(base, "--", "/bin/true")...)
	printed.WriteString(out)
	if code != 0 {
		t.Fatalf("run with audit.export in config.yaml: exit %d\n%s", code, out)
	}
	n2 := logLines(t, auditFile)
	col.WaitReceived(n1 + n2)

	// audit export over HTTP sends the second run's lines, which went
	// over gRPC: its cursor (one per endpoint) is at the first run's end.
	out, code = agentbox(withBin, "audit", "export", "--file", auditFile, "--endpoint", "http://"+col.HTTP, "--host", "ci-7", "--timeout", "20s")
	printed.WriteString(out)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d events sent to http://%s", n2-n1, col.HTTP)) {
		t.Fatalf("audit export: exit %d\n%s", code, out)
	}
	lines := col.WaitReceived(2 * n2)
	key, err := audit.LoadKey(auditFile+audit.KeySuffix, false)
	if err != nil {
		t.Fatal(err)
	}
	var keys fleet.Keys
	keys.Add("ci-7", key)
	rep := fleet.Verify(lines, keys)
	if !rep.OK() || len(lines) != 2*n2 || len(rep.Chains) != 1 || rep.Chains[0].Lines != n2 || rep.Chains[0].Duplicate != n2 {
		t.Fatalf("the collector's %d records do not re-verify as the log's %d lines, each received once per endpoint: %+v\n%s", len(lines), n2, rep, printed.String())
	}
	// The second run's records carry OCSF names, the others OTel's.
	var raw []byte
	files, _ := filepath.Glob(filepath.Join(colDir, "received-*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		raw = append(raw, b...)
	}
	if ocsf, otel := bytes.Count(raw, []byte(`"key":"class_uid"`)), bytes.Count(raw, []byte(`"key":"agentbox.event"`)); ocsf != n2 || otel != n2 {
		t.Errorf("records with OCSF names %d, with OTel names %d; want %d of each", ocsf, otel, n2)
	}
	log, _ := os.ReadFile(auditFile)
	if strings.Contains(string(log), "s3cr3t") || strings.Contains(printed.String(), "s3cr3t") {
		t.Errorf("a header's secret is in the audit log or in what agentbox printed:\n%s", printed.String())
	}

	// No agentbox-export beside agentbox (the test binary): refused in
	// one line, before the run starts.
	out, code = agentbox(nil, append(base, "--audit-export", "http://"+col.HTTP, "--", "/bin/true")...)
	if code != exitRunUsage || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "agentbox-export is not installed beside") {
		t.Errorf("run --audit-export without agentbox-export: exit %d, want %d and one line naming it:\n%s", code, exitRunUsage, out)
	}
	if got := logLines(t, auditFile); got != n2 {
		t.Errorf("the refused run wrote %d audit lines", got-n2)
	}
	out, code = agentbox(nil, "audit", "export", "--file", auditFile)
	if code != exitUsage || !strings.Contains(out, "agentbox-export is not installed beside") {
		t.Errorf("audit export without agentbox-export: exit %d\n%s", code, out)
	}
}

func logLines(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}
