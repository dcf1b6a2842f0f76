package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// sparseFile makes p a file of size bytes with data (random, so nothing
// of it is zeros) only at the offsets given, n bytes each: the rest holes.
func sparseFile(t testing.TB, p string, size int64, n int, offsets ...int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	for _, off := range offsets {
		rand.Read(buf)
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// diskBytes is what dir takes on disk, measured the way du does: the
// blocks of every file and directory under it.
func diskBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

func fileSum(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestSparseStoreWithinBudget: six sparse 48 MiB files (32 KiB of data
// each) under a 32 MiB budget, checkpointed at a run's start and again
// after a command rewrote their data. The store, measured on disk from
// outside, stays within the budget (written dense it took 288 MiB per
// checkpoint); an undo puts every file back byte for byte, and sparse.
func TestSparseStoreWithinBudget(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	const size = 48 << 20
	orig := map[string]string{}
	for i := range 6 {
		p := filepath.Join(root, fmt.Sprintf("sparse%d.img", i))
		sparseFile(t, p, size, 16<<10, 0, 24<<20)
		orig[p] = fileSum(t, p)
	}
	budget := Budget{MaxBytes: 32 << 20, Keep: 20}
	rec, err := StartRecorder(RecorderConfig{Dir: store, Run: "r1", Areas: []Area{{Name: "target", Dir: root}}, Options: opts, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	for c := range 2 {
		id, err := rec.Before()
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Link(IndexEntry{Kind: IndexCommand, Checkpoint: id, Seq: uint64(c + 1)}); err != nil {
			t.Fatal(err)
		}
		for p := range orig { // the command rewrites each file's data
			sparseFile(t, p, size, 16<<10, 0, 24<<20)
		}
	}
	if _, _, err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := diskBytes(t, store); got > budget.MaxBytes {
		t.Fatalf("the store takes %d bytes on disk, over its %d budget", got, budget.MaxBytes)
	}
	if _, err := Undo(store, "r1", UndoOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	for p, sum := range orig {
		if got := fileSum(t, p); got != sum {
			t.Errorf("%s: undo did not restore it byte for byte", p)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != size || st.Blocks*512 > 1<<20 {
			t.Errorf("%s: restored %d bytes taking %d on disk; want %d, sparse", p, st.Size, st.Blocks*512, size)
		}
	}
}

// TestOverBudgetDenies: a command after which the areas need more than
// the budget gets no checkpoint (Before fails with ErrOverBudget, which
// the judge turns into a denial) and copying stops: the store on disk
// stays within the budget, also with a thousand sparse 48 MiB files.
// Once the areas fit again, checkpoints resume. A checkpoint that fits
// alone but not with the others pruned away, the newest included, makes
// the next command's checkpoint a whole new one, which fails too.
func TestOverBudgetDenies(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	write(t, root, "small.txt", "small\n", 0o644)
	budget := Budget{MaxBytes: 32 << 20, Keep: 20}
	rec, err := StartRecorder(RecorderConfig{Dir: store, Run: "r1", Areas: []Area{{Name: "target", Dir: root}}, Options: opts, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if _, err := rec.Before(); err != nil {
		t.Fatal(err)
	}
	// a thousand sparse 48 MiB files with 64 KiB of data each: 48 GiB
	// long, 64 MiB of data, twice the budget
	many := filepath.Join(root, "many")
	must(t, os.Mkdir(many, 0o755))
	for i := range 1000 {
		sparseFile(t, filepath.Join(many, fmt.Sprintf("f%04d", i)), 48<<20, 64<<10, int64(i%700)<<16)
	}
	_, err = rec.Before()
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("Before over budget: %v; want ErrOverBudget", err)
	}
	t.Logf("denied with: %v", err)
	if got := diskBytes(t, store); got > budget.MaxBytes {
		t.Fatalf("the store takes %d bytes on disk, over its %d budget", got, budget.MaxBytes)
	}
	must(t, os.RemoveAll(many))
	if _, err := rec.Before(); err != nil {
		t.Fatalf("Before once the areas fit again: %v", err)
	}

	// 20 MiB then 20 more: each checkpoint stores 20 MiB, the second
	// needs 40: pruning takes both, the newest too, and the next
	// command's checkpoint (a whole one) is over budget
	big := make([]byte, 20<<20)
	rand.Read(big)
	must(t, os.WriteFile(filepath.Join(root, "a.bin"), big, 0o644))
	if _, err := rec.Before(); err != nil {
		t.Fatal(err)
	}
	rand.Read(big)
	must(t, os.WriteFile(filepath.Join(root, "b.bin"), big, 0o644))
	if _, err := rec.Before(); err != nil {
		t.Fatal(err) // fits alone (20 MiB new); the store then does not
	}
	if got := diskBytes(t, store); got > budget.MaxBytes {
		t.Fatalf("the store takes %d bytes on disk, over its %d budget", got, budget.MaxBytes)
	}
	if !rec.Clean() {
		// the recorder knows its latest checkpoint went: not clean
	} else {
		t.Error("Clean after the latest checkpoint was pruned: the next command would run with no checkpoint")
	}
	if _, err := rec.Before(); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("Before after the latest checkpoint was pruned: %v; want ErrOverBudget", err)
	}
	if got := diskBytes(t, store); got > budget.MaxBytes {
		t.Fatalf("the store takes %d bytes on disk, over its %d budget", got, budget.MaxBytes)
	}
}

// TestWalkRecordsModeWithContent: between the walk's stat of a file and
// its read, the file is written (a sandboxed writer's write drops the
// set-uid bit: the test does what the kernel does, as root keeps it) —
// the checkpoint records a mode and a content of the same moment, never
// the set-uid mode with the writer's content.
func TestWalkRecordsModeWithContent(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "prog")
	write(t, root, "prog", "original program\n", 0o755)
	must(t, unix.Chmod(p, 0o4755))
	defer func() { testAfterStat = nil }()
	testAfterStat = func(rel string) {
		if rel != "prog" {
			return
		}
		testAfterStat = nil
		must(t, os.Chmod(p, 0o755))
		must(t, os.WriteFile(p, []byte("agent's content\n"), 0o755))
	}
	s, _ := Open(t.TempDir())
	m, _, err := s.Take("c1", root, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := index(m)["prog"]
	b, err := os.ReadFile(s.objectPath(e.Hash))
	if err != nil {
		t.Fatal(err)
	}
	if e.Mode&fs.ModeSetuid != 0 && string(b) != "original program\n" {
		t.Fatalf("recorded mode %v with content %q: the set-uid mode with the writer's content", e.Mode, b)
	}
	if e.Mode != 0o755 || string(b) != "agent's content\n" {
		t.Errorf("recorded mode %v content %q; want the file as it was when read (0755, the writer's content)", e.Mode, b)
	}
}

// TestRestoreDropsSetid: a checkpoint whose record has a set-uid file and
// a set-gid directory (the human's, or a record made before the sandbox
// refused them) is restored without either bit, and the undo says so.
func TestRestoreDropsSetid(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	p := filepath.Join(root, "prog")
	write(t, root, "prog", "program\n", 0o755)
	must(t, unix.Chmod(p, 0o4755))
	must(t, os.Mkdir(filepath.Join(root, "shared"), 0o755))
	must(t, unix.Chmod(filepath.Join(root, "shared"), 0o2775))
	recordRun(t, store, "r1", []Area{{Name: "target", Dir: root}}, func() {
		must(t, os.Remove(p))
		must(t, os.Remove(filepath.Join(root, "shared")))
	})
	res, err := Undo(store, "r1", UndoOptions{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{p, filepath.Join(root, "shared")} {
		fi, err := os.Lstat(q)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s restored with mode %v", q, fi.Mode())
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "program\n" {
		t.Errorf("prog restored as %q", b)
	}
	if len(res.Notes) != 2 {
		t.Errorf("undo notes %q; want one line for each bit not restored (%+v)", res.Notes, res)
	}
}

// BenchmarkTakeSparse1000: the first checkpoint of a thousand sparse
// 48 MiB files with 4 KiB of data each (48 GiB long): its cost follows
// the data, not the length (the chunked hash skips holes unread).
func BenchmarkTakeSparse1000(b *testing.B) {
	root := b.TempDir()
	for i := range 1000 {
		sparseFile(b, filepath.Join(root, fmt.Sprintf("f%04d", i)), 48<<20, 4<<10, int64(i)<<12)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, _ := Open(b.TempDir())
		b.StartTimer()
		if _, _, err := s.Take("c1", root, nil, opts); err != nil {
			b.Fatal(err)
		}
	}
}
