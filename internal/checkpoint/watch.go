package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watcher follows changes under a tree with inotify, so that a checkpoint
// after a command that changed nothing costs no walk, and one after a
// command that changed a few files rescans only their directories.
//
// Every directory of the tree (excluded ones aside) is watched; an event
// marks its directory dirty, and TakeWatched rescans dirty directories
// only. A new directory is watched, then walked whole, so files created in
// it before the watch are seen. When the kernel's event queue overflowed,
// a watch could not be added (fs.inotify.max_user_watches), or nothing was
// taken before, TakeWatched walks the whole tree as Take does.
//
// What inotify does not report: writes through a shared writable mmap(2)
// of a file (no IN_MODIFY). A checkpoint taken with a Watcher can miss
// such a change until the file's directory changes otherwise; Take, which
// compares size, mtime, ctime and inode of every file, does not.
type Watcher struct {
	g     *inotifyGroup
	root  string
	opt   Options
	wds   map[int32]string // watch descriptor -> directory ("." for the root)
	dirty map[string]bool
	all   bool // walk everything at the next TakeWatched
}

// inotifyGroup is one inotify instance the watchers of several trees
// share.
type inotifyGroup struct {
	mu      sync.Mutex
	fd      int
	buf     []byte
	members map[int32]*Watcher // watch descriptor -> its watcher
	open    int
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// Watch starts following the tree at root. The first TakeWatched walks it
// whole.
func Watch(root string, opt Options) (*Watcher, error) {
	ws, err := WatchAll([]string{root}, opt)
	if err != nil {
		return nil, err
	}
	return ws[0], nil
}

// WatchAll starts following each tree, with one inotify instance.
func WatchAll(roots []string, opt Options) ([]*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: inotify: %w", err)
	}
	g := &inotifyGroup{fd: fd, buf: make([]byte, 64<<10), members: map[int32]*Watcher{}, open: len(roots)}
	var out []*Watcher
	for _, root := range roots {
		w := &Watcher{g: g, root: root, opt: opt, wds: map[int32]string{}, dirty: map[string]bool{}, all: true}
		w.watchTree(".")
		out = append(out, w)
	}
	return out, nil
}

// Close stops following the tree: its watches are removed at once. The
// inotify instance, shared, goes with the last watcher, and is left to the
// garbage collector (an *os.File's finalizer) or the process's exit rather
// than closed here: closing an instance waits for the kernel to destroy
// its marks (an SRCU grace period, 14 ms here, at every run's end), while
// a process's exit hands that to a kernel worker, and a finalizer runs
// off the run's path (retire).
func (w *Watcher) Close() error {
	g := w.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for wd := range w.wds {
		unix.InotifyRmWatch(g.fd, uint32(wd))
		delete(g.members, wd)
	}
	if g.open--; g.open == 0 {
		retire(os.NewFile(uintptr(g.fd), "inotify"))
		g.fd = -1
	}
	return nil
}

// retired keeps the last few emptied inotify instances referenced, so
// that their finalizer does not close them during a short process's last
// milliseconds (an exit that waits for a closing goroutine pays the grace
// period after all); older ones are left to the finalizer.
var (
	retiredMu sync.Mutex
	retired   [4]*os.File
	retiredN  int
)

func retire(f *os.File) {
	retiredMu.Lock()
	defer retiredMu.Unlock()
	retired[retiredN%len(retired)] = f
	retiredN++
}

// watchTree watches dir and every directory below it.
func (w *Watcher) watchTree(dir string) {
	filepath.WalkDir(filepath.Join(w.root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel := relOf(w.root, p)
		if rel != "." && slices.Contains(w.opt.ExcludeNames, d.Name()) {
			return filepath.SkipDir
		}
		wd, err := unix.InotifyAddWatch(w.g.fd, p, watchMask)
		if err != nil {
			w.all = true // ENOSPC (max_user_watches), a race: walk everything
			return nil
		}
		w.wds[int32(wd)] = rel
		w.g.mu.Lock()
		w.g.members[int32(wd)] = w
		w.g.mu.Unlock()
		return nil
	})
}

func relOf(root, p string) string {
	if p == root {
		return "."
	}
	return filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
}

