package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// Depth: how many deltas its tree is stored through (0: whole), when
	// the journal was told (a run's delta); nil: unknown
	Depth *int `json:"depth,omitempty"`
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
// checkpoint, the direct children of every directory it rescanned or
// walked (those above keep theirs), the subtrees gone (dropped before
// Kids apply), the rebuilt trees and the depth of those it stored.
type jdelta struct {
	ID       string             `json:"id"`
	Root     string             `json:"root"`
	Excluded []string           `json:"excluded,omitempty"`
	Kids     map[string][]Entry `json:"kids,omitempty"`
	Gone     []string           `json:"gone,omitempty"`
	Trees    map[string]string  `json:"trees,omitempty"`
	Depths   map[string]int     `json:"depths,omitempty"`
}

// jcache is the journal's stat cache of one area.
type jcache struct {
	id, root string
	excluded []string
	kids     map[string][]Entry // by parent directory ("." the root)
	trees    map[string]string
	depths   map[string]int // of the trees a run stored and told (jdelta)
}

// newJCache indexes m (a stat cache with its trees) by directory; nil
// when m has no tree for a directory it lists (a file written by an
// agentbox without them).
func newJCache(m *Manifest) *jcache {
	c := &jcache{id: m.ID, root: m.Root, excluded: slices.Clone(m.Excluded), kids: map[string][]Entry{}, trees: maps.Clone(m.trees), depths: map[string]int{}}
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
			if dep, ok := c.depths[d]; ok {
				jd.Depth = &dep
			}
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
				delete(c.depths, k)
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
	for k := range d.Trees {
		if dep, ok := d.Depths[k]; ok {
			c.depths[k] = dep
		} else {
			delete(c.depths, k) // a tree the store had: its form unknown
		}
	}
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
	t := &jtake{s: s, id: id, opt: opt, b: b, dirty: dirty, m: &Manifest{ID: id, Time: time.Now().UTC(), Root: b.Root}}
	if err := t.index(); err != nil {
		return nil, nil, t.st, err
	}
	if len(dirty) == 0 {
		t.m.Excluded = b.Excluded
		return t.m, &jdelta{ID: id, Root: b.Root, Excluded: b.Excluded}, t.st, s.saveRecord(t.m)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, t.st, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	defer r.Close()
	if err := t.rescan(r); err != nil {
		return nil, nil, t.st, err
	}
	if err := t.walkNewDirs(root); err != nil {
		return nil, nil, t.st, err
	}
	if err := t.rebuildSet(r); err != nil {
		return nil, nil, t.st, err
	}
	d, err := t.save()
	if err != nil {
		return nil, nil, t.st, err
	}
	return t.m, d, t.st, nil
}

// jtake is one checkpoint taken from a journal's answer (takeFromJournal),
// step by step.
type jtake struct {
	s     *Store
	id    string
	opt   Options
	b     *jbase
	dirty map[string]bool
	m     *Manifest
	st    Stats

	dirs    map[string]*jdir // the answer's directories
	old     map[string]Entry // the dirty directories' children in b
	fresh   []Entry          // what the rescans and walks found
	walkNew []string         // directories new in a dirty one: walked whole
	newSet  map[string]bool
	gone    map[string]bool // subtrees gone (or replaced by a new walk)

	children map[string][]Entry // by parent, for the rebuilt directories
	rebuilt  map[string]bool    // trees rebuilt: scanned and every one above
	scanned  map[string]bool    // rebuilt from a rescan or a walk
}

// index indexes the answer's directories and checks it holds every
// dirty directory and every one above them.
func (t *jtake) index() error {
	t.dirs = make(map[string]*jdir, len(t.b.Dirs))
	for i := range t.b.Dirs {
		t.dirs[t.b.Dirs[i].Dir] = &t.b.Dirs[i]
	}
	for d := range t.dirty {
		for ; ; d = path.Dir(d) {
			if t.dirs[d] == nil {
				return errJournalBase
			}
			if d == "." {
				break
			}
		}
	}
	return nil
}

// rescan lists the dirty directories again and records their entries
// (a file's content stored unless the base's stat cache vouches for it).
func (t *jtake) rescan(r *os.Root) error {
	t.old = map[string]Entry{}
	for d := range t.dirty {
		for _, e := range t.dirs[d].Kids {
			t.old[e.Path] = e
		}
	}
	for _, x := range t.b.Excluded {
		if !t.dirty[path.Dir(x)] {
			t.m.Excluded = append(t.m.Excluded, x)
		}
	}
	t.gone = map[string]bool{}
	for dir := range t.dirty {
		if err := t.rescanDir(r, dir); err != nil {
			return err
		}
	}
	// a directory the journal marked dirty that is not one any more: its
	// parent is dirty too (the journal saw it go), else walk
	for d := range t.dirty {
		if d != "." && !realDir(r, d) {
			if !t.dirty[path.Dir(d)] {
				return errJournalBase
			}
			t.gone[d] = true
		}
	}
	return nil
}

// rescanDir records the entries of the dirty directory dir, by
// descriptor as a whole walk does (walk.go): one fstatat per entry, a
// file opened and checked to be the one stat'd.
func (t *jtake) rescanDir(r *os.Root, dir string) error {
	if !realDir(r, dir) {
		return nil // gone or now a symlink: its parent is dirty too
	}
	f, err := r.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil // went meanwhile: seen below
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", t.id, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %s: %w", t.id, dir, err)
	}
	dfd := int(f.Fd())
	seen := make(map[string]bool, len(ents))
	for _, d := range ents {
		name := d.Name()
		rel := path.Join(dir, name)
		seen[rel] = true
		if d.IsDir() && slices.Contains(t.opt.ExcludeNames, name) {
			t.m.Excluded = append(t.m.Excluded, rel)
			continue
		}
		if d.IsDir() {
			if o, ok := t.old[rel]; !ok || o.Kind != Dir {
				t.walkNew = append(t.walkNew, rel)
				continue
			}
		}
		var sys unix.Stat_t
		if err := unix.Fstatat(dfd, name, &sys, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				delete(seen, rel) // gone meanwhile: not part of this checkpoint
				continue
			}
			return fmt.Errorf("checkpoint %s: %s: %w", t.id, rel, err)
		}
		e, err := t.s.entryOf(rel, &sys, t.old, t.opt, &t.st, t.m, true,
			func() (string, error) { return readlinkat(dfd, name) },
			func() (*os.File, error) { return openSameAt(dfd, name, rel, &sys) })
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", t.id, err)
		}
		if e != nil {
			t.fresh = append(t.fresh, *e)
		}
	}
	for _, e := range t.dirs[dir].Kids {
		if e.Kind != Dir {
			continue
		}
		var sub unix.Stat_t
		if !seen[e.Path] || unix.Fstatat(dfd, path.Base(e.Path), &sub, unix.AT_SYMLINK_NOFOLLOW) != nil || sub.Mode&unix.S_IFMT != unix.S_IFDIR {
			t.gone[e.Path] = true
		}
	}
	return nil
}

