package audit

import (
	"bytes"
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
