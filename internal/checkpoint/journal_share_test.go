package checkpoint

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sharedRecorder starts run "run1" over journalSetup's tree with the
// journal answering, and checks that the journal shared its sequence
// page and inotify descriptor.
func sharedRecorder(t *testing.T) (rec *Recorder, root, store string, stop func() error) {
	t.Helper()
	root, store, cfg, stop := journalSetup(t)
	cfg.Run = "run1"
	rec, err := StartRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	if rec.j == nil || rec.j.seen == nil || rec.jseq == 0 {
		t.Fatalf("the journal shared nothing with the run (journal %v)", rec.j != nil)
	}
	return rec, root, store, stop
}

// asks is how many questions the run sent its journal.
func asks(rec *Recorder) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.j == nil {
		return -1
	}
	return rec.j.asks
}

// TestJournalSharedUnchanged: while nothing changes under the areas, a
// run with the journal answers Clean and Before with its last checkpoint
// and ends on it without asking the journal anything (issue 47: every
// command of a shell asked, and every run's end waited for an answer),
// and its index is what asking gave: start and end on one checkpoint.
func TestJournalSharedUnchanged(t *testing.T) {
	rec, _, store, _ := sharedRecorder(t)
	first, err := rec.Before()
	if err != nil {
		t.Fatal(err)
	}
	n := asks(rec)
	for i := range 50 {
		if !rec.Clean() {
			t.Fatalf("command %d: Clean false with nothing changed", i)
		}
		id, err := rec.Before()
		if err != nil || id != first {
			t.Fatalf("command %d: Before = %q, %v; want %q", i, id, err, first)
		}
	}
	jc := rec.j
	end, _, err := rec.Finish()
	if err != nil || end != first {
		t.Fatalf("Finish = %q, %v; want %q", end, err, first)
	}
	if jc.asks != n {
		t.Errorf("the run asked the journal %d times after its start, want 0", jc.asks-n)
	}
	idx, err := ReadIndex(store, "run1")
	if err != nil {
		t.Fatal(err)
	}
	if last := idx[len(idx)-1]; last.Kind != IndexEnd || last.Checkpoint != idx[0].Checkpoint {
		t.Errorf("index ends %+v, want the start checkpoint %s", last, idx[0].Checkpoint)
	}
}

// TestJournalSharedSeesWrite: a file written by another process right
// before the check is seen every time — while another connection makes
// the journal read its queue as fast as it can (another run sharing the
// journal), so that the write's events are sometimes still queued and
// sometimes read already: either way Clean is false and Before takes a
// new checkpoint holding the write. After that checkpoint the run is
// clean again without asking.
func TestJournalSharedSeesWrite(t *testing.T) {
	rec, root, store, _ := sharedRecorder(t)
	if _, err := rec.Before(); err != nil {
		t.Fatal(err)
	}
	// the writer: another process, which says ok once its write returned
	target := filepath.Join(root, "pkg", "f00.go")
	sh := exec.Command("/bin/sh", "-c", `while read n; do echo "// $n" >> "$1"; echo ok; done`, "sh", target)
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); sh.Wait() }()
	out := bufio.NewReader(outp)
	// the other run: drains the journal's queue in a loop
	other := dialJournal(store, rec.cfg.Areas, rec.cfg.Options.ExcludeNames)
	if other == nil {
		t.Fatal("no journal to dial")
	}
	defer other.close()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var drains atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-quit:
				return
			default:
			}
			if _, err := other.ask(journalReq{Op: "dirty", Roots: []string{"not-a-root"}}); err != nil {
				return
			}
			drains.Add(1)
		}
	}()
	defer wg.Wait()
	defer close(quit)
	last, _ := rec.Before()
	queued := 0
	const iterations = 200
	for i := range iterations {
		if !rec.Clean() {
			t.Fatalf("iteration %d: not clean after the checkpoint it took (%s)", i, shareState(rec))
		}
		fmt.Fprintln(in, i)
		if l, err := out.ReadString('\n'); err != nil || l != "ok\n" {
			t.Fatalf("writer: %q, %v", l, err)
		}
		if queuedNow(rec) {
			queued++
		}
		if rec.Clean() {
			t.Fatalf("iteration %d: Clean true right after a write", i)
		}
		id, err := rec.Before()
		if err != nil {
			t.Fatal(err)
		}
		if id == last {
			t.Fatalf("iteration %d: Before gave the checkpoint before the write again (%s)", i, id)
		}
		last = id
	}
	// both sides of the race: the write's events still queued at the
	// check, or read by the journal already
	t.Logf("%d questions by the other connection; of %d writes, %d still queued at the check", drains.Load(), iterations, queued)
	// the last checkpoint holds the last write
	ms, err := newLoader(store, rec.cfg.Areas).load(last)
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	want, _ := os.ReadFile(target)
	for _, e := range m.Entries {
		if e.Path == "pkg/f00.go" && e.Size != int64(len(want)) {
			t.Errorf("checkpoint %s has pkg/f00.go of %d bytes, the file has %d", last, e.Size, len(want))
		}
	}
}