// walkNewDirs walks the new directories whole (the topmost of each new
// subtree), then sorts what was found.
func (t *jtake) walkNewDirs(root string) error {
	t.newSet = setOf(t.walkNew)
	walkNew := slices.DeleteFunc(t.walkNew, func(d string) bool {
		return d != "." && path.Dir(d) != "." && under(path.Dir(d), t.newSet)
	})
	for _, dir := range walkNew {
		inDir := func(e Entry) bool { return e.Path == dir || strings.HasPrefix(e.Path, dir+"/") }
		t.fresh = slices.DeleteFunc(t.fresh, inDir)
		sub, sst, err := t.s.walkSub(root, dir, t.old, t.opt, true, t.opt.excludeNames)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", t.id, err)
		}
		t.fresh = append(t.fresh, sub.Entries...)
		t.m.Excluded = append(t.m.Excluded, sub.Excluded...)
		t.st.Hashed += sst.Hashed
		t.st.Stored += sst.Stored
		t.gone[dir] = true // what was under its name before goes
	}
	if len(t.gone) > 0 {
		t.fresh = slices.DeleteFunc(t.fresh, func(e Entry) bool { return under(e.Path, t.gone) && !under(e.Path, t.newSet) })
		t.m.Excluded = slices.DeleteFunc(t.m.Excluded, func(x string) bool { return under(x, t.gone) && !under(x, t.newSet) })
	}
	slices.SortFunc(t.fresh, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(t.m.Excluded)
	t.m.Excluded = slices.Compact(t.m.Excluded)
	return nil
}

