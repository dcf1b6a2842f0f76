package boundary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Root is a directory that paths are judged against (a workspace), both as
// given (made absolute) and with symlinks resolved.
type Root struct {
	Abs, Real string
}

// NewRoot resolves dir, which must be an existing directory.
func NewRoot(dir string) (Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Root{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Root{}, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return Root{}, err
	}
	if !st.IsDir() {
		return Root{}, errors.New("not a directory")
	}
	return Root{Abs: abs, Real: real}, nil
}

// Rel maps p (absolute, or relative to cwd) to a slash-separated path
// relative to the workspace. It refuses a path with a ".." component (tools
// and the kernel may resolve those differently) and any path that is, or
// reaches through a symlink, outside the workspace; the returned path is the
// one the kernel would touch (symlinks in existing parts resolved).
func (ws Root) Rel(p, cwd string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	// Checked before joining: filepath.Join would clean "a/../b" away.
	if hasDotDot(p) {
		return "", fmt.Errorf("path %s: '..' components are refused", p)
	}
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(cwd) {
			cwd = ws.Abs
		}
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	real, err := ResolveExisting(p)
	if err != nil {
		return "", fmt.Errorf("path %s: %v", p, err)
	}
	r, err := filepath.Rel(ws.Real, real)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		if real != p {
			return "", fmt.Errorf("path %s (really %s) is outside the workspace %s", p, real, ws.Abs)
		}
		return "", fmt.Errorf("path %s is outside the workspace %s", p, ws.Abs)
	}
	return filepath.ToSlash(r), nil
}

// ResolveExisting resolves symlinks in the longest existing prefix of the
// clean absolute path p and appends the rest unchanged: the path the kernel
// would touch. An error other than "does not exist" on the way is returned.
func ResolveExisting(p string) (string, error) {
	return (*Resolver)(nil).ResolveExisting(p)
}

// A Resolver answers PlainPath and ResolveExisting for one check of many
// paths, walking each path once: checkLayout asks about the same paths
// and their parents several times (whether a policy file is the sandbox's
// to write, then whether a grant covers it; write, then read), one
// openat2 each time. Its answers are those of the first question; use one
// for one check, never across checks. The zero Resolver is ready; a nil
// one remembers nothing.
type Resolver struct {
	plain map[string]plainAnswer
}

type plainAnswer struct{ exists, missing bool }

// PlainPath is the package's PlainPath, each path walked once.
func (r *Resolver) PlainPath(p string) (exists, missing bool) {
	if r == nil {
		return PlainPath(p)
	}
	if a, ok := r.plain[p]; ok {
		return a.exists, a.missing
	}
	exists, missing = PlainPath(p)
	if r.plain == nil {
		r.plain = make(map[string]plainAnswer, 64)
	}
	r.plain[p] = plainAnswer{exists, missing}
	return exists, missing
}

// ResolveExisting is the package's ResolveExisting, its one-walk fast
// path asked through r.
func (r *Resolver) ResolveExisting(p string) (string, error) {
	if res, ok := resolvePlain(p, r.PlainPath); ok {
		return res, nil
	}
	return resolveWalk(p)
}

// resolveWalk is ResolveExisting by a stat of each component: the
// longest existing prefix found from the end, then resolved.
func resolveWalk(p string) (string, error) {
	rest := ""
	cur := p
	for {
		if _, err := os.Lstat(cur); err == nil {
			real, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return "", err
			}
			return filepath.Join(real, rest), nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
