package policy

import (
	_ "embed"
	"fmt"
	"sort"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:generate go run gen_roles.go

//go:embed roles.yaml
var builtinYAML []byte

// genNode is one node of the generated tree of roles.yaml (roles_gen.go).
type genNode struct {
	kind, style      yaml.Kind
	tag, value       string
	line, col        int
	first, nChildren int
}

// builtinTree builds roles.yaml's node tree from the generated table: two
// allocations instead of a YAML parse at every launch.
func builtinTree() *yaml.Node {
	nodes := make([]yaml.Node, len(builtinNodes))
	ptrs := make([]*yaml.Node, len(builtinNodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	for i, g := range builtinNodes {
		n := &nodes[i]
		n.Kind, n.Style, n.Tag, n.Value, n.Line, n.Column = g.kind, yaml.Style(g.style), g.tag, g.value, g.line, g.col
		if g.nChildren > 0 {
			n.Content = ptrs[g.first : g.first+g.nChildren : g.first+g.nChildren]
		}
	}
	return &nodes[0]
}

var builtinOnce struct {
	sync.Once
	roles  map[string]*roleDef
	agents map[string]*AgentProfile
	order  int
	err    error
}

// builtinRoles parses the embedded role definitions once. The returned map
// must not be modified; order is the rule counter to continue from.
func builtinRoles() (map[string]*roleDef, int, error) {
	b := &builtinOnce
	b.Do(func() {
		order := 0
		p := &parser{file: "builtin", base: "builtin", layer: LayerRole, order: &order, builtin: true}
		fd, errs := parseDoc(p, &fileDef{path: "builtin", layer: LayerRole}, builtinTree())
		if len(errs) > 0 {
			b.err = fmt.Errorf("bug: built-in roles do not load: %w", Errors(errs))
			return
		}
		b.roles = map[string]*roleDef{}
		b.agents = map[string]*AgentProfile{}
		for _, a := range fd.agents {
			b.agents[a.Name] = a
		}
		for _, rd := range fd.roles {
			b.roles[rd.name] = rd
		}
		// Every built-in role's extends chain resolves
		// (TestBuiltinRolesResolve); a launch resolves only its own.
		b.order = order
	})
	return b.roles, b.order, b.err
}

// Builtin returns the names of the built-in roles, sorted.
func Builtin() []string {
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
		out = append(out, RoleSummary{Name: name, Description: rd.info.Description, Extends: regs[name].extends, Source: regs[name].source, Default: def.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
