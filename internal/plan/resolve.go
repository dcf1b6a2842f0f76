package plan

import (
	"io/fs"
	"path/filepath"

	"github.com/agentbox/agentbox/internal/boundary"
)

// evalSymlinks is filepath.EvalSymlinks, answered by one openat2 walk
// (boundary.PlainPath) when no symlink is on the way: p itself when it
// exists, a "does not exist" error when it is missing (the host caches a
// machine does not have: filepath.EvalSymlinks would lstat each component
// to find what the walk already found).
func evalSymlinks(p string) (string, error) {
	switch exists, missing := boundary.PlainPath(p); {
	case exists:
		return p, nil
	case missing:
		return "", &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return filepath.EvalSymlinks(p)
}
