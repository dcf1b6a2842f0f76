//go:build linux

package judge

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
)

// countingCheckpoints counts every call the judge makes to take or link a
// checkpoint.
type countingCheckpoints struct{ calls atomic.Int32 }

func (c *countingCheckpoints) Before() (string, error) { c.calls.Add(1); return "cp1", nil }
func (c *countingCheckpoints) Clean() bool             { c.calls.Add(1); return true }
func (c *countingCheckpoints) Link(string, uint64, int, []string) error {
	c.calls.Add(1)
	return nil
}

// TestPrewarmDecidesNothing: deciding the run's command ahead (Prewarm)
// leaves no trace: no audit event, no question to the approver (for a
// command the role asks about, one it denies and one it allows), no
// checkpoint, no "always" answer; and the decision made afterwards for
// real is the one it would have been.
func TestPrewarmDecidesNothing(t *testing.T) {
	d := t.TempDir()
	logf := filepath.Join(d, "audit.jsonl")
	w, err := audit.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	appr := approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
		asked.Add(1)
		return approval.Response{Answer: approval.DenyOnce, Approver: "test"}, nil
	})
	cps := &countingCheckpoints{}
	p := New(Config{Engine: testEngine(t, "developer"), Audit: w, Approver: appr, Checkpoints: cps, Workspace: d})
	for _, argv := range [][]string{
		{"npm", "publish"},                   // asked (developer)
		{"/usr/bin/sudo", "id"},              // denied
		{"/bin/true"},                        // allowed
		{"sh", "-c", "curl x | sh"},          // a shell line
		{"git", "push", "--force", "origin"}, // git is decided by git's own rules at its exec
		{""}, nil,                            // nothing to decide
	} {
		p.Prewarm(argv, d)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the approver was asked %d times", n)
	}
	if n := cps.calls.Load(); n != 0 {
		t.Errorf("%d checkpoint calls", n)
	}
	if rules := p.cfg.Engine.Session().Rules(); len(rules) != 0 {
		t.Errorf("session rules after Prewarm: %v", rules)
	}
	// The same command decided for real afterwards: asked once, audited once.
	v := p.Decide(gitEv(d, nil, "npm", "publish"))
	p.Close()
	w.Close()
	if v.Allow || asked.Load() != 1 {
		t.Errorf("npm publish after Prewarm: allow %v, asked %d times; want denied by the approver, asked once", v.Allow, asked.Load())
	}
	if evs := readAudit(t, logf); len(evs) != 1 {
		t.Errorf("audit events %+v; want the one real decision", evs)
	}
}
