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
		realLines[0], realLines[1], realLines[2],
		`{"seq":1,"event":"x","reason":"a\ud83d\ude00b","cwd":"\ud800"}`, `{"seq":1,"event":"x","reason":"\u12G4"}`,
		`{"seq":1,"event":"x","reason":"a\"\xff"}`, `{"seq":1,"event":"x","reason":"\u0000\u001f\u007f\uFFFF"}`,
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
		realLines[0], realLines[1], realLines[2], `{"seq":1,"event":"x","reason":"a\"\xff","exe":"\q"}`,
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

// realLines are the shapes a real run writes (a developer-role run's
// exec, a git decision whose reason quotes the command, a net decision):
// escapes in reasons, argv and detail values.
var realLines = []string{
	`{"time":"2026-11-28T05:01:54.468178624Z","seq":5,"prev":"778362704b8fbd5003f75f758e45972874f79453cd6dd83af0c8f38eb98a1e59","agent":"main","role":"developer","run":"d0bb915eb2af-0","event":"git","pid":4943,"ppid":4920,"cwd":"/tmp/aw/target","action":"tool:git:version","argv":["git","--version"],"exe":"/usr/bin/git","decision":"allow","rule":"developer/git.version","layer":"role","reason":"allowed by developer/git.version (command \"git version\")","detail":{"checkpoint":"d0bb915eb2af.1","identified_by":"file","rule_source":"builtin:developer"},"kid":"d4b762e4004a6cb7","mac":"s:e4835d42b83572d3cdd47f16a3a048002d96bec900293be37ddc7ce17befe9f2"}`,
	`{"time":"2026-11-28T05:01:54.388728957Z","seq":2,"prev":"6426ef4d62c4","agent":"main","role":"developer","run":"d0bb915eb2af","event":"exec","pid":4920,"ppid":4905,"cwd":"/tmp/aw/target","action":"tool:exec:sh -c 'echo \"hi\\n\"'","argv":["/bin/sh","-c","echo \"hi\\n\"\tx"],"exe":"/usr/bin/dash","decision":"allow","reason":"transparent wrapper","detail":{"checkpoint":"d0bb915eb2af.0","note":"a \"quoted\" \u00e9 \/ value"},"kid":"d3505239d8fdf00b","mac":"s:ff96704a5c67644242a028314f5c2332126f8b76a9f7699ef4634a95c8e3b607"}`,
	`{"time":"2026-11-28T05:01:55Z","seq":9,"prev":"bb","agent":"main","role":"developer","run":"r","event":"net","pid":7,"action":"tool:net:proxy.golang.org:443","decision":"deny","rule":"developer/net","layer":"egress","reason":"host \"evil.example\" is not in the role's list","detail":{"host":"evil.example","port":"443","sni":"evil.example"},"kid":"k1","mac":"s:00"}`,
}

// TestFastPathRealEvents: the lines real runs write (quoted commands in
// reasons, escapes in argv and detail values) are read by the field
// scanners, not left to encoding/json (a third of a real run's lines
// were, and audit verify of real events took 2.2-2.4x sha256sum), and read
// as encoding/json reads them.
func TestFastPathRealEvents(t *testing.T) {
	for i, line := range realLines {
		var fast Event
		if !decodeLine([]byte(line), &fast) {
			t.Errorf("line %d: decodeLine left it to encoding/json", i)
			continue
		}
		var slow Event
		if err := json.Unmarshal([]byte(line), &slow); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(fast)
		b, _ := json.Marshal(slow)
		if !bytes.Equal(a, b) {
			t.Errorf("line %d:\nfast %s\nslow %s", i, a, b)
		}
		if _, ok := scanInfo([]byte(line)); !ok {
			t.Errorf("line %d: scanInfo left it to ParseLine", i)
		}
	}
}

// TestRebaseDecodedCopy: a field decoded from escapes is not a slice of
// the line, and rebase refuses to move it (report then reads the line
// with ParseLine) instead of pointing it at unrelated bytes.
func TestRebaseDecodedCopy(t *testing.T) {
	for _, c := range []struct {
		line   string
		rebase bool
	}{
		{`{"seq":1,"event":"x","action":"a"}`, true},
		{`{"seq":1,"event":"x","action":"say \"a\""}`, false},
		{`{"seq":1,"event":"x","reason":"say \"a\""}`, true}, // not returned: nothing copied
	} {
		line := []byte(c.line)
		li, ok := scanInfo(line)
		if !ok {
			t.Fatalf("%s: not scanned", c.line)
		}
		cp := append([]byte(nil), line...)
		if got := li.rebase(line, cp); got != c.rebase {
			t.Errorf("%s: rebase %v, want %v", c.line, got, c.rebase)
		}
		if c.rebase && len(li.action) > 0 && &li.action[0] != &cp[bytes.Index(cp, []byte(`"a"`))+1] {
			t.Errorf("%s: action not moved into the copy", c.line)
		}
	}
}
