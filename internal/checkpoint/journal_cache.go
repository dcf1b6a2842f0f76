package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The journal keeps the stat cache of the checkpoint it vouches for in its
// memory, by directory, so that a run's checkpoint costs what changed:
// the journal's answer carries the entries of the directories the run
// rescans and of those above them (whose trees it rebuilds), and the run
// tells the journal what it found there (a delta). The run neither reads
// the whole stat cache nor writes it again (for 12k files that was ~23 ms
// of every run's end that changed anything); the journal writes the file
// when it has been idle a while (journalPersistAfter) and when it exits,
// off every run's path. Until then the file names an older checkpoint,
// which is still a valid stat cache (a file whose size, mtime, ctime and
// inode are those recorded has that content): a process without the
// journal walks with it and rehashes what changed since.

// journalPersistAfter is how long the journal waits after a delta before
// writing the stat cache file.
var journalPersistAfter = 2 * time.Second

// jdir is one directory of the journal's stat cache as a run needs it:
// its tree hash, its direct children (sorted by path) and the tree hashes
// of its subdirectories.
type jdir struct {
	Dir  string            `json:"dir"`
	Tree string            `json:"tree,omitempty"`
	Kids []Entry           `json:"kids,omitempty"`
	Subs map[string]string `json:"subs,omitempty"`
}

// jbase is the part of the journal's stat cache an answer carries: the
// checkpoint it vouches for, and the dirty directories and every
// directory above them.
type jbase struct {
	ID       string   `json:"id"`
	Root     string   `json:"root"`
	Excluded []string `json:"excluded,omitempty"`
	Dirs     []jdir   `json:"dirs,omitempty"`
}

// jdelta is what a run's checkpoint from a jbase found: the new
// checkpoint, the direct children of every directory it rebuilt, the
// subtrees gone (dropped before Kids apply) and the rebuilt trees.
type jdelta struct {
	ID       string             `json:"id"`
	Root     string             `json:"root"`
	Excluded []string           `json:"excluded,omitempty"`
	Kids     map[string][]Entry `json:"kids,omitempty"`
	Gone     []string           `json:"gone,omitempty"`
	Trees    map[string]string  `json:"trees,omitempty"`
}

// jcache is the journal's stat cache of one area.
type jcache struct {
	id, root string
	excluded []string
	kids     map[string][]Entry // by parent directory ("." the root)
	trees    map[string]string
}

// newJCache indexes m (a stat cache with its trees) by directory; nil
// when m has no tree for a directory it lists (a file written by an
// agentbox without them).
func newJCache(m *Manifest) *jcache {
	c := &jcache{id: m.ID, root: m.Root, excluded: slices.Clone(m.Excluded), kids: map[string][]Entry{}, trees: maps.Clone(m.trees)}
	if c.trees == nil || c.trees["."] != m.Root {
		return nil
	}
	for _, e := range m.Entries {
		d := path.Dir(e.Path)
		c.kids[d] = append(c.kids[d], e)
		if e.Kind == Dir && c.trees[e.Path] == "" {
			return nil
		}
	}
	return c
}

// base returns what a run needs to rebuild the checkpoint after the
// directories dirty changed.
func (c *jcache) base(dirty []string) *jbase {
	b := &jbase{ID: c.id, Root: c.root, Excluded: c.excluded}
	seen := map[string]bool{}
	for _, d := range dirty {
		for ; !seen[d]; d = path.Dir(d) {
			seen[d] = true
			jd := jdir{Dir: d, Tree: c.trees[d], Kids: c.kids[d]}
			for _, e := range jd.Kids {
				if e.Kind == Dir {
					if jd.Subs == nil {
						jd.Subs = map[string]string{}
					}
					jd.Subs[e.Path] = c.trees[e.Path]
				}
			}
			b.Dirs = append(b.Dirs, jd)
			if d == "." {
				break
			}
		}
	}
	return b
}

// apply makes the cache the checkpoint of d.
func (c *jcache) apply(d *jdelta) {
	if len(d.Gone) > 0 {
		gone := setOf(d.Gone)
		for k := range c.kids {
			if under(k, gone) {
				delete(c.kids, k)
			}
		}
		for k := range c.trees {
			if under(k, gone) {
				delete(c.trees, k)
			}
		}
	}
	for dir, kids := range d.Kids {
		if len(kids) == 0 {
			delete(c.kids, dir)
		} else {
			c.kids[dir] = kids
		}
	}
	maps.Copy(c.trees, d.Trees)
	c.id, c.root, c.excluded = d.ID, d.Root, d.Excluded
}

// manifest flattens the cache into a stat cache (entries sorted by path).
func (c *jcache) manifest() *Manifest {
	m := &Manifest{ID: c.id, Root: c.root, Excluded: c.excluded, trees: c.trees}
	n := 0
	for _, k := range c.kids {
		n += len(k)
	}
	m.Entries = make([]Entry, 0, n)
	for _, k := range c.kids {
		m.Entries = append(m.Entries, k...)
	}
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return m
}

// errJournalBase: the journal's answer does not hold what the checkpoint
// needs (the caller walks).
var errJournalBase = errors.New("checkpoint journal: the answer lacks a directory")

