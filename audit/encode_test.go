package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// jsonLine is what marshalLine wrote before appendEventLine: the reference.
func jsonLine(t *testing.T, e *Event) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzAppendEventLine: the hand encoder writes exactly what encoding/json
// writes for any event (strings with escapes, invalid UTF-8, U+2028,
// control characters; empty and zero fields omitted).
func FuzzAppendEventLine(f *testing.F) {
	f.Add("exec", "a\"b\\c\n\t\x01<>&\u2028\u2029\xff", "k", "v\x7f", int64(1795492012808856000), 42, -3, true, uint64(7), 0)
	f.Add("", "", "", "", int64(0), 0, 0, false, uint64(0), 3600)
	f.Add("launch", "é😀\ufffd", "\x00", "\u007f\u0080", int64(-1), 1, 0, true, uint64(1<<63), -19800)
	f.Fuzz(func(t *testing.T, kind, s, k, v string, ns int64, pid, exit int, hasExit bool, seq uint64, zone int) {
		when := time.Unix(0, ns).In(time.FixedZone("z", (zone%(24*60))*60))
		e := Event{Time: when, Seq: seq, Prev: s, Agent: k, Role: v, Run: s, Event: kind, Pid: pid, Ppid: exit,
			Cwd: s, Action: "tool:exec:" + s, Exe: v, Decision: k, Rule: s, Layer: v, Reason: s + v, Approver: k,
			Signal: v, Limit: k, Kid: k, Mac: v}
		if len(s)%2 == 0 {
			e.Argv = []string{s, k, v}
		}
		if k != "" || v != "" {
			e.Detail = map[string]string{k: v, s: k, "z": s}
		}
		if hasExit {
			e.Exit = &exit
		}
		if got, want := appendEventLine(nil, &e), jsonLine(t, &e); !bytes.Equal(got, want) {
			t.Fatalf("appendEventLine:\n got %q\nwant %q", got, want)
		}
	})
}

// TestMarshalLineOutOfRangeTime: a time encoding/json refuses is an error,
// as before.
func TestMarshalLineOutOfRangeTime(t *testing.T) {
	if _, err := marshalLine(&Event{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Event: "exec"}); err == nil {
		t.Fatal("year 10000 encoded")
	}
}
