package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// TestAuditVerifyMissingHead: a keyed log whose tail was cut off and whose
// head file was deleted does not verify: exit 1 naming the missing head
// file and --no-head. --no-head accepts it with the warning; the intact
// log with its head verifies.
func TestAuditVerifyMissingHead(t *testing.T) {
	log := filepath.Join(t.TempDir(), "a.jsonl")
	w, err := audit.OpenKeyed(log, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"ls", "make", "rm -rf build"} {
		if err := w.Write(audit.Event{Event: audit.EventExec, Agent: "a", Action: "tool:exec:" + a, Decision: audit.DecisionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if out, errOut, code := runCLI(t, "", "audit", "verify", "--file", log); code != 0 || !strings.Contains(out, "3 events") || !strings.Contains(out, "head file matches") {
		t.Fatalf("intact log: exit %d %q %q", code, out, errOut)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if err := os.WriteFile(log, bytes.Join(lines[:2], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log + audit.HeadSuffix); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "", "audit", "verify", "--file", log)
	if code != exitBadInput || !strings.Contains(errOut, "head file "+log+".head is missing") || !strings.Contains(errOut, "--no-head") {
		t.Errorf("truncated log without its head: exit %d %q; want 1 naming %s.head and --no-head", code, errOut, log)
	}
	out, errOut, code := runCLI(t, "", "audit", "verify", "--no-head", "--file", log)
	if code != 0 || !strings.Contains(out, "2 events") || !strings.Contains(out, "no head file") || !strings.Contains(errOut, "lines cut off the end of the log cannot be detected") {
		t.Errorf("--no-head: exit %d %q %q; want ok with the no-head warning", code, out, errOut)
	}
}
