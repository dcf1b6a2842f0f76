// Package checkpoint records the files of a directory tree (a writable area
// of a workspace) in a content-addressed store outside it, and puts a tree
// back to a recorded state.
//
// A checkpoint is a manifest — every path with its kind, mode, size, link
// target and the SHA-256 of its content — plus the contents, stored once per
// distinct content under objects/. A checkpoint taken with the previous one
// as its stat cache reads only files whose size, mtime, ctime or inode
// changed, so a checkpoint of an unchanged tree costs one lstat per entry.
// Nothing here runs git: a repository's .git directory is files like any
// other. Paths under an excluded directory name or over the size limit are
// listed in the manifest and never written or removed by Restore.
//
// Restore works through an os.Root on the tree, so a symbolic link the
// adversary planted in the tree (the tree is sandbox-writable) cannot send
// a write or a removal outside it. Every object a restore needs is read and
// verified before the first change: a missing or corrupted store changes
// nothing.
//
// On top of the store: a run's Recorder (a checkpoint at its start,
// before each command the judge names, at its end, and the run's index of
// checkpoints and audit seqs), Changes (what each command changed) and
// Undo (back to the start, to before a command, or one command reverted;
// recorded itself, so that undoing it redoes).
package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Kind is what a path is.
type Kind string

// Kinds of Entry.
const (
	File    Kind = "file"
	Dir     Kind = "dir"
	Symlink Kind = "symlink"
)

