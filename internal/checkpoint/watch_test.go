package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWatcherAgreesWithWalk: after each kind of change an agent makes —
// nothing, a file edited, files in new nested directories, a directory
// renamed, a tree deleted, a file replaced by a directory, a mode, a
// symlink retargeted, writes inside an excluded directory — a checkpoint
// from the inotify change feed records exactly what a full walk does.
func TestWatcherAgreesWithWalk(t *testing.T) {
	root := project(t)
	s, w, prev := watched(t, root, t.TempDir())
	steps := []struct {
		name string
		do   func()
	}{
		{"nothing", func() {}},
		{"edit", func() { write(t, root, "src/main.go", "package main // edited\n", 0o644) }},
		{"new nested dirs", func() {
			write(t, root, "gen/a/b/c.txt", "c\n", 0o644)
			write(t, root, "gen/a/d.txt", "d\n", 0o644)
		}},
		{"rename dir", func() { must(t, os.Rename(filepath.Join(root, "src"), filepath.Join(root, "source"))) }},
		{"edit in renamed dir", func() { write(t, root, "source/util/u.go", "package util // moved\n", 0o644) }},
		{"delete tree", func() { must(t, os.RemoveAll(filepath.Join(root, "gen"))) }},
		{"file to dir", func() {
			must(t, os.Remove(filepath.Join(root, "README.md")))
			write(t, root, "README.md/inner", "x\n", 0o644)
		}},
		{"chmod", func() { must(t, os.Chmod(filepath.Join(root, "build.sh"), 0o700)) }},
		{"symlink", func() {
			must(t, os.Remove(filepath.Join(root, "link")))
			must(t, os.Symlink("elsewhere", filepath.Join(root, "link")))
		}},
		{"excluded", func() { write(t, root, "node_modules/dep/new.js", "x\n", 0o644) }},
		{"git commit", func() {
			write(t, root, ".git/objects/ab/cdef", "blob\n", 0o444)
			write(t, root, ".git/refs/heads/main", "1111111111111111111111111111111111111111\n", 0o644)
		}},
	}
	for i, step := range steps {
		step.do()
		id := fmt.Sprintf("w%d", i+1)
		got, st, err := s.TakeWatched(id, w, prev)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		full, _, err := s.Take("full"+id, root, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := Diff(full, got); len(d) != 0 || !slices.Equal(full.Excluded, got.Excluded) {
			t.Errorf("%s: the change feed's checkpoint differs from a walk: %v; excluded %v vs %v", step.name, d, got.Excluded, full.Excluded)
		}
		if got.Root != full.Root {
			t.Errorf("%s: root tree %s from the change feed, %s from a walk: a reused tree is stale", step.name, got.Root[:12], full.Root[:12])
		}
		if step.name == "nothing" && (st.Hashed != 0 || got.Root != prev.Root) {
			t.Errorf("nothing changed: %+v, root %s vs %s", st, got.Root, prev.Root)
		}
		prev = got
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTakeWatchedUnchanged: the same as BenchmarkTakeUnchanged with
// the inotify change feed (issue 28's goal: ≤ 2 ms).
func BenchmarkTakeWatchedUnchanged(b *testing.B) {
	benchTakeWatched(b, nil)
}

// BenchmarkTakeWatchedOneChange: one file of a 12k-file tree changed
// before each checkpoint, with the change feed.
func BenchmarkTakeWatchedOneChange(b *testing.B) {
	benchTakeWatched(b, func(root string, i int) {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("pkg%03d", i%120), "f000.go"), []byte(fmt.Sprintf("// %d\n", i)), 0o644)
	})
}

// benchTakeWatched times checkpoints of a watched 12k-file tree, each
// after change (untimed; nil: none) of the tree.
func benchTakeWatched(b *testing.B, change func(root string, i int)) {
	root, s, w, prev := watchedTree(b)
	var err error
	b.ResetTimer()
	for i := range b.N {
		if change != nil {
			b.StopTimer()
			change(root, i)
			b.StartTimer()
		}
		if prev, _, err = s.TakeWatched(fmt.Sprintf("c%d", i+1), w, prev); err != nil {
			b.Fatal(err)
		}
	}
}

// watchedTree is a 12k-file tree, a store, a Watcher on the tree and the
// first checkpoint taken with it.
func watchedTree(b *testing.B) (string, *Store, *Watcher, *Manifest) {
	root := tree12k(b)
	s, w, prev := watched(b, root, b.TempDir())
	return root, s, w, prev
}

// watched opens the store in dir, watches root (until the test ends; the
// test skips without inotify) and takes the first checkpoint with the
// watcher.
func watched(t testing.TB, root, dir string) (*Store, *Watcher, *Manifest) {
	t.Helper()
	s, _ := Open(dir)
	w, err := Watch(root, opts)
	if err != nil {
		t.Skipf("reason: inotify unavailable: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	prev, _, err := s.TakeWatched("w0", w, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, w, prev
}

// TestCheckpointNeverReadsOutside: the agent edits a file under src/util,
// then swaps src for a symlink to a directory outside the tree holding a
// file of the same name. Neither the change feed nor a walk reads through
// the link: src is recorded as a symlink and the outside content never
// reaches the store (a restore would otherwise hand it to the agent).
func TestCheckpointNeverReadsOutside(t *testing.T) {
	root := project(t)
	outside := t.TempDir()
	secret := "outside secret\n"
	write(t, outside, "util/u.go", secret, 0o600)
	dir := t.TempDir()
	s, w, prev := watched(t, root, dir)
	write(t, root, "src/util/u.go", "package util // edited\n", 0o644)
	must(t, os.RemoveAll(filepath.Join(root, "src")))
	must(t, os.Symlink(outside, filepath.Join(root, "src")))
	got, _, err := s.TakeWatched("w1", w, prev)
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := s.Take("full", root, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Manifest{got, full} {
		for _, e := range m.Entries {
			if strings.HasPrefix(e.Path, "src/") || (e.Path == "src" && e.Kind != Symlink) {
				t.Errorf("%s: recorded %+v through the symlink", m.ID, e)
			}
		}
	}
	sum := sha256.Sum256([]byte(secret))
	if _, err := os.Stat(s.objectPath(hex.EncodeToString(sum[:]))); err == nil {
		t.Error("the outside file's content is in the store")
	}
}
