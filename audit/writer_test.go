package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain doubles as the child process of TestMultiProcessWriters: with
// AUDIT_TEST_CHILD_LOG set, the test binary appends events to that log and
// exits instead of running tests.
func TestMain(m *testing.M) {
	if path := os.Getenv("AUDIT_TEST_CHILD_LOG"); path != "" {
		os.Exit(childWrite(path, os.Getenv("AUDIT_TEST_CHILD_ID"), os.Getenv("AUDIT_TEST_CHILD_N")))
	}
	os.Exit(m.Run())
}

func childWrite(path, id, nStr string) int {
	n, err := strconv.Atoi(nStr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad AUDIT_TEST_CHILD_N:", err)
		return 2
	}
	w, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer w.Close()
	for i := range n {
		err := w.Write(Event{Event: EventExec, Agent: id, Pid: os.Getpid(),
			Action: "tool:exec:echo " + strconv.Itoa(i), Decision: DecisionAllow,
			Argv: []string{"echo", strings.Repeat("x", i%300)}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func readAll(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	if err := Read(f, Filter{}, func(e Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return evs
}

func TestWriterChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	exit := 3
	in := []Event{
		{Event: EventLaunch, Agent: "a1", Role: "developer", Run: "r1"},
		{Event: EventExec, Agent: "a1", Action: "tool:exec:ls <x> & y", Decision: DecisionAllow, Seq: 99, Prev: "bogus"},
		{Event: EventGit, Agent: "a1", Action: "tool:git:push origin main", Decision: DecisionDeny, Rule: "developer/git.push"},
		{Event: EventExit, Agent: "a1", Exit: &exit, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	for _, e := range in {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Event{Event: EventExec}); err == nil {
		t.Fatal("write after close succeeded")
	}
	for p, want := range map[string]os.FileMode{path: 0o600, path + HeadSuffix: 0o600, filepath.Dir(path): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, []byte("tool:exec:ls <x> & y")) {
		t.Errorf("HTML characters were escaped: %s", raw)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	evs := readAll(t, path)
	if len(evs) != len(in) || len(lines) != len(in) {
		t.Fatalf("got %d events, %d lines, want %d", len(evs), len(lines), len(in))
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d: seq %d", i, e.Seq)
		}
		wantPrev := ""
		if i > 0 {
			wantPrev = LineHash(lines[i-1])
		}
		if e.Prev != wantPrev {
			t.Errorf("event %d: prev %q, want %q", i, e.Prev, wantPrev)
		}
		if e.Time.IsZero() {
			t.Errorf("event %d: time not set", i)
		}
	}
	if !evs[3].Time.Equal(in[3].Time) || evs[3].Exit == nil || *evs[3].Exit != 3 {
		t.Errorf("exit event changed: %+v", evs[3])
	}
	res, err := VerifyFile(path)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if res.Lines != 4 || !res.HeadUsed || len(res.Warnings) != 0 {
		t.Errorf("verify result %+v", res)
	}
	// Reopening continues the chain.
	w2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Write(Event{Event: EventExec}); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	if evs := readAll(t, path); len(evs) != 5 || evs[4].Seq != 5 {
		t.Fatalf("reopen: %d events", len(evs))
	}
	if _, err := VerifyFile(path); err != nil {
		t.Fatalf("verify after reopen: %v", err)
	}
}

func TestOpenRefusesSymlinkAndNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o600)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink log: err %v", err)
	}
	if _, err := Open(dir); err == nil {
		t.Errorf("directory as log: no error")
	}
	if _, err := Open(""); err == nil {
		t.Errorf("empty path: no error")
	}
}

func TestWriterConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if err := w.Write(Event{Event: EventExec, Agent: strconv.Itoa(g), Action: strconv.Itoa(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	res, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lines != 800 {
		t.Fatalf("lines %d, want 800", res.Lines)
	}
}

// TestGroupCommit: 16 goroutines each writing batches of three events
// concurrently share writes (fewer head updates than calls), yet every
// event is in the log once, each batch's events are adjacent and in
// order, each goroutine's batches in the order it wrote them, and the
// chain verifies. A writer closed under the queue fails every queued call.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const G, N = 16, 60
	// The first write waits (bounded) until other calls have queued
	// behind it, so the test does not depend on writes being slow enough
	// to overlap.
	var first sync.Once
	writeHook = func([]Event) {
		first.Do(func() {
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				w.qmu.Lock()
				n := len(w.queue)
				w.qmu.Unlock()
				if n >= 2 {
					return
				}
				runtime.Gosched()
			}
		})
	}
	defer func() { writeHook = nil }()
	var wg sync.WaitGroup
	for g := range G {
		wg.Go(func() {
			for i := range N {
				batch := make([]Event, 3)
				for k := range batch {
					batch[k] = Event{Event: EventExec, Agent: strconv.Itoa(g), Action: fmt.Sprintf("%d.%d", i, k)}
				}
				if err := w.WriteBatch(batch); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if w.writes >= G*N {
		t.Errorf("%d writes for %d concurrent calls: nothing was group-committed", w.writes, G*N)
	}
	t.Logf("%d calls, %d writes", G*N, w.writes)
	w.Close()
	res, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lines != G*N*3 {
		t.Fatalf("lines %d, want %d", res.Lines, G*N*3)
	}
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int{} // agent -> next batch number
	for j := 0; j < len(evs); j += 3 {
		a := evs[j].Agent
		for k := 0; k < 3; k++ {
			if j+k >= len(evs) || evs[j+k].Agent != a || evs[j+k].Action != fmt.Sprintf("%d.%d", next[a], k) {
				t.Fatalf("line %d: batch %d of agent %s is not whole and in order: %+v", j+k+1, next[a], a, evs[j+k])
			}
		}
		next[a]++
	}
	for g := range G {
		if next[strconv.Itoa(g)] != N {
			t.Errorf("agent %d: %d batches, want %d", g, next[strconv.Itoa(g)], N)
		}
	}

	// Closed under waiting callers: each gets the error, none hangs.
	w2, err := Open(filepath.Join(t.TempDir(), "b.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w2.mu.Lock() // hold the file so callers queue behind a leader
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- w2.Write(Event{Event: EventExec}) }()
	}
	for {
		w2.qmu.Lock()
		n := len(w2.queue)
		w2.qmu.Unlock()
		if n >= 7 { // one leads (blocked on mu), seven wait
			break
		}
		runtime.Gosched()
	}
	w2.closed = true
	w2.mu.Unlock()
	for range 8 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("a call on a closed writer: %v", err)
		}
	}
}

// TestGroupCommitPanic: a group-committed write that panics (here through
// a test hook) answers every caller it carried with errWriteAborted,
// passes the lead on and leaves the writer usable: nobody waits forever.
func TestGroupCommitPanic(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	release := make(chan struct{})
	writeHook = func(evs []Event) {
		for _, e := range evs {
			switch e.Action {
			case "hold":
				<-release // let the others queue behind this write
			case "boom":
				panic("boom")
			}
		}
	}
	defer func() { writeHook = nil }()
	waitFor := func(cond func() bool) {
		for {
			w.qmu.Lock()
			ok := cond()
			w.qmu.Unlock()
			if ok {
				return
			}
			runtime.Gosched()
		}
	}
	call := func(action string, out chan<- any) {
		defer func() {
			if p := recover(); p != nil {
				out <- p
			}
		}()
		out <- w.Write(Event{Event: EventExec, Action: action})
	}
	// A writing leader holds; "boom" queues first (it will lead the next
	// write and panic in it), three more queue behind it.
	held := make(chan any, 1)
	go call("hold", held)
	waitFor(func() bool { return w.leading })
	boom := make(chan any, 1)
	go call("boom", boom)
	waitFor(func() bool { return len(w.queue) == 1 })
	others := make(chan any, 3)
	for i := range 3 {
		go call(strconv.Itoa(i), others)
	}
	waitFor(func() bool { return len(w.queue) == 4 })
	close(release)
	if r := <-held; r != nil {
		t.Errorf("the holding write: %v", r)
	}
	if p := <-boom; p != "boom" {
		t.Errorf("the panic did not reach its caller: %v", p)
	}
	for range 3 {
		if r := <-others; r != errWriteAborted {
			t.Errorf("a call carried by the panicking write: %v, want errWriteAborted", r)
		}
	}
	writeHook = nil
	if err := w.Write(Event{Event: EventExec, Action: "after"}); err != nil {
		t.Fatalf("the writer is not usable after the panic: %v", err)
	}
	if res, err := VerifyFile(w.path); err != nil || res.Lines != 2 {
		t.Errorf("log after the panic: %+v, %v (want the hold and after lines)", res, err)
	}
}

// TestMultiProcessWriters runs 8 real processes appending 500 events each
// to one log: every line must parse, none may be lost and the chain and
// head file must verify.
func TestMultiProcessWriters(t *testing.T) {
	const procs, per = 8, 500
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AUDIT_TEST_CHILD_LOG="+path,
			"AUDIT_TEST_CHILD_ID=child"+strconv.Itoa(i), "AUDIT_TEST_CHILD_N="+strconv.Itoa(per))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if stderr.Len() > 0 {
				t.Logf("child %d stderr: %s", i, stderr.String())
			}
		})
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	res, err := VerifyFile(path)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if res.Lines != procs*per || len(res.Warnings) != 0 {
		t.Fatalf("verify: %+v, want %d lines", res, procs*per)
	}
	perChild := map[string]int{}
	pids := map[int]bool{}
	for _, e := range readAll(t, path) {
		perChild[e.Agent]++
		pids[e.Pid] = true
	}
	for i := range procs {
		if got := perChild["child"+strconv.Itoa(i)]; got != per {
			t.Errorf("child%d: %d events, want %d", i, got, per)
		}
	}
	if len(pids) != procs {
		t.Errorf("%d distinct pids, want %d", len(pids), procs)
	}
}

func TestStdoutWriterChainsInProcess(t *testing.T) {
	r, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = wp
	w, err := Open("-")
	os.Stdout = old
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Write(Event{Event: EventExec}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	wp.Close()
	res, err := Verify(r, nil)
	if err != nil || res.Lines != 3 {
		t.Fatalf("verify stdout log: %+v %v", res, err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if got := DefaultPath(); got != "/state/agentbox/audit.jsonl" {
		t.Errorf("DefaultPath with XDG_STATE_HOME = %q", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath(); got != "/home/u/.local/state/agentbox/audit.jsonl" {
		t.Errorf("DefaultPath with HOME = %q", got)
	}
}

// TestKilledWriterLeavesNoTornLine SIGKILLs real writer processes at
// arbitrary moments: the log must always verify (at most a head file that
// lags by a line), and the next writer must carry on without recording
// tampering.
func TestKilledWriterLeavesNoTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AUDIT_TEST_CHILD_LOG="+path,
			"AUDIT_TEST_CHILD_ID=victim", "AUDIT_TEST_CHILD_N=1000000")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(30+round*17) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		res, err := VerifyFile(path)
		if err != nil {
			t.Fatalf("round %d: log does not verify after SIGKILL: %v", round, err)
		}
		for _, w := range res.Warnings {
			// A write cut short by the SIGKILL leaves an unfinished line
			// after the last one the head file vouches for.
			if !strings.Contains(w, "head file lags the log by 1 lines") && !strings.HasPrefix(w, "unkeyed log") &&
				!strings.Contains(w, "unfinished line") {
				t.Fatalf("round %d: unexpected warning %q", round, w)
			}
		}
		if res.Lines == 0 {
			t.Fatalf("round %d: child wrote nothing", round)
		}
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Event{Event: EventExit}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if res, err := VerifyFile(path); err != nil || len(res.Warnings) != 0 {
		t.Fatalf("after resuming: %+v %v", res, err)
	}
}

// TestUnfinishedLineOfKilledWriter: a write cut short (what a SIGKILL in
// the middle of write(2) leaves: part of a line after the last one the
// head file vouches for) verifies with a warning, and the next writer drops
// the fragment and records that, without calling it tampering. A fragment
// where the head file records a complete line is still tampering.
func TestUnfinishedLineOfKilledWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Write(Event{Event: EventExec, Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-11-24T03:00:00Z","seq":4,"prev":"ab`)
	f.Close()

	res, err := VerifyFile(path)
	if err != nil {
		t.Fatalf("verify with an unfinished last line: %v", err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "unfinished line of 49 bytes after seq 3") {
		t.Errorf("warnings %q, want the unfinished line named", res.Warnings)
	}
	w, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Event{Event: EventExit}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	res, err = VerifyFile(path)
	if err != nil || res.LastSeq != 5 {
		t.Fatalf("after the next write: %+v %v", res, err)
	}
	for _, wn := range res.Warnings {
		if !strings.HasPrefix(wn, "unkeyed log") {
			t.Errorf("warning after recovery: %q", wn)
		}
	}
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[3]; got.Event != EventViolation || got.Detail[DetailRecovered] != "unfinished_line" || got.Detail[DetailTamper] != "" || !strings.Contains(got.Reason, "the 49 bytes it left after seq 3") {
		t.Errorf("recovery event %+v", got)
	}

	// The head file records seq 5 complete: cutting into that line is not
	// a killed writer's fragment.
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-10], 0o600)
	if _, err := VerifyFile(path); err == nil || !strings.Contains(err.Error(), "torn last line") {
		t.Errorf("a cut recorded line verified: %v", err)
	}
}

// TestLineSeq: the seq of a log's last line, from the field scanner or,
// for a line it does not take, from encoding/json; a line without a seq
// or not JSON is an error.
func TestLineSeq(t *testing.T) {
	for _, c := range []struct {
		line string
		seq  uint64
		ok   bool
	}{
		{`{"seq":7,"prev":"x","time":"2026-01-01T00:00:00Z","event":"exec"}`, 7, true},
		{`{"seq":12,"unknown_key":{"a":[1,2]}}`, 12, true},
		{`{"event":"exec"}`, 0, false},
		{`{"seq":3`, 0, false},
		{`not json`, 0, false},
	} {
		seq, err := lineSeq([]byte(c.line))
		if (err == nil) != c.ok || seq != c.seq {
			t.Errorf("lineSeq(%s) = %d, %v; want %d, ok %v", c.line, seq, err, c.seq, c.ok)
		}
	}
}

// TestFastPath: a writer that finds the log as it left it appends from
// memory (appendFast), and what it writes is what the full path writes:
// the same line bytes, signed alike, the same head record. Another writer
// coming in between sends it back to the full path, and the chain holds
// across both (Verify, with the key).
func TestFastPath(t *testing.T) {
	key := NewKey(bytes.Repeat([]byte{7}, 32))
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			opt := Options{}
			if keyed {
				opt.Key = &key
			}
			a, err := OpenWith(path, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := OpenWith(path, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := range 10 {
				e := Event{Event: EventExec, Action: fmt.Sprintf("cmd%d", i), Argv: []string{"x", "\"q\"\n"}, Detail: map[string]string{"k": "v"}}
				if err := a.Write(e); err != nil {
					t.Fatal(err)
				}
				if i == 4 {
					if err := b.Write(Event{Event: EventExec, Action: "other"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			// a: first write full, 4 fast, then full after b's, then 4 fast.
			if a.fastWrites != 8 {
				t.Errorf("fast writes %d, want 8", a.fastWrites)
			}
			var res VerifyResult
			if keyed {
				res, err = VerifyFilesKeyed([]Key{key}, path)
			} else {
				res, err = VerifyFile(path)
			}
			if err != nil || res.Lines != 11 || !res.HeadUsed || keyed && res.MACsChecked != 11 {
				t.Fatalf("verify: %+v %v", res, err)
			}
			h, err := os.ReadFile(path + HeadSuffix)
			if err != nil || !bytes.Equal(h, formatHead(res.LastSeq, res.LastHash)) {
				t.Fatalf("head %q, want %q (%v)", h, formatHead(res.LastSeq, res.LastHash), err)
			}
			// The fast path's bytes are the full path's: re-encode each
			// line's event with marshalLine (and Key.sign).
			data, _ := os.ReadFile(path)
			for n, line := range bytes.SplitAfter(data, []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var e Event
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatal(err)
				}
				e.Kid, e.Mac = "", ""
				want, err := marshalLine(&e)
				if err != nil {
					t.Fatal(err)
				}
				if keyed {
					want = key.sign(want)
				}
				if !bytes.Equal(line, want) {
					t.Errorf("line %d:\n%s\nwant\n%s", n+1, line, want)
				}
			}
		})
	}
}
