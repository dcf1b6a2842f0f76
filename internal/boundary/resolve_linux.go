package boundary

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// resolvePlain is ResolveExisting's fast path: the clean absolute path p
// walked once by openat2 refusing every symlink (RESOLVE_NO_SYMLINKS).
// ok is true when the walk found p with no symlink on the way and none at
// p (p is its own resolution), or found a name missing with no symlink
// before it (ENOENT: the longest existing prefix is plain, so the walk of
// ResolveExisting gives that prefix joined with the rest, p again). Either
// way the answer is p, for one system call instead of a stat per component
// (checkLayout asks for dozens of paths at each launch, most of them
// missing policy files); the parents of a missing p are not walked, the
// one walk already went through them. Anything else (a symlink, a file on
// the way, no permission) is ok false: the caller walks.
func resolvePlain(p string, plainPath func(string) (bool, bool)) (string, bool) {
	if exists, missing := plainPath(p); exists || missing {
		return p, true
	}
	return "", false // a symlink, ENOSYS, EACCES, not clean...: walk
}

// PlainPath says what one openat2 walk refusing symlinks
// (RESOLVE_NO_SYMLINKS) finds at the clean absolute path p: exists, with
// no symlink on the way and none at p (p is its own resolution: what
// filepath.EvalSymlinks would make of it), or missing, with no symlink up
// to the first missing name (filepath.EvalSymlinks fails). Neither (a
// symlink on the way or at p, p not clean or relative, no permission, no
// openat2): the caller resolves the slow way. A launch asks this of
// dozens of paths (layout checks, host caches, policy files), most of
// them plain, for one system call (and a close) each.
func PlainPath(p string) (exists, missing bool) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return false, false
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return false, errors.Is(err, unix.ENOENT)
	}
	// No fstat: without O_NOFOLLOW a trailing symlink is refused by the
	// walk too (ELOOP), O_PATH or not (openat2(2), RESOLVE_NO_SYMLINKS;
	// TestResolveExistingPlain's link and dangling cases hold it), so an
	// opened p is no symlink.
	unix.Close(fd)
	return true, false
}
