package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{`{"time":"2026-01-01T00:00:00Z","seq":1,"prev":"","event":"exec"}`, ""},
		{`{"seq":1,"prev":"","event":"exec","unknown":true}`, ""},
		{`{"seq":1,"prev":"","event":"exec"}` + "\r", ""},
		{``, "empty line"},
		{`   `, "empty line"},
		{`null`, `missing "event"`},
		{`[]`, "not a JSON event"},
		{`{"seq":1,"event":"exec"} {"seq":2}`, "not a JSON event"},
		{`{"seq":1,"event":"exec"`, "not a JSON event"},
		{`{"seq":"1","event":"exec"}`, "not a JSON event"},
		{`{"seq":-1,"event":"exec"}`, "not a JSON event"},
		{`{"event":"exec"}`, `"seq"`},
		{`{"seq":2}`, `missing "event"`},
		{`{"seq":1,"event":"exec","time":"yesterday"}`, "not a JSON event"},
	}
	for _, tc := range tests {
		_, err := ParseLine([]byte(tc.in))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ParseLine(%q): %v", tc.in, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseLine(%q) = %v, want error containing %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e := Event{Time: t0, Agent: "a1", Role: "developer", Run: "r1", Event: EventExec, Decision: DecisionAskTimeout}
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero", Filter{}, true},
		{"agent", Filter{Agent: "a1"}, true},
		{"other agent", Filter{Agent: "a2"}, false},
		{"agent prefix is not a match", Filter{Agent: "a"}, false},
		{"role", Filter{Role: "developer"}, true},
		{"other role", Filter{Role: "tester"}, false},
		{"run", Filter{Run: "r1"}, true},
		{"other run", Filter{Run: "r2"}, false},
		{"event", Filter{Event: "exec"}, true},
		{"other event", Filter{Event: "git"}, false},
		{"ask family", Filter{Decision: "ask"}, true},
		{"exact ask decision", Filter{Decision: "ask_timeout"}, true},
		{"other ask decision", Filter{Decision: "ask_approved"}, false},
		{"deny is every refusal", Filter{Decision: "deny"}, true}, // e is ask_timeout
		{"exactly deny", Filter{Decision: "=deny"}, false},
		{"exactly ask_timeout", Filter{Decision: "=ask_timeout"}, true},
		{"rule", Filter{Rule: "developer/x"}, false},
		{"action regex", Filter{Action: regexp.MustCompile("curl")}, e.Action != "" && strings.Contains(e.Action, "curl")},
		{"since before", Filter{Since: t0.Add(-time.Second)}, true},
		{"since equal", Filter{Since: t0}, true},
		{"since after", Filter{Since: t0.Add(time.Second)}, false},
		{"until after", Filter{Until: t0.Add(time.Second)}, true},
		{"until equal", Filter{Until: t0}, false},
		{"all match", Filter{Agent: "a1", Role: "developer", Run: "r1", Event: "exec", Decision: "ask", Since: t0}, true},
		{"one of many fails", Filter{Agent: "a1", Role: "developer", Event: "git"}, false},
	}
	for _, tc := range tests {
		if got := tc.f.Match(&e); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
	allow := Event{Decision: DecisionAllow}
	if (Filter{Decision: "ask"}).Match(&allow) {
		t.Error(`Decision "ask" matched allow`)
	}
}

const sampleLog = `{"time":"2026-05-01T10:00:00Z","seq":1,"prev":"","agent":"a1","event":"exec","decision":"allow"}
{"time":"2026-05-01T11:00:00Z","seq":2,"prev":"x","agent":"a2","event":"git","decision":"deny"}
this is not json
{"time":"2026-05-01T12:00:00Z","seq":4,"prev":"y","agent":"a1","event":"ask","decision":"ask_approved"}
{"time":"2026-05-01T13:00:00Z","seq":5,"prev":"z","agent":"a1","event":"exec","decision":"deny"}
{"time":"2026-05-01T14:00:00Z","seq":6,"prev":"z","agent":"a1","ev`

func TestReadStopsAtFirstBadLine(t *testing.T) {
	var n int
	err := Read(strings.NewReader(sampleLog), Filter{}, func(Event) error { n++; return nil })
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 {
		t.Fatalf("Read: %v, want LineError at line 3", err)
	}
	if n != 2 {
		t.Fatalf("got %d events before the bad line, want 2", n)
	}
	le.File = "audit.jsonl"
	if !strings.HasPrefix(le.Error(), "audit.jsonl:3: not a JSON event") {
		t.Errorf("error text %q", le.Error())
	}
}

