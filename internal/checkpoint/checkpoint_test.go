package checkpoint

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testkit"
)

// treeHash is every path of root with its kind, mode, content hash and
// link target: two trees are the same when their treeHash is.
func treeHash(t *testing.T, root string, skip ...string) string {
	t.Helper()
	return testkit.TreeHashSkipping(t, skip, root)
}

func write(t *testing.T, root, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// project is a tree like an agent's project: sources, an executable
// script, an empty directory, a symlink, a repository's .git as files,
// and a node_modules directory (excluded).
func project(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "src/main.go", "package main\n", 0o644)
	write(t, root, "src/util/u.go", "package util\n", 0o644)
	write(t, root, "build.sh", "#!/bin/sh\necho build\n", 0o755)
	write(t, root, "README.md", "# project\n", 0o644)
	write(t, root, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	write(t, root, ".git/refs/heads/main", "0123456789abcdef0123456789abcdef01234567\n", 0o644)
	write(t, root, ".git/index", "\x00DIRC binary", 0o644)
	write(t, root, "node_modules/dep/index.js", "module.exports = 1\n", 0o644)
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root
}

var opts = Options{ExcludeNames: []string{"node_modules"}}

// TestRestoreByteForByte: what an agent's destructive commands do — a
// deleted source directory, a truncated file, a file overwritten by mv, a
// mode change, a link retargeted, a file replaced by a directory, new
// files, a commit's new refs — is undone byte for byte, .git included;
// the excluded node_modules is neither restored nor removed; restoring
// the later checkpoint (redo) brings the agent's work back.
func TestRestoreByteForByte(t *testing.T) {
	root := project(t)
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, root, "node_modules")
	m1, st, err := s.Take("c1", root, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hashed != 7 || len(m1.Excluded) != 1 || m1.Excluded[0] != "node_modules" {
		t.Errorf("first checkpoint: %+v, excluded %v; want 7 files hashed, node_modules excluded", st, m1.Excluded)
	}
	// the agent's work
	os.RemoveAll(filepath.Join(root, "src/util"))
	os.Truncate(filepath.Join(root, "README.md"), 0)
	write(t, root, "other", "other content\n", 0o644)
	os.Rename(filepath.Join(root, "other"), filepath.Join(root, "build.sh"))
	os.Chmod(filepath.Join(root, "src/main.go"), 0o600)
	os.Remove(filepath.Join(root, "link"))
	os.Symlink("/etc/passwd", filepath.Join(root, "link"))
	os.Remove(filepath.Join(root, "empty"))
	write(t, root, "empty/now-a-dir-with-a-file", "x", 0o644)
	write(t, root, "new/file.txt", "new\n", 0o644)
	write(t, root, ".git/refs/heads/main", "fedcba9876543210fedcba9876543210fedcba98\n", 0o644)
	write(t, root, "node_modules/dep/index.js", "module.exports = 2\n", 0o644)
	after := treeHash(t, root, "node_modules")
	m2, _, err := s.Take("c2", root, m1, opts)
	if err != nil {
		t.Fatal(err)
	}
	changes := Diff(m1, m2)
	want := map[string]ChangeKind{"README.md": Modified, "build.sh": Modified, "src/main.go": ModeOnly, "link": Modified,
		"empty": ModeOnly, "empty/now-a-dir-with-a-file": Added, "new": Added, "new/file.txt": Added,
		".git/refs/heads/main": Modified, "src/util": Deleted, "src/util/u.go": Deleted}
	got := map[string]ChangeKind{}
	for _, c := range changes {
		got[c.Path] = c.Kind
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Diff:\n got %v\nwant %v", got, want)
	}

	// undo from the store as another process reads it back
	loaded, err := s.Load("c1")
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(m1, loaded); len(d) != 0 {
		t.Fatalf("checkpoint read back differs from the one taken: %v", d)
	}
	if _, err := s.Restore(loaded, root); err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules"); h != before {
		t.Errorf("undo is not byte for byte:\n%s\nwant\n%s", h, before)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "node_modules/dep/index.js")); string(b) != "module.exports = 2\n" {
		t.Errorf("excluded node_modules was touched: %q", b)
	}
	if _, err := s.Restore(m2, root); err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules"); h != after {
		t.Errorf("redo is not byte for byte:\n%s\nwant\n%s", h, after)
	}
}

