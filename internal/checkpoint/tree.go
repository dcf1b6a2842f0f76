package checkpoint

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// On disk a checkpoint is a small record naming a root tree; a tree is one
// directory's listing (name, kind, mode, size, content hash or link, and
// for a subdirectory the hash of its own tree), stored gzip-compressed as
// an object named by the SHA-256 of its uncompressed bytes. A directory
// that did not change between two checkpoints has the same tree, stored
// once; a checkpoint after one file changed adds that file's content, the
// trees on its path and the record. The stat cache (mtime, ctime, inode)
// is not part of a tree: the latest is kept in one file, statcache.gob.

// treeEntry is one name in a tree object.
type treeEntry struct {
	Name string      `json:"n"`
	Kind Kind        `json:"k"`
	Mode fs.FileMode `json:"m,omitempty"`
	Size int64       `json:"s,omitempty"`
	Hash string      `json:"h,omitempty"` // content (file) or tree (dir)
	Link string      `json:"l,omitempty"`
}

// record is a checkpoint's file under checkpoints/.
type record struct {
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Root     string    `json:"root"` // hash of the root tree
	Excluded []string  `json:"excluded,omitempty"`
}

// save stores m's trees (those not in the store yet), its record, and,
// with statCache, the stat cache file. reuse (may be nil) gives tree hashes
// of directories known unchanged since the checkpoint they were computed
// for (the change feed's clean directories); their trees are not rebuilt.
func (s *Store) save(m *Manifest, reuse map[string]string, statCache bool) error {
	return s.saveOn(m, reuse, nil, statCache)
}

// saveOn is save with bases: the previous checkpoint's tree hashes by
// directory, against which a changed directory's tree is stored as a
// delta (deltaTree).
func (s *Store) saveOn(m *Manifest, reuse, bases map[string]string, statCache bool) error {
	// Only the directories rebuilt need their children; the reused ones
	// (and, reused with them, everything below) keep their hashes.
	children := map[string][]Entry{}
	for _, e := range m.Entries {
		d := path.Dir(e.Path)
		if _, ok := reuse[d]; ok {
			continue
		}
		children[d] = append(children[d], e)
	}
	m.trees = maps.Clone(reuse)
	if m.trees == nil {
		m.trees = map[string]string{}
	}
	root, err := s.putTree(children, ".", reuse, bases, m.trees, nil)
	if err != nil {
		return fmt.Errorf("checkpoint store: saving %s: %w", m.ID, err)
	}
	m.Root = root
	if err := s.saveRecord(m); err != nil {
		return err
	}
	if statCache {
		return s.SaveStatCache(m)
	}
	return nil
}

// SaveStatCache keeps m's stat cache (size, mtime, ctime, inode per file)
// for the next process's first checkpoint: Load gives it back. Take saves
// it every time; TakeWatched leaves it to the caller (at the end of a run),
// since its own stat cache is the previous checkpoint in memory.
func (s *Store) SaveStatCache(m *Manifest) error {
	if testStatCacheIO != nil {
		testStatCacheIO("write")
	}
	cache, err := encodeStatCache(&statCacheFile{ID: m.ID, Root: m.Root, Trees: m.trees, Entries: m.Entries})
	if err != nil {
		return err
	}
	// an optimisation: losing it costs a rehash only
	_ = s.writeFile(statCacheName, cache)
	return nil
}

// saveRecord writes m's record, naming its root tree.
func (s *Store) saveRecord(m *Manifest) error {
	b, err := json.Marshal(record{ID: m.ID, Time: m.Time, Root: m.Root, Excluded: m.Excluded})
	if err != nil {
		return err
	}
	if err := s.writeFile(filepath.Join("checkpoints", m.ID+".json"), b); err != nil {
		return fmt.Errorf("checkpoint store: saving %s: %w", m.ID, err)
	}
	return nil
}