// Entry is one path of a checkpoint, relative to the tree ("a/b").
type Entry struct {
	Path string      `json:"path"`
	Kind Kind        `json:"kind"`
	Mode fs.FileMode `json:"mode"` // permission bits (and setgid/sticky)
	Size int64       `json:"size,omitempty"`
	Hash string      `json:"hash,omitempty"` // hex SHA-256 of a file's content
	Link string      `json:"link,omitempty"` // a symlink's target, as written
	// the stat cache: a file whose size, mtime, ctime and inode are these
	// has content Hash without being read again
	Mtime int64  `json:"mtime,omitempty"`
	Ctime int64  `json:"ctime,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
}

// Manifest is one checkpoint of a tree.
type Manifest struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Entries []Entry   `json:"entries"` // sorted by Path
	// Excluded are paths left out by Options (a directory stands for its
	// whole subtree); Restore never writes or removes them.
	Excluded []string `json:"excluded,omitempty"`
	// Root is the hash of the root tree in the store ("" until saved).
	Root string `json:"root,omitempty"`
	// trees are the tree hashes of its directories ("." the root), once
	// saved by this process: the change feed reuses the clean ones.
	trees map[string]string
}

// Options say what a checkpoint leaves out.
type Options struct {
	// ExcludeNames are directory names whose subtrees are not recorded
	// (node_modules, .venv...).
	ExcludeNames []string
	// MaxFileSize excludes regular files larger than this (0: no limit).
	MaxFileSize int64
	// MaxStored bounds what one checkpoint writes to the store, in bytes
	// on disk (0: no bound): past it copying stops and the checkpoint
	// fails with ErrOverBudget.
	MaxStored int64
}

// Stats say what taking a checkpoint cost.
type Stats struct {
	Entries int   // paths recorded
	Hashed  int   // files read and hashed
	Stored  int64 // bytes on disk of new content written to the store
}

// Store is a checkpoint store in a directory of its own.
type Store struct {
	dir string
	// trees caches whole trees by hash with how deep in deltas they are
	// stored (the change feed's next delta is over them); nil: none.
	trees *treeCache
}

// Open opens (creating it, mode 0700) the store in dir.
func Open(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "objects"), filepath.Join(dir, "trees"), filepath.Join(dir, "checkpoints")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("checkpoint store: %w", err)
		}
	}
	return &Store{dir: dir, trees: &treeCache{m: map[string]cachedTree{}}}, nil
}

// openExisting opens the store at dir only if it is there, creating
// nothing: for the journal, which outlives runs and must not bring back a
// store its owner is deleting.
func openExisting(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "objects"), filepath.Join(dir, "trees"), filepath.Join(dir, "checkpoints")} {
		fi, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("checkpoint store: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("checkpoint store: %s is not a directory", d)
		}
	}
	return &Store{dir: dir, trees: &treeCache{m: map[string]cachedTree{}}}, nil
}

func (s *Store) objectPath(hash string) string {
	return filepath.Join(s.dir, "objects", hash[:2], hash[2:])
}

// Take records the tree at root as checkpoint id. prev (may be nil) is the
// last checkpoint of the same tree, used as the stat cache.
func (s *Store) Take(id, root string, prev *Manifest, opt Options) (*Manifest, Stats, error) {
	if err := validID(id); err != nil {
		return nil, Stats{}, err
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, Stats{}, err
	}
	defer unlock()
	return s.take(id, root, prev, opt)
}

// take is Take with the store's lock held.
func (s *Store) take(id, root string, prev *Manifest, opt Options) (*Manifest, Stats, error) {
	w, err := s.walkTake(id, root, prev, opt)
	if err != nil {
		return nil, w.st, err
	}
	return w.m, w.st, s.saveWalked(w)
}

// walked is a walk of a tree for a checkpoint, not saved yet.
type walked struct {
	m, prev *Manifest // prev: the stat cache, nil when pruned meanwhile
	// same: m has prev's entries, stat cache included, so prev's trees
	// (its exclusions may differ: a stat cache file keeps none)
	same bool
	st   Stats
}

// walkTake walks the tree at root for checkpoint id with prev as its
// stat cache, storing the contents it has not seen; the caller holds
// the store's lock until it saves (saveWalked) or drops the walk.
func (s *Store) walkTake(id, root string, prev *Manifest, opt Options) (walked, error) {
	if prev != nil && prev.ID != "" && !s.hasRecord(prev.ID) {
		// pruned meanwhile: its contents may be gone, so it vouches for
		// nothing
		prev = nil
	}
	m, st, err := s.walkSub(root, ".", index(prev), opt, true, opt.excludeNames)
	if err != nil {
		return walked{st: st}, fmt.Errorf("checkpoint %s of %s: %w", id, root, err)
	}
	m.ID, m.Time = id, time.Now().UTC()
	st.Entries = len(m.Entries)
	return walked{m: m, prev: prev, same: prev != nil && prev.Root != "" && slices.Equal(prev.Entries, m.Entries), st: st}, nil
}

// saveWalked saves w's checkpoint: its trees, record and stat cache.
func (s *Store) saveWalked(w walked) error {
	m, prev := w.m, w.prev
	if w.same && sameState(prev, m) {
		// nothing changed, stat cache included: the same trees
		m.Root, m.trees = prev.Root, prev.trees
		return s.saveRecord(m)
	}
	var bases map[string]string
	if prev != nil {
		bases = prev.trees
	}
	return s.saveOn(m, nil, bases, true)
}

// walkSub records the directory dir of the tree at root ("." for the
// root itself, which gets no entry) and everything below it; old is the
// stat cache. take stores contents (a checkpoint); without it contents
// are only hashed and special files get an entry of kind "other" (the
// tree as it is now, for Restore). excluded paths are listed, not walked.
func (s *Store) walkSub(root, dir string, old map[string]Entry, opt Options, take bool, excluded func(rel string, d fs.DirEntry) bool) (*Manifest, Stats, error) {
	// Every read is relative to a descriptor of the tree (walk.go): the
	// tree is sandbox-writable, and a directory swapped for a symlink to
	// /etc must not be read as ours.
	return s.walkTree(root, dir, old, opt, take, excluded)
}

// excludeNames is Options.ExcludeNames as walkSub's excluded.
func (opt Options) excludeNames(_ string, d fs.DirEntry) bool {
	return d.IsDir() && slices.Contains(opt.ExcludeNames, d.Name())
}

// entry records the path rel of the tree at root, storing a file's content
// unless old (the stat cache) vouches for it; a path left out is added to
// m.Excluded and gets no entry. (The change feed's rescans of dirty
// directories; a whole walk goes by descriptors, walkAt.)
func (s *Store) entry(r *os.Root, rel string, old map[string]Entry, opt Options, st *Stats, m *Manifest, take bool) (*Entry, error) {
	fi, err := r.Lstat(rel)
	if err != nil {
		return nil, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no stat", rel)
	}
	u := unix.Stat_t{Dev: sys.Dev, Ino: sys.Ino, Mode: sys.Mode, Size: sys.Size,
		Mtim: unix.Timespec(sys.Mtim), Ctim: unix.Timespec(sys.Ctim)}
	return s.entryOf(rel, &u, old, opt, st, m, take,
		func() (string, error) { return r.Readlink(rel) },
		func() (*os.File, error) { return openSame(r, rel, fi) })
}

// entryOf is entry from rel's lstat: link reads a symlink's target, open
// opens the file (checked to be the one stat'd).
func (s *Store) entryOf(rel string, sys *unix.Stat_t, old map[string]Entry, opt Options, st *Stats, m *Manifest, take bool,
	link func() (string, error), open func() (*os.File, error)) (*Entry, error) {
	e := Entry{Path: rel, Mode: permOf(sys.Mode)}
	var err error
	switch sys.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind = Dir
	case unix.S_IFLNK:
		e.Kind, e.Mode = Symlink, 0 // a link's own mode means nothing on Linux
		if e.Link, err = link(); err != nil {
			return nil, err
		}
	case unix.S_IFREG:
		if opt.MaxFileSize > 0 && sys.Size > opt.MaxFileSize {
			m.Excluded = append(m.Excluded, rel)
			return nil, nil
		}
		e.Kind, e.Size = File, sys.Size
		e.Mtime, e.Ctime, e.Ino = sys.Mtim.Nano(), sys.Ctim.Nano(), sys.Ino
		switch c, ok := old[rel]; {
		case ok && c.Kind == File && c.Size == e.Size && c.Mtime == e.Mtime && c.Ctime == e.Ctime && c.Ino == e.Ino && e.Ino != 0:
			e.Hash = c.Hash
		default:
			f, err := open()
			if err != nil {
				return nil, err
			}
			err = s.readFile(f, &e, opt, st, take)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			st.Hashed++
		}
	default: // a FIFO, socket or device: not content; a checkpoint leaves it as it is
		if !take {
			e.Kind = "other"
			return &e, nil
		}
		m.Excluded = append(m.Excluded, rel)
		return nil, nil
	}
	return &e, nil
}

// sameState reports whether a and b record the same paths with the same
// content, modes, exclusions and stat cache.
func sameState(a, b *Manifest) bool {
	return slices.Equal(a.Entries, b.Entries) && slices.Equal(a.Excluded, b.Excluded)
}

// openSame opens rel in r for reading and checks it is the file fi
// describes (lstat'd just before): a path swapped in between is refused,
// not read.
func openSame(r *os.Root, rel string, fi fs.FileInfo) (*os.File, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if now, err := f.Stat(); err != nil || !os.SameFile(fi, now) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was being read", rel)
	}
	return f, nil
}

// permOf is the permission bits of a stat mode (with set-uid, set-gid
// and sticky) as an fs.FileMode.
func permOf(mode uint32) fs.FileMode {
	perm := fs.FileMode(mode & 0o777)
	if mode&unix.S_ISUID != 0 {
		perm |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		perm |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		perm |= fs.ModeSticky
	}
	return perm
}

// setidModes are the mode bits a restore never puts back.
const setidModes = fs.ModeSetuid | fs.ModeSetgid

// readTries bounds how often readFile reads a file that changes while it
// is read.
const readTries = 3

// readFile records the open regular file f into e: content (stored with
// take), size, mode and stat cache, all from the same open file. Its
// fstat is taken before and after the read; when they differ (a write or
// a chmod meanwhile: a write by the sandbox drops a set-uid bit the
// first stat saw) it is read again. After readTries reads that each saw a
// change, what the last read got is recorded with no set-uid/set-gid bit
// and no stat cache (the next checkpoint reads it again).
func (s *Store) readFile(f *os.File, e *Entry, opt Options, st *Stats, take bool) error {
	fd := int(f.Fd())
	for try := 1; ; try++ {
		var before, after unix.Stat_t
		if err := unix.Fstat(fd, &before); err != nil {
			return err
		}
		var sum string
		var n int64
		var err error
		if take {
			limit := int64(0)
			if opt.MaxStored > 0 {
				if limit = opt.MaxStored - st.Stored; limit <= 0 {
					return fmt.Errorf("%w (%d bytes on disk for one checkpoint)", ErrOverBudget, opt.MaxStored)
				}
			}
			sum, n, err = s.store(f, before.Size, limit)
		} else {
			sum, _, err = digest(f, before.Size, nil, 0)
		}
		if errors.Is(err, ErrOverBudget) {
			return fmt.Errorf("%w (%d bytes on disk for one checkpoint)", ErrOverBudget, opt.MaxStored)
		}
		if err != nil {
			return err
		}
		st.Stored += n
		if opt.MaxStored > 0 && st.Stored > opt.MaxStored {
			return fmt.Errorf("%w (%d bytes on disk for one checkpoint)", ErrOverBudget, opt.MaxStored)
		}
		if err := unix.Fstat(fd, &after); err != nil {
			return err
		}
		same := before.Mode == after.Mode && before.Size == after.Size && before.Mtim == after.Mtim && before.Ctim == after.Ctim
		if !same && try < readTries {
			continue
		}
		e.Hash, e.Size, e.Mode = sum, before.Size, permOf(before.Mode)
		e.Mtime, e.Ctime, e.Ino = before.Mtim.Nano(), before.Ctim.Nano(), before.Ino
		if !same {
			e.Mode &^= setidModes
			e.Mtime, e.Ctime = 0, 0
		}
		return nil
	}
}

// store copies the first size bytes of src into the store (sparse, see
// digest) unless the store has that content, and returns its hash and
// the bytes the new object takes on disk. Writing more than limit (> 0)
// bytes stops with ErrOverBudget.
func (s *Store) store(src *os.File, size, limit int64) (string, int64, error) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "objects"), ".in-*")
	if err != nil {
		return "", 0, fmt.Errorf("checkpoint store: %w", err)
	}
	defer os.Remove(tmp.Name())
	sum, _, err := digest(src, size, tmp, limit)
	var tst unix.Stat_t
	if err == nil {
		err = unix.Fstat(int(tmp.Fd()), &tst)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, ErrOverBudget) {
		return "", 0, err
	}
	if err != nil {
		return "", 0, fmt.Errorf("checkpoint store: copying: %w", err)
	}
	dst := s.objectPath(sum)
	if _, err := os.Stat(dst); err == nil {
		return sum, 0, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", 0, fmt.Errorf("checkpoint store: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", 0, fmt.Errorf("checkpoint store: %w", err)
	}
	return sum, onDisk(&tst), nil
}

func validID(id string) error {
	if id == "" || strings.ContainsAny(id, "/\\\x00") || id == "." || id == ".." || strings.HasPrefix(id, ".") {
		return fmt.Errorf("checkpoint id %q: want a plain name", id)
	}
	return nil
}

func validRel(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// ChangeKind says how a path differs between two checkpoints.
type ChangeKind string

// Kinds of Change.
const (
	Added    ChangeKind = "added"
	Modified ChangeKind = "modified"
	Deleted  ChangeKind = "deleted"
	ModeOnly ChangeKind = "mode"
)

// Change is one path that differs from a to b.
type Change struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
}

// Diff lists what changed from a to b, by path.
func Diff(a, b *Manifest) []Change {
	am, bm := index(a), index(b)
	var out []Change
	for p, be := range bm {
		ae, ok := am[p]
		switch {
		case !ok:
			out = append(out, Change{p, Added})
		case ae.Kind != be.Kind || ae.Hash != be.Hash || ae.Link != be.Link:
			out = append(out, Change{p, Modified})
		case ae.Mode != be.Mode:
			out = append(out, Change{p, ModeOnly})
		}
	}
	for p := range am {
		if _, ok := bm[p]; !ok {
			out = append(out, Change{p, Deleted})
		}
	}
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func index(m *Manifest) map[string]Entry {
	out := map[string]Entry{}
	if m != nil {
		for _, e := range m.Entries {
			out[e.Path] = e
		}
	}
	return out
}

// excluded reports whether rel is one of m's excluded paths or below one.
func (m *Manifest) excluded(rel string) bool {
	for _, x := range m.Excluded {
		if rel == x || strings.HasPrefix(rel, x+"/") {
			return true
		}
	}
	return false
}

// ErrCorrupt is returned (wrapped) by Restore when an object of the
// checkpoint is missing or does not hash to its name.
var ErrCorrupt = errors.New("checkpoint store corrupted")

// Restore puts the tree at root back to checkpoint m: paths m does not
// have are removed, the others get m's kind, content, mode and link
// target. Paths m excluded, and paths under them, are not touched. It
// returns the paths it changed.
func (s *Store) Restore(m *Manifest, root string) ([]Change, error) {
	// Verify every object first: nothing is changed if one is bad.
	for _, e := range m.Entries {
		if e.Kind == File {
			if err := s.verify(e.Hash); err != nil {
				return nil, fmt.Errorf("restoring %s: %s: %w", m.ID, e.Path, err)
			}
		}
	}
	now, _, err := s.scan(root, m)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("restoring %s: %w", m.ID, err)
	}
	defer r.Close()
	changes := Diff(now, m)
	want := index(m)
	// As root (sudo agentbox undo of a user's workspace), what is put back
	// belongs to the tree's owner, not to root: the agent runs as that
	// user and must be able to change it again.
	owner := -1
	var rootSt unix.Stat_t
	if os.Geteuid() == 0 && unix.Stat(root, &rootSt) == nil && rootSt.Uid != 0 {
		owner = int(rootSt.Uid)
	}
	chown := func(p string) error {
		if owner < 0 {
			return nil
		}
		return r.Lchown(p, owner, int(rootSt.Gid))
	}
	// Removals first, deepest first, then what m has, shallowest first.
	slices.SortFunc(changes, func(x, y Change) int { return strings.Compare(y.Path, x.Path) })
	for _, c := range changes {
		if c.Kind == Deleted {
			if err := r.RemoveAll(c.Path); err != nil {
				return nil, fmt.Errorf("restoring %s: removing %s: %w", m.ID, c.Path, err)
			}
		}
	}
	slices.Reverse(changes)
	for _, c := range changes {
		if c.Kind == Deleted {
			continue
		}
		if err := s.put(r, want[c.Path], c.Kind); err != nil {
			return nil, fmt.Errorf("restoring %s: %s: %w", m.ID, c.Path, err)
		}
		if c.Kind != ModeOnly {
			if err := chown(c.Path); err != nil {
				return nil, fmt.Errorf("restoring %s: %s: %w", m.ID, c.Path, err)
			}
		}
	}
	// Directory modes last, deepest first: a read-only directory gets its
	// mode after what is inside it was written.
	for i := len(changes) - 1; i >= 0; i-- {
		if e, ok := want[changes[i].Path]; ok && e.Kind == Dir && changes[i].Kind != Deleted {
			if err := r.Chmod(e.Path, e.Mode&^setidModes); err != nil {
				return nil, fmt.Errorf("restoring %s: %s: %w", m.ID, e.Path, err)
			}
		}
	}
	return changes, nil
}

// scan records the tree as it is now, under m's exclusions (the stat
// cache is m itself; nothing is stored).
func (s *Store) scan(root string, m *Manifest) (*Manifest, Stats, error) {
	now, st, err := s.walkSub(root, ".", index(m), Options{}, false, func(rel string, _ fs.DirEntry) bool { return m.excluded(rel) })
	if err != nil {
		return nil, st, fmt.Errorf("reading %s: %w", root, err)
	}
	now.ID, st.Entries = "now", len(now.Entries)
	return now, st, nil
}

func hashOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (s *Store) verify(hash string) error {
	got, err := hashObject(s.objectPath(hash), hash)
	if err != nil {
		return fmt.Errorf("%w: object %s: %v", ErrCorrupt, hash[:12], err)
	}
	if got != hash {
		return fmt.Errorf("%w: object %s holds other content", ErrCorrupt, hash[:12])
	}
	return nil
}

// put makes e's path in r what e records. kind is how it differs now.
func (s *Store) put(r *os.Root, e Entry, kind ChangeKind) error {
	if kind == ModeOnly {
		if e.Kind == Dir {
			return nil // with the other directories, at the end
		}
		return r.Chmod(e.Path, e.Mode&^setidModes)
	}
	if fi, err := r.Lstat(e.Path); err == nil && !(e.Kind == Dir && fi.IsDir()) {
		if err := r.RemoveAll(e.Path); err != nil {
			return err
		}
	}
	switch e.Kind {
	case Dir:
		if err := r.Mkdir(e.Path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case Symlink:
		return r.Symlink(e.Link, e.Path)
	case File:
		src, err := os.Open(s.objectPath(e.Hash))
		if err != nil {
			return err
		}
		defer src.Close()
		tmp := path.Join(path.Dir(e.Path), ".agentbox-restore-"+e.Hash[:12])
		dst, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		var sst unix.Stat_t
		if err = unix.Fstat(int(src.Fd()), &sst); err == nil {
			_, err = copySparse(src, dst, sst.Size)
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			// never a set-uid/set-gid bit: what the sandbox recorded
			// must not come back as a privilege (an undo runs as root)
			err = r.Chmod(tmp, e.Mode&^setidModes)
		}
		if err == nil {
			err = r.Rename(tmp, e.Path)
		}
		if err != nil {
			r.Remove(tmp)
		}
		return err
	}
	return fmt.Errorf("unknown kind %q", e.Kind)
}
