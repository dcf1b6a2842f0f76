package policy

import (
	"errors"
	"fmt"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"
)

// ProgramName is the program a process runs as the exec policy decides
// it, for rights that follow the program (`programs:`): a #! script the
// kernel ran through its interpreter (argv[scriptArg] is the script), or
// a script file an interpreter or shell was given (`node server.js`,
// `python3 -m`-less `python3 srv.py`, `sh run.sh`), is the script — its
// base name and its path joined to cwd; any other program is identity
// (the name the supervisor established by content: "git" for any copy
// of git), else the base name of exe, at exe.
func ProgramName(argv []string, scriptArg int, identity, exe, cwd string) (name, path string) {
	script := ""
	switch {
	case scriptArg > 0 && scriptArg < len(argv):
		script = argv[scriptArg]
	case len(argv) > 1:
		a := append([]string{identity}, argv[1:]...)
		if identity == "" {
			a[0] = filepath.Base(exe)
		}
		script = scriptOperand(a)
	}
	if script != "" {
		if p := absIn(script, cwd); p != "" {
			return filepath.Base(p), p
		}
		return filepath.Base(script), script
	}
	if identity == "" {
		identity = filepath.Base(exe)
	}
	return identity, exe
}

// ProgramGrant is a program's own network rights (`programs:` in a role
// or an agent profile): the hosts it may reach and the secrets brokered
// for it alone. Only the processes decided as that program (and the
// children they fork without starting another program) hold them; a
// connection to one of its hosts or its secret's placeholder from any
// other process is refused.
type ProgramGrant struct {
	// Name is the program as the exec policy decides it (ProgramName):
	// a name (a glob of names: "*-mcp-server"), or, with a '/', a glob
	// of the program's absolute path ("/opt/mcp/**").
	Name string `json:"name"`
	// Only: the program reaches only Hosts and holds only Secrets, none
	// of the run's (mode: only); otherwise they come on top of the run's
	// (mode: add, the default).
	Only bool `json:"only,omitempty"`
	// Hosts are host patterns (as network: allow) the program may reach.
	Hosts []string `json:"hosts,omitempty"`
	// Secrets are variables of the caller's environment brokered for the
	// program alone: the sandbox holds a placeholder, the proxy puts the
	// value in requests of the program's to Hosts only.
	Secrets []string `json:"secrets,omitempty"`
	// Source is where the block was written (file:line, builtin:...).
	Source string `json:"source,omitempty"`
}

// Matcher returns the test of whether a program decided as name, at path
// (absolute), is this grant's (nil for a name CheckProgramName refuses).
func (g ProgramGrant) Matcher() func(name, path string) bool {
	if CheckProgramName(g.Name) != nil {
		return nil
	}
	if strings.Contains(g.Name, "/") {
		gl, _ := compileProgramGlob(g.Name)
		return func(_, path string) bool { return path != "" && gl.match(filepath.Clean(path), "") }
	}
	pattern := g.Name
	return func(name, _ string) bool {
		ok, _ := pathpkg.Match(pattern, name)
		return ok
	}
}

// CheckProgramName refuses a `programs:` key that cannot match a program:
// empty, a bad glob, or a path that is not absolute.
func CheckProgramName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("empty program name")
	case strings.ContainsAny(name, "\x00\n"):
		return fmt.Errorf("program %q: a name holds no NUL or newline", name)
	case strings.Contains(name, "/"):
		if !strings.HasPrefix(name, "/") {
			return fmt.Errorf("program %q: a path must be absolute (a program started from the workspace is named by its absolute path, /workspace/... as the sandbox sees it), or give the program's name without '/'", name)
		}
		if strings.HasSuffix(name, "/") {
			return fmt.Errorf("program %q: a directory names no program (%s** names every program under it)", name, name)
		}
		if _, err := compileProgramGlob(name); err != nil {
			return err
		}
	default:
		if _, err := pathpkg.Match(name, ""); err != nil {
			return fmt.Errorf("program %q: bad glob: %v", name, err)
		}
	}
	return nil
}

// mergePrograms is a child role's programs over its parent's: a block of
// the same name replaces the parent's, the others are kept.
func mergePrograms(parent, child []ProgramGrant) []ProgramGrant {
	out := slices.Clone(child)
	for _, g := range parent {
		if !slices.ContainsFunc(child, func(c ProgramGrant) bool { return c.Name == g.Name }) {
			out = append(out, g)
		}
	}
	return out
}
