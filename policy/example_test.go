package policy_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// A hook or an orchestrator loads the role a run uses (with a project
// file in the workspace, here one that denies npm publish) and asks what
// it would decide for a command line, before anything runs.
func Example() {
	ws, _ := os.MkdirTemp("", "policy-example")
	defer os.RemoveAll(ws)
	project := "rules:\n  - {decision: deny, command: npm publish, description: releases go through CI}\n"
	if err := os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte(project), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	e, err := load.Policy(policy.LoadOptions{Role: "developer", Workspace: ws, NoUserFile: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range []string{"go test ./...", "npm publish"} {
		res := e.Decide(policy.Query{Shell: line})
		fmt.Printf("%s: %s\n", line, res.Decision)
	}
	// Output:
	// go test ./...: allow
	// npm publish: deny
}
