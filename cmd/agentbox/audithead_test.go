package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// TestAuditHeadPublished: `audit head --json` prints the log's signed
// head; `audit verify --host-log ... --heads FILE` passes on the whole
// log and fails, naming host and seq, on a log whose last run was cut
// off, which verify without the head cannot tell from a whole one.
func TestAuditHeadPublished(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	w, err := audit.OpenKeyed(log, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"r1", "r2"} {
		for _, ev := range []string{audit.EventLaunch, audit.EventExit} {
			if err := w.Write(audit.Event{Run: run, Event: ev}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "", "audit", "head", "--file", log, "--host", "ci-1", "--json")
	if code != 0 || !strings.Contains(out, `"host":"ci-1"`) || !strings.Contains(out, `"seq":4`) {
		t.Fatalf("audit head: exit %d, %q %q", code, out, errOut)
	}
	heads := filepath.Join(dir, "heads.jsonl")
	if err := os.WriteFile(heads, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	for _, tc := range []struct {
		name    string
		content []byte
		heads   bool
		code    int
		want    string
	}{
		{"whole with heads", raw, true, 0, "whole"},
		{"cut without heads (not seen)", bytes.Join(lines[:2], nil), false, 0, "whole"},
		{"cut with heads", bytes.Join(lines[:2], nil), true, exitBadInput, "missing: host ci-1 seq 3-4: the chain ends at seq 2, before the head the host published at seq 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same path as the head names: the log as received.
			if err := os.WriteFile(log, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"audit", "verify", "--host-log", "ci-1=" + log, "--host-key", "ci-1=" + log + audit.KeySuffix}
			if tc.heads {
				args = append(args, "--heads", heads)
			}
			out, errOut, code := runCLI(t, "", args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d, %s%s; want %d with %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
	if _, errOut, code := runCLI(t, "", "audit", "head", "--file", filepath.Join(dir, "none.jsonl"), "--json"); code == 0 || !strings.Contains(errOut, "no head file") {
		t.Fatalf("audit head of a log without head: exit %d %q", code, errOut)
	}
}
