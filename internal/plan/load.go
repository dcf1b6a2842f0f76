package plan

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/policy"
)

// Selection is which policy files a caller layers over the built-in roles:
// the CLI's --policy, --user-policy, --no-user-policy and --no-discover, or
// the Go options of the same names.
type Selection struct {
	Files      []string
	UserFile   string
	NoUserFile bool
	NoDiscover bool
	Workspace  string // "" none: built-in roles and the given files only
	ProjectDir string // the project the agent works in (discovery)
	Home       string // the user's HOME for discovery ("" = $HOME)
	// Checkpoints: decide as a run with checkpoints on does.
	Checkpoints bool
}

// Load is the one builder of policy.LoadOptions: run, check, explain, the
// hook and replay all decide with the layers it selects. With a workspace,
// the other agent tools' permission files in HOME, the workspace and the
// project are discovered (unless NoDiscover); a discovered file the sandbox
// could have written (UntrustedIn) only restricts.
func Load(role string, s Selection) policy.LoadOptions {
	o := policy.LoadOptions{Role: role, Workspace: s.Workspace, UserFile: s.UserFile, NoUserFile: s.NoUserFile, Files: s.Files, Checkpoints: s.Checkpoints}
	if s.Workspace != "" && !s.NoDiscover {
		o.Discover, o.Untrusted = true, UntrustedIn(s.Workspace)
		o.ProjectDir, o.Home = s.ProjectDir, s.Home
	}
	return o
}

// UntrustedIn returns the test for policy files the sandbox could have
// written in workspace: anything inside its target/, feedback/ or agents/
// (symlinks resolved). Such a discovered file only restricts (its deny and
// ask rules count, its allows do not).
func UntrustedIn(workspace string) func(string) bool {
	return untrustedIn(workspace, boundary.PlainPath)
}

// untrustedIn is UntrustedIn with its paths' one-walk answers from
// plainPath (checkLayout's boundary.Resolver, which asks again).
func untrustedIn(workspace string, plainPath func(string) (bool, bool)) func(string) bool {
	ws := realPath(workspace)
	// The areas' prefixes, made once for every path asked about.
	var areas [3]string
	for i, a := range []string{"target", "feedback", "agents"} {
		areas[i] = filepath.Join(ws, a) + "/"
	}
	return func(p string) bool {
		// p as filepath.EvalSymlinks resolves it; a missing p, as it is
		if exists, missing := plainPath(p); !exists && !missing {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
		}
		for _, a := range areas {
			if strings.HasPrefix(p, a) {
				return true
			}
		}
		return false
	}
}

// discoverDir is the project directory discovery looks in: the run's
// directory when it is inside the workspace.
func discoverDir(workspace, dir string) string {
	ws, err := filepath.Abs(workspace)
	if err != nil || dir == "" {
		return ""
	}
	if d, err := filepath.Abs(dir); err == nil && strings.HasPrefix(d, ws+"/") {
		return d
	}
	return ""
}

// ProjectDir is the project directory discovery looks in for a run from
// dir in workspace (dir when it lies inside the workspace, else "").
func ProjectDir(workspace, dir string) string { return discoverDir(workspace, dir) }

func osEnviron() []string { return os.Environ() }
