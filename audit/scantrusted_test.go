package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzScanChain: where scanChain reads a line that is valid JSON, it agrees
// with ParseLine (encoding/json) on every field it returns; and every line
// the writer writes for an event (encoded by the writer's encoder, signed)
// whose chain values need no escapes is read by it, not left to scanInfo.
func FuzzScanChain(f *testing.F) {
	for _, s := range []string{
		realLines[0], realLines[1], realLines[2],
		`{"seq":1,"event":"x","SEQ":2}`, `{"seq":1,"event":"x","ſeq":2}`, `{"seq":01,"event":"x"}`, `{"seq":1,"event":"x\u0041"}`,
		`{"seq":1,"event":"x","prev":null,"kid":null}`, `{"seq":1,"event":"x","reason":"a\\","kid":"k"}`, `{"seq":1,"event":"x","reason":"a\\\"b","kid":"k"}`,
		`{"seq":18446744073709551616,"event":"x"}`, `{"seq":1,"event":"x","detail":{"a":"}","b":["]"]},"kid":"k"}`, `{"seq":1, "event":"x"}`,
		`{"seq":1,"event":"x","seq":2}`, `{"seq":1,"event":"x","pid":-3,"exit":null,"argv":["a","b\"c"]}`, `{"seq":1,"event":"x","mac":"s:"}`,
	} {
		f.Add([]byte(s))
	}
	key := NewKey([]byte("0123456789abcdef0123456789abcdef"))
	f.Fuzz(func(t *testing.T, line []byte) {
		// scanInfo trusting the strings: what scanInfo reads, it reads
		// alike; what it reads of valid JSON, encoding/json reads alike
		if li, ok := scanInfo(line); ok {
			if lt, ok := scanInfoWith(line, true); !ok || fmt.Sprint(lt) != fmt.Sprint(li) {
				t.Fatalf("%q: scanInfo %+v, trusting %+v (%v)", line, li, lt, ok)
			}
		}
		if lt, ok := scanInfoWith(line, true); ok {
			if e, err := ParseLine(line); err == nil && (lt.seq != e.Seq || string(lt.prev) != e.Prev || string(lt.event) != e.Event ||
				string(lt.agent) != e.Agent || string(lt.action) != e.Action || string(lt.decision) != e.Decision || string(lt.mac) != e.Mac) {
				t.Fatalf("%q: trusting %+v, ParseLine %+v", line, lt, e)
			}
		}
		if li, ok := scanChain(line); ok {
			if e, err := ParseLine(line); err == nil {
				if li.seq != e.Seq || string(li.prev) != e.Prev || string(li.event) != e.Event || string(li.kid) != e.Kid || string(li.mac) != e.Mac {
					t.Fatalf("%q: scanChain %+v, ParseLine %+v", line, li, e)
				}
			}
		}
		e, err := ParseLine(line)
		if err != nil || e.Seq == 0 || e.Event == "" {
			return
		}
		e.Kid, e.Mac = "", ""
		enc, err := marshalLine(&e)
		if err != nil {
			return
		}
		signed := key.sign(enc)
		signed = signed[:len(signed)-1]
		if !bytes.Contains(signed, []byte(`"event":"`+e.Event+`"`)) || !bytes.Contains(signed, []byte(`"prev":"`+e.Prev+`"`)) {
			return // a chain value written with escapes: left to scanInfo
		}
		li, ok := scanChain(signed)
		if !ok {
			t.Fatalf("the writer's line %q: scanChain declined it", signed)
		}
		back, err := ParseLine(signed)
		if err != nil {
			t.Fatalf("the writer's line %q: %v", signed, err)
		}
		if li.seq != back.Seq || string(li.prev) != back.Prev || string(li.event) != back.Event || string(li.kid) != key.ID || string(li.mac) != back.Mac {
			t.Fatalf("%q: scanChain %+v, ParseLine %+v", signed, li, back)
		}
		if ki := suffixKey(signed, []Key{key}); ki != 0 {
			t.Fatalf("%q: suffixKey %d, want the key", signed, ki)
		}
	})
}