// putTree stores the tree of the directory dir ("." for the root), whose
// entries children lists by parent, and returns its hash; every tree's
// hash is put in out, and (depths not nil) the depth of every tree it
// wrote in depths (0: whole; a tree the store had is not named). A
// directory in reuse keeps that hash.
func (s *Store) putTree(children map[string][]Entry, dir string, reuse, bases, out map[string]string, depths map[string]int) (string, error) {
	if h, ok := reuse[dir]; ok {
		return h, nil // out has it and its subdirectories' (save)
	}
	list := children[dir]
	slices.SortFunc(list, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	t := make([]treeEntry, 0, len(list))
	for _, e := range list {
		te := treeEntry{Name: path.Base(e.Path), Kind: e.Kind, Mode: e.Mode, Size: e.Size, Hash: e.Hash, Link: e.Link}
		if e.Kind == Dir {
			h, err := s.putTree(children, e.Path, reuse, bases, out, depths)
			if err != nil {
				return "", err
			}
			te.Hash = h
		}
		t = append(t, te)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	out[dir] = hash
	dst := s.treePath(hash)
	if _, err := os.Stat(dst); err == nil {
		return hash, nil
	}
	depth := 0
	if d, dd := s.deltaTree(bases[dir], hash, t); d != nil {
		b, depth = d, dd // stored as the change from the directory's previous tree
	}
	s.trees.put(hash, cachedTree{t: t, depth: depth})
	if depths != nil {
		depths[dir] = depth
	}
	var z bytes.Buffer
	if len(b) < storedTreeMax {
		gzipStored(&z, b)
	} else {
		zw := gzipPool.Get().(*gzip.Writer)
		zw.Reset(&z)
		zw.Write(b)
		err = zw.Close()
		gzipPool.Put(zw)
		if err != nil {
			return "", err
		}
	}
	if d := filepath.Dir(dst); !s.made(d) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
	}
	return hash, s.writeFile(strings.TrimPrefix(dst, s.dir+string(filepath.Separator)), z.Bytes())
}

// treePath is where tree hash is stored: trees/, apart from contents, so
// a file whose content is a tree's bytes is not taken for it.
func (s *Store) treePath(hash string) string {
	return filepath.Join(s.dir, "trees", hash[:2], hash[2:])
}

// writeFile writes b to rel in the store through a temporary file and a
// rename: a reader sees the whole file or none.
func (s *Store) writeFile(rel string, b []byte) error {
	return replaceFile(filepath.Join(s.dir, rel), b, true)
}

// replaceFile writes b to dst through a temporary file beside it and a
// rename. With remake, a missing directory of dst (made before, removed
// meanwhile) is made again; without, the write fails.
func replaceFile(dst string, b []byte, remake bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".new-*")
	if remake && errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
			tmp, err = os.CreateTemp(filepath.Dir(dst), ".new-*")
		}
	}
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Load reads checkpoint id: its record and every tree, each verified
// against its hash.
func (s *Store) Load(id string) (*Manifest, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "checkpoints", id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %s: %w", id, errNoRecord)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("checkpoint %s: corrupted manifest: %w", id, err)
	}
	if len(r.Root) != 64 {
		return nil, fmt.Errorf("checkpoint %s: corrupted manifest: root %q", id, r.Root)
	}
	for _, x := range r.Excluded {
		if !validRel(x) {
			return nil, fmt.Errorf("checkpoint %s: corrupted manifest: excluded %q", id, x)
		}
	}
	m := &Manifest{ID: r.ID, Time: r.Time, Excluded: r.Excluded, Root: r.Root}
	if err := s.readTree(r.Root, ".", m, 0); err != nil {
		return nil, fmt.Errorf("checkpoint %s: corrupted manifest: %w", id, err)
	}
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	// the stat cache of the latest checkpoint, where it matches
	if cb, err := os.ReadFile(filepath.Join(s.dir, statCacheName)); err == nil {
		if sc, err := decodeStatCache(cb); err == nil {
			byPath := index(&Manifest{Entries: sc.Entries})
			for i, e := range m.Entries {
				if c, ok := byPath[e.Path]; ok && c.Kind == File && c.Hash == e.Hash && c.Size == e.Size {
					m.Entries[i].Mtime, m.Entries[i].Ctime, m.Entries[i].Ino = c.Mtime, c.Ctime, c.Ino
				}
			}
		}
	}
	return m, nil
}

