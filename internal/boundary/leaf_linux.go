package boundary

import "golang.org/x/sys/unix"

// leafFS reports whether directories on dir's file system count their
// subdirectories in their link count (2 + subdirectories: ext2/3/4, XFS,
// tmpfs), and returns its device. Others (btrfs reports 1, network and
// FUSE file systems report what they like) are not trusted.
func leafFS(dir string) (dev uint64, ok bool) {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return 0, false
	}
	switch fs.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
	default:
		return 0, false
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return 0, false
	}
	return st.Dev, true
}

// isLeafDir reports whether dir, a directory on device dev of a file system
// leafFS trusts, certainly has no subdirectory: link count 2 (itself and
// its "."). A directory on another device (a mount point), or any doubt,
// is not a leaf.
func isLeafDir(dir string, dev uint64) bool {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Dev == dev && st.Nlink == 2
}
