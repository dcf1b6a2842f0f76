//go:build linux

package helper

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Parked cache layers. Making a layer's overlay writes to the layer's
// file system (overlayfs empties and remakes its work directory and
// probes the upper's features), 0.5-0.6 ms of CPU per layer on an idle
// disk and 5-40 ms when the disk's journal is busy. A root launcher
// therefore makes each layer's overlay once and keeps it mounted, parked
// at ParkDir/KEY in the host's mount namespace, and hands each run a
// clone of it (open_tree OPEN_TREE_CLONE): a new mount of the same
// overlay, made without writing anything. Two runs of one agent at once
// share the one overlay, which overlayfs supports (two overlays sharing
// a work directory it does not).
//
// The overlay caches what it looked up, also names that were not there;
// the host's cache (and the agent's own, when a run without host caches
// wrote it) changes between runs, which overlayfs does not notice. So
// each clone is preceded by a reconfiguration of the parked overlay
// (fspick, FSCONFIG_CMD_RECONFIGURE), which drops the overlay's unused
// cached entries: each run looks the layers up afresh, as on a new mount.
//
// KEY names the layer's directories and their device and inode numbers,
// opened without following a symlink at every launch: a layer whose
// directory was replaced (or a planted symlink) no longer matches its
// parked overlay. ParkDir is root's alone (0700, checked): the parked
// overlays are not reachable by another user; their mount lines (paths,
// options) are listed in /proc/self/mountinfo as every mount's are.
// They are cleaned up when one is parked: an overlay of the same layer
// under another key, or whose layer directory is gone, is unmounted
// (sweepParked); /run is emptied at boot.

// ParkDir is where a root launcher keeps the cache layers' overlays
// between runs; AGENTBOX_CACHE_PARK names another ("off": none, each run
// makes its own as before).
const ParkDir = "/run/agentbox/cache-layers"

// overlayMagic is overlayfs's f_type (statfs).
const overlayMagic = 0x794c7630

func parkDir() string {
	if d := os.Getenv("AGENTBOX_CACHE_PARK"); d != "" {
		return d
	}
	return ParkDir
}

// parkKey names c's parked overlay: a hash of the layer's paths (the
// prefix, shared by the overlays of one layer) and one of the layer's
// directories' identities (device and inode of Target, Upper, Work as
// opened in fds, and of the host's Lower).
func parkKey(c CacheLayer, fds []int) (string, error) {
	ph := sha256.Sum256([]byte(strings.Join([]string{c.Lower, c.Target, c.Upper, c.Work, strconv.FormatBool(c.Access != 0)}, "\x00")))
	ih := sha256.New()
	var st unix.Stat_t
	if err := unix.Stat(c.Lower, &st); err != nil {
		return "", fmt.Errorf("%s: %w", c.Lower, err)
	}
	fmt.Fprintf(ih, "%d:%d", st.Dev, st.Ino)
	for _, fd := range fds {
		if err := unix.Fstat(fd, &st); err != nil {
			return "", err
		}
		fmt.Fprintf(ih, " %d:%d", st.Dev, st.Ino)
	}
	return hex.EncodeToString(ph[:8]) + "-" + hex.EncodeToString(ih.Sum(nil)[:8]), nil
}

// openParkDir opens (making it) the park directory, refusing a symlink on
// the way and a directory that is not root's alone.
func openParkDir() (int, error) {
	dir := parkDir()
	if dir == "off" {
		return -1, errors.New("parking is off (AGENTBOX_CACHE_PARK=off)")
	}
	fd, err := openDirNoFollow(dir, true)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != 0 || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: not a directory of root's alone (mode %o, owner %d)", dir, st.Mode&0o7777, st.Uid)
	}
	return fd, nil
}

