package checkpoint

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// storeFiles lists the regular files under the store dir (relative).
func storeFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ageRecord rewrites the time in checkpoint id's record of area store s
// to when (a checkpoint taken long ago), its mtime with it.
func ageRecord(t *testing.T, s, id string, when time.Time) {
	t.Helper()
	p := filepath.Join(s, "checkpoints", id+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.Time = when
	if b, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

// TestJournalStartSame: a run that starts when nothing changed since the
// last checkpoint (the common launch) records that checkpoint as its
// start — the run's index is the only file it creates in the store, over
// its start and its end — in two areas, whether the journal says so or a
// walk finds it (no journal: the first run in a workspace, or
// AGENTBOX_CHECKPOINT_JOURNAL=off); its commands' changes are then
// undone byte for byte to that start, and redone; and a checkpoint taken
// long ago that a run started from again is not pruned by age as if
// unused (its age counts from the run's start), so the run's undo still
// has it.
func TestJournalStartSame(t *testing.T) {
	for _, journal := range []bool{true, false} {
		t.Run(fmt.Sprintf("journal=%v", journal), func(t *testing.T) { testStartSame(t, journal) })
	}
}

func testStartSame(t *testing.T, journal bool) {
	root, fb := project(t), t.TempDir()
	write(t, fb, "notes.md", "feedback\n", 0o644)
	areas := []Area{{Name: "target", Dir: root}, {Name: "feedback", Dir: fb}}
	store := filepath.Join(t.TempDir(), "store")
	cfg := RecorderConfig{Dir: store, Areas: areas, Options: opts, Journal: journal, Run: "run0"}
	recordUnchanged(t, cfg) // no journal yet: a walk
	idx0, err := ReadIndex(store, "run0")
	if err != nil {
		t.Fatal(err)
	}
	last := idx0[len(idx0)-1].Checkpoint // what the journal vouches for
	if journal {
		startTestJournal(t, store, areas)
	}
	// a checkpoint from a month ago, as far as its records say
	old := time.Now().Add(-30 * 24 * time.Hour).UTC()
	for _, a := range areas {
		ageRecord(t, filepath.Join(store, a.Name), last, old)
	}

	for i := 1; i <= 2; i++ { // twice: the second run starts from the same checkpoint again
		cfg.Run = fmt.Sprintf("same%d", i)
		before := storeFiles(t, store)
		recordUnchanged(t, cfg)
		added := []string{}
		for _, f := range storeFiles(t, store) {
			if !slices.Contains(before, f) {
				added = append(added, f)
			}
		}
		if want := []string{filepath.Join("runs", cfg.Run+".jsonl")}; !slices.Equal(added, want) {
			t.Errorf("run %s that changed nothing created %q in the store, want only %q", cfg.Run, added, want)
		}
		idx, err := ReadIndex(store, cfg.Run)
		if err != nil {
			t.Fatal(err)
		}
		if idx[0].Checkpoint != last || idx[len(idx)-1].Checkpoint != last {
			t.Errorf("run %s: start %s, end %s; want both %s (nothing changed since)", cfg.Run, idx[0].Checkpoint, idx[len(idx)-1].Checkpoint, last)
		}
	}

	cfg.Run = "run1"
	start := treeHash(t, root, "node_modules") + treeHash(t, fb)
	rec, err := StartRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if journal && rec.j == nil {
		t.Fatal("the journal did not answer")
	}
	runCommands(t, rec,
		func() { os.RemoveAll(filepath.Join(root, "src")) },
		func() {
			write(t, root, "README.md", "# rewritten\n", 0o600)
			write(t, fb, "notes.md", "more feedback\n", 0o644)
			write(t, root, "new/x", "x\n", 0o755)
		})
	if _, _, err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
	after := treeHash(t, root, "node_modules") + treeHash(t, fb)
	idx, err := ReadIndex(store, "run1")
	if err != nil {
		t.Fatal(err)
	}
	if idx[0].Checkpoint != last {
		t.Errorf("run1 started from %s, want %s", idx[0].Checkpoint, last)
	}
	for _, a := range areas {
		s, err := Open(filepath.Join(store, a.Name))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Prune(Budget{MaxAge: 14 * 24 * time.Hour, Keep: 1}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(p.Removed, last) {
			t.Errorf("%s/: pruning by age removed %s, the start of run1 a moment ago (removed %v)", a.Name, last, p.Removed)
		}
	}
	res, err := Undo(store, "run1", UndoOptions{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules") + treeHash(t, fb); h != start {
		t.Fatalf("undo of the run:\n%s\nwant the trees at its start:\n%s", h, start)
	}
	if _, err := Undo(store, res.Redo, UndoOptions{Options: opts}); err != nil {
		t.Fatal(err)
	}
	if h := treeHash(t, root, "node_modules") + treeHash(t, fb); h != after {
		t.Fatalf("redo:\n%s\nwant the run's end:\n%s", h, after)
	}
}

// launchAreas makes a launch's two small areas (target/ with 20 files,
// an empty feedback/) and a store directory for them.
func launchAreas(b *testing.B) ([]Area, string) {
	root, fb := b.TempDir(), b.TempDir()
	for i := range 20 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d", i)), []byte("x\n"), 0o644)
	}
	return []Area{{Name: "target", Dir: root}, {Name: "feedback", Dir: fb}}, filepath.Join(b.TempDir(), "s")
}

// BenchmarkRunUnchanged: the checkpoints of a launch that changes nothing
// (agentbox run -- /bin/true): a run's start and end in two small areas,
// as a launch's target/ and feedback/, with the journal following the
// workspace or without one (every checkpoint walks). cpu-ms is the
// process's CPU time per run (the journal's, in this process, included),
// files the files the run created in the store.
func BenchmarkRunUnchanged(b *testing.B) {
	for _, journal := range []bool{true, false} {
		b.Run(fmt.Sprintf("journal=%v", journal), func(b *testing.B) {
			areas, store := launchAreas(b)
			cfg := RecorderConfig{Dir: store, Run: "r0", Areas: areas, Options: opts, Journal: journal}
			recordUnchanged(b, cfg)
			if journal {
				startTestJournal(b, store, areas)
			}
			cfg.Run = "warm"
			recordUnchanged(b, cfg)
			n0 := len(storeFiles(b, store))
			c0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				cfg.Run = fmt.Sprintf("r%d", i+1)
				recordUnchanged(b, cfg)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms")
			b.ReportMetric(float64(len(storeFiles(b, store))-n0)/float64(b.N), "files")
		})
	}
}

// TestJournalAskEncoding: a question sent without a delta (appendAsk)
// is the bytes json.Marshal gives its journalReq, whatever it holds, so
// the journal reads it as before.
func TestJournalAskEncoding(t *testing.T) {
	for _, q := range []journalReq{
		{Op: "dirty", Head: true, Roots: make([]string, 2)},
		{Op: "dirty", Head: true, Share: true, Roots: make([]string, 1)},
		{Op: "dirty", Roots: []string{"a", "b"}},
		{Op: "dirty"},
		{Op: "rebase", Roots: []string{"c", "d"}, Gen: 7},
		{Op: "rebase", From: []string{"a", "b"}, Roots: []string{"c", "d"}, Gen: 1 << 40},
		{Op: "rebase", From: []string{}, Roots: []string{}, Gen: 1},
		{Op: "prune", Roots: make([]string, 2), Budget: &Budget{MaxBytes: 1 << 30, MaxAge: time.Hour, Keep: 3}},
	} {
		for _, ax := range []struct {
			areas   []Area
			exclude []string
		}{
			{[]Area{{Name: "target", Dir: "/w/t\"x"}, {Name: "feedback", Dir: "/w/\u00e9\n\u2028<\xff"}}, []string{"node_modules", "<>&"}},
			{nil, nil},
			{[]Area{}, []string{}},
		} {
			askOnce(t, q, ax.areas, ax.exclude)
		}
	}
}

// askOnce sends q as a journal client asking about areas would, and
// checks the line sent is json.Marshal's.
func askOnce(t *testing.T, q journalReq, areas []Area, exclude []string) {
	t.Helper()
	a, b := net.Pipe()
	jc := &journalClient{c: a, r: bufio.NewReader(a), req: journalReq{Areas: areas, Exclude: exclude}}
	got := make(chan []byte, 1)
	go func() {
		line, _ := bufio.NewReader(b).ReadBytes('\n')
		got <- line
	}()
	if err := jc.send(q); err != nil {
		t.Fatal(err)
	}
	q.Areas, q.Exclude = areas, exclude
	want, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	if line := <-got; string(line) != string(want)+"\n" {
		t.Errorf("sent %s\nwant %s", line, want)
	}
	a.Close()
	b.Close()
}

// indexEntries are index lines of every kind, with strings json escapes.
var indexEntries = []IndexEntry{
	{Kind: IndexStart, Run: "r1", Checkpoint: "r0.3", Time: time.Date(2026, 11, 28, 13, 0, 0, 123456789, time.UTC),
		Areas: []Area{{Name: "target", Dir: "/w/<t>"}}, Argv: []string{"sh", "-c", "echo \"hi\"\n\t&\u2029\xfe"}},
	{Kind: IndexCommand, Run: "r1", Checkpoint: "r1.0", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Seq: 1 << 60, Pid: 4242, Argv: []string{}},
	{Kind: IndexStart, Run: "u1", Checkpoint: "u1.0", Of: "r1", Areas: []Area{}},
	{Kind: IndexEnd, Run: "r1", Checkpoint: "r1.1", Exit: new(int)},
	{Kind: IndexEnd, Run: "r1", Checkpoint: "r1.1", Exit: func() *int { i := -1; return &i }(), Pid: -3},
}

// TestAppendIndexEntry: the index's lines are json.Marshal's bytes; and
// IndexEntry, journalReq and Area have the fields jsonfast.go writes, so
// a field added to one fails here until the encoder writes it too.
func TestAppendIndexEntry(t *testing.T) {
	for _, e := range indexEntries {
		checkIndexEntry(t, e)
	}
	for _, c := range []struct {
		v    any
		tags string
	}{
		{IndexEntry{}, "kind run checkpoint time seq,omitempty pid,omitempty argv,omitempty areas,omitempty of,omitempty exit,omitempty"},
		{journalReq{}, "op areas exclude,omitempty roots from,omitempty gen,omitempty head,omitempty share,omitempty delta,omitempty budget,omitempty"},
		{Area{}, "name dir"},
	} {
		rt := reflect.TypeOf(c.v)
		var tags []string
		for i := range rt.NumField() {
			tags = append(tags, rt.Field(i).Tag.Get("json"))
		}
		if got := strings.Join(tags, " "); got != c.tags {
			t.Errorf("%s has the JSON fields %q; jsonfast.go writes %q: update both", rt.Name(), got, c.tags)
		}
	}
}

func checkIndexEntry(t *testing.T, e IndexEntry) {
	t.Helper()
	want, werr := json.Marshal(e)
	got, gerr := appendIndexEntry(nil, e)
	if (werr != nil) != (gerr != nil) || string(got) != string(want) {
		t.Errorf("appendIndexEntry(%+v) = %s, %v\nwant %s, %v", e, got, gerr, want, werr)
	}
}

// FuzzAppendIndexEntry: whatever the strings and numbers, an index line
// is json.Marshal's bytes.
func FuzzAppendIndexEntry(f *testing.F) {
	for _, e := range indexEntries {
		a := ""
		if len(e.Argv) > 0 {
			a = e.Argv[len(e.Argv)-1]
		}
		f.Add(e.Kind, e.Run, e.Checkpoint, a, e.Of, e.Seq, e.Pid, e.Time.UnixNano())
	}
	f.Fuzz(func(t *testing.T, kind, run, id, arg, of string, seq uint64, pid int, ns int64) {
		e := IndexEntry{Kind: kind, Run: run, Checkpoint: id, Time: time.Unix(0, ns), Seq: seq, Pid: pid, Of: of,
			Argv: []string{arg, of}, Areas: []Area{{Name: kind, Dir: arg}}, Exit: &pid}
		checkIndexEntry(t, e)
	})
}

// TestRecorderNetChanges: a run's net changes from its recorder (what a
// launch's end line lists, without reading its index back) are those
// read from its index, for a run that changed files and one that did
// not.
func TestRecorderNetChanges(t *testing.T) {
	root := project(t)
	areas := []Area{{Name: "target", Dir: root}}
	store := filepath.Join(t.TempDir(), "store")
	for i, change := range []bool{true, false} {
		cfg := RecorderConfig{Dir: store, Areas: areas, Options: opts, Run: fmt.Sprintf("run%d", i)}
		rec, err := StartRecorder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if change {
			write(t, root, "README.md", "# changed\n", 0o644)
			os.Remove(filepath.Join(root, "build.sh"))
		}
		if _, _, err := rec.Finish(); err != nil {
			t.Fatal(err)
		}
		got, err := rec.NetChanges()
		if err != nil {
			t.Fatal(err)
		}
		want, err := NetChanges(store, cfg.Run)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || change != (len(want) > 0) {
			t.Errorf("%s: recorder's net changes %v, the index's %v", cfg.Run, got, want)
		}
	}
}

// TestJournalRefusesConfinedPeer: the journal answers a process of its
// user as confined as itself, and closes on one with no_new_privs set
// where the journal has not (as every sandboxed process has, with more
// seccomp filters besides), so nothing in a sandbox can make it forget a
// change. Real processes: python3 asks on the journal's socket, once as
// is and once under setpriv --no-new-privs.
func TestJournalRefusesConfinedPeer(t *testing.T) {
	self, ok := confinement("self")
	if !ok {
		t.Skip("/proc/self/status has no NoNewPrivs or Seccomp_filters line (kernel before 5.9)")
	}
	if self[0] != 0 {
		t.Skip("the test runs with no_new_privs set: no peer can be more confined in that way")
	}
	py, err1 := exec.LookPath("python3")
	sp, err2 := exec.LookPath("setpriv")
	if err1 != nil || err2 != nil {
		t.Skip("needs python3 and setpriv (util-linux) for the peers")
	}
	root := project(t)
	areas := []Area{{Name: "target", Dir: root}}
	store := filepath.Join(t.TempDir(), "store")
	recordUnchanged(t, RecorderConfig{Dir: store, Run: "run0", Areas: areas, Options: opts})
	startTestJournal(t, store, areas)
	q := string(appendAsk(nil, journalReq{Op: "dirty", Head: true, Areas: areas, Exclude: opts.ExcludeNames, Roots: []string{""}}))
	script := `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
try:
    s.sendall(sys.argv[2].encode() + b"\n")
    print(s.makefile().readline().strip())
except ConnectionError as e:  # closed on us: no answer
    print(e, file=sys.stderr)`
	sock := filepath.Join(store, journalSock)
	for _, c := range []struct {
		name   string
		argv   []string
		answer bool
	}{
		{"as confined as the journal", []string{py, "-c", script, sock, q}, true},
		{"no_new_privs", []string{sp, "--no-new-privs", py, "-c", script, sock, q}, false},
	} {
		out, err := exec.Command(c.argv[0], c.argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var resp journalResp
		got := json.Unmarshal(out, &resp) == nil && resp.OK
		if got != c.answer {
			t.Errorf("%s: the journal answered %q; want an answer: %v", c.name, out, c.answer)
		}
	}
}
