package checkpoint

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// recordRun records a run over root with the commands given: each is
// checkpointed (Before), linked with seq 1, 2... and then run.
func recordRun(t *testing.T, store, run string, areas []Area, cmds ...func()) {
	t.Helper()
	rec, err := StartRecorder(RecorderConfig{Dir: store, Run: run, Areas: areas, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	runCommands(t, rec, cmds...)
	if _, _, err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
}

// runCommands runs cmds as a run's commands: each after its checkpoint
// (Before) and its index line (Link), as the supervisor does.
func runCommands(t *testing.T, rec *Recorder, cmds ...func()) {
	t.Helper()
	for i, cmd := range cmds {
		id, err := rec.Before()
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Link(IndexEntry{Kind: IndexCommand, Checkpoint: id, Seq: uint64(i + 1), Argv: []string{"cmd", string(rune('a' + i))}}); err != nil {
			t.Fatal(err)
		}
		cmd()
	}
}

// TestUndoRun: a recorded run's commands are listed with what each
// changed; undo of the whole run restores the tree byte for byte (.git,
// modes, links, empty directories), and undo of the undo brings the
// work back; --only reverts one command; a conflicting --only and a
// path changed since the run change nothing.
func TestUndoRun(t *testing.T) {
	root := project(t)
	feedback := t.TempDir()
	write(t, feedback, "notes.md", "notes\n", 0o644)
	areas := []Area{{Name: "target", Dir: root}, {Name: "feedback", Dir: feedback}}
	store := filepath.Join(t.TempDir(), "store")
	before := treeHash(t, root, "node_modules") + treeHash(t, feedback)
	recordRun(t, store, "run1", areas,
		func() { os.RemoveAll(filepath.Join(root, "src")) },                                     // seq 1: rm -r src
		func() { os.Rename(filepath.Join(root, "build.sh"), filepath.Join(root, "README.md")) }, // seq 2: mv over
		func() {}, // seq 3: changes nothing
		func() {
			write(t, root, ".git/refs/heads/main", "fedcba\n", 0o644)
			write(t, feedback, "report.txt", "done\n", 0o600)
		}, // seq 4: commit, report
	)
	after := treeHash(t, root, "node_modules") + treeHash(t, feedback)

	steps, _, err := Changes(store, "run1")
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64][]string{}
	for _, s := range steps {
		for _, c := range s.Changes {
			got[s.Seq] = append(got[s.Seq], string(c.Kind)+" "+c.Path)
		}
	}
	if !slices.Contains(got[1], "deleted target/src/main.go") || !slices.Contains(got[2], "deleted target/build.sh") ||
		!slices.Contains(got[2], "modified target/README.md") || len(got[3]) != 0 ||
		!slices.Contains(got[4], "added feedback/report.txt") || !slices.Contains(got[4], "modified target/.git/refs/heads/main") {
		t.Fatalf("changes per seq = %v", got)
	}

	// --only 2 while 4 touched other paths: just the mv is reverted
	res, err := Undo(store, "run1", UndoOptions{Only: 2, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "README.md")); string(b) != "# project\n" {
		t.Fatalf("README.md after undo --only 2 = %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "src")); err == nil {
		t.Fatal("undo --only 2 also restored src/ (seq 1's)")
	}
	// redo of that
	if _, err := Undo(store, res.Redo, UndoOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules") + treeHash(t, feedback); h != after {
		t.Fatalf("redo of undo --only did not bring the run's end back:\n%s\nwant\n%s", h, after)
	}

	// the whole run, a dry run first: nothing changes
	dry, err := Undo(store, "run1", UndoOptions{DryRun: true})
	if err != nil || len(dry.Restored) == 0 || dry.Redo != "" {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if h := treeHash(t, root, "node_modules") + treeHash(t, feedback); h != after {
		t.Fatal("a dry run changed the tree")
	}
	res, err = Undo(store, "run1", UndoOptions{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules") + treeHash(t, feedback); h != before {
		t.Fatalf("undo of the run:\n%s\nwant\n%s", h, before)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules/dep/index.js")); err != nil {
		t.Fatalf("excluded node_modules was touched: %v", err)
	}
	if _, err := Undo(store, res.Redo, UndoOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules") + treeHash(t, feedback); h != after {
		t.Fatal("undo of the undo did not bring the work back")
	}
}

// TestUndoConflicts: --only of a command whose paths a later command
// changed, and an undo over a path changed since the run, change nothing
// and say why; a path changed since the run that the undo need not touch
// is kept; --force overwrites.
func TestUndoConflicts(t *testing.T) {
	root := project(t)
	areas := []Area{{Name: "target", Dir: root}}
	store := filepath.Join(t.TempDir(), "store")
	recordRun(t, store, "run2", areas,
		func() { write(t, root, "README.md", "one\n", 0o644) },
		func() { write(t, root, "README.md", "two\n", 0o644) },
	)
	end := treeHash(t, root, "node_modules")
	_, err := Undo(store, "run2", UndoOptions{Only: 1})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Outside || len(ce.Steps) != 1 || ce.Steps[0].Seq != 2 || !strings.Contains(err.Error(), "seq 2 (cmd b)") {
		t.Fatalf("undo --only 1 = %v; want a conflict with seq 2", err)
	}
	if treeHash(t, root, "node_modules") != end {
		t.Fatal("a conflicting undo changed the tree")
	}
	// changed since the run: README.md (the run changed it too) and a new file
	write(t, root, "README.md", "human\n", 0o644)
	write(t, root, "mine.txt", "human's\n", 0o644)
	_, err = Undo(store, "run2", UndoOptions{})
	if !errors.As(err, &ce) || !ce.Outside || !slices.Equal(ce.Paths, []string{"target/README.md"}) {
		t.Fatalf("undo over a path changed since = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "README.md")); string(b) != "human\n" {
		t.Fatal("a refused undo changed README.md")
	}
	write(t, root, "README.md", "two\n", 0o644) // as the run left it
	res, err := Undo(store, "run2", UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "mine.txt")); string(b) != "human's\n" || len(res.Kept) != 1 {
		t.Fatalf("mine.txt (made after the run) = %q, kept %v; want it kept", b, res.Kept)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "README.md")); string(b) != "# project\n" {
		t.Fatalf("README.md = %q", b)
	}
	// bad input
	if _, err := Undo(store, "nosuch", UndoOptions{}); !errors.Is(err, ErrNoRun) {
		t.Fatalf("unknown run: %v", err)
	}
	if _, err := Undo(store, "run2", UndoOptions{To: 99}); err == nil || !strings.Contains(err.Error(), "no command with seq 99") {
		t.Fatalf("unknown seq: %v", err)
	}
	if _, err := Undo(store, "../x", UndoOptions{}); err == nil {
		t.Fatal("a path as run id was accepted")
	}
}

// TestUndoCorruptStore: an object of the target checkpoint missing or
// altered: the undo changes nothing and names it.
func TestUndoCorruptStore(t *testing.T) {
	root := project(t)
	areas := []Area{{Name: "target", Dir: root}}
	store := filepath.Join(t.TempDir(), "store")
	recordRun(t, store, "run3", areas, func() { os.RemoveAll(filepath.Join(root, "src")) })
	end := treeHash(t, root, "node_modules")
	objs, _ := filepath.Glob(filepath.Join(store, "target", "objects", "*", "*"))
	for _, o := range objs {
		os.Chmod(o, 0o600)
		os.WriteFile(o, []byte("tampered"), 0o600)
	}
	_, err := Undo(store, "run3", UndoOptions{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "nothing was restored") {
		t.Fatalf("undo from a corrupted store = %v", err)
	}
	if treeHash(t, root, "node_modules") != end {
		t.Fatal("undo from a corrupted store changed the tree")
	}
	os.WriteFile(filepath.Join(store, "runs", "run3.jsonl"), []byte("{not json\n"), 0o600)
	if _, err := Undo(store, "run3", UndoOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("corrupted index = %v", err)
	}
}

// BenchmarkBeforeUnchanged12k: the checkpoint before a command after
// which nothing changed, in a 12k-file tree (issue 28's goal: <= 2 ms):
// the change feed is drained and the last checkpoint returned.
func BenchmarkBeforeUnchanged12k(b *testing.B) {
	_, rec := benchRecorder(b)
	defer rec.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := rec.Before(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBeforeOneChange12k: the checkpoint before a command after one
// file of a 12k-file tree changed: its directory rescanned, its trees
// and the root's stored again.
func BenchmarkBeforeOneChange12k(b *testing.B) {
	root, rec := benchRecorder(b)
	defer rec.Close()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if err := os.WriteFile(filepath.Join(root, "pkg007", "f003.go"), []byte(fmt.Sprintf("package p // %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := rec.Before(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeltaTrees: 40 checkpoints, each after one file of a directory
// changed, store that directory's tree as deltas (chains cut at
// maxDeltaChain); every checkpoint loads back exactly; pruning all but
// the newest keeps the bases it is stored over; a corrupted base is
// named, not read as something else.
func TestDeltaTrees(t *testing.T) {
	root := t.TempDir()
	for i := range 60 {
		write(t, root, fmt.Sprintf("pkg/f%02d.go", i), fmt.Sprintf("package p // %d\n", i), 0o644)
	}
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	var prev *Manifest
	var all []*Manifest
	for i := range 40 {
		write(t, root, fmt.Sprintf("pkg/f%02d.go", i%60), fmt.Sprintf("package p // change %d\n", i), 0o644)
		m, _, err := s.Take(fmt.Sprintf("c%02d", i), root, prev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		all, prev = append(all, m), m
	}
	deltas := 0
	trees, _ := filepath.Glob(filepath.Join(s.dir, "trees", "*", "*"))
	for _, p := range trees {
		if raw, err := s.rawTree(filepath.Base(filepath.Dir(p)) + filepath.Base(p)); err == nil && raw[0] == '{' {
			deltas++
		}
	}
	if deltas < 30 {
		t.Errorf("%d of %d trees stored as deltas; want most", deltas, len(trees))
	}
	for _, m := range all {
		got, err := s.Load(m.ID)
		if err != nil {
			t.Fatalf("load %s: %v", m.ID, err)
		}
		if d := Diff(m, got); len(d) != 0 {
			t.Fatalf("%s loads back with differences %v", m.ID, d)
		}
	}
	if _, err := s.Prune(Budget{MaxAge: time.Nanosecond, Keep: 1}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(prev.ID); err != nil || len(Diff(prev, got)) != 0 {
		t.Fatalf("the newest checkpoint after pruning the others: %v", err)
	}
	// corrupt the whole tree at the bottom of the newest chain
	for _, b := range s.treeBases(prev.trees["pkg"]) {
		if raw, _ := s.rawTree(b); raw[0] == '[' {
			p := s.treePath(b)
			os.Chmod(p, 0o600)
			os.WriteFile(p, []byte("not a tree"), 0o600)
		}
	}
	if _, err := s.Load(prev.ID); err == nil {
		t.Fatal("a checkpoint over a corrupted base loaded")
	}
}

// FuzzReadIndex: a run's index, whatever its bytes, is read or refused
// with an error naming the file; never a panic, never an entry with a
// path-like checkpoint id.
func FuzzReadIndex(f *testing.F) {
	f.Add([]byte(`{"kind":"start","run":"r1","checkpoint":"r1.0","time":"2026-11-24T00:00:00Z","areas":[{"name":"target","dir":"/ws/target"}]}` + "\n" +
		`{"kind":"command","run":"r1","checkpoint":"r1.0","seq":7,"argv":["rm","x"]}` + "\n"))
	f.Add([]byte(`{"kind":"start","run":"r1","checkpoint":"../x"}`))
	f.Add([]byte("\n\n{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "runs"), 0o700)
		os.WriteFile(filepath.Join(dir, "runs", "r1.jsonl"), b, 0o600)
		idx, err := ReadIndex(dir, "r1")
		if err != nil {
			if !strings.Contains(err.Error(), "r1") {
				t.Fatalf("error does not name the run's index: %v", err)
			}
			return
		}
		for _, e := range idx {
			if validID(e.Checkpoint) != nil || e.Run != "r1" {
				t.Fatalf("accepted entry %+v", e)
			}
		}
	})
}

// benchRecorder is a recorder started on a 12k-file tree, past its first
// two commands: its change feed runs (it starts at the second command,
// with a whole walk), so what is measured is a command in a session.
func benchRecorder(b *testing.B) (string, *Recorder) {
	root := tree12k(b)
	rec, err := StartRecorder(RecorderConfig{Dir: filepath.Join(b.TempDir(), "s"), Run: "bench", Areas: []Area{{Name: "target", Dir: root}}, Options: opts})
	if err != nil {
		b.Fatal(err)
	}
	for range 2 {
		if _, err := rec.Before(); err != nil {
			b.Fatal(err)
		}
	}
	return root, rec
}

// TestRestoreKeepsOwner: as root (sudo agentbox undo of a user's
// workspace), the files, directories and links put back belong to the
// tree's owner, so the agent running as that user can change them again.
func TestRestoreKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: changing owners needs root")
	}
	root := project(t)
	const uid, gid = 1000, 1000
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Lchown(p, uid, gid)
		}
		return nil
	})
	store := filepath.Join(t.TempDir(), "store")
	recordRun(t, store, "own", []Area{{Name: "target", Dir: root}}, func() {
		os.RemoveAll(filepath.Join(root, "src"))
		os.Remove(filepath.Join(root, "link"))
	})
	if _, err := Undo(store, "own", UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"src", "src/main.go", "src/util/u.go", "link"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(root, rel), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s restored as %d:%d, want %d:%d", rel, st.Uid, st.Gid, uid, gid)
		}
	}
}

// TestStoreBoundedDuringRun: an agent that rewrites a large file with new
// content before every command cannot grow the store past its budget
// while the run goes on (the newest checkpoints kept): the store is
// pruned during the run, not only at its end.
func TestStoreBoundedDuringRun(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(t.TempDir(), "store")
	const chunk = 256 << 10
	b := Budget{MaxBytes: 1 << 20, Keep: 2}
	rec, err := StartRecorder(RecorderConfig{Dir: store, Run: "flood", Areas: []Area{{Name: "target", Dir: root}}, Options: opts, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, chunk)
	for i := range 40 {
		for j := range buf {
			buf[j] = byte(i*31 + j*7)
		}
		binary := append([]byte(fmt.Sprint(i)), buf...)
		if err := os.WriteFile(filepath.Join(root, "big.bin"), binary, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := rec.Before(); err != nil {
			t.Fatal(err)
		}
	}
	// measured while the run still goes on (its end prunes anyway)
	var size int64
	filepath.WalkDir(filepath.Join(store, "target", "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	_, pr, err := rec.Finish()
	if err != nil {
		t.Fatal(err)
	}
	// 40 × 256 KiB written; the budget is 1 MiB, plus the newest kept
	if size > b.MaxBytes+int64(b.Keep+1)*chunk+chunk || len(pr.Removed) == 0 {
		t.Errorf("store objects %d bytes after 40 rewrites of %d bytes (budget %d); pruned %d", size, chunk, b.MaxBytes, len(pr.Removed))
	}
}

// FuzzTreeObject: a tree object in the store, whatever its bytes (a whole
// tree or a delta over a real base), is loaded or refused: never a panic,
// never an entry outside the tree, never content other than its hash.
func FuzzTreeObject(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	base := []treeEntry{{Name: "a.go", Kind: File, Size: 1, Hash: strings.Repeat("ab", 32)}}
	bb, _ := json.Marshal(base)
	bh := sha256.Sum256(bb)
	baseHash := hex.EncodeToString(bh[:])
	writeTree := func(hash string, b []byte) {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(b)
		zw.Close()
		os.MkdirAll(filepath.Dir(s.treePath(hash)), 0o700)
		os.WriteFile(s.treePath(hash), z.Bytes(), 0o600)
	}
	writeTree(baseHash, bb)
	f.Add([]byte(`{"base":"` + baseHash + `","d":1,"set":[{"n":"b.go","k":"file","h":"` + strings.Repeat("cd", 32) + `"}]}`))
	f.Add([]byte(`{"base":"` + baseHash + `","d":1,"del":["a.go"],"set":[{"n":"../x","k":"file","h":"` + strings.Repeat("cd", 32) + `"}]}`))
	f.Add(bb)
	f.Add([]byte(`[{"n":"","k":"dir"}]`))
	target := strings.Repeat("0", 64)
	f.Fuzz(func(t *testing.T, b []byte) {
		writeTree(target, b)
		entries, err := s.loadTree(target, ".")
		if err != nil {
			return
		}
		full, _ := json.Marshal(entries)
		if sum := sha256.Sum256(full); hex.EncodeToString(sum[:]) != target {
			t.Fatalf("loaded a tree whose content is not its hash")
		}
	})
}

// FuzzStatCache: the store's stat cache, whatever its bytes, gives a
// manifest of valid entries of a checkpoint still in the store, or none.
func FuzzStatCache(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	seed, err := encodeStatCache(&statCacheFile{ID: "c1", Root: strings.Repeat("ab", 32), Entries: []Entry{{Path: "a", Kind: File, Hash: strings.Repeat("cd", 32)}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		os.WriteFile(filepath.Join(dir, statCacheName), b, 0o600)
		if m := s.statCache(); m != nil {
			t.Fatalf("a stat cache of a checkpoint not in the store was trusted: %+v", m.ID)
		}
	})
}

// TestStatCacheCodec: a stat cache decodes to what was encoded, kinds,
// modes, negative times and trees included; a cut, an edit of the magic,
// an unknown kind and trailing bytes are refused.
func TestStatCacheCodec(t *testing.T) {
	c := &statCacheFile{ID: "run.3", Root: strings.Repeat("ab", 32),
		Trees: map[string]string{".": strings.Repeat("01", 32), "src": strings.Repeat("02", 32)},
		Entries: []Entry{
			{Path: "src", Kind: Dir, Mode: 0o755 | fs.ModeSetgid},
			{Path: "src/a.c", Kind: File, Mode: 0o644, Size: 1 << 40, Hash: strings.Repeat("cd", 32), Mtime: -5, Ctime: 1795587085520721607, Ino: 1 << 63},
			{Path: "src/l", Kind: Symlink, Mode: 0o777, Link: "../x\ny"},
		}}
	b, err := encodeStatCache(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeStatCache(b)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("decode(encode(c)) = %+v, %v\nwant %+v", got, err, c)
	}
	for name, bad := range map[string][]byte{
		"cut":      b[:len(b)-1],
		"magic":    append([]byte("agentbox-statcache 2\n"), b[len(statCacheMagic):]...),
		"trailing": append(slices.Clone(b), 0),
		"empty":    nil,
	} {
		if _, err := decodeStatCache(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := encodeStatCache(&statCacheFile{Entries: []Entry{{Path: "x", Kind: "fifo"}}}); err == nil {
		t.Error("an unknown kind was encoded")
	}
}

// FuzzStatCacheCodec: whatever decodes encodes back to the same bytes
// (the encoding is canonical), and nothing panics.
func FuzzStatCacheCodec(f *testing.F) {
	seed, _ := encodeStatCache(&statCacheFile{ID: "c1", Root: "r", Trees: map[string]string{".": "t", "a": "u"},
		Entries: []Entry{{Path: "a", Kind: Dir, Mode: 0o755}, {Path: "a/b", Kind: File, Size: 3, Hash: "h", Mtime: 1, Ctime: 2, Ino: 3}}})
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeStatCache(b)
		if err != nil {
			return
		}
		again, err := encodeStatCache(c)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %q (%v), want %q", again, err, b)
		}
	})
}
