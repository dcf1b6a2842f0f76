//go:build linux

package helper

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Landlock restricts opening, creating, renaming and deleting files, but not
// changing the metadata of files the process can already reach: chmod,
// chown, utime and setxattr of a file outside every writable area stay
// possible for its owner. A command running as root (agentbox started by
// root on a root-owned workspace) owns every root-owned file on the host.
//
// readOnlyOutside closes that in the kernel: in a mount namespace of the
// sandbox's own, every mount is made read-only except bind mounts of the
// writable areas, so any change to a file outside them — data or metadata —
// fails with EROFS, whoever owns it. It needs CAP_SYS_ADMIN (root); the
// launcher requires it for a root run (sandbox/launcher.go).

// mountFlags maps mountinfo per-mount options to the flags a bind remount
// must keep (a remount that omits them would clear nosuid, nodev, noexec).
var mountFlags = map[string]uintptr{
	"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
	"strictatime": unix.MS_STRICTATIME,
}

// mountPoint is one line of /proc/self/mountinfo that matters here.
type mountPoint struct {
	path  string
	flags uintptr // per-mount flags to keep
	ro    bool
}

func readMountInfo() ([]mountPoint, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountPoint
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		mp := mountPoint{path: unescapeMount(fields[4])}
		for _, o := range strings.Split(fields[5], ",") {
			mp.flags |= mountFlags[o]
			if o == "ro" {
				mp.ro = true
			}
		}
		out = append(out, mp)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// readOnlyOutside makes this process's view of the file system read-only
// except writable (absolute directories), after mounting a review run's
// overlay and the host caches' layers. Call it before chdir: the
// working directory keeps the mount it was on.
func readOnlyOutside(writable []string, overlay *Overlay, caches []CacheLayer, newPID bool) (grants []Rule, err error) {
	err = readOnlyWith(writable, overlay, caches, newPID, &grants)
	return grants, err
}

// readOnlyWith is readOnlyOutside; grants collects the Landlock rules of
// cache layers mounted at host paths (kept writable here too).
func readOnlyWith(writable []string, overlay *Overlay, caches []CacheLayer, newPID bool, grants *[]Rule) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	// Nothing done here may propagate back to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if newPID {
		// In a pid namespace of its own the sandbox gets the /proc of
		// that namespace: the host's would name host pids (its
		// /proc/self/task too, which the helper's all-threads syscalls
		// walk), and list every process outside.
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return &overlayError{fmt.Errorf("a /proc of the run's pid namespace: %w", err)}
		}
	}
	if overlay != nil {
		// A review run's target/ first, in this same namespace: the bind
		// below then keeps the overlay writable.
		// A regular user's helper is in a user namespace: userxattr.
		if err := overlayMount(overlay, os.Geteuid() != 0); err != nil {
			return &overlayError{err}
		}
	}
	// Host caches copy-on-write, before the copies (or binds) below, which carry
	// them (their targets are in the agent's writable area).
	*grants = mountCaches(caches, os.Geteuid() != 0)
	for _, g := range *grants {
		writable = append(writable[:len(writable):len(writable)], g.Path)
	}
	var keep []string
	for _, w := range writable {
		real, err := filepath.EvalSymlinks(w)
		if err != nil {
			continue // not there (an optional area): nothing to keep writable
		}
		if !slices.Contains(keep, real) {
			keep = append(keep, real)
		}
	}
	if !remountEach {
		applied, err := readOnlyByCopies(keep)
		if err != nil {
			return err
		}
		if applied {
			return ptysAfterReadOnly()
		}
		// No open_tree or mount_setattr (before Linux 5.12): below.
	}
	for _, real := range keep {
		if err := unix.Mount(real, real, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount of %s: %w", real, err)
		}
	}
	mounts, err := readMountInfo()
	if err != nil {
		return fmt.Errorf("reading mountinfo: %w", err)
	}
	if !remountEach {
		applied, err := readOnlyAtOnce(mounts, keep)
		if err != nil {
			return err
		}
		if applied {
			return ptysAfterReadOnly()
		}
		// No mount_setattr (before Linux 5.12): remount one by one.
	}
	if err := readOnlyEach(mounts, keep); err != nil {
		return err
	}
	return ptysAfterReadOnly()
}