// drain reads every queued event of the group and marks the directories
// of their watchers dirty.
func (w *Watcher) drain() error {
	g := w.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		n, err := unix.Read(g.fd, g.buf)
		if errors.Is(err, unix.EAGAIN) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint: inotify read: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&g.buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				for _, m := range g.members {
					m.all = true
				}
				w.all = true
				continue
			}
			m := g.members[ev.Wd]
			if m == nil {
				continue
			}
			dir, ok := m.wds[ev.Wd]
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(m.wds, ev.Wd)
				delete(g.members, ev.Wd)
				continue
			}
			if !ok {
				continue
			}
			m.dirty[dir] = true
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				m.dirty[path.Dir(dir)] = true
			}
		}
	}
}

// clean drains the queued events and reports whether nothing happened
// under the tree since the last checkpoint taken with w.
func (w *Watcher) clean() bool {
	if err := w.drain(); err != nil {
		return false
	}
	return !w.all && len(w.dirty) == 0
}

// reset drains the queued events and forgets them: a full walk of the
// tree follows.
func (w *Watcher) reset() error {
	if err := w.drain(); err != nil {
		return err
	}
	w.all = false
	clear(w.dirty)
	return nil
}

// TakeWatched records the tree as checkpoint id, like Take with prev (the
// last checkpoint taken with w) as its base, rescanning only directories
// with events since then.
func (s *Store) TakeWatched(id string, w *Watcher, prev *Manifest) (*Manifest, Stats, error) {
	if err := validID(id); err != nil {
		return nil, Stats{}, err
	}
	if err := w.drain(); err != nil {
		return nil, Stats{}, err
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, Stats{}, err
	}
	defer unlock()
	if prev != nil && prev.ID != "" && !s.hasRecord(prev.ID) {
		prev = nil // pruned meanwhile: walk the whole tree again
	}
	if w.all || prev == nil || prev.Root == "" {
		w.all = false
		clear(w.dirty)
		return s.take(id, w.root, prev, w.opt)
	}
	if len(w.dirty) == 0 {
		m := &Manifest{ID: id, Time: time.Now().UTC()}
		// nothing happened under the tree: the same trees
		m.Entries, m.Excluded, m.Root, m.trees = prev.Entries, prev.Excluded, prev.Root, prev.trees
		return m, Stats{Entries: len(m.Entries)}, s.saveRecord(m)
	}
	dirty := w.dirty
	w.dirty = map[string]bool{}
	return s.takeDirty(id, w.root, w.opt, prev, dirty, w.watchTree, func(gone map[string]bool) {
		for wd, dir := range w.wds {
			if under(dir, gone) {
				unix.InotifyRmWatch(w.g.fd, uint32(wd))
				delete(w.wds, wd)
				w.g.mu.Lock()
				delete(w.g.members, wd)
				w.g.mu.Unlock()
			}
		}
	})
}