// TestStatCache: a checkpoint of an unchanged tree reads no file; one
// changed file is the only one read and stored.
func TestStatCache(t *testing.T) {
	root := project(t)
	s, _ := Open(t.TempDir())
	m1, _, err := s.Take("c1", root, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	m2, st, err := s.Take("c2", root, m1, opts)
	if err != nil || st.Hashed != 0 || st.Stored != 0 {
		t.Errorf("unchanged tree: %+v %v; want nothing read", st, err)
	}
	write(t, root, "README.md", "# changed\n", 0o644)
	m3, st, err := s.Take("c3", root, m2, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Stored is the new object's blocks on disk
	var ost unix.Stat_t
	if err := unix.Stat(s.objectPath(index(m3)["README.md"].Hash), &ost); err != nil {
		t.Fatal(err)
	}
	if st.Hashed != 1 || st.Stored != ost.Blocks*512 || st.Stored == 0 {
		t.Errorf("one changed file: %+v; want it alone read and stored (%d bytes on disk)", st, ost.Blocks*512)
	}
}

// TestRestoreRefusesCorruptStore: a missing or altered object stops the
// restore before anything in the tree changes.
func TestRestoreRefusesCorruptStore(t *testing.T) {
	for _, damage := range []string{"missing", "altered"} {
		t.Run(damage, func(t *testing.T) {
			root := project(t)
			dir := t.TempDir()
			s, _ := Open(dir)
			m1, _, err := s.Take("c1", root, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(filepath.Join(root, "src"))
			write(t, root, "README.md", "agent's\n", 0o644)
			mid := treeHash(t, root)
			var obj string
			for _, e := range m1.Entries {
				if e.Path == "src/main.go" {
					obj = s.objectPath(e.Hash)
				}
			}
			if damage == "missing" {
				os.Remove(obj)
			} else {
				os.WriteFile(obj, []byte("not it"), 0o600)
			}
			_, err = s.Restore(m1, root)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "src/main.go") {
				t.Errorf("restore from a damaged store: %v; want ErrCorrupt naming src/main.go", err)
			}
			if treeHash(t, root) != mid {
				t.Error("a failed restore changed the tree")
			}
		})
	}
}

// TestRestoreStaysInTree: a directory the agent replaced by a symlink to
// a place outside the tree does not carry the restore's writes there.
func TestRestoreStaysInTree(t *testing.T) {
	root := project(t)
	outside := t.TempDir()
	s, _ := Open(t.TempDir())
	m1, _, err := s.Take("c1", root, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(root, "src"))
	if err := os.Symlink(outside, filepath.Join(root, "src")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore(m1, root); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("restore wrote outside the tree: %v", ents)
	}
	if fi, err := os.Lstat(filepath.Join(root, "src")); err != nil || !fi.IsDir() {
		t.Errorf("src not restored as a directory: %v %v", fi, err)
	}
}

// TestBadInput: ids that are not plain names, a manifest that is not
// JSON or names a path outside the tree.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	for _, id := range []string{"", "../x", "a/b", ".hidden"} {
		if _, _, err := s.Take(id, t.TempDir(), nil, opts); err == nil {
			t.Errorf("Take(%q) accepted", id)
		}
	}
	for name, body := range map[string]string{
		"notjson": "{",
		"escape":  `{"id":"escape","entries":[{"path":"../x","kind":"dir"}]}`,
		"nohash":  `{"id":"nohash","entries":[{"path":"a","kind":"file"}]}`,
	} {
		os.WriteFile(filepath.Join(dir, "checkpoints", name+".json"), []byte(body), 0o600)
		if _, err := s.Load(name); err == nil || !strings.Contains(err.Error(), "corrupted manifest") {
			t.Errorf("Load(%s): %v; want a corrupted manifest error", name, err)
		}
	}
	if _, err := s.Load("absent"); err == nil {
		t.Error("Load of an absent checkpoint succeeded")
	}
}

