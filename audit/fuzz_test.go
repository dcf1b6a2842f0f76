package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzReadLine(f *testing.F) {
	f.Add([]byte(`{"time":"2026-01-01T00:00:00Z","seq":1,"prev":"","event":"exec","argv":["a"],"exit":1,"detail":{"k":"v"}}`))
	f.Add([]byte(`{"seq":1e400,"event":"x"}`))
	f.Add([]byte("\xff\xfe{"))
	f.Add([]byte(sampleLog))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseLine(b)
		n := 0
		Scan(bytes.NewReader(b), Filter{Decision: "ask"}, func(Event) error { n++; return nil }, func(le *LineError) error {
			if le.Line < 1 {
				t.Fatalf("bad line number %d", le.Line)
			}
			return nil
		})
		if n > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d events from %d lines", n, bytes.Count(b, []byte("\n"))+1)
		}
	})
}

func FuzzVerify(f *testing.F) {
	var good bytes.Buffer
	prev := ""
	for i := 1; i <= 3; i++ {
		line, _ := marshalLine(&Event{Seq: uint64(i), Prev: prev, Event: "exec"})
		good.Write(line)
		prev = LineHash(line[:len(line)-1])
	}
	f.Add(good.Bytes(), uint64(3), prev)
	f.Add(good.Bytes(), uint64(9), "")
	f.Add([]byte(sampleLog), uint64(0), "")
	f.Fuzz(func(t *testing.T, b []byte, headSeq uint64, headHash string) {
		var head *Head
		if headSeq > 0 {
			head = &Head{Seq: headSeq, Hash: headHash}
		}
		res, err := Verify(bytes.NewReader(b), head)
		if err == nil && res.Lines > 0 && !bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("verified a log without a final newline")
		}
		if err == nil && res.Lines != bytes.Count(b, []byte("\n")) {
			t.Fatalf("verified %d lines of %d", res.Lines, bytes.Count(b, []byte("\n")))
		}
		if err == nil && head != nil && res.LastSeq < head.Seq {
			t.Fatalf("verified a log ending at seq %d against head seq %d", res.LastSeq, head.Seq)
		}
		ParseHead(b)
	})
}

// FuzzDecodeLine: the field scanner gives exactly what encoding/json gives
// (or declines and leaves the line to it).
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-23T10:00:00.123456789Z","seq":3,"prev":"ab","agent":"a","role":"developer","run":"r1","event":"exec","pid":12,"ppid":1,"cwd":"/w","action":"tool:exec:ls -la","argv":["ls","-la"],"exe":"/bin/ls","decision":"allow","rule":"developer/read-only","layer":"role","reason":"allowed","detail":{"k":"v","n":"1"},"kid":"k1","mac":"00ff"}`,
		`{"seq":1,"event":"exit","exit":0,"signal":"","argv":[],"detail":{}}`,
		`{"seq":01,"event":"x"}`, `{"Seq":1,"event":"x"}`, `{"seq":1,"event":"x\u0041"}`, `{"seq":1,"event":"x","pid":"3"}`,
		`{"seq":1,"event":"x","exit":null,"argv":null,"detail":null,"time":null}`, "{\"seq\":1,\"event\":\"\xff\"}", `{"seq":-1}`, `{} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Event
		if !decodeLine(line, &fast) {
			return
		}
		var slow Event
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted %q; encoding/json: %v", line, err)
		}
		a, _ := json.Marshal(fast)
		b, _ := json.Marshal(slow)
		if !bytes.Equal(a, b) || !fast.Time.Equal(slow.Time) {
			t.Fatalf("%q:\nfast %s\nslow %s", line, a, b)
		}
	})
}

// FuzzScanInfo: where the allocation-free field scan vouches for a line,
// ParseLine accepts it and agrees on every field the scan returns.
func FuzzScanInfo(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-23T10:00:00Z","seq":3,"prev":"ab","agent":"a","event":"net","action":"tool:net:h:443","argv":["x",null],"detail":{"bytes_up":"5"},"exit":1,"kid":"k","mac":"m","extra":[1,{"a":true}]}`,
		`{"seq":1,"event":"x","pid":"3"}`, `{"seq":1,"event":"x","SEQ":2}`, `{"seq":1,"event":"x","argv":[1]}`, `{"seq":1,"event":"x","time":"yesterday"}`,
		`{"seq":1,"event":"x","n":-0.5e+3}`, `{"seq":1,"event":"x","n":01}`, `{"seq":1,"event":"x\u0041"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		li, ok := scanInfo(line)
		if !ok {
			return
		}
		e, err := ParseLine(line)
		if err != nil {
			t.Fatalf("scan vouched for %q; ParseLine: %v", line, err)
		}
		exit := 0
		if e.Exit != nil {
			exit = *e.Exit
		}
		if li.seq != e.Seq || string(li.prev) != e.Prev || string(li.event) != e.Event || string(li.kid) != e.Kid || string(li.mac) != e.Mac ||
			string(li.agent) != e.Agent || string(li.run) != e.Run || string(li.action) != e.Action || string(li.decision) != e.Decision ||
			string(li.rule) != e.Rule || string(li.approver) != e.Approver || li.hasExit != (e.Exit != nil) || li.exit != exit {
			t.Fatalf("%q: scan %+v, ParseLine %+v", line, li, e)
		}
	})
}
