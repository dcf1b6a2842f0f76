package fleet_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/fleet"
)

// Example verifies two hosts' logs side by side, each with its host's
// key; a line cut out of host b's log is a gap.
func Example() {
	dir, _ := os.MkdirTemp("", "fleet-example")
	defer os.RemoveAll(dir)
	var keys fleet.Keys
	var lines []fleet.Line
	for _, host := range []string{"a", "b"} {
		log, keyPath := filepath.Join(dir, host+".jsonl"), filepath.Join(dir, host+".key")
		k, err := audit.LoadKey(keyPath, true)
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := keys.Add(host, k); err != nil {
			fmt.Println(err)
			return
		}
		w, err := audit.OpenKeyed(log, keyPath)
		if err != nil {
			fmt.Println(err)
			return
		}
		code := 0
		for _, e := range []audit.Event{
			{Event: audit.EventLaunch, Run: "r-" + host},
			{Event: audit.EventExec, Run: "r-" + host, Decision: audit.DecisionAllow, Action: "make"},
			{Event: audit.EventExec, Run: "r-" + host, Decision: audit.DecisionAllow, Action: "make test"},
			{Event: audit.EventExit, Run: "r-" + host, Exit: &code},
		} {
			_ = w.Write(e)
		}
		w.Close()
		b, _ := os.ReadFile(log)
		for i, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if host == "b" && i == 1 {
				continue // cut out on its way
			}
			lines = append(lines, fleet.Line{Host: host, Log: log, Bytes: l})
		}
	}
	rep := fleet.Verify(lines, keys)
	for _, c := range rep.Chains {
		fmt.Printf("host %s: %d lines, whole %v\n", c.Host, c.Lines, c.Whole)
		for _, f := range c.Findings {
			fmt.Printf("  %s at seq %d\n", f.Kind, f.Seq)
		}
	}
	fmt.Println("ok:", rep.OK())
	// Output:
	// host a: 4 lines, whole true
	// host b: 3 lines, whole false
	//   missing at seq 2
	// ok: false
}
