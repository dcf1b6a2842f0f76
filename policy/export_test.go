package policy

import (
	"errors"
	"os"
)

// The loader (policy/load) imports this package, so this package's own
// tests reach it through hooks the external test package sets from its
// init (loader_test.go): the same loader, compiled into the same test
// binary against this package. The functions below are the calls the
// tests were written against.
var LoaderHooks struct {
	Read       func(LoadOptions) (*Layers, error)
	Parse      func(path string, data []byte, layer Layer) (*Document, error)
	CheckPerms func(path string, fi os.FileInfo) error
}

// Load is load.Policy.
func Load(opts LoadOptions) (*Engine, error) {
	if opts.Role == "" {
		return nil, errors.New("no role selected (use --role; see `agentbox roles`)")
	}
	l, err := LoaderHooks.Read(opts)
	if err != nil {
		return nil, err
	}
	return l.Engine()
}

// Roles is load.Read, then Layers.Roles.
func Roles(opts LoadOptions) ([]RoleSummary, error) {
	l, err := LoaderHooks.Read(opts)
	if err != nil {
		return nil, err
	}
	return l.Roles()
}

// AgentProfiles is load.Read, then Layers.Agents.
func AgentProfiles(opts LoadOptions) ([]*AgentProfile, error) {
	l, err := LoaderHooks.Read(opts)
	if err != nil {
		return nil, err
	}
	return l.Agents()
}

// ValidateFiles is load.Files, its problems as a list.
func ValidateFiles(paths ...string) []error {
	_, err := LoaderHooks.Read(LoadOptions{NoUserFile: true, Files: paths})
	return errorList(err)
}

// ValidateData is load.Parse at the project layer.
func ValidateData(path string, data []byte) error {
	_, err := LoaderHooks.Parse(path, data, LayerProject)
	return err
}

// CheckFilePerms is load.CheckFilePerms.
func CheckFilePerms(path string, fi os.FileInfo) error { return LoaderHooks.CheckPerms(path, fi) }

func errorList(err error) []error {
	if err == nil {
		return nil
	}
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	return []error{err}
}

// parsedFile is what the tests look at of a parsed file: its roles as
// the engine keeps them.
type parsedFile struct{ roles []*roleDef }

// parseFile is load.Parse, its roles numbered from *order on.
func parseFile(name string, data []byte, layer Layer, order *int) (*parsedFile, []error) {
	d, err := LoaderHooks.Parse(name, data, layer)
	if d == nil {
		return nil, errorList(err)
	}
	pf := &parsedFile{}
	for _, rs := range d.Roles {
		pf.roles = append(pf.roles, roleDefOf(rs, order))
	}
	return pf, errorList(err)
}

// parseBuiltin parses roles.yaml as the generator of roles_gen.go does:
// the loader reads it, the core compiles its roles.
func parseBuiltin() ([]*roleDef, []*AgentProfile, int, error) {
	data, err := os.ReadFile("roles.yaml")
	if err != nil {
		return nil, nil, 0, err
	}
	d, err := LoaderHooks.Parse("builtin", data, LayerRole)
	if err != nil {
		return nil, nil, 0, err
	}
	order := 0
	var roles []*roleDef
	for _, rs := range d.Roles {
		roles = append(roles, roleDefOf(rs, &order))
	}
	return roles, d.Agents, order, nil
}
