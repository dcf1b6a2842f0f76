package policy

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// roles_gen.go holds the built-in roles as the parser reads them from
// roles.yaml, printed as Go values by TestBuiltinGenerated: a launch neither
// scans YAML nor runs the parser for them. After editing roles.yaml (or a
// type the roles are made of) run `go generate ./policy`; the test fails
// while the two differ. If roles_gen.go no longer compiles after a type
// change, reduce it to the stub below and generate again:
//
//	package policy
//
//	var genRoles []*roleDef
//	var genAgents []*AgentProfile
//
//	const genOrder = 0
//
//go:generate go test -run ^TestBuiltinGenerated$ . -args -update-roles

//go:embed roles.yaml
var builtinYAML []byte

var builtinOnce struct {
	sync.Once
	roles  map[string]*roleDef
	agents map[string]*AgentProfile
	order  int
	err    error
}

// parseBuiltin parses roles.yaml: what roles_gen.go holds, computed at run
// time (the generator, and the stub roles_gen.go).
func parseBuiltin() ([]*roleDef, []*AgentProfile, int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(builtinYAML, &doc); err != nil {
		return nil, nil, 0, fmt.Errorf("bug: built-in roles do not parse: %w", err)
	}
	order := 0
	p := &parser{file: "builtin", base: "builtin", layer: LayerRole, order: &order, builtin: true}
	fd, errs := parseDoc(p, &fileDef{path: "builtin", layer: LayerRole}, &doc)
	if len(errs) > 0 {
		return nil, nil, 0, fmt.Errorf("bug: built-in roles do not load: %w", Errors(errs))
	}
	return fd.roles, fd.agents, order, nil
}

// builtinRoles returns the built-in role definitions (roles_gen.go). The
// returned map must not be modified; order is the rule counter to continue
// from.
func builtinRoles() (map[string]*roleDef, int, error) {
	b := &builtinOnce
	b.Do(func() {
		roles, agents, order := genRoles, genAgents, genOrder
		if roles == nil { // the stub roles_gen.go
			var err error
			if roles, agents, order, err = parseBuiltin(); err != nil {
				b.err = err
				return
			}
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

// RoleSummary names a role and says what it is for.
type RoleSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Extends     string `json:"extends,omitempty"`
	Source      string `json:"source"`
	Default     string `json:"default"`
}

// Roles lists the built-in roles plus the roles defined in the given layers
// (opts.Role is ignored), sorted by name.
func Roles(opts LoadOptions) ([]RoleSummary, error) {
	regs, err := loadRegistry(opts)
	if err != nil {
		return nil, err
	}
	var out []RoleSummary
	for _, name := range visibleRoles(regs) {
		rd, err := resolveRole(regs, name)
		if err != nil {
			return nil, err
		}
		def := Ask
		if rd.def != nil {
			def = *rd.def
		}
		desc := rd.info.Description
		o := opts
		o.Role = name
		if e, err := Load(o); err == nil {
			if d := deletionClause(e); d != "" && !strings.Contains(desc, "deletion") {
				desc = strings.TrimSuffix(strings.TrimSpace(desc), ";") + "; " + d
			}
		}
		out = append(out, RoleSummary{Name: name, Description: desc, Extends: regs[name].extends, Source: regs[name].source, Default: def.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
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
