package boundary

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// resolvePlain is ResolveExisting's fast path: the clean absolute path p
// resolved in one openat2 walk that refuses every symlink
// (RESOLVE_NO_SYMLINKS), or, when p does not exist, its nearest existing
// parent so resolved. ok is true when that parent (or p) was reached
// with no symlink on the way and is no symlink itself: then it is its
// own resolution and the answer is the one the walk of ResolveExisting
// gives, for one or a few system calls instead of a stat per component
// (checkLayout asks for dozens of paths at each launch). Anything else
// (a symlink, a file on the way, no permission) is ok false: the caller
// walks.
func resolvePlain(p string) (string, bool) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", false
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	for cur := p; ; {
		fd, err := unix.Openat2(unix.AT_FDCWD, cur, &how)
		if err == nil {
			// RESOLVE_NO_SYMLINKS with O_PATH opens a trailing symlink
			// itself: one is not its own resolution.
			var st unix.Stat_t
			serr := unix.Fstat(fd, &st)
			unix.Close(fd)
			if serr != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return "", false
			}
			// cur is p or its nearest existing parent, p clean: the
			// walk's answer, cur resolved joined with the rest, is p.
			return p, true
		}
		if !errors.Is(err, unix.ENOENT) {
			return "", false // ELOOP (a symlink), ENOSYS, EACCES...: walk
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", false
		}
		cur = parent
	}
}
