//go:build linux

package helper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Host caches, copy-on-write. A host build or package cache (Go's build
// cache, npm's, pip's, cargo's, Maven's) is the lowest layer of an
// overlay mounted in the sandbox's own mount namespace where the tool
// looks for its cache in the agent's area; the agent's own cache
// directory is the layer above it (what earlier runs without host caches
// wrote stays visible), and the agent's layer directory the writable top.
// Every write, deletion, rename and mode or time change of the run lands
// in that layer: overlayfs never writes to a lower layer, so nothing the
// agent does reaches the host's cache. As root the mount is made
// directly; a regular user's helper is in a user namespace of its own
// (spawn.go), where overlayfs (Linux 5.11 or later) keeps its marks in
// user.* attributes (userxattr).

// CacheLayer is one host cache shown copy-on-write at Target.
type CacheLayer struct {
	// Name names the cache in messages ("go-build", "npm").
	Name string
	// Lower is the host's cache directory (read, never written).
	Lower string
	// Upper and Work are the agent's own layer and overlayfs's work
	// directory, on one file system.
	Upper, Work string
	// Target is where the tool finds its cache in the sandbox; its own
	// contents are the middle layer. When Access is set, Target is the
	// host's directory itself (Lower), outside every writable area: the
	// merged view is mounted over it and Landlock grants Access on the
	// merged view once it is mounted, never on the host's directory (a
	// layer that fails to mount leaves it read-only). Go's module cache
	// is layered so: the go command compiles a module's packages with
	// their directory in the build cache's key, so only the host's own
	// path reuses the host's compiled packages.
	Target string
	Access uint64
	// Fd, when not 0, is the helper's descriptor of the layer's overlay
	// made ahead by the launcher (PrepareCacheMount): the helper moves it
	// to Target instead of mounting one (and mounts one if it cannot). In
	// the encoded Config it numbers, from 1, the descriptors that come
	// with the config on ConfigFd (Config.takeCacheFds).
	Fd int
}

// mountCaches mounts each layer in the current mount namespace (made
// private by the caller) and returns the Landlock rules its mounted
// layers at host paths need. A cache that cannot be mounted is said on
// stderr in one line and left out: the tool then finds the agent's own
// cache at Target, cold (or the host's, read-only), and the host's is
// untouched either way.
func mountCaches(cs []CacheLayer, unpriv bool) (grants []Rule) {
	for _, c := range cs {
		err := attachCache(c)
		if err != nil {
			err = mountCache(c, unpriv)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentbox: note: host %s cache not layered (%v): this run starts from the agent's own cache\n", c.Name, err)
			continue
		}
		if c.Access != 0 {
			grants = append(grants, Rule{Path: c.Target, Access: c.Access})
		}
	}
	// The overlays parked for every agent's runs (cachepark.go) are out
	// of this run's mount namespace (they are unreachable in it anyway:
	// root's alone and outside every Landlock grant). A regular user's
	// helper cannot (the host's mounts are locked in its user namespace).
	_ = unix.Unmount(ParkDir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	return grants
}

// mountCache mounts c's overlay on its Target in the helper's own mount
// namespace (userxattr in a regular user's user namespace).
func mountCache(c CacheLayer, unpriv bool) error {
	fds, at, err := openLayer(c)
	defer closeAll(fds)
	if err != nil {
		return err
	}
	opts := "lowerdir=" + layerLower(c, at) + ",upperdir=" + at[1] + ",workdir=" + at[2] +
		",redirect_dir=nofollow,metacopy=off,index=off"
	if unpriv {
		opts += ",userxattr"
	}
	// volatile: the layer's unmount, when the run's last process leaves
	// its mount namespace, would otherwise sync the whole file system the
	// layer is on (overlayfs syncs its upper's at unmount), 5-150 ms on a
	// busy disk that the launcher waits for before the run can end. The
	// layer is a cache and gets what the agent's own cache directory gets
	// without layering: writes that reach the disk when the kernel flushes
	// them. The kernel leaves a mark in the work directory that refuses
	// the next mount; the launcher gives each run a work directory of its
	// own (RunWork), and a mark found in the one given is taken away
	// first. A kernel without the option (before Linux 5.10) mounts
	// without it.
	for try := 0; try < 3; try++ {
		clearVolatileMark(fds[2])
		if err = unix.Mount("overlay", at[0], "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts+",volatile"); err != unix.EINVAL {
			break
		}
	}
	if err == unix.EINVAL {
		clearVolatileMark(fds[2])
		err = unix.Mount("overlay", at[0], "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
	}
	if err != nil {
		return fmt.Errorf("overlay on %s: %w", c.Target, err)
	}
	return nil
}

// openLayer opens c's Target, Upper and Work (making missing ones, but a
// Target at the host's own path) and names each as /proc/self/fd/N.
// Target, Upper and Work are in the agent's area, which the sandboxed
// code writes: each is opened without following a symlink at any step
// and named to the kernel through its descriptor, so a planted symlink
// cannot turn the host's cache (or anything else) into the writable
// layer or the mount point. The caller closes fds, also on an error.
func openLayer(c CacheLayer) (fds []int, at [3]string, err error) {
	if c.Lower == "" || strings.ContainsAny(c.Lower, ",:\\") {
		return nil, at, fmt.Errorf("path %q is empty or holds ',', ':' or '\\', which overlayfs options cannot carry", c.Lower)
	}
	for i, p := range []string{c.Target, c.Upper, c.Work} {
		// A target at the host's own path is not made: it is the lower.
		fd, err := openDirNoFollow(p, i > 0 || c.Access == 0)
		if err != nil {
			return fds, at, err
		}
		fds = append(fds, fd)
		at[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	return fds, at, nil
}

// layerLower is the overlay's lowerdir: the agent's own cache (Target)
// above the host's, or the host's alone when Target is the host's own
// path. Index and metacopy off and redirects not followed: the layer
// holds whole files, whiteouts and opaque directories only.
func layerLower(c CacheLayer, at [3]string) string {
	if c.Access != 0 {
		return c.Lower
	}
	return at[0] + ":" + c.Lower
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// PrepareCacheMount returns c's overlay as a detached mount (CAP_SYS_ADMIN
// in the host's mount namespace: a root launcher), which the helper
// moves into place (CacheLayer.Fd, attachCache): a clone of the overlay
// parked for c between runs, parked first on the layer's first run
// (cachepark.go). Creating an overlay writes to the layer's file system
// (its work directory is emptied and remade, its features probed), and
// on a busy disk each such write waits for the journal, 5-40 ms per layer
// measured; a clone writes nothing. Same options and checks as
// mountCache. On an error (no park directory) the helper mounts the
// layer, on a work directory of the run's own (RunWork).
func PrepareCacheMount(c CacheLayer) (int, error) {
	fds, at, err := openLayer(c)
	if err != nil {
		closeAll(fds)
		return -1, err
	}
	fd, err := parkedCacheMount(c, fds, at)
	closeAll(fds)
	return fd, err
}

// newCacheOverlay makes c's overlay (volatile where the kernel has it) as
// a detached mount from its layers opened in fds (named at).
func newCacheOverlay(c CacheLayer, fds []int, at [3]string) (int, error) {
	opts := map[string]string{"lowerdir": layerLower(c, at), "upperdir": at[1], "workdir": at[2],
		"redirect_dir": "nofollow", "metacopy": "off", "index": "off"}
	fd := -1
	var err error
	for try := 0; try < 4; try++ {
		// A mark is there only when a parked overlay of the layer
		// was unmounted (sweepParked, a reboot): cleared when it
		// refuses the mount.
		if try > 0 {
			clearVolatileMark(fds[2])
		}
		// The last try without volatile: a kernel that lacks it.
		if fd, err = makeOverlay(opts, try < 3); err != unix.EINVAL {
			break
		}
	}
	return fd, err
}

// RunWork is the work directory of run's own overlay of a layer whose
// shared work directory is work: two overlays on one work directory
// break each other (each one's mount empties it, under the other's
// copy-ups), and two runs of one agent can be at once. TakeRunWork makes
// it before the run.
func RunWork(work, run string) string {
	return work + ".runs/" + run
}

// TakeRunWork makes run's work directory of the layer whose shared work
// directory is work (RunWork), without following a symlink on the way
// (the directory is in the agent's area), and holds a lock on it while
// the run lasts. release, once the run's overlay is gone, removes it and
// the work directories of earlier runs that no launcher holds (a
// launcher that ended without removing its own).
func TakeRunWork(work, run string) (release func() error, err error) {
	if run == "" || strings.ContainsAny(run, "/\\\x00") || run == "." || run == ".." {
		return nil, fmt.Errorf("run id %q", run)
	}
	lock := -1
	for try := 0; lock < 0; try++ {
		if lock, err = lockRunWork(RunWork(work, run)); err != nil && try == 2 {
			return nil, err
		}
	}
	return func() error {
		defer unix.Close(lock)
		return removeRunWorks(work, run)
	}, nil
}

// lockRunWork makes the directory at p and returns it opened and locked,
// or an error when another launcher's sweep removed it between its making
// and its lock (the lock is then on a directory no longer at p).
func lockRunWork(p string) (int, error) {
	fd, err := openDirNoFollow(p, true)
	if err != nil {
		return -1, err
	}
	lock, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return -1, err
	}
	if err := unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(lock)
		return -1, fmt.Errorf("%s: %w", p, err)
	}
	var held, now unix.Stat_t
	again, err := openDirNoFollow(p, false)
	if err == nil {
		err = unix.Fstat(again, &now)
		unix.Close(again)
	}
	if err == nil {
		err = unix.Fstat(lock, &held)
	}
	if err == nil && (held.Dev != now.Dev || held.Ino != now.Ino) {
		err = fmt.Errorf("%s: removed while being locked", p)
	}
	if err != nil {
		unix.Close(lock)
		return -1, err
	}
	return lock, nil
}

// removeRunWorks removes run's work directory under work.runs and every
// other one there whose lock is free.
func removeRunWorks(work, run string) error {
	fd, err := openDirNoFollow(work+".runs", false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	root, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	defer root.Close()
	// overlayfs makes its own directories there mode 0 (a regular
	// user's launcher, outside the user namespace the helper had, could
	// neither list nor enter them).
	openTree(root, run, 4)
	err = root.RemoveAll(run)
	d, derr := root.Open(".")
	if derr != nil {
		return err
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if n == run {
			continue
		}
		o, oerr := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if oerr != nil {
			continue
		}
		if unix.Flock(o, unix.LOCK_EX|unix.LOCK_NB) == nil {
			openTree(root, n, 4) // an ended run's, held by no launcher
			_ = root.RemoveAll(n)
		}
		unix.Close(o)
	}
	return err
}

// openTree makes the directory name in root, and those under it to depth,
// its owner's to list and enter (a symlink is left alone).
func openTree(root *os.Root, name string, depth int) {
	if fi, err := root.Lstat(name); err != nil || !fi.IsDir() || depth < 0 {
		return
	}
	if root.Chmod(name, 0o700) != nil {
		return
	}
	d, err := root.Open(name)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		openTree(root, name+"/"+n, depth-1)
	}
}

// makeOverlay creates an overlay with the given options (and the volatile
// flag) and returns its detached mount, nosuid and nodev.
func makeOverlay(opts map[string]string, volatile bool) (int, error) {
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fsfd)
	// lowerdir first: the other options are checked against it.
	for _, k := range []string{"lowerdir", "upperdir", "workdir", "redirect_dir", "metacopy", "index"} {
		if err := unix.FsconfigSetString(fsfd, k, opts[k]); err != nil {
			return -1, err
		}
	}
	if volatile {
		if err := unix.FsconfigSetFlag(fsfd, "volatile"); err != nil {
			return -1, err
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, err
	}
	return unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// attachCache moves the overlay the launcher made for c (c.Fd) onto
// c.Target, opened without following a symlink; c.Fd is closed.
func attachCache(c CacheLayer) error {
	if c.Fd <= 0 {
		return errors.New("no overlay made ahead")
	}
	defer unix.Close(c.Fd)
	t, err := openDirNoFollow(c.Target, c.Access == 0)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return unix.MoveMount(c.Fd, "", t, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// clearVolatileMark removes the mark a volatile overlay mount leaves in its
// work directory (work/incompat/volatile/dirty), which makes the kernel
// refuse every later mount of the layer, opening each step without
// following a symlink (the work directory is in the agent's area). A
// mark that is not there, or cannot be removed, is left to the mount to
// report.
func clearVolatileMark(work int) {
	fd := work
	var opened []int
	defer func() {
		for _, o := range opened {
			unix.Close(o)
		}
	}()
	for _, name := range []string{"work", "incompat", "volatile"} {
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		opened = append(opened, next)
		fd = next
	}
	_ = unix.Unlinkat(fd, "dirty", 0)
	_ = unix.Unlinkat(opened[1], "volatile", unix.AT_REMOVEDIR)
}

// openDirNoFollow opens the directory at the absolute path p, making
// missing components (mode 0700) when mkdir is set, and refuses a symlink
// anywhere on the way (the path is resolved already: one there now was
// planted). An existing path is opened in one openat2 that refuses any
// symlink on the way; anything else (a missing component, a symlink, a
// kernel without openat2) takes the walk, a component at a time, which
// makes or refuses as before. The walk took ~0.3 ms of CPU per launch for
// the host caches' layers (two opens and a close per component).
func openDirNoFollow(p string, mkdir bool) (int, error) {
	if !filepath.IsAbs(p) {
		return -1, fmt.Errorf("%s: not an absolute path", p)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Clean(p), &how); err == nil {
		return fd, nil
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(strings.Trim(filepath.Clean(p), "/"), "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && mkdir {
			if err = unix.Mkdirat(fd, name, 0o700); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: %s: %w (a symlink is not followed)", p, name, err)
		}
		fd = next
	}
	return fd, nil
}

// privateMountNS moves the helper into a mount namespace of its own whose
// mounts do not propagate back to the host's.
func privateMountNS() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	return nil
}
