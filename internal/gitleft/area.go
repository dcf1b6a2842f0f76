package gitleft

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// An area is a directory every path below which is resolved by the kernel
// with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS):
// nothing read or moved through it can be reached through a symbolic link
// or lie outside it, whatever the agent left in the tree. The scan and
// Quarantine touch the tree only through an area.
type area struct {
	root string // absolute path of fd
	top  string // the writable area it lies in (links are judged against it)
	fd   int    // O_PATH descriptor of root
}

// resolveFlags never follow a symbolic link, in any component, and never
// leave the directory resolved against.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openArea opens root, a clean absolute path none of whose components may
// be a symbolic link (ELOOP, or ENOTDIR when root itself is one).
func openArea(root string) (*area, error) {
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return nil, fmt.Errorf("%s: not a clean absolute path", root)
	}
	slash, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /: %w", err)
	}
	defer unix.Close(slash)
	fd, err := openat2(slash, strings.TrimPrefix(root, "/"), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	return &area{root: root, top: root, fd: fd}, nil
}

func (a *area) close() { unix.Close(a.fd) }

// openat2 opens rel below dirfd with resolveFlags (O_NOFOLLOW, O_CLOEXEC
// added), retrying the EAGAIN the kernel returns when a rename raced it.
func openat2(dirfd int, rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Resolve: resolveFlags}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err == unix.EAGAIN && i < 16 {
			continue
		}
		if err == unix.ENOSYS {
			return -1, fmt.Errorf("openat2: %w (Linux 5.6 or later is needed to scan without following links)", err)
		}
		return fd, err
	}
}

// abs is the absolute path of rel.
func (a *area) abs(rel string) string { return filepath.Join(a.root, rel) }

// open opens rel (relative to the area) with flags.
func (a *area) open(rel string, flags int) (int, error) { return openat2(a.fd, rel, flags) }

// lstat stats rel itself (a symbolic link as the link), reaching it
// without following any link on the way.
func (a *area) lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	pfd, err := a.open(filepath.Dir(rel), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return st, err
	}
	defer unix.Close(pfd)
	err = unix.Fstatat(pfd, filepath.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// exists reports whether rel is there (a link counts: it is not followed).
func (a *area) exists(rel string) bool {
	_, err := a.lstat(rel)
	return err == nil
}

// readDir lists directory rel; a link where a directory is expected is an
// error (ELOOP), not followed.
func (a *area) readDir(rel string) ([]os.DirEntry, error) {
	fd, err := a.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), a.abs(rel))
	defer f.Close()
	return f.ReadDir(-1)
}

// readFile reads regular file rel, at most limit bytes (then an error).
// A fifo or device is refused, not opened for reading.
func (a *area) readFile(rel string, limit int64) ([]byte, error) {
	fd, err := a.open(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), a.abs(rel))
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", a.abs(rel))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", a.abs(rel), limit)
	}
	return data, err
}

// readlink reads the text of symbolic link rel.
func (a *area) readlink(rel string) (string, error) {
	pfd, err := a.open(filepath.Dir(rel), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer unix.Close(pfd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(pfd, filepath.Base(rel), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// sub opens directory rel as an area of its own (same top): what is done
// through it afterwards cannot be redirected by a rename above it.
func (a *area) sub(rel string) (*area, error) {
	fd, err := a.open(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return &area{root: a.abs(rel), top: a.top, fd: fd}, nil
}

// linkOutside reports whether the symbolic link at absolute path p with
// text target points outside top (lexically, or once resolved).
func linkOutside(top, p, target string) bool {
	t := target
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(p), t)
	}
	t = filepath.Clean(t)
	if !within(top, t) {
		return true
	}
	if real, err := filepath.EvalSymlinks(t); err == nil && !within(top, real) {
		return true
	}
	return false
}

// within reports whether clean absolute path p is dir or below it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// firstLink returns the first component of clean absolute path p that is
// a symbolic link, and its text ("" if none is).
func firstLink(p string) (link, target string) {
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		st, err := os.Lstat(cur)
		if err != nil {
			return "", ""
		}
		if st.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(cur)
			return cur, t
		}
	}
	return "", ""
}
