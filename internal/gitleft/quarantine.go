package gitleft

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// QuarantineSuffix is appended to a file Quarantine moves aside.
const QuarantineSuffix = ".agentbox-quarantine"

// workspaceAreas are the areas of a workspace a sandboxed agent can write
// (docs/architecture.md): what a run can leave behind lies in one of them
// or in a --rw grant.
var workspaceAreas = []string{"target", "feedback", "agents"}

// WritableAreas returns the areas a run can write (target/, feedback/,
// agents/) of the nearest workspace above path, found by walking up its
// components as written, without resolving links: the directory holding
// context/, target/, feedback/ and agents/ as real directories. None if
// path is in no workspace. A workspace an agent faked inside target/ only
// yields areas inside the real target/.
func WritableAreas(path string) []string {
	if !filepath.IsAbs(path) {
		return nil
	}
	for d := filepath.Dir(filepath.Clean(path)); ; d = filepath.Dir(d) {
		ok := true
		for _, n := range []string{"context", "target", "feedback", "agents"} {
			st, err := os.Lstat(filepath.Join(d, n))
			if err != nil || !st.IsDir() {
				ok = false
				break
			}
		}
		if ok {
			var out []string
			for _, n := range workspaceAreas {
				out = append(out, filepath.Join(d, n))
			}
			return out
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// Command is the command that quarantines f, as argv: agentbox quarantine
// PATH, with --area naming the area it was found in when that is not one
// of its workspace's writable areas (a --rw grant). Quote it for a human
// with shellquote.Command.
func (f Finding) Command() []string {
	argv := []string{"agentbox", "quarantine"}
	if f.Area != "" && !slices.ContainsFunc(WritableAreas(f.Path), func(a string) bool { return within(a, f.Path) }) {
		argv = append(argv, "--area", f.Area)
	}
	return append(argv, f.Path)
}

// Quarantine neutralises the program-running git file at path by moving
// it aside (PATH.agentbox-quarantine): git no longer runs the hook, reads
// the config, attributes or redirect, or follows the link, and the human
// can review it and move it back.
//
// path must be absolute and lie below one of areas (the writable areas:
// WritableAreas, plus any --rw grant the human names); it is refused
// otherwise, and when any component of it — the area's own path included —
// is a symbolic link: the kernel resolves it with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS and renames it relative to the
// directory it opened, so nothing outside the areas is ever moved, whatever
// links the agent left. A link as the last component is moved itself (the
// link, not what it points to). A path that holds nothing git would run is
// refused, so an ordinary file is never moved. Every error names the path.
func Quarantine(areas []string, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s: not an absolute path; not moved", path)
	}
	if slices.Contains(strings.Split(path, "/"), "..") {
		return "", fmt.Errorf("%s: '..' components are refused; not moved", path)
	}
	path = filepath.Clean(path)
	root := ""
	for _, a := range areas {
		if !filepath.IsAbs(a) {
			continue
		}
		a = filepath.Clean(a)
		if within(a, path) && a != path && len(a) > len(root) {
			root = a
		}
	}
	if root == "" {
		if len(areas) == 0 {
			return "", fmt.Errorf("%s: not in an agentbox workspace's writable area (target/, feedback/, agents/); not moved (name a --rw area with --area)", path)
		}
		return "", fmt.Errorf("%s is outside the writable areas (%s); not moved", path, strings.Join(areas, ", "))
	}
	a, err := openArea(root)
	if err != nil {
		if link, t := firstLink(root); link != "" {
			return "", fmt.Errorf("%s: the area %s passes through the symbolic link %s -> %s; quarantine does not follow links; not moved", path, root, link, t)
		}
		return "", fmt.Errorf("%s: opening its area: %w; not moved", path, err)
	}
	defer a.close()
	rel := strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
	parent, err := a.sub(filepath.Dir(rel))
	if err != nil {
		// ELOOP, or ENOTDIR when the link is the parent itself.
		if link, t := firstLink(path); link != "" {
			return "", fmt.Errorf("%s: %s is a symbolic link to %s; quarantine does not follow links (quarantine the link itself); not moved", path, link, t)
		}
		return "", fmt.Errorf("%s: %w; not moved", path, err)
	}
	defer parent.close()
	base := filepath.Base(rel)
	if len(examine(parent, base)) == 0 {
		return "", fmt.Errorf("%s: nothing in it makes git run a program; not moved", path)
	}
	dst := path + QuarantineSuffix
	if err := unix.Renameat2(parent.fd, base, parent.fd, base+QuarantineSuffix, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return "", fmt.Errorf("%s: %s already exists; not moved", path, dst)
		}
		return "", fmt.Errorf("%s: rename: %w; not moved", path, err)
	}
	return dst, nil
}
