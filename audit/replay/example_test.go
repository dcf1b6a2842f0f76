package replay_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/replay"
)

// ExampleReplay asks what a stricter policy would have done to a
// recorded run: the log's decisions re-decided, the changes listed.
func ExampleReplay() {
	dir, _ := os.MkdirTemp("", "replay-example")
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if _, err := agentbox.Init(ws); err != nil {
		fmt.Println(err)
		return
	}
	log := filepath.Join(dir, "audit.jsonl")
	w, err := audit.Open(log)
	if err != nil {
		fmt.Println(err)
		return
	}
	tgt := filepath.Join(ws, "target")
	for _, e := range []audit.Event{
		{Event: audit.EventLaunch, Run: "r1", Role: "developer", Detail: map[string]string{"workspace": ws}},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:ls -la", Argv: []string{"ls", "-la"}, Cwd: tgt, Exe: "/usr/bin/ls", Decision: audit.DecisionAllow},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:make test", Argv: []string{"make", "test"}, Cwd: tgt, Exe: "/usr/bin/make", Decision: audit.DecisionAllow},
		{Event: audit.EventExit, Run: "r1"},
	} {
		_ = w.Write(e)
	}
	w.Close()

	stricter := filepath.Join(dir, "stricter.yaml")
	_ = os.WriteFile(stricter, []byte("version: 1\nrules:\n  - {decision: deny, command: ls}\n"), 0o600)
	f, _ := os.Open(log)
	defer f.Close()
	rep, err := replay.Replay(f, replay.Options{Policies: []string{stricter}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("re-decided", rep.Decided)
	for _, c := range rep.Changed {
		fmt.Printf("seq %d %s: %s -> %s\n", c.Seq, c.Action, c.Was, c.Now)
	}
	// Output:
	// re-decided 2
	// seq 2 tool:exec:ls -la: allow -> deny
}
