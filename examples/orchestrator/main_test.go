package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/supervise"
)

func TestMain(m *testing.M) {
	if agentbox.MaybeRunHelper() {
		return
	}
	os.Exit(m.Run())
}

// TestOrchestratorRuns: two agents through the library; the approved
// `touch` happens in target/, the shared log verifies and holds
// one launch and one exit per agent.
func TestOrchestratorRuns(t *testing.T) {
	if err := sandbox.CheckLandlock(false); err != nil {
		t.Skipf("reason: %v", err)
	}
	if err := supervise.PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
	d := t.TempDir()
	ws, log := filepath.Join(d, "ws"), filepath.Join(d, "audit.jsonl")
	t.Setenv("AGENTBOX_RUN_REGISTRY", filepath.Join(d, "runs"))
	code := run(ws, "developer", 2, log, time.Minute, false, prefixes{"touch"}, []string{"touch", "made-by-agent"})
	if code != 0 {
		t.Fatalf("run = %d, want 0", code)
	}
	if _, err := os.Stat(filepath.Join(ws, "target", "made-by-agent")); err != nil {
		t.Errorf("approved touch did not happen: %v", err)
	}
	evs, err := audit.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range evs {
		n[e.Agent+"/"+e.Event]++
	}
	for _, k := range []string{"agent1/launch", "agent2/launch", "agent1/exit", "agent2/exit"} {
		if n[k] != 1 {
			t.Errorf("%s events: %d, want 1 (%v)", k, n[k], n)
		}
	}
}

// TestOrchestratorReview: two agents as review runs on one target/ at
// once; the one with fewer changes is applied, the other discarded.
func TestOrchestratorReview(t *testing.T) {
	if err := sandbox.CheckLandlock(false); err != nil {
		t.Skipf("reason: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("reason: the review example mounts the overlay as root")
	}
	d := t.TempDir()
	ws, log := filepath.Join(d, "ws"), filepath.Join(d, "audit.jsonl")
	t.Setenv("AGENTBOX_RUN_REGISTRY", filepath.Join(d, "runs"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(d, "state"))
	// agent1 writes one file, agent2 two: agent1's layer is applied.
	script := `echo "$AGENTBOX_AGENT" > "$AGENTBOX_AGENT.txt"; if [ "$AGENTBOX_AGENT" = agent2 ]; then echo extra > extra.txt; fi`
	if code := run(ws, "developer", 2, log, time.Minute, true, nil, []string{"sh", "-c", script}); code != 0 {
		t.Fatalf("run = %d, want 0", code)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "target", "agent1.txt")); err != nil || string(b) != "agent1\n" {
		t.Errorf("agent1's result was not applied: %q %v", b, err)
	}
	for _, f := range []string{"agent2.txt", "extra.txt"} {
		if _, err := os.Stat(filepath.Join(ws, "target", f)); err == nil {
			t.Errorf("agent2's %s reached target/", f)
		}
	}
	if ls, _ := review.Layers(""); len(ls) != 0 {
		t.Errorf("%d layers left", len(ls))
	}
}