// errNoRecord: the store has no such checkpoint (never taken, or pruned).
var errNoRecord = errors.New("not in the store")

// maxTreeDepth bounds a corrupted store's trees.
const maxTreeDepth = 512

func (s *Store) readTree(hash, dir string, m *Manifest, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("trees nested deeper than %d", maxTreeDepth)
	}
	t, err := s.loadTree(hash, dir)
	if err != nil {
		return err
	}
	for _, te := range t {
		p := path.Join(dir, te.Name)
		e := Entry{Path: p, Kind: te.Kind, Mode: te.Mode, Size: te.Size, Hash: te.Hash, Link: te.Link}
		if te.Kind == Dir {
			e.Hash = ""
			if err := s.readTree(te.Hash, p, m, depth+1); err != nil {
				return err
			}
		}
		m.Entries = append(m.Entries, e)
	}
	return nil
}

// loadTree reads the tree object hash (of directory dir, for messages),
// checks it hashes to its name, and checks each entry's name and kind.
func (s *Store) loadTree(hash, dir string) ([]treeEntry, error) {
	if len(hash) != 64 {
		return nil, fmt.Errorf("tree hash %q", hash)
	}
	f, err := os.Open(s.treePath(hash))
	if err != nil {
		return nil, fmt.Errorf("tree %s of %q: %w", hash[:12], dir, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("tree %s of %q: %w", hash[:12], dir, err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("tree %s of %q: %w", hash[:12], dir, err)
	}
	if len(b) > 0 && b[0] == '{' {
		// a delta: the base tree with the changes applied, then verified
		// like a whole tree
		full, err := s.applyDelta(b, dir, deltaDepth)
		if err != nil {
			return nil, fmt.Errorf("tree %s of %q: %w", hash[:12], dir, err)
		}
		b = full
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hash {
		return nil, fmt.Errorf("tree %s of %q holds other content", hash[:12], dir)
	}
	var t []treeEntry
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("tree %s of %q: %w", hash[:12], dir, err)
	}
	for _, te := range t {
		p := path.Join(dir, te.Name)
		if te.Name == "" || strings.Contains(te.Name, "/") || te.Name == "." || te.Name == ".." || !validRel(p) {
			return nil, fmt.Errorf("tree %s of %q: entry %q", hash[:12], dir, te.Name)
		}
		switch te.Kind {
		case Dir, File:
			if len(te.Hash) != 64 {
				return nil, fmt.Errorf("tree %s of %q: entry %q has no hash", hash[:12], dir, te.Name)
			}
		case Symlink:
		default:
			return nil, fmt.Errorf("tree %s of %q: entry %q of kind %q", hash[:12], dir, te.Name, te.Kind)
		}
	}
	return t, nil
}

// gzipPool keeps gzip writers: allocating one per tree cost more than
// compressing it. They compress at gzip.BestSpeed: on a tree's JSON (its
// hashes are most of it) the default level saves ~1.5 % of the bytes for
// 3-4× the CPU, and its ~800 KB of compressor state cost a run's end ~1 ms
// to allocate and fault in (each run is a new process).
var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// storedTreeMax: a tree whose JSON is shorter (a delta, a directory of
// up to ~30 entries) is stored in gzip's stored form, uncompressed
// (gzipStored): with gzip's 23 bytes it still fits one 4 KiB block, the
// least a file takes on disk, and a gzip writer's state (~650 KB,
// whatever the level) costs a new process more than the bytes it would
// save.
const storedTreeMax = 4000

// gzipStored appends to z the gzip member of b (shorter than 64 KiB) in
// deflate's stored form (RFC 1951 3.2.4, RFC 1952): what any gzip reader
// reads, built without a compressor.
func gzipStored(z *bytes.Buffer, b []byte) {
	n := len(b)
	// header: magic, CM=deflate, no flags, no mtime, XFL=0, OS=unknown
	z.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255})
	// one final stored block: BFINAL=1 BTYPE=00, LEN, NLEN
	z.Write([]byte{1, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)})
	z.Write(b)
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], crc32.ChecksumIEEE(b))
	binary.LittleEndian.PutUint32(tail[4:], uint32(n))
	z.Write(tail[:])
}

