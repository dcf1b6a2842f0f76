package remember_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/policy/remember"
)

// ExampleList lists the rules of a project policy file as an approval
// inbox shows them for revoking, and revokes one: RemoveRule takes it out
// only if its text is still what List gave.
func ExampleList() {
	dir, _ := os.MkdirTemp("", "remember-example")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "agentbox.yaml")
	_ = os.WriteFile(p, []byte("version: 1\nrules:\n  - {decision: allow, command: chmod 600, description: remembered}\n  - {decision: deny, command: curl}\n"), 0o644)

	rules, err := remember.List(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rules {
		fmt.Println(r.Key, r.Decision, r.Match)
	}
	if _, err := remember.RemoveRule(p, rules[0].Key, rules[0].Text); err != nil {
		fmt.Println(err)
		return
	}
	rules, _ = remember.List(p)
	fmt.Println("left:", len(rules), rules[0].Decision, rules[0].Match)
	// Output:
	// rules/0 allow command "chmod 600"
	// rules/1 deny command "curl"
	// left: 1 deny command "curl"
}