// ptysAfterReadOnly mounts the sandbox's own pseudo-terminals once the
// rest is read-only, for a run whose stdio is no terminal (headless
// agents, CI, orchestrators): a terminal on fds 0-2 lives in the
// machine's /dev/pts, and hiding that would make its name unknown
// (tty(1), ttyname(3)), so an interactive run keeps it and has no ptys
// of its own. A kernel without devpts instances leaves ptys unavailable,
// as without a mount namespace: not an error.
func ptysAfterReadOnly() error {
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			return nil
		}
	}
	if err := mountPrivatePTYs(); err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: note: %v: programs cannot open pseudo-terminals\n", err)
	}
	return nil
}

// remountEach forces readOnlyEach (tests compare the two).
var remountEach = false

// insideAny reports whether path is one of dirs or below one.
func insideAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if under(path, d) {
			return true
		}
	}
	return false
}

// readOnlyByCopies makes the whole tree read-only with one mount_setattr
// (AT_RECURSIVE; every other attribute is left as it is) after taking a
// copy of the mounts at and below each writable area (open_tree
// OPEN_TREE_CLONE, recursive: each mount's flags as they were), then
// mounts each copy over its area: the same end state as readOnlyAtOnce
// (the areas writable where they were, read-only mounts below them still
// read-only) without reading mountinfo, whose text the kernel makes for
// every mount of the host. applied is false when the kernel cannot (no
// open_tree or mount_setattr, or a copy it refuses) and nothing was
// changed: the caller binds and remounts instead.
func readOnlyByCopies(keep []string) (applied bool, err error) {
	copies := make([]int, 0, len(keep))
	defer func() {
		for _, fd := range copies {
			unix.Close(fd) // a copy not mounted is dropped with its descriptor
		}
	}()
	for _, k := range keep {
		fd, err := unix.OpenTree(unix.AT_FDCWD, k, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return false, nil
		}
		copies = append(copies, fd)
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		if err == unix.ENOSYS || err == unix.EINVAL {
			return false, nil
		}
		return false, fmt.Errorf("read-only mount tree: %w", err)
	}
	for i, fd := range copies {
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, keep[i], unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			// The tree is read-only now: failing here fails closed.
			return true, fmt.Errorf("making %s writable again: %w", keep[i], err)
		}
	}
	return true, nil
}

// readOnlyAtOnce makes the whole tree read-only with one mount_setattr
// (AT_RECURSIVE; every other attribute — nosuid, nodev, noexec, atime —
// is left as it is), then gives the mounts at and below the writable
// areas that were writable their write access back: the same end state as
// readOnlyEach in a few syscalls instead of one per mount. applied is
// false when the kernel has no mount_setattr and nothing was changed.
func readOnlyAtOnce(mounts []mountPoint, keep []string) (applied bool, err error) {
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		if err == unix.ENOSYS || err == unix.EINVAL {
			return false, nil
		}
		return false, fmt.Errorf("read-only mount tree: %w", err)
	}
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, m := range mounts {
		if m.ro || !insideAny(m.path, keep) {
			continue
		}
		err := unix.MountSetattr(unix.AT_FDCWD, m.path, 0, &rw)
		if err != nil && err != unix.ENOENT && err != unix.EACCES {
			// The tree is read-only now: failing here fails closed.
			return true, fmt.Errorf("making %s writable again: %w", m.path, err)
		}
	}
	return true, nil
}

// readOnlyEach remounts every writable mount outside the writable areas
// read-only, one by one, keeping its other flags (mountFlags).
func readOnlyEach(mounts []mountPoint, keep []string) error {
	// Parents before children, so a child remount is not hidden by its parent's.
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].path) < len(mounts[j].path) })
	for _, m := range mounts {
		if m.ro {
			continue
		}
		if insideAny(m.path, keep) {
			continue
		}
		err := unix.Mount("", m.path, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|m.flags, "")
		if err != nil && err != unix.ENOENT && err != unix.EACCES {
			return fmt.Errorf("read-only remount of %s: %w", m.path, err)
		}
	}
	return nil
}
