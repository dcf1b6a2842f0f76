package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestJournalPrunes: a run's end that is due to prune (the store's
// 10-minute stamp gone) leaves the prune to the journal when one answers
// and returns without it — it returns while the test holds the store's
// shared lock, which a prune on its path would wait for — and the
// journal prunes once the lock is free: by age and then by size, down to
// the budget, the checkpoint a live run started from (a month old by
// its record, used again by that run) kept, so that run's undo restores
// its start byte for byte. The next run's end says what the journal
// removed, once. Without a journal (AGENTBOX_CHECKPOINT_JOURNAL=off, the
// first run) the run's end prunes as before and says so itself.
func TestJournalPrunes(t *testing.T) {
	for _, journal := range []bool{true, false} {
		t.Run(fmt.Sprintf("journal=%v", journal), func(t *testing.T) { testJournalPrunes(t, journal) })
	}
}

func testJournalPrunes(t *testing.T, journal bool) {
	const big = 512 << 10
	root := project(t)
	areas := []Area{{Name: "target", Dir: root}}
	store := filepath.Join(t.TempDir(), "store")
	ts := filepath.Join(store, "target")
	cfg := RecorderConfig{Dir: store, Areas: areas, Options: opts, Journal: journal}
	// four checkpoints, each with a 512 KiB content of its own; no budget
	buf := make([]byte, big)
	for i := range 4 {
		for j := range buf {
			buf[j] = byte(rand.IntN(255) + 1)
		}
		if err := os.WriteFile(filepath.Join(root, "big.bin"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg.Run = fmt.Sprintf("setup%d", i)
		recordUnchanged(t, cfg)
	}
	// setup0.0 and setup3.0 (what the journal vouches for, the next
	// run's start) taken a month ago as far as their records say
	old := time.Now().Add(-30 * 24 * time.Hour).UTC()
	for _, id := range []string{"setup0.0", "setup3.0"} {
		ageRecord(t, ts, id, old)
	}
	if journal {
		startTestJournal(t, store, areas)
	}
	cfg.Budget = Budget{MaxAge: 14 * 24 * time.Hour, MaxBytes: 1 << 20}
	cfg.Run = "live"
	live, err := StartRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if journal && live.j == nil {
		t.Fatal("the journal did not answer")
	}
	startTree := treeHash(t, root, "node_modules")
	has := func(id string) bool {
		_, err := os.Lstat(filepath.Join(ts, "checkpoints", id+".json"))
		return err == nil
	}
	if !has("setup3.0") || live.first != "setup3.0" {
		t.Fatalf("the live run started from %s, want setup3.0", live.first)
	}

	// a run's end due to prune
	if err := os.Remove(filepath.Join(ts, "pruned")); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ts)
	if err != nil {
		t.Fatal(err)
	}
	unlock := func() {}
	if journal {
		u, err := s.lock(unix.LOCK_SH) // a prune (exclusive) waits for it
		if err != nil {
			t.Fatal(err)
		}
		unlock = sync.OnceFunc(u)
		t.Cleanup(unlock)
	}
	cfg.Run = "end"
	rec, err := StartRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type finished struct {
		pr  Pruned
		err error
	}
	done := make(chan finished, 1)
	go func() {
		_, pr, err := rec.Finish()
		done <- finished{pr, err}
	}()
	var end finished
	select {
	case end = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run's end did not return in 10 s: it waits for the store's lock (a prune on its path)")
	}
	if end.err != nil {
		t.Fatal(end.err)
	}
	want := []string{"setup0.0", "setup1.0", "setup2.0"}
	if journal {
		if len(end.pr.Removed) > 0 || !has("setup0.0") {
			t.Fatalf("the run's end pruned on its path (removed %v), want the journal to", end.pr.Removed)
		}
		unlock()
		// the next run's end once the journal's prune is done (polled:
		// it runs off every run's path) says what the journal removed
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; len(end.pr.Removed) == 0 && time.Now().Before(deadline); i++ {
			if i > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			cfg.Run = fmt.Sprintf("next%d", i)
			rec, err := StartRecorder(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, end.pr, err = rec.Finish(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(end.pr.Removed, want) || end.pr.Size > cfg.Budget.MaxBytes || end.pr.Freed < 3*big {
		t.Errorf("pruned %+v; want %v removed (by age, then by size), the store within %d bytes", end.pr, want, cfg.Budget.MaxBytes)
	}
	for _, id := range want {
		if has(id) {
			t.Errorf("%s is still in the store", id)
		}
	}
	if !has("setup3.0") {
		t.Fatal("the checkpoint the live run started from was pruned")
	}
	if got := diskBytes(t, filepath.Join(ts, "objects")) + diskBytes(t, filepath.Join(ts, "trees")); got > cfg.Budget.MaxBytes {
		t.Errorf("the store's contents and trees take %d bytes, over the budget %d", got, cfg.Budget.MaxBytes)
	}
	if journal {
		// told once
		cfg.Run = "after"
		rec, err := StartRecorder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, pr, err := rec.Finish(); err != nil || len(pr.Removed) > 0 {
			t.Errorf("a later run's end: pruned %v, %v; want nothing (told already)", pr.Removed, err)
		}
	}

	// the live run's undo still has its start
	runCommands(t, live, func() { os.RemoveAll(filepath.Join(root, "src")) })
	if _, _, err := live.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := Undo(store, "live", UndoOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules"); h != startTree {
		t.Fatalf("undo of the live run:\n%s\nwant its start:\n%s", h, startTree)
	}
}

// TestJournalPruneReportAtExit: what the journal pruned that no run was
// told when it exits is in the store, and the next run's end without a
// journal says it, once.
func TestJournalPruneReportAtExit(t *testing.T) {
	_, store, cfg, stop := journalSetup(t)
	jc := dialJournal(store, cfg.Areas, cfg.Options.ExcludeNames)
	if jc == nil {
		t.Fatal("the journal did not answer")
	}
	resp, err := jc.ask(journalReq{Op: "prune", Roots: make([]string, 1), Budget: &Budget{MaxBytes: 1}})
	jc.close()
	if err != nil || !resp.OK {
		t.Fatalf("prune: %+v, %v; want it started", resp, err)
	}
	if err := stop(); err != nil { // waits for the prune
		t.Fatal(err)
	}
	cfg.Journal = false
	for i, want := range [][]string{{"run0.0"}, nil} {
		cfg.Run = fmt.Sprintf("after%d", i)
		rec, err := StartRecorder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, pr, err := rec.Finish()
		if err != nil || !slices.Equal(pr.Removed, want) {
			t.Errorf("run %s's end: pruned %v, %v; want %v", cfg.Run, pr.Removed, err, want)
		}
	}
}

// BenchmarkRunEndPruneDue: a launch's checkpoints (two areas, nothing
// changed) when its end is due to prune a store of 700 records per area
// (of 14 trees, as launches that mostly changed nothing leave; the
// default budget: nothing to remove, every record read and the store
// swept): with the journal, which prunes off the run's path, or
// without one, the run's end pruning as before. ns/op is the run's wall
// time (the journal's prune awaited with the timer stopped); cpu-ms the
// process's CPU per run, the journal's prune (in this process) included.
func BenchmarkRunEndPruneDue(b *testing.B) {
	for _, journal := range []bool{true, false} {
		b.Run(fmt.Sprintf("journal=%v", journal), func(b *testing.B) {
			areas, store := launchAreas(b)
			for _, a := range areas {
				s, err := Open(filepath.Join(store, a.Name))
				if err != nil {
					b.Fatal(err)
				}
				var prev *Manifest
				for i := range 700 {
					if i%50 == 0 { // launches that mostly changed nothing
						os.WriteFile(filepath.Join(a.Dir, "f00"), []byte(fmt.Sprint(i)), 0o644)
					}
					if prev, _, err = s.Take(fmt.Sprintf("old%d.0", i), a.Dir, prev, opts); err != nil {
						b.Fatal(err)
					}
				}
			}
			cfg := RecorderConfig{Dir: store, Run: "r0", Areas: areas, Options: opts, Journal: journal, Budget: DefaultBudget}
			recordUnchanged(b, cfg)
			pruned := make(chan struct{}, 1)
			if journal {
				startTestJournal(b, store, areas)
				testAfterPrune = func() { pruned <- struct{}{} }
				defer func() { testAfterPrune = nil }()
			}
			due := func() { // the last prune 11 minutes ago
				t := time.Now().Add(-pruneEvery - time.Minute)
				for _, a := range areas {
					os.Chtimes(filepath.Join(store, a.Name, "pruned"), t, t)
				}
			}
			due()
			cfg.Run = "warm"
			recordUnchanged(b, cfg)
			if journal {
				<-pruned
			}
			var cpu time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				due()
				c0 := cpuTime()
				b.StartTimer()
				cfg.Run = fmt.Sprintf("r%d", i+1)
				recordUnchanged(b, cfg)
				b.StopTimer()
				if journal {
					<-pruned
				}
				cpu += cpuTime() - c0
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms")
		})
	}
}
