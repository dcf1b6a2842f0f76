package audit_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/audit"
)

// Example shows a reviewer's tool on a log: verify its chain, then read
// the refusals of one agent.
func Example() {
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "audit.jsonl")

	// What a run writes (agentbox.WithAudit does this for every decision).
	w, err := audit.Open(log)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range []audit.Event{
		{Event: audit.EventExec, Agent: "a1", Decision: audit.DecisionAllow, Action: "make test"},
		{Event: audit.EventExec, Agent: "a1", Decision: audit.DecisionDeny, Action: "curl evil.example", Rule: "developer/net"},
		{Event: audit.EventExec, Agent: "a2", Decision: audit.DecisionDeny, Action: "rm -rf /"},
	} {
		if err := w.Write(e); err != nil {
			fmt.Println(err)
			return
		}
	}
	w.Close()

	res, err := audit.VerifyFile(log)
	if err != nil {
		fmt.Println("tampered:", err)
		return
	}
	fmt.Println("verified", res.Lines, "lines")

	f, _ := os.Open(log)
	defer f.Close()
	_ = audit.Read(f, audit.Filter{Agent: "a1", Decision: "deny"}, func(e audit.Event) error {
		fmt.Printf("seq %d: %s denied by %s\n", e.Seq, e.Action, e.Rule)
		return nil
	})
	// Output:
	// verified 3 lines
	// seq 2: curl evil.example denied by developer/net
}