// made reports whether the store directory d was made (or seen) by this
// process before, and notes it.
func (s *Store) made(d string) bool {
	_, ok := madeDirs.LoadOrStore(d, true)
	return ok
}

// madeDirs are store directories known to exist.
var madeDirs sync.Map

// statCacheName is the stat cache's file in the store (statcache.go: its
// own encoding; a 12k-entry cache in JSON took 20 ms to decode). An older
// agentbox's statcache.gob beside it is left alone and unread.
const statCacheName = "statcache.bin"

// testStatCacheIO, when set by a test, is called as a recorder reads
// ("read") or writes ("write") the stat cache file.
var testStatCacheIO func(op string)

// statCacheFile is the stat cache's file: the latest checkpoint's entries with
// their stat cache, its root and its directories' trees.
type statCacheFile struct {
	ID      string            `json:"id"`
	Root    string            `json:"root"`
	Trees   map[string]string `json:"trees,omitempty"`
	Entries []Entry           `json:"entries"`
}

// statCache returns the stat cache the store kept (SaveStatCache) as the
// manifest of the checkpoint it came from, for the first Take of a
// process: files it vouches for are not read again, and an unchanged
// tree is not stored again. It is trusted only while that checkpoint is
// in the store (its contents and trees are then kept by Prune); else nil.
func (s *Store) statCache() *Manifest {
	if testStatCacheIO != nil {
		testStatCacheIO("read")
	}
	cb, err := os.ReadFile(filepath.Join(s.dir, statCacheName))
	if err != nil {
		return nil
	}
	sc, err := decodeStatCache(cb)
	if err != nil || validID(sc.ID) != nil {
		return nil
	}
	if r, err := s.record(sc.ID); err != nil || r.Root != sc.Root {
		return nil
	}
	for _, e := range sc.Entries {
		if !validRel(e.Path) || (e.Kind == File && len(e.Hash) != 64) {
			return nil
		}
	}
	return &Manifest{ID: sc.ID, Root: sc.Root, trees: sc.Trees, Entries: sc.Entries}
}

// A changed directory's tree is stored as a delta against its previous
// tree when there is one: {"base": HASH, "d": DEPTH, "set": [entries],
// "del": [names]}. A tree's hash is always that of its whole form (the
// JSON list), so equal trees share one object whichever way it is
// stored, and a delta is verified after it is applied. A chain is at most
// maxDeltaChain deltas long; the next change stores the whole tree.
// (Trees of 100 files are ~3 KB compressed, the hashes do not compress;
// a delta of one changed file is ~200 bytes: store growth stays near the
// changed bytes.)
type treeDelta struct {
	Base  string      `json:"base"`
	Depth int         `json:"d"`
	Set   []treeEntry `json:"set,omitempty"`
	Del   []string    `json:"del,omitempty"`
}

const maxDeltaChain = 16

// deltaDepth bounds the bases a delta is applied over when loading
// (a corrupted store could chain them forever).
const deltaDepth = maxDeltaChain + 1

// deltaTree returns the delta form of tree t (whole hash) against base,
// or nil when the whole form should be stored (no base, base unreadable,
// the chain long enough, or the delta no smaller).
func (s *Store) deltaTree(base, hash string, t []treeEntry) ([]byte, int) {
	if base == "" || base == hash || len(base) != 64 {
		return nil, 0
	}
	if _, ok := s.trees.get(base); !ok {
		// not read by this process (a run's end checkpoint taken from the
		// journal, in a new process): a delta over a delta would load the
		// whole chain, up to maxDeltaChain reads and decodes per directory
		// on the run's end; over a whole tree it costs one
		if raw, err := s.rawTree(base); err != nil || len(raw) > 0 && raw[0] == '{' {
			return nil, 0
		}
	}
	old, depth, err := s.treeWithDepth(base, deltaDepth)
	if err != nil || depth >= maxDeltaChain {
		return nil, 0
	}
	was := make(map[string]treeEntry, len(old))
	for _, te := range old {
		was[te.Name] = te
	}
	d := treeDelta{Base: base, Depth: depth + 1}
	for _, te := range t {
		if o, ok := was[te.Name]; !ok || o != te {
			d.Set = append(d.Set, te)
		}
		delete(was, te.Name)
	}
	for name := range was {
		d.Del = append(d.Del, name)
	}
	slices.Sort(d.Del)
	if len(d.Set)+len(d.Del) > len(t)/2 {
		return nil, 0
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, 0
	}
	return b, d.Depth
}

