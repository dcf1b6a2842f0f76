package checkpoint

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGzipStored: the stored form a small tree is written in reads back
// through compress/gzip as the bytes it holds, at every length a tree
// below storedTreeMax can have and at the stored block's edges.
func TestGzipStored(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, storedTreeMax - 1, 65535} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := []byte(strings.Repeat("[{\"n\":\"f.go\"}]", n/14+1))[:n]
			var z bytes.Buffer
			gzipStored(&z, b)
			zr, err := gzip.NewReader(&z)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, b) {
				t.Fatalf("read back %d bytes, want the %d written", len(got), len(b))
			}
		})
	}
}

// journalSetup takes a first checkpoint of a project tree (pkg/ holds 30
// files) with a journal following it, and returns the tree, the store,
// the recorder's config and what stops the journal.
func journalSetup(t *testing.T) (root, store string, cfg RecorderConfig, stop func() error) {
	t.Helper()
	root = project(t)
	for i := range 30 {
		write(t, root, fmt.Sprintf("pkg/f%02d.go", i), fmt.Sprintf("package pkg // %d\n", i), 0o644)
	}
	areas := []Area{{Name: "target", Dir: root}}
	store = filepath.Join(t.TempDir(), "store")
	cfg = RecorderConfig{Dir: store, Run: "run0", Areas: areas, Options: opts, Journal: true}
	recordUnchanged(t, cfg)
	return root, store, cfg, startTestJournal(t, store, areas)
}

// storedDepth is how many deltas tree hash is stored through in s.
func storedDepth(t *testing.T, s *Store, hash string) int {
	t.Helper()
	raw, err := s.rawTree(hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return 0
	}
	var d treeDelta
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d.Depth
}

// TestJournalTreeDepths: runs that each change one file store their
// changed trees as deltas over the journal's base, and the depth the
// journal hands the next run for a directory's tree (which lets it build
// a delta without reading the base from the store) is always the one it
// is stored at: a wrong one would let a delta chain grow past what a
// reader follows.
func TestJournalTreeDepths(t *testing.T) {
	root, store, cfg, _ := journalSetup(t)
	s, err := Open(filepath.Join(store, "target"))
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for i := range 6 {
		cfg.Run = fmt.Sprintf("run%d", i+1)
		rec, err := StartRecorder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		write(t, root, "pkg/f07.go", fmt.Sprintf("package pkg // run %d\n", i), 0o644)
		if _, _, err := rec.Finish(); err != nil {
			t.Fatal(err)
		}
		// the journal's view of the directories, as the next run gets it
		write(t, root, "pkg/f08.go", fmt.Sprintf("package pkg // probe %d\n", i), 0o644)
		// (a connection of its own, closed: an answer with dirty
		// directories holds the next run's question until it goes)
		jc := dialJournal(store, cfg.Areas, opts.ExcludeNames)
		if jc == nil {
			t.Fatal("the journal did not answer")
		}
		resp, err := jc.ask(journalReq{Op: "dirty", Head: true, Roots: make([]string, 1)})
		jc.close()
		if err != nil || !resp.OK || resp.Areas[0].Base == nil {
			t.Fatalf("run %d: the journal's answer: %+v, %v", i+1, resp, err)
		}
		known := 0
		for _, jd := range resp.Areas[0].Base.Dirs {
			if jd.Depth == nil {
				continue
			}
			known++
			if got := storedDepth(t, s, jd.Tree); got != *jd.Depth {
				t.Fatalf("run %d: the journal says %s's tree %.12s is stored %d deltas deep; the store has %d", i+1, jd.Dir, jd.Tree, *jd.Depth, got)
			}
			if *jd.Depth > 0 {
				deltas++
			}
		}
		if i > 0 && known == 0 {
			t.Fatalf("run %d: the journal knows no tree's depth", i+1)
		}
	}
	if deltas == 0 {
		t.Fatal("no run stored a delta over the journal's base")
	}
}

// TestJournalRebaseOrder: a run sends its rebase without waiting for the
// answer; a question of another run asked meanwhile (a run started as
// the first one ended) is answered after that rebase, from the checkpoint
// it names, not from the one before with its dirty directories again.
func TestJournalRebaseOrder(t *testing.T) {
	root, store, cfg, _ := journalSetup(t)
	s, err := Open(filepath.Join(store, "target"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Run = "run1"
	recordUnchanged(t, cfg)
	write(t, root, "pkg/f03.go", "package pkg // changed\n", 0o644)
	a := dialJournal(store, cfg.Areas, opts.ExcludeNames)
	if a == nil {
		t.Fatal("the journal did not answer")
	}
	defer a.close()
	head, err := a.ask(journalReq{Op: "dirty", Head: true, Roots: make([]string, 1)})
	if err != nil || !head.OK || head.Areas[0].Base == nil || len(head.Areas[0].Dirty) == 0 {
		t.Fatalf("the first run's question: %+v, %v (want pkg dirty)", head, err)
	}
	// the second run asks while the first takes its checkpoint
	got := make(chan journalResp, 1)
	go func() {
		b := dialJournal(store, cfg.Areas, opts.ExcludeNames)
		if b == nil {
			got <- journalResp{Why: "no journal"}
			return
		}
		defer b.close()
		resp, err := b.ask(journalReq{Op: "dirty", Head: true, Roots: make([]string, 1)})
		if err != nil {
			resp.Why = err.Error()
		}
		got <- resp
	}()
	base := head.Areas[0].Base
	m, d, _, err := s.takeFromJournal("a.1", root, opts, base, setOf(head.Areas[0].Dirty))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.send(journalReq{Op: "rebase", From: []string{base.Root}, Roots: []string{m.Root}, Gen: head.Gen, Delta: []*jdelta{d}}); err != nil {
		t.Fatal(err)
	}
	resp := <-got
	if !resp.OK || resp.Areas[0].Base == nil {
		t.Fatalf("the second run's answer: %+v", resp)
	}
	if resp.Areas[0].Base.Root != m.Root || len(resp.Areas[0].Dirty) != 0 {
		t.Fatalf("the second run was answered from %.12s with %v dirty; want the first run's checkpoint %.12s, nothing dirty",
			resp.Areas[0].Base.Root, resp.Areas[0].Dirty, m.Root)
	}
	if _, err := os.Stat(filepath.Join(store, "target", "checkpoints", "a.1.json")); err != nil {
		t.Fatal(err)
	}
}

// TestMakeTreeDirs: the journal makes every missing trees/xx of a store,
// keeps what is there, and brings back no store being deleted (trees/
// gone: nothing made).
func TestMakeTreeDirs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prepare  func(dir string)
		wantDirs int
	}{
		{"new store", func(string) {}, 256},
		{"some there", func(dir string) { os.Mkdir(filepath.Join(dir, "trees", "ab"), 0o700) }, 256},
		{"trees gone", func(dir string) { os.RemoveAll(filepath.Join(dir, "trees")) }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.prepare(dir)
			s.makeTreeDirs()
			ents, err := os.ReadDir(filepath.Join(dir, "trees"))
			if tc.wantDirs < 0 {
				if err == nil {
					t.Fatalf("trees/ made again (%d entries)", len(ents))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != tc.wantDirs {
				t.Fatalf("%d entries in trees/, want %d", len(ents), tc.wantDirs)
			}
			for i, e := range ents {
				if want := fmt.Sprintf("%02x", i); e.Name() != want || !e.IsDir() {
					t.Fatalf("trees/%s (dir %v), want directory %s", e.Name(), e.IsDir(), want)
				}
			}
		})
	}
}