// realEventsLog writes a keyed log of n events through the writer from
// the shapes of realLines (quoted commands in reasons, escapes in argv and
// detail values), as scripts/auditreplay does from a real run.
func realEventsLog(t testing.TB, n int) (path string, key Key) {
	t.Helper()
	var src []Event
	for _, l := range realLines {
		e, err := ParseLine([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		e.Seq, e.Prev, e.Kid, e.Mac = 0, "", "", ""
		src = append(src, e)
	}
	path = filepath.Join(t.TempDir(), "real.jsonl")
	w, err := OpenKeyed(path, "")
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]Event, 0, n)
	for i := 0; i < n; i++ {
		e := src[i%len(src)]
		e.Time = e.Time.Add(time.Duration(i) * time.Millisecond)
		e.Run = fmt.Sprintf("%s-%d", e.Run, i/len(src))
		batch = append(batch, e)
	}
	if err := w.WriteBatch(batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if key, err = LoadKey(KeyPath(path, ""), false); err != nil {
		t.Fatal(err)
	}
	return path, key
}

// TestKeyedTamperMessages: a keyed log of real events, changed in ways
// that keep or break its JSON, fails with the same line and message on
// one CPU and on several, whether a change breaks the MAC of a line read
// by scanChain or the syntax of a value scanChain skips: a line whose MAC
// fails is read as before (scanInfo, then encoding/json).
func TestKeyedTamperMessages(t *testing.T) {
	path, key := realEventsLog(t, 3000)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	lines = lines[:len(lines)-1]
	const at = 2001 // 0-based: line 2002, in the middle of a chunk
	edit := func(f func(l []byte) []byte) []byte {
		c := make([][]byte, len(lines))
		copy(c, lines)
		c[at] = f(append([]byte(nil), c[at]...))
		return bytes.Join(c, nil)
	}
	tests := []struct {
		name     string
		data     []byte
		wantLine int
		want     string
	}{
		{"intact", raw, 0, ""},
		{"a reason edited", edit(func(l []byte) []byte { return bytes.Replace(l, []byte("allowed"), []byte("Allowed"), 1) }),
			at + 1, "MAC does not match (key " + key.ID + ")"},
		{"a control byte in a skipped value", edit(func(l []byte) []byte { return bytes.Replace(l, []byte("allowed"), []byte("allow\x01d"), 1) }),
			at + 1, "invalid character '\\x01' in string literal"},
		{"an invalid escape in a skipped value", edit(func(l []byte) []byte { return bytes.Replace(l, []byte("allowed"), []byte(`allo\qd`), 1) }),
			at + 1, "invalid character 'q' in string escape code"},
		{"the kid changed", edit(func(l []byte) []byte { return bytes.Replace(l, []byte(key.ID), []byte("0000000000000000"), 1) }),
			at + 1, "signed with key 0000000000000000, which was not given"},
		{"the MAC cut", edit(func(l []byte) []byte { return append(l[:len(l)-12], "\"}\n"...) }),
			at + 1, "MAC does not match"},
		{"the seq changed", edit(func(l []byte) []byte {
			return bytes.Replace(l, []byte(fmt.Sprintf(`"seq":%d,`, at+1)), []byte(fmt.Sprintf(`"seq":%d,`, at+7)), 1)
		}), at + 1, fmt.Sprintf("seq %d follows seq %d", at+7, at)},
		{"two lines swapped", func() []byte {
			c := make([][]byte, len(lines))
			copy(c, lines)
			c[at], c[at+1] = c[at+1], c[at]
			return bytes.Join(c, nil)
		}(), at + 1, fmt.Sprintf("seq %d follows seq %d", at+2, at)},
		{"a line deleted", bytes.Join(append(append([][]byte{}, lines[:at]...), lines[at+1:]...), nil), at + 1, fmt.Sprintf("seq %d follows seq %d", at+2, at)},
		{"cut mid-line", raw[:len(raw)-40], len(lines), "torn last line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sr, serr := verifySequential(bytes.NewReader(tc.data), nil, nil, []Key{key})
			pr, perr := verifyParallel(bytes.NewReader(tc.data), nil, nil, []Key{key})
			if fmt.Sprint(serr) != fmt.Sprint(perr) || fmt.Sprintf("%+v", sr) != fmt.Sprintf("%+v", pr) {
				t.Fatalf("sequential %+v %v, parallel %+v %v", sr, serr, pr, perr)
			}
			if tc.want == "" {
				if perr != nil || pr.MACsChecked != len(lines) {
					t.Fatalf("intact log: %+v %v", pr, perr)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(perr, &ve) || ve.Line != tc.wantLine || !strings.Contains(ve.Reason, tc.want) {
				t.Fatalf("err %v; want line %d containing %q", perr, tc.wantLine, tc.want)
			}
		})
	}
}

// BenchmarkVerifyRealEvents verifies a keyed log of real events' shapes
// (what bench-audit.sh measures against sha256sum at 300k events).
func BenchmarkVerifyRealEvents(b *testing.B) {
	path, key := realEventsLog(b, 30000)
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := VerifyKeyed(bytes.NewReader(raw), nil, []Key{key}); err != nil {
			b.Fatal(err)
		}
	}
}