// takeFromJournal records the tree at root as checkpoint id from the
// journal's base b after the directories dirty changed, rescanning those
// only, as takeDirty does from a whole manifest; it reads and writes no
// stat cache file. The manifest returned has no entries (the journal
// keeps them: the delta). The store's lock is held by the caller.
func (s *Store) takeFromJournal(id, root string, opt Options, b *jbase, dirty map[string]bool) (*Manifest, *jdelta, Stats, error) {
	var st Stats
	m := &Manifest{ID: id, Time: time.Now().UTC(), Root: b.Root}
	dirs := make(map[string]*jdir, len(b.Dirs))
	for i := range b.Dirs {
		dirs[b.Dirs[i].Dir] = &b.Dirs[i]
	}
	for d := range dirty {
		for ; ; d = path.Dir(d) {
			if dirs[d] == nil {
				return nil, nil, st, errJournalBase
			}
			if d == "." {
				break
			}
		}
	}
	if len(dirty) == 0 {
		m.Excluded = b.Excluded
		return m, &jdelta{ID: id, Root: b.Root, Excluded: b.Excluded}, st, s.saveRecord(m)
	}
	old := map[string]Entry{}
	for d := range dirty {
		for _, e := range dirs[d].Kids {
			old[e.Path] = e
		}
	}
	for _, x := range b.Excluded {
		if !dirty[path.Dir(x)] {
			m.Excluded = append(m.Excluded, x)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	defer r.Close()
	gone := map[string]bool{}
	var fresh []Entry
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
			return nil, nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
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
					walkNew = append(walkNew, rel)
					continue
				}
			}
			e, err := s.entry(r, rel, old, opt, &st, m, true)
			if err != nil {
				return nil, nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
			}
			if e != nil {
				fresh = append(fresh, *e)
			}
		}
		for _, e := range dirs[dir].Kids {
			if e.Kind == Dir {
				if fi, err := r.Lstat(e.Path); !seen[e.Path] || err != nil || !fi.IsDir() {
					gone[e.Path] = true
				}
			}
		}
	}
	// a directory the journal marked dirty that is not one any more: its
	// parent is dirty too (the journal saw it go), else walk
	for d := range dirty {
		if d != "." && !realDir(r, d) {
			if !dirty[path.Dir(d)] {
				return nil, nil, st, errJournalBase
			}
			gone[d] = true
		}
	}
	newSet := setOf(walkNew)
	walkNew = slices.DeleteFunc(walkNew, func(d string) bool { return d != "." && path.Dir(d) != "." && under(path.Dir(d), newSet) })
	for _, dir := range walkNew {
		inDir := func(e Entry) bool { return e.Path == dir || strings.HasPrefix(e.Path, dir+"/") }
		fresh = slices.DeleteFunc(fresh, inDir)
		sub, sst, err := s.walkSub(root, dir, old, opt, true, opt.excludeNames)
		if err != nil {
			return nil, nil, st, fmt.Errorf("checkpoint %s: %w", id, err)
		}
		fresh = append(fresh, sub.Entries...)
		m.Excluded = append(m.Excluded, sub.Excluded...)
		st.Hashed += sst.Hashed
		st.Stored += sst.Stored
		gone[dir] = true // what was under its name before goes
	}
	if len(gone) > 0 {
		fresh = slices.DeleteFunc(fresh, func(e Entry) bool { return under(e.Path, gone) && !under(e.Path, newSet) })
		m.Excluded = slices.DeleteFunc(m.Excluded, func(x string) bool { return under(x, gone) && !under(x, newSet) })
	}
	slices.SortFunc(fresh, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(m.Excluded)
	m.Excluded = slices.Compact(m.Excluded)

	// The directories whose trees are rebuilt: the dirty ones that are
	// still directories, the new ones, and every one above them. Their
	// direct children: rescanned for the dirty and new ones, the cache's
	// for those above.
	children := map[string][]Entry{}
	rebuilt := map[string]bool{}
	for d := range dirty {
		if d == "." || !gone[d] && realDir(r, d) {
			children[d] = nil
			rebuilt[d] = true
		}
	}
	for _, e := range fresh {
		if e.Kind == Dir && under(e.Path, newSet) {
			children[e.Path] = children[e.Path]
			rebuilt[e.Path] = true
		}
	}
	for _, e := range fresh {
		children[path.Dir(e.Path)] = append(children[path.Dir(e.Path)], e)
	}
	for d := range maps.Clone(rebuilt) {
		for a := path.Dir(d); ; a = path.Dir(a) {
			if !rebuilt[a] {
				jd := dirs[a]
				if jd == nil {
					return nil, nil, st, errJournalBase
				}
				children[a] = slices.Clone(jd.Kids)
				rebuilt[a] = true
			}
			if a == "." {
				break
			}
		}
	}
	// every subdirectory of a rebuilt directory is rebuilt or keeps its
	// tree: a tree the answer does not name is refused, not stored empty
	reuse := map[string]string{}
	bases := map[string]string{}
	for d := range rebuilt {
		if jd := dirs[d]; jd != nil {
			bases[d] = jd.Tree
		}
		for _, e := range children[d] {
			if e.Kind != Dir || rebuilt[e.Path] {
				continue
			}
			h := ""
			if jd := dirs[d]; jd != nil {
				h = jd.Subs[e.Path]
			}
			if len(h) != 64 {
				return nil, nil, st, errJournalBase
			}
			reuse[e.Path] = h
		}
	}
	trees := map[string]string{}
	root2, err := s.putTree(children, ".", reuse, bases, trees)
	if err != nil {
		return nil, nil, st, fmt.Errorf("checkpoint store: saving %s: %w", id, err)
	}
	m.Root = root2
	if err := s.saveRecord(m); err != nil {
		return nil, nil, st, err
	}
	for k := range reuse {
		delete(trees, k)
	}
	d := &jdelta{ID: id, Root: root2, Excluded: m.Excluded, Kids: map[string][]Entry{}, Trees: trees}
	for dir := range rebuilt {
		d.Kids[dir] = children[dir]
	}
	for g := range gone {
		d.Gone = append(d.Gone, g)
	}
	slices.Sort(d.Gone)
	return m, d, st, nil
}
