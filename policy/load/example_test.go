package load_test

import (
	"fmt"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// An orchestrator in another module loads a built-in role (no user file
// here; with Workspace set, the project's agentbox.yaml would be read
// too) and asks what it decides.
func ExamplePolicy() {
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, argv := range [][]string{{"go", "test", "./..."}, {"git", "push", "origin", "main"}} {
		fmt.Println(argv[0], argv[1]+":", e.Decide(policy.Query{Argv: argv}).Decision)
	}
	// Output:
	// go test: allow
	// git push: deny
}

// Read gives the layers without choosing a role: the roles they define
// (and the built-in ones), or their agent profiles.
func ExampleRead() {
	l, err := load.Read(policy.LoadOptions{NoUserFile: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	roles, err := l.Roles()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range roles {
		if r.Name == "developer" {
			fmt.Println(r.Name, "default", r.Default)
		}
	}
	// Output:
	// developer default ask
}
