package plan

import (
	"path/filepath"

	"github.com/agentbox/agentbox/internal/boundary"
)

// evalSymlinks is filepath.EvalSymlinks, answered by one openat2 walk
// (boundary.PlainPath) when no symlink is on the way.
func evalSymlinks(p string) (string, error) {
	if exists, _ := boundary.PlainPath(p); exists {
		return p, nil
	}
	return filepath.EvalSymlinks(p)
}