// takeDirty records the tree at root as checkpoint id from prev (a whole
// manifest, its trees known) by rescanning the directories in dirty only:
// what the change feed (a Watcher's, or the journal's) says changed since
// prev. A directory new since prev is walked whole and given to newDir
// (nil: nothing to do); the subtrees that vanished go to gone (may be nil).
// The store's lock is held by the caller.
func (s *Store) takeDirty(id, root string, opt Options, prev *Manifest, dirty map[string]bool, newDir func(string), goneFn func(map[string]bool)) (*Manifest, Stats, error) {
	var st Stats
	m := &Manifest{ID: id, Time: time.Now().UTC()}
	if len(dirty) == 0 {
		m.Entries, m.Excluded, m.Root, m.trees = prev.Entries, prev.Excluded, prev.Root, prev.trees
		st.Entries = len(m.Entries)
		return m, st, s.saveRecord(m)
	}
	// Keep what is not a direct child of a dirty directory, in order;
	// those are looked at again, with their old entries as the stat cache
	// (and a vanished directory's subtree goes with it). New entries are
	// sorted apart and merged: the kept ones are sorted already.
	old := map[string]Entry{}
	gone := map[string]bool{}
	m.Entries = make([]Entry, 0, len(prev.Entries)+8)
	var fresh []Entry
	for _, e := range prev.Entries {
		if dirty[path.Dir(e.Path)] {
			old[e.Path] = e
			continue
		}
		m.Entries = append(m.Entries, e)
	}
	for _, x := range prev.Excluded {
		if !dirty[path.Dir(x)] {
			m.Excluded = append(m.Excluded, x)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	defer r.Close()
	var walkNew []string
	for dir := range dirty {
		if !realDir(r, dir) {
			continue // gone or now a symlink: its parent is dirty too
		}
		ents, err := fs.ReadDir(r.FS(), dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
		}
		seen := map[string]bool{}
		for _, d := range ents {
			rel := path.Join(dir, d.Name())
			seen[rel] = true
			if d.IsDir() && slices.Contains(opt.ExcludeNames, d.Name()) {
				m.Excluded = append(m.Excluded, rel)
				continue
			}
			if d.IsDir() {
				if o, ok := old[rel]; !ok || o.Kind != Dir {
					walkNew = append(walkNew, rel) // new: watched, then walked whole
					continue
				}
			}
			e, err := s.entry(r, rel, old, opt, &st, m, true)
			if err != nil {
				return nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
			}
			if e != nil {
				fresh = append(fresh, *e)
			}
		}
		// a directory child that vanished or stopped being one: drop its subtree
		for _, e := range old {
			if path.Dir(e.Path) == dir && e.Kind == Dir {
				if fi, err := r.Lstat(e.Path); !seen[e.Path] || err != nil || !fi.IsDir() {
					gone[e.Path] = true
				}
			}
		}
	}
	if len(gone) > 0 {
		m.Entries = slices.DeleteFunc(m.Entries, func(e Entry) bool { return under(e.Path, gone) })
		fresh = slices.DeleteFunc(fresh, func(e Entry) bool { return under(e.Path, gone) })
		m.Excluded = slices.DeleteFunc(m.Excluded, func(x string) bool { return under(x, gone) })
		if goneFn != nil {
			goneFn(gone)
		}
	}
	// a new directory below another new one is walked with it (the
	// journal marks both dirty)
	newSet := setOf(walkNew)
	walkNew = slices.DeleteFunc(walkNew, func(d string) bool { return d != "." && path.Dir(d) != "." && under(path.Dir(d), newSet) })
	for _, dir := range walkNew {
		// a new directory, or one moved here (its subtree's old entries
		// went with its old name)
		inDir := func(e Entry) bool { return e.Path == dir || strings.HasPrefix(e.Path, dir+"/") }
		m.Entries = slices.DeleteFunc(m.Entries, inDir)
		fresh = slices.DeleteFunc(fresh, inDir)
		if newDir != nil {
			newDir(dir)
		}
		sub, sst, err := s.walkSub(root, dir, old, opt, true, opt.excludeNames)
		if err != nil {
			return nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
		}
		fresh = append(fresh, sub.Entries...)
		m.Excluded = append(m.Excluded, sub.Excluded...)
		st.Hashed += sst.Hashed
		st.Stored += sst.Stored
	}
	slices.SortFunc(fresh, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	m.Entries = mergeSorted(m.Entries, fresh)
	slices.Sort(m.Excluded)
	st.Entries = len(m.Entries)
	// Trees to rebuild: each dirty directory, what is new, and every
	// directory above them; the others keep the previous checkpoint's.
	var reuse map[string]string
	if prev.trees != nil {
		reuse = maps.Clone(prev.trees)
		for _, d := range append(slices.Collect(maps.Keys(dirty)), walkNew...) {
			for ; ; d = path.Dir(d) {
				delete(reuse, d)
				if d == "." {
					break
				}
			}
		}
		for d := range reuse {
			if under(d, gone) {
				delete(reuse, d)
			}
		}
	}
	return m, st, s.saveOn(m, reuse, prev.trees, false)
}

// realDir reports whether dir and every directory above it in r are
// directories, not symlinks (os.Root would follow one inside the tree).
func realDir(r *os.Root, dir string) bool {
	for d := dir; d != "."; d = path.Dir(d) {
		fi, err := r.Lstat(d)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// under reports whether p is one of dirs or below one.
func under(p string, dirs map[string]bool) bool {
	for d := p; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if dirs[d] {
			return true
		}
	}
	return false
}

// mergeSorted merges two slices of entries sorted by path.
func mergeSorted(a, b []Entry) []Entry {
	if len(b) == 0 {
		return a
	}
	out := make([]Entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].Path <= b[j].Path {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
