package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPrune: checkpoints beyond the age and size budget go, oldest first,
// with the contents and trees only they used; the newest Keep stay past
// their age but not past the size budget, counted in blocks on disk; every
// checkpoint kept still loads and restores byte for byte.
func TestPrune(t *testing.T) {
	root := project(t)
	dir := t.TempDir()
	s, _ := Open(dir)
	var prev *Manifest
	hashes := map[string]string{}
	for i := range 5 {
		// each checkpoint holds a 64 KiB content of its own
		write(t, root, "big.bin", strings.Repeat(fmt.Sprint(i), 64<<10), 0o644)
		m, _, err := s.Take(fmt.Sprintf("c%d", i), root, prev, opts)
		if err != nil {
			t.Fatal(err)
		}
		hashes[m.ID] = treeHash(t, root, "node_modules")
		prev = m
	}
	list, err := s.List()
	if err != nil || len(list) != 5 || list[0].ID != "c0" || list[4].ID != "c4" {
		t.Fatalf("List = %v, %v; want c0..c4 oldest first", list, err)
	}
	// age: everything older than the last two is too old, but Keep 3 stays
	p, err := s.Prune(Budget{MaxAge: time.Nanosecond, Keep: 3}, list[4].Time.Add(time.Hour))
	if err != nil || strings.Join(p.Removed, ",") != "c0,c1" {
		t.Fatalf("Prune by age = %+v, %v; want c0,c1 removed", p, err)
	}
	// size, in blocks on disk: down to what one checkpoint needs (its own
	// big content, 64 KiB, and 14 small files and trees of a block each);
	// Keep protects from age, not from the budget
	p, err = s.Prune(Budget{MaxBytes: 150 << 10, Keep: 3}, time.Now())
	if err != nil || strings.Join(p.Removed, ",") != "c2,c3" || p.Size > 150<<10 || p.Freed < 2*64<<10 {
		t.Fatalf("Prune by size = %+v, %v; want c2,c3 removed and the store within budget", p, err)
	}
	// what is kept still restores
	m, err := s.Load("c4")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(root, "src"))
	if _, err := s.Restore(m, root); err != nil {
		t.Fatal(err)
	}
	if treeHash(t, root, "node_modules") != hashes["c4"] {
		t.Error("the checkpoint kept does not restore byte for byte after pruning")
	}
	if _, err := s.Load("c0"); err == nil {
		t.Error("a pruned checkpoint still loads")
	}
	// a damaged record stops the prune, naming it, and removes nothing
	os.WriteFile(filepath.Join(dir, "checkpoints", "bad.json"), []byte("{"), 0o600)
	if _, err := s.Prune(Budget{MaxBytes: 1}, time.Now()); err == nil || !strings.Contains(err.Error(), "checkpoint bad") {
		t.Errorf("Prune over a damaged record: %v; want an error naming it", err)
	}
	if _, err := s.Load("c4"); err != nil {
		t.Errorf("a failed prune removed a checkpoint: %v", err)
	}
	// a budget the newest checkpoint alone exceeds takes it too
	os.Remove(filepath.Join(dir, "checkpoints", "bad.json"))
	p, err = s.Prune(Budget{MaxBytes: 64 << 10, Keep: 3}, time.Now())
	if err != nil || strings.Join(p.Removed, ",") != "c4" || p.Size > 64<<10 {
		t.Fatalf("Prune below the newest checkpoint = %+v, %v; want c4 removed and the store within budget", p, err)
	}
	if _, err := s.Load("c4"); err == nil {
		t.Error("the newest checkpoint still loads after a prune below its size")
	}
}
