package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/supervise"
)

// TestPsStop: `agentbox ps` lists a run started by another agentbox
// process, and `agentbox stop ID` ends it (the command ignores SIGTERM, so
// stop escalates to SIGKILL): the run exits 137, nothing of it is left,
// the registry no longer lists it and its audit log verifies.
func TestPsStop(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	if err := supervise.PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
	t.Setenv("AGENTBOX_RUN_REGISTRY", filepath.Join(t.TempDir(), "runs"))
	ready := filepath.Join(ws, "target", "ready")
	cmd := exec.Command(os.Args[0], "run", "--role", "clitest", "--workspace", ws, "--policy", roleFile,
		"--no-user-policy", "--approve", "none", "--audit", auditFile, "--no-exec-policy",
		"--", "sh", "-c", "trap '' TERM; : > ready; while :; do sleep 1; done")
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not start: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	out, errOut, code := runCLI(t, "", "ps", "--json")
	if code != 0 {
		t.Fatalf("ps: exit %d %s", code, errOut)
	}
	var id string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			ID, Workspace string
			Pid           int
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Workspace == ws {
			id = e.ID
		}
	}
	if id == "" {
		t.Fatalf("ps does not list the run in %s:\n%s", ws, out)
	}
	table, _, _ := runCLI(t, "", "ps")
	if !strings.Contains(table, id) || !strings.Contains(table, "clitest") {
		t.Errorf("ps table lacks the run:\n%s", table)
	}
	out, errOut, code = runCLI(t, "", "stop", "--grace", "300ms", id)
	if code != 0 || !strings.Contains(out, "stopped "+id) {
		t.Fatalf("stop: exit %d, %q %q", code, out, errOut)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 137 {
		t.Errorf("agentbox run ended with %v (stderr %q); want exit 137", err, stderr.String())
	}
	if out, _, _ := runCLI(t, "", "ps", "--json"); strings.Contains(out, id) {
		t.Errorf("ps still lists %s after stop:\n%s", id, out)
	}
	if _, errOut, code := runCLI(t, "", "stop", id); code != exitBadInput || !strings.Contains(errOut, "no such run") {
		t.Errorf("stop of an ended run: exit %d %q; want 1, no such run", code, errOut)
	}
	f, err := os.Open(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f, nil); err != nil {
		t.Errorf("audit verify: %v", err)
	}
}