// cloneParked returns a clone of the overlay parked at park/key, after
// dropping what the overlay cached, or an error when none is parked there.
func cloneParked(park int, key string) (int, error) {
	fd, err := unix.OpenTree(park, key, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return -1, err
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != overlayMagic {
		// The directory without its overlay (a launcher that died
		// between making it and mounting there).
		unix.Close(fd)
		return -1, fmt.Errorf("%s: no overlay parked", key)
	}
	if err := reconfigure(park, key); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// reconfigure reconfigures the mount at park/key unchanged, which makes
// the kernel drop the unused entries its file system cached.
func reconfigure(park int, key string) error {
	fc, err := unix.Fspick(park, key, unix.FSPICK_CLOEXEC|unix.FSPICK_SYMLINK_NOFOLLOW|unix.FSPICK_NO_AUTOMOUNT)
	if err != nil {
		return fmt.Errorf("fspick %s: %w", key, err)
	}
	defer unix.Close(fc)
	if err := unix.FsconfigReconfigure(fc); err != nil {
		return fmt.Errorf("reconfiguring %s: %w", key, err)
	}
	return nil
}

// parkedCacheMount returns a clone of c's parked overlay, parking one
// first when there is none (under a lock, so that two launchers of one
// agent park one). fds are c's Target, Upper and Work as openLayer
// opened them, at their /proc/self/fd names.
func parkedCacheMount(c CacheLayer, fds []int, at [3]string) (int, error) {
	park, err := openParkDir()
	if err != nil {
		return -1, err
	}
	defer func() { unix.Close(park) }()
	key, err := parkKey(c, fds)
	if err != nil {
		return -1, err
	}
	if fd, err := cloneParked(park, key); err == nil {
		return fd, nil
	}
	// One lock for all parking (a launcher's first run of a layer):
	// beside the park directory, which the tmpfs below covers.
	lock, err := unix.Open(parkDir()+".lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, err
	}
	defer unix.Close(lock) // and the lock with it
	if err := unix.Flock(lock, unix.LOCK_EX); err != nil {
		return -1, err
	}
	unix.Close(park)
	if park, err = openParkDir(); err != nil {
		return -1, err
	}
	if park, err = privatePark(park); err != nil {
		return -1, err
	}
	if fd, err := cloneParked(park, key); err == nil {
		return fd, nil // another launcher parked it meanwhile
	}
	m, err := newCacheOverlay(c, fds, at)
	if err != nil {
		return -1, err
	}
	defer unix.Close(m)
	// Whatever is at KEY and could not be cloned goes first: a mount
	// moved onto it would hide it, not replace it.
	unparkAt(park, key)
	if err := unix.Mkdirat(park, key, 0o700); err != nil && err != unix.EEXIST {
		return -1, err
	}
	if err := unix.MoveMount(m, "", park, key, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return -1, fmt.Errorf("parking %s: %w", key, err)
	}
	// What the sweep checks: the layer's upper directory and its inode.
	var st unix.Stat_t
	if err := unix.Fstat(fds[1], &st); err == nil {
		writeAt(park, key+".layer", fmt.Sprintf("%d %d %s\n", st.Dev, st.Ino, c.Upper))
	}
	sweepParked(park, key)
	return cloneParked(park, key)
}

// privatePark makes the park directory a tmpfs of its own, private (a
// parked overlay is not propagated to the mount namespaces that receive
// the host's mounts, such as services'), unless it is one already, and
// returns it opened again (park is closed).
func privatePark(park int) (int, error) {
	var stx unix.Statx_t
	if err := unix.Statx(park, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &stx); err != nil {
		return park, err
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return park, nil
	}
	at := "/proc/self/fd/" + strconv.Itoa(park)
	if err := unix.Mount("agentbox-cache-layers", at, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700,size=1m"); err != nil {
		return park, fmt.Errorf("park directory: %w", err)
	}
	unix.Close(park)
	park, err := openParkDir()
	if err != nil {
		return -1, err
	}
	if err := unix.Mount("", "/proc/self/fd/"+strconv.Itoa(park), "", unix.MS_PRIVATE, ""); err != nil {
		unix.Close(park)
		return -1, fmt.Errorf("park directory: %w", err)
	}
	return park, nil
}

// writeAt writes a small file in dir (not following a symlink).
func writeAt(dir int, name, s string) {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_, _ = unix.Write(fd, []byte(s))
}

// sweepParked unmounts and removes, in the park directory park, every
// overlay parked for the same layer as key under another key (its
// directories were replaced) and every one whose layer's upper
// directory is gone or another, with its record. Called when an
// overlay is parked; the parked overlays of a workspace deleted since
// stay until the next one is parked (or the next boot).
func sweepParked(park int, key string) {
	prefix, _, _ := strings.Cut(key, "-")
	_, _ = unparkIn(park, func(k, record string) bool {
		p, _, _ := strings.Cut(k, "-")
		return k != key && (p == prefix || !layerAlive(park, record))
	})
}

// layerAlive says whether the layer recorded in park/record still has the
// upper directory it was parked with.
func layerAlive(park int, record string) bool {
	dev, ino, upper, ok := readRecord(park, record)
	var st unix.Stat_t
	return ok && unix.Lstat(upper, &st) == nil && st.Dev == dev && st.Ino == ino
}

// readRecord reads park/record: the device and inode numbers of the
// layer's upper directory when it was parked, and its path.
func readRecord(park int, record string) (dev, ino uint64, upper string, ok bool) {
	fd, err := unix.Openat(park, record, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, "", false
	}
	buf := make([]byte, 4096)
	n, _ := unix.Read(fd, buf)
	unix.Close(fd)
	f := strings.SplitN(strings.TrimSuffix(string(buf[:max(n, 0)]), "\n"), " ", 3)
	if len(f) != 3 {
		return 0, 0, "", false
	}
	dev, err1 := strconv.ParseUint(f[0], 10, 64)
	ino, err2 := strconv.ParseUint(f[1], 10, 64)
	return dev, ino, f[2], err1 == nil && err2 == nil
}

// unparkAt unmounts the overlay parked at park/key (lazily: a run using a
// clone keeps it) and removes its directory, lock and record.
func unparkAt(park int, key string) {
	if fd, err := unix.Openat(park, key, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Unmount("/proc/self/fd/"+strconv.Itoa(fd), unix.MNT_DETACH) // the descriptor is the mount's root, not a link
		unix.Close(fd)
	}
	_ = unix.Unlinkat(park, key, unix.AT_REMOVEDIR)
	_ = unix.Unlinkat(park, key+".layer", 0)
}

// UnparkUnder unmounts and removes the overlays parked for layers whose
// upper directory, as recorded when they were parked, lies under root,
// with their records; every other parked overlay is left alone. It
// returns how many it unparked. For tests, whose layers live in their
// own temporary directories: a test ends leaving no parked overlay of
// its own behind (and touches no other launcher's), without waiting for
// the next sweep.
func UnparkUnder(root string) (int, error) {
	root = filepath.Clean(root)
	if !filepath.IsAbs(root) || root == "/" {
		return 0, fmt.Errorf("%s: not an absolute path below /", root)
	}
	return unparkWhere(func(park int, _, record string) bool {
		_, _, upper, ok := readRecord(park, record)
		return ok && strings.HasPrefix(upper, root+"/")
	})
}

// UnparkGone unmounts and removes the overlays parked for layers whose
// upper directory is gone or another (their workspace was deleted), with
// their records, and returns how many. A live layer's overlay is left
// alone, so a test binary calls it when its tests have removed their
// temporary directories without touching other launchers' overlays
// (the sweep at the next park does the same).
func UnparkGone() (int, error) {
	return unparkWhere(func(park int, _, record string) bool { return !layerAlive(park, record) })
}

// unparkWhere opens the park directory (none: nothing to do) and unparks
// what gone picks (unparkIn).
func unparkWhere(gone func(park int, key, record string) bool) (int, error) {
	if parkDir() == "off" {
		return 0, nil
	}
	park, err := openDirNoFollow(parkDir(), false)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(park)
	return unparkIn(park, func(key, record string) bool { return gone(park, key, record) })
}

// unparkIn unparks every overlay parked in park whose key and record
// (KEY.layer) gone picks, and returns how many.
func unparkIn(park int, gone func(key, record string) bool) (int, error) {
	d, err := unix.Openat(park, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	f := os.NewFile(uintptr(d), "park")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", parkDir(), err)
	}
	n := 0
	for _, name := range names {
		key, ok := strings.CutSuffix(name, ".layer")
		if ok && gone(key, name) {
			unparkAt(park, key)
			n++
		}
	}
	return n, nil
}
