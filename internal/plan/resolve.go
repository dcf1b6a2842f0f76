package plan

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// plainWalk says what one openat2 walk refusing symlinks
// (RESOLVE_NO_SYMLINKS) finds at the clean absolute path p: exists, with
// no symlink on the way and none at p (p is what filepath.EvalSymlinks
// would make of it), or missing, with no symlink up to the first missing
// name (filepath.EvalSymlinks fails). Neither (a symlink on the way, p not
// clean, no permission): ask filepath.EvalSymlinks. A launch resolves
// dozens of such paths (layout checks, host caches), most of them plain.
func plainWalk(p string) (exists, missing bool) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return false, false
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return false, errors.Is(err, unix.ENOENT)
	}
	defer unix.Close(fd)
	// With O_PATH a trailing symlink is opened itself, not refused.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return false, false
	}
	return true, false
}

// evalSymlinks is filepath.EvalSymlinks, answered by plainWalk when no
// symlink is on the way.
func evalSymlinks(p string) (string, error) {
	if exists, _ := plainWalk(p); exists {
		return p, nil
	}
	return filepath.EvalSymlinks(p)
}
