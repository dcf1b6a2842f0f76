package judge

import (
	"os"
	"path/filepath"
	"strings"
)

// LookPath returns a PATH search as a shell does it for a bare command
// name, for the engine's program locations (policy.ExecContext.LookPath):
// the first directory of pathEnv holding an executable regular file of that
// name (relative entries, and the empty entry, count from cwd). The exec
// supervisor calls it with the PATH of the process whose shell line it
// decides; `agentbox check --shell` with its own, so both locate the same
// program for the same line, directory and PATH.
func LookPath(pathEnv, cwd string) func(name string) string {
	return func(name string) string {
		if name == "" || strings.Contains(name, "/") {
			return ""
		}
		for _, dir := range filepath.SplitList(pathEnv) {
			if dir == "" {
				dir = "."
			}
			if !filepath.IsAbs(dir) {
				if cwd == "" {
					continue
				}
				dir = filepath.Join(cwd, dir)
			}
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
		return ""
	}
}

// Overwritable reports whether path names a file a write would overwrite:
// a regular file with content, or a symlink (policy.ExecContext.Exists).
// Read when a program starts: what the agent does meanwhile only changes
// whether it is asked, never what the kernel allows.
func Overwritable(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && ((fi.Mode().IsRegular() && fi.Size() > 0) || fi.Mode()&os.ModeSymlink != 0)
}
