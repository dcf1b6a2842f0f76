package policy

import (
	"errors"
	"sync"
)

// roles_gen.go holds the built-in roles of roles.yaml as the loader
// (policy/load) reads them and the core compiles them, printed as Go
// values by TestBuiltinGenerated (an external test of this package, so
// it can use the loader; the core itself parses no YAML): a launch
// neither scans YAML nor runs the parser nor compiles a rule for them.
// After editing roles.yaml (or a type the roles are made of) run `go
// generate ./policy`; the test fails while the two differ. If
// roles_gen.go no longer compiles after a type change, reduce it to the
// stub below (no built-in roles: loads fail until it is generated) and
// generate again:
//
//	package policy
//
//	var genRoles []*roleDef
//	var genAgents []*AgentProfile
//
//	const genOrder = 0
//
//go:generate go test -run ^TestBuiltinGenerated$ . -args -update-roles

var builtinOnce struct {
	sync.Once
	roles  map[string]*roleDef
	agents map[string]*AgentProfile
	order  int
	err    error
}

// builtinRoles returns the built-in role definitions (roles_gen.go). The
// returned map must not be modified; order is the rule counter to continue
// from.
func builtinRoles() (map[string]*roleDef, int, error) {
	b := &builtinOnce
	b.Do(func() {
		roles, agents, order := genRoles, genAgents, genOrder
		if roles == nil { // the stub roles_gen.go
			b.err = errors.New("bug: no built-in roles: run go generate ./policy")
			return
		}
		b.roles = make(map[string]*roleDef, len(roles))
		b.agents = make(map[string]*AgentProfile, len(agents))
		for _, a := range agents {
			b.agents[a.Name] = a
		}
		for _, rd := range roles {
			b.roles[rd.name] = rd
		}
		// Every built-in role's extends chain resolves
		// (TestBuiltinRolesResolve); a launch resolves only its own.
		b.order = order
	})
	return b.roles, b.order, b.err
}

// builtinRoleNames returns the names of the built-in roles, sorted.
func builtinRoleNames() []string {
	roles, _, _ := builtinRoles()
	return visibleRoles(roles)
}

// deletionClause says what deleting a file in target/ gets under e's role,
// decided by its rules with checkpoints on and off — so `agentbox roles`
// says what a run will do, not what a description once claimed. "" when
// the role's own description already covers it or deletions are plainly
// allowed.
func deletionClause(e *Engine) string {
	was := e.Checkpoints()
	defer e.SetCheckpoints(was)
	q := Query{Argv: []string{"rm", "target/x"}}
	e.SetCheckpoints(true)
	on := e.Decide(q).Decision
	e.SetCheckpoints(false)
	off := e.Decide(q).Decision
	switch {
	case on == Allow && off == Allow:
		return ""
	case on == Allow:
		return "deletions allowed while the run takes checkpoints (agentbox undo puts them back), asked with --checkpoints off"
	case on == Deny:
		return "deletions refused"
	}
	return "deletions need approval"
}