// rebuildSet lists the directories whose trees are rebuilt: the dirty
// ones that are still directories, the new ones (scanned), and every one
// above them. Their direct children: what the rescan found for the
// scanned ones, the answer's for those above.
func (t *jtake) rebuildSet(r *os.Root) error {
	t.children = map[string][]Entry{}
	t.scanned = map[string]bool{}
	for d := range t.dirty {
		if d == "." || !t.gone[d] && realDir(r, d) {
			t.children[d] = nil
			t.scanned[d] = true
		}
	}
	for _, e := range t.fresh {
		if e.Kind == Dir && under(e.Path, t.newSet) {
			t.children[e.Path] = t.children[e.Path]
			t.scanned[e.Path] = true
		}
	}
	for _, e := range t.fresh {
		t.children[path.Dir(e.Path)] = append(t.children[path.Dir(e.Path)], e)
	}
	t.rebuilt = maps.Clone(t.scanned)
	for d := range t.scanned {
		for a := path.Dir(d); ; a = path.Dir(a) {
			if !t.rebuilt[a] {
				jd := t.dirs[a]
				if jd == nil {
					return errJournalBase
				}
				t.children[a] = slices.Clone(jd.Kids)
				t.rebuilt[a] = true
			}
			if a == "." {
				break
			}
		}
	}
	return nil
}

// save stores the rebuilt trees (each changed one as a delta over its
// tree in the base where that is whole: the base's entries come from the
// answer, checked against its hash, not read from the store) and the
// record, and returns what the journal is told: the scanned directories'
// children (those above did not change), the trees and their depths.
func (t *jtake) save() (*jdelta, error) {
	// every subdirectory of a rebuilt directory is rebuilt or keeps its
	// tree: a tree the answer does not name is refused, not stored empty
	reuse := map[string]string{}
	bases := map[string]string{}
	for d := range t.rebuilt {
		jd := t.dirs[d]
		if jd != nil {
			bases[d] = jd.Tree
			t.s.knownBase(jd)
		}
		for _, e := range t.children[d] {
			if e.Kind != Dir || t.rebuilt[e.Path] {
				continue
			}
			h := ""
			if jd != nil {
				h = jd.Subs[e.Path]
			}
			if len(h) != 64 {
				return nil, errJournalBase
			}
			reuse[e.Path] = h
		}
	}
	trees, depths := map[string]string{}, map[string]int{}
	root, err := t.s.putTree(t.children, ".", reuse, bases, trees, depths)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: saving %s: %w", t.id, err)
	}
	t.m.Root = root
	if err := t.s.saveRecord(t.m); err != nil {
		return nil, err
	}
	for k := range reuse {
		delete(trees, k)
	}
	d := &jdelta{ID: t.id, Root: root, Excluded: t.m.Excluded, Kids: map[string][]Entry{}, Trees: trees, Depths: depths}
	for dir := range t.scanned {
		d.Kids[dir] = t.children[dir]
	}
	for g := range t.gone {
		d.Gone = append(d.Gone, g)
	}
	slices.Sort(d.Gone)
	return d, nil
}

// knownBase puts the tree of jd (the base of a rebuilt directory) in the
// process's tree cache when the journal knows it is stored whole: its
// entries are jd's children (and their subtrees' hashes), checked against
// the tree's hash, so that deltaTree stores the new tree as a delta over
// it without reading it from the store (a run's end is a new process,
// whose cache is empty). A delta base is left to deltaTree (read, or
// stored whole), as before.
func (s *Store) knownBase(jd *jdir) {
	if jd.Depth == nil || *jd.Depth != 0 || len(jd.Tree) != 64 {
		return
	}
	if _, ok := s.trees.get(jd.Tree); ok {
		return
	}
	if !slices.IsSortedFunc(jd.Kids, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) }) {
		return
	}
	t := make([]treeEntry, 0, len(jd.Kids))
	for _, e := range jd.Kids {
		te := treeEntry{Name: path.Base(e.Path), Kind: e.Kind, Mode: e.Mode, Size: e.Size, Hash: e.Hash, Link: e.Link}
		if e.Kind == Dir {
			te.Hash = jd.Subs[e.Path]
		}
		t = append(t, te)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != jd.Tree {
		return // not the tree it names: deltaTree reads the store's
	}
	s.trees.put(jd.Tree, cachedTree{t: t})
}