// tree12k is a 12,000-file tree in 120 directories.
func tree12k(b *testing.B) string {
	root := b.TempDir()
	for d := range 120 {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), []byte(fmt.Sprintf("package p%d // %d\n", d, f)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// BenchmarkTakeUnchanged: a checkpoint of a 12k-file tree where nothing
// changed since the last one (the stat cache answers; issue 28's goal is
// ≤ 2 ms).
func BenchmarkTakeUnchanged(b *testing.B) {
	root := tree12k(b)
	s, _ := Open(b.TempDir())
	prev, _, err := s.Take("c0", root, nil, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := s.Take(fmt.Sprintf("c%d", i+1), root, prev, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreGrowth: 100 checkpoints, each after one file of a 12k-file
// tree changed; reports the store's growth (content and manifests) per
// changed byte (issue 28's goal: ≤ 1.2).
func BenchmarkStoreGrowth(b *testing.B) {
	for range b.N {
		b.StopTimer()
		root := tree12k(b)
		dir := b.TempDir()
		s, _ := Open(dir)
		prev, _, err := s.Take("c0", root, nil, opts)
		if err != nil {
			b.Fatal(err)
		}
		base := duBytes(b, dir)
		b.StartTimer()
		var changed, content int64
		for i := range 100 {
			p := filepath.Join(root, fmt.Sprintf("pkg%03d", i), "f000.go")
			body := []byte(strings.Repeat(fmt.Sprintf("// change %d\n", i), 400))
			if err := os.WriteFile(p, body, 0o644); err != nil {
				b.Fatal(err)
			}
			changed += int64(len(body))
			m, st, err := s.Take(fmt.Sprintf("c%d", i+1), root, prev, opts)
			if err != nil {
				b.Fatal(err)
			}
			content += st.Stored
			prev = m
		}
		b.StopTimer()
		b.ReportMetric(float64(content)/float64(changed), "content/changed")
		b.ReportMetric(float64(duBytes(b, dir)-base)/float64(changed), "store/changed")
	}
}

func duBytes(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// FuzzLoad: a manifest file of any content loads or fails with an error,
// and a loaded one names only paths inside the tree.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"id":"x","entries":[{"path":"a/b","kind":"file","hash":"` + strings.Repeat("ab", 32) + `"}]}`))
	f.Add([]byte(`{"id":"x","entries":[{"path":"../a","kind":"dir"}]}`))
	f.Add([]byte(`{`))
	dir := f.TempDir()
	s, _ := Open(dir)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "checkpoints", "f.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := s.Load("f")
		if err != nil {
			return
		}
		for _, e := range m.Entries {
			if !validRel(e.Path) {
				t.Errorf("loaded a path outside the tree: %q", e.Path)
			}
		}
	})
}

// TestTreesStoredOnce: a checkpoint read back by another process carries
// the stat cache (nothing is read again when nothing changed); a damaged
// tree object makes Load fail naming it, not return part of a tree.
func TestTreesStoredOnce(t *testing.T) {
	root := project(t)
	dir := t.TempDir()
	s, _ := Open(dir)
	if _, _, err := s.Take("c1", root, nil, opts); err != nil {
		t.Fatal(err)
	}
	trees := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(dir, "trees"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	before := trees()
	s2, _ := Open(dir) // another process
	prev, err := s2.Load("c1")
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := s2.Take("c2", root, prev, opts)
	if err != nil || st.Hashed != 0 || trees() != before {
		t.Errorf("unchanged tree after Load: %+v %v, trees %d -> %d; want nothing read or stored", st, err, before, trees())
	}
	write(t, root, "src/util/u.go", "package util // changed\n", 0o644)
	if _, _, err := s2.Take("c3", root, prev, opts); err != nil {
		t.Fatal(err)
	}
	if got := trees() - before; got != 3 { // src/util, src, the root
		t.Errorf("one changed file stored %d new trees; want 3 (its directories up to the root)", got)
	}
	// damage every tree: Load names the problem
	filepath.WalkDir(filepath.Join(dir, "trees"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.WriteFile(p, []byte("junk"), 0o600)
		}
		return nil
	})
	if _, err := s2.Load("c3"); err == nil || !strings.Contains(err.Error(), "corrupted manifest: tree") {
		t.Errorf("Load with damaged trees: %v; want a corrupted manifest error naming a tree", err)
	}
}