// treeWithDepth loads tree hash (verified) and says how many deltas it
// is stored through (0: whole).
func (s *Store) treeWithDepth(hash string, budget int) ([]treeEntry, int, error) {
	if c, ok := s.trees.get(hash); ok {
		// still in the store? (another process's Prune may have swept it)
		if _, err := os.Lstat(s.treePath(hash)); err == nil {
			return c.t, c.depth, nil
		}
	}
	raw, err := s.rawTree(hash)
	if err != nil {
		return nil, 0, err
	}
	depth := 0
	if len(raw) > 0 && raw[0] == '{' {
		var d treeDelta
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, 0, err
		}
		depth = d.Depth
	}
	t, err := s.loadTree(hash, "")
	if err == nil {
		s.trees.put(hash, cachedTree{t: t, depth: depth})
	}
	return t, depth, err
}

// treeCache holds the trees this process stored or read last, bounded.
type treeCache struct {
	mu sync.Mutex
	m  map[string]cachedTree
}

type cachedTree struct {
	t     []treeEntry
	depth int
}

const maxCachedTrees = 8192

func (c *treeCache) get(hash string) (cachedTree, bool) {
	if c == nil {
		return cachedTree{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[hash]
	return t, ok
}

func (c *treeCache) put(hash string, t cachedTree) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedTrees {
		clear(c.m)
	}
	c.m[hash] = t
}

// rawTree is the stored (decompressed) form of tree hash, unverified.
func (s *Store) rawTree(hash string) ([]byte, error) {
	if len(hash) != 64 {
		return nil, fmt.Errorf("tree hash %q", hash)
	}
	f, err := os.Open(s.treePath(hash))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, 64<<20))
}

// applyDelta builds the whole form of a delta tree over its base.
func (s *Store) applyDelta(b []byte, dir string, budget int) ([]byte, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("delta chain longer than %d", deltaDepth)
	}
	var d treeDelta
	if err := json.Unmarshal(b, &d); err != nil || len(d.Base) != 64 {
		return nil, fmt.Errorf("bad delta")
	}
	raw, err := s.rawTree(d.Base)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", d.Base[:12], err)
	}
	if len(raw) > 0 && raw[0] == '{' {
		if raw, err = s.applyDelta(raw, dir, budget-1); err != nil {
			return nil, err
		}
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != d.Base {
		return nil, fmt.Errorf("base %s holds other content", d.Base[:12])
	}
	var base []treeEntry
	if err := json.Unmarshal(raw, &base); err != nil {
		return nil, err
	}
	byName := make(map[string]treeEntry, len(base)+len(d.Set))
	for _, te := range base {
		byName[te.Name] = te
	}
	for _, name := range d.Del {
		delete(byName, name)
	}
	for _, te := range d.Set {
		byName[te.Name] = te
	}
	out := make([]treeEntry, 0, len(byName))
	for _, te := range byName {
		out = append(out, te)
	}
	// the order putTree writes: by path, which within one directory is
	// by name
	slices.SortFunc(out, func(a, b treeEntry) int { return strings.Compare(a.Name, b.Name) })
	return json.Marshal(out)
}

// treeBases lists the trees tree hash is stored over (its delta bases),
// for Prune: a base is live while a delta over it is.
func (s *Store) treeBases(hash string) []string {
	var out []string
	for range deltaDepth {
		raw, err := s.rawTree(hash)
		if err != nil || len(raw) == 0 || raw[0] != '{' {
			return out
		}
		var d treeDelta
		if json.Unmarshal(raw, &d) != nil || len(d.Base) != 64 {
			return out
		}
		out = append(out, d.Base)
		hash = d.Base
	}
	return out
}
