package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The walk of a whole tree works on directory descriptors: each entry is
// one fstatat(2) against its directory's descriptor, each subdirectory is
// opened with openat(2) and O_NOFOLLOW, and a file is opened the same way
// and checked to be the file just stat'd. No path is resolved from the
// root again, so the walk costs one system call per entry (an os.Root
// resolves every component of every path), and a directory the agent
// swaps for a symlink meanwhile is refused (ELOOP), never followed out of
// the tree.

// walkAt records the directory open as dfd (relative path dir, "." the
// root) and everything below it into m.
func (s *Store) walkAt(dfd int, dir string, old map[string]Entry, opt Options, take bool, excluded func(rel string, d fs.DirEntry) bool, st *Stats, m *Manifest) error {
	// ReadDir through an *os.File of a duplicate: closing it closes the dup
	nfd, err := unix.Dup(dfd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(nfd), dir)
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, d := range ents {
		name := d.Name()
		rel := name
		if dir != "." {
			rel = dir + "/" + name
		}
		if excluded(rel, d) {
			m.Excluded = append(m.Excluded, rel)
			continue
		}
		var sys unix.Stat_t
		if err := unix.Fstatat(dfd, name, &sys, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // gone meanwhile: not part of this checkpoint
			}
			return fmt.Errorf("%s: %w", rel, err)
		}
		if testAfterStat != nil {
			testAfterStat(rel)
		}
		e, err := s.entryOf(rel, &sys, old, opt, st, m, take,
			func() (string, error) { return readlinkat(dfd, name) },
			func() (*os.File, error) { return openSameAt(dfd, name, rel, &sys) })
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		m.Entries = append(m.Entries, *e)
		if e.Kind == Dir {
			sub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			err = s.walkAt(sub, rel, old, opt, take, excluded, st, m)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// walkTree is walkSub's work: dir ("." the root) opened through an
// os.Root on root, then walked by descriptors.
func (s *Store) walkTree(root, dir string, old map[string]Entry, opt Options, take bool, excluded func(rel string, d fs.DirEntry) bool) (*Manifest, Stats, error) {
	var st Stats
	m := &Manifest{}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, st, err
	}
	defer r.Close()
	if dir != "." {
		// the directory itself, as fs.WalkDir would give it
		e, err := s.entry(r, dir, old, opt, &st, m, take)
		if err != nil {
			return nil, st, err
		}
		if e == nil || e.Kind != Dir {
			return m, st, nil
		}
		m.Entries = append(m.Entries, *e)
	}
	d, err := r.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, st, err
	}
	defer d.Close()
	err = s.walkAt(int(d.Fd()), dir, old, opt, take, excluded, &st, m)
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return m, st, err
}

func readlinkat(dfd int, name string) (string, error) {
	for n := 256; n <= 1<<16; n *= 4 {
		buf := make([]byte, n)
		k, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
	}
	return "", errors.New("symlink target too long")
}

// openSameAt opens name in dfd for reading (never following a link) and
// checks it is the file sys describes.
func openSameAt(dfd int, name, rel string, sys *unix.Stat_t) (*os.File, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != sys.Dev || now.Ino != sys.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("%s changed while it was being read", rel)
	}
	return os.NewFile(uintptr(fd), path.Join("/", rel)), nil
}

// testAfterStat, when set (by tests only), runs between an entry's
// fstatat and the reading of its content: the window in which a
// sandboxed writer can change the file.
var testAfterStat func(rel string)