func TestScanReportsEveryBadLine(t *testing.T) {
	tests := []struct {
		f        Filter
		wantSeqs []uint64
	}{
		{Filter{}, []uint64{1, 2, 4, 5}},
		{Filter{Agent: "a1"}, []uint64{1, 4, 5}},
		{Filter{Decision: "deny"}, []uint64{2, 5}},
		{Filter{Decision: "ask"}, []uint64{4}},
		{Filter{Event: "exec", Since: time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)}, []uint64{5}},
	}
	for _, tc := range tests {
		var seqs []uint64
		var bad []int
		err := Scan(strings.NewReader(sampleLog), tc.f,
			func(e Event) error { seqs = append(seqs, e.Seq); return nil },
			func(le *LineError) error { bad = append(bad, le.Line); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) != 2 || bad[0] != 3 || bad[1] != 6 {
			t.Errorf("%+v: bad lines %v, want [3 6]", tc.f, bad)
		}
		if !equalSeqs(seqs, tc.wantSeqs) {
			t.Errorf("%+v: seqs %v, want %v", tc.f, seqs, tc.wantSeqs)
		}
	}
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadCallbackErrorStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Read(strings.NewReader(sampleLog), Filter{}, func(Event) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err %v after %d events", err, n)
	}
}

func TestReadOverlongLine(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"seq":1,"prev":"","event":"exec","reason":"`)
	b.Write(bytes.Repeat([]byte("x"), MaxLineBytes))
	b.WriteString("\"}\n")
	b.WriteString(`{"seq":2,"prev":"","event":"exec"}` + "\n")
	var got []uint64
	var bad []string
	Scan(&b, Filter{}, func(e Event) error { got = append(got, e.Seq); return nil },
		func(le *LineError) error { bad = append(bad, le.Error()); return nil })
	if len(bad) != 1 || !strings.Contains(bad[0], "line 1: line longer than") || len(got) != 1 || got[0] != 2 {
		t.Fatalf("bad %v, got %v", bad, got)
	}
}

func TestParseHead(t *testing.T) {
	good := formatHead(42, strings.Repeat("ab", 32))
	if h, err := ParseHead(good); err != nil || h.Seq != 42 {
		t.Fatalf("ParseHead(good) = %+v, %v", h, err)
	}
	for _, bad := range []string{"", "junk", string(good[:len(good)-1]), strings.Replace(string(good), "ab", "zz", 1),
		strings.Replace(string(good), "00042", "0004x", 1)} {
		if _, err := ParseHead([]byte(bad)); err == nil {
			t.Errorf("ParseHead(%q) accepted", bad)
		}
	}
}

// TestSummarizeFileMatchesSummarize: the one pass of SummarizeFile (lines
// handed in batches to a summarizing goroutine) builds the same report as
// Summarize over a log that spans many batches, overflows the listed asks,
// and holds malformed lines and lines only a full decode reads.
func TestSummarizeFileMatchesSummarize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Synthesize(w, 12000); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	odd := [][]byte{
		[]byte("not json at all\n"),
		[]byte(`{"seq":5001,"event":"exec","agent":"\u0061gent-escaped","action":"tool:exec:ls","decision":"deny","time":"2026-11-02T00:00:00Z"}` + "\n"),
		[]byte(`{"seq":"x"}` + "\n"),
	}
	var mixed []byte
	for i, l := range lines {
		if i == 5000 || i == 9000 {
			for _, o := range odd {
				mixed = append(mixed, o...)
			}
		}
		mixed = append(mixed, l...)
	}
	if err := os.WriteFile(path, mixed, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, filter := range []Filter{{}, {Agent: "a1"}, {Event: EventExec}} {
		want, err := Summarize(bytes.NewReader(mixed), filter)
		if err != nil {
			t.Fatal(err)
		}
		got, _, verr, err := SummarizeFile(path, filter)
		if err != nil {
			t.Fatal(err)
		}
		if verr == nil {
			t.Errorf("filter %+v: a log with lines inserted verified", filter)
		}
		if len(want.Malformed) != 4 || want.Events == 0 {
			t.Fatalf("filter %+v: test log not as meant: %d malformed, %d events", filter, len(want.Malformed), want.Events)
		}
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			t.Errorf("filter %+v: SummarizeFile and Summarize differ:\n got %.2000s\nwant %.2000s", filter, gj, wj)
		}
	}
}