// TestJournalSharedReadBetween: the journal reads the queue between the
// check's first load of the sequence and its FIONREAD (another run's
// question, forced there): the queue is then empty, and only the second
// load, which sees the sequence the read moved, keeps the run from
// taking the checkpoint before the write for current.
func TestJournalSharedReadBetween(t *testing.T) {
	rec, root, store, _ := sharedRecorder(t)
	first, err := rec.Before()
	if err != nil {
		t.Fatal(err)
	}
	other := dialJournal(store, rec.cfg.Areas, rec.cfg.Options.ExcludeNames)
	if other == nil {
		t.Fatal("no journal to dial")
	}
	defer other.close()
	write(t, root, "pkg/f03.go", "package pkg // changed\n", 0o644)
	drained := false
	testBeforeFionread = func() {
		_, err := other.ask(journalReq{Op: "dirty", Roots: []string{"not-a-root"}})
		drained = err == nil
	}
	clean := rec.Clean()
	testBeforeFionread = nil
	if !drained {
		t.Fatal("the other connection's question failed")
	}
	if clean {
		t.Fatal("Clean true: the write's events were read between the loads")
	}
	if id, err := rec.Before(); err != nil || id == first {
		t.Fatalf("Before = %q, %v after a write", id, err)
	}
}

// shareState describes the run's shared view of the journal, for a
// failure's message.
func shareState(rec *Recorder) string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.j == nil || rec.j.seen == nil {
		return "no journal"
	}
	n, err := unix.IoctlGetInt(rec.j.seen.ifd, fionread)
	return fmt.Sprintf("sequence %d, answer's %d, %d bytes queued (%v)", atomic.LoadUint64(rec.j.seen.seq), rec.jseq, n, err)
}

// queuedNow reports whether the shared inotify queue holds events.
func queuedNow(rec *Recorder) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n, err := unix.IoctlGetInt(rec.j.seen.ifd, fionread)
	return err == nil && n > 0
}

// TestJournalSharedOverflow: a queue that overflowed while no one read
// it is seen (the overflow is queued too): the run asks, and the journal
// has it walk.
func TestJournalSharedOverflow(t *testing.T) {
	rec, root, _, _ := sharedRecorder(t)
	first, err := rec.Before()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skipf("no inotify queue limit to overflow: %v", err)
	}
	limit, err := strconv.Atoi(string(b[:len(b)-1]))
	if err != nil || limit > 1<<20 {
		t.Skipf("inotify queue limit %q too large to overflow in a test", b)
	}
	// alternate two files: identical events in a row are merged
	fa, err := os.OpenFile(filepath.Join(root, "pkg", "f01.go"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := os.OpenFile(filepath.Join(root, "pkg", "f02.go"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	for range limit/2 + 10 {
		fa.Write([]byte{'\n'})
		fb.Write([]byte{'\n'})
	}
	if rec.Clean() {
		t.Fatal("Clean true after the queue overflowed")
	}
	n := asks(rec)
	id, err := rec.Before()
	if err != nil {
		t.Fatal(err)
	}
	if id == first || asks(rec) == n {
		t.Fatalf("Before after the overflow = %s (first %s), asked %d", id, first, asks(rec)-n)
	}
}

// TestJournalSharedJournalGone: the journal gone, a run asks (and finds
// no one: it walks, as without a journal), even with nothing changed.
func TestJournalSharedJournalGone(t *testing.T) {
	rec, root, _, stop := sharedRecorder(t)
	first, err := rec.Before()
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Clean() {
		t.Fatal("not clean before the journal went")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// its end is seen once the journal closed the connection
	deadline := time.Now().Add(10 * time.Second)
	for rec.Clean() {
		if time.Now().After(deadline) {
			t.Fatal("Clean still true 10s after the journal exited")
		}
		time.Sleep(time.Millisecond)
	}
	id, err := rec.Before()
	if err != nil || id != first {
		t.Fatalf("Before = %q, %v; want the walk to find %q", id, err, first)
	}
	if rec.j != nil {
		t.Error("the run still holds the journal's connection")
	}
	write(t, root, "pkg/new.go", "package pkg\n", 0o644)
	if rec.Clean() {
		t.Error("Clean true after a write, the journal gone")
	}
	if id, err := rec.Before(); err != nil || id == first {
		t.Errorf("Before after a write = %q, %v", id, err)
	}
}

// TestJournalSharedLongAnswer: a start answer longer than the socket's
// buffer (a dirty directory of 4000 files, whose entries the answer
// carries) arrives whole with the descriptors: one sendmsg may take only
// part of it.
func TestJournalSharedLongAnswer(t *testing.T) {
	root := t.TempDir()
	for i := range 4000 {
		write(t, root, fmt.Sprintf("big/file-with-a-long-name-%04d.txt", i), "x\n", 0o644)
	}
	areas := []Area{{Name: "target", Dir: root}}
	store := filepath.Join(t.TempDir(), "store")
	cfg := RecorderConfig{Dir: store, Run: "run0", Areas: areas, Options: opts, Journal: true}
	recordUnchanged(t, cfg)
	startTestJournal(t, store, areas)
	write(t, root, "big/file-with-a-long-name-0000.txt", "changed\n", 0o644)
	cfg.Run = "run1"
	rec, err := StartRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if rec.j == nil || rec.j.seen == nil {
		t.Fatalf("journal answered %v, shared %v", rec.j != nil, rec.j != nil && rec.j.seen != nil)
	}
	if !rec.Clean() {
		t.Error("not clean right after the start checkpoint")
	}
	ms, err := newLoader(store, areas).load(rec.first)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ms[0].Entries {
		if e.Path == "big/file-with-a-long-name-0000.txt" && e.Size != int64(len("changed\n")) {
			t.Errorf("start checkpoint has the file of %d bytes, want the change", e.Size)
		}
	}
}
