package policy

import (
	_ "embed"
	"fmt"
	"sort"
	"sync"
)

//go:embed roles.yaml
var builtinYAML []byte

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
		fd, errs := parseFileWith(p, builtinYAML)
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
		for _, rd := range fd.roles {
			if _, err := resolveRole(b.roles, rd.name); err != nil {
				b.err = fmt.Errorf("bug: built-in role %s: %w", rd.name, err)
				return
			}
		}
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
