package audit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// parLog writes a keyed log of n events and returns its bytes and key.
func parLog(t testing.TB, n int) ([]byte, Key) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	w, err := OpenKeyed(path, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Write(Event{Agent: "a1", Role: "developer", Run: "r1", Event: EventExec, Pid: 100 + i,
			Action: fmt.Sprintf("tool:exec:cc -c f%d.c", i), Argv: []string{"cc", "-c", fmt.Sprintf("f%d.c", i)}, Decision: DecisionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	key, err := LoadKey(KeyPath(path, ""), false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, key
}

// TestVerifyParallelMatches: on intact, edited, cut, torn and reordered
// logs, with and without the key, the parallel verifier gives exactly
// the sequential one's result and error — also across chunk borders.
func TestVerifyParallelMatches(t *testing.T) {
	log, key := parLog(t, 6000) // a few chunks
	lines := bytes.SplitAfter(log, []byte("\n"))
	mid := len(lines) / 2
	variants := map[string][]byte{
		"intact":     log,
		"torn tail":  log[:len(log)-7],
		"edited":     bytes.Replace(log, []byte("f3001.c"), []byte("f3001.x"), 1),
		"line cut":   bytes.Join(append(append([][]byte{}, lines[:mid]...), lines[mid+1:]...), nil),
		"swapped":    bytes.Join(append(append(append([][]byte{}, lines[:mid]...), lines[mid+1], lines[mid]), lines[mid+2:]...), nil),
		"empty line": bytes.Join(append(append(append([][]byte{}, lines[:mid]...), []byte("\n")), lines[mid:]...), nil),
		"empty":      nil,
	}
	for name, data := range variants {
		for _, keys := range [][]Key{nil, {key}} {
			sr, serr := verifySequential(bytes.NewReader(data), nil, nil, keys)
			pr, perr := verifyParallel(bytes.NewReader(data), nil, nil, keys)
			if fmt.Sprint(serr) != fmt.Sprint(perr) || !reflect.DeepEqual(sr, pr) {
				t.Errorf("%s (keys %d): sequential %+v %v, parallel %+v %v", name, len(keys), sr, serr, pr, perr)
			}
		}
	}
}

// FuzzVerifyParallel: for any input the two verifiers agree.
func FuzzVerifyParallel(f *testing.F) {
	log, _ := parLog(f, 20)
	f.Add(log)
	f.Add(log[:len(log)-3])
	f.Add([]byte("{}\n\n{\"seq\":1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sr, serr := verifySequential(bytes.NewReader(data), nil, nil, nil)
		pr, perr := verifyParallel(bytes.NewReader(data), nil, nil, nil)
		if fmt.Sprint(serr) != fmt.Sprint(perr) || !reflect.DeepEqual(sr, pr) {
			t.Fatalf("sequential %+v %v, parallel %+v %v", sr, serr, pr, perr)
		}
	})
}

// TestSummarizeParallelMatches: the report's one pass gives the same
// report, result and integrity error on one CPU and on several.
func TestSummarizeParallelMatches(t *testing.T) {
	log, _ := parLog(t, 3000)
	lines := bytes.SplitAfter(log, []byte("\n"))
	mid := len(lines) / 2
	for name, data := range map[string][]byte{
		"intact":    log,
		"torn tail": log[:len(log)-7],
		"edited":    bytes.Replace(log, []byte("f1501.c"), []byte("f1501.x"), 1),
		"garbage":   bytes.Join(append(append(append([][]byte{}, lines[:mid]...), []byte("not json\n")), lines[mid:]...), nil),
	} {
		path := filepath.Join(t.TempDir(), "a.jsonl")
		os.WriteFile(path, data, 0o600)
		run := func(procs int) string {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			rep, res, verr, err := SummarizeFile(path, Filter{})
			j, _ := json.Marshal(rep)
			return fmt.Sprintf("%s|%+v|%v|%v", j, res, verr, err)
		}
		if one, many := run(1), run(4); one != many {
			t.Errorf("%s: one CPU:\n%s\nseveral:\n%s", name, one, many)
		}
	}
}

// legacySign is sign as it was before digest MACs: an HMAC of the signed
// bytes, plain hex.
func legacySign(k Key, line []byte) []byte {
	body := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("}"))
	signed := append(append([]byte{}, body...), `,"kid":"`+k.ID+`"`...)
	return append(signed, `,"mac":"`+hex.EncodeToString(k.macOf(signed))+`"}`+"\n"...)
}

// TestLegacyMACsVerify: a log written before digest MACs ("s:") still
// verifies with its key, on one CPU and on several, and a legacy line
// with a wrong MAC fails both; new lines carry the digest form.
func TestLegacyMACsVerify(t *testing.T) {
	k := NewKey(bytes.Repeat([]byte{7}, 32))
	var log []byte
	prev := ""
	for i := 1; i <= 50; i++ {
		e := Event{Time: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Seq: uint64(i), Prev: prev, Event: EventExec, Action: fmt.Sprintf("tool:exec:ls %d", i), Decision: DecisionAllow}
		b, err := marshalLine(&e)
		if err != nil {
			t.Fatal(err)
		}
		line := legacySign(k, b)
		log = append(log, line...)
		prev = LineHash(line[:len(line)-1])
	}
	for _, verify := range []func([]byte, []Key) error{
		func(d []byte, keys []Key) error {
			_, err := verifySequential(bytes.NewReader(d), nil, nil, keys)
			return err
		},
		func(d []byte, keys []Key) error {
			_, err := verifyParallel(bytes.NewReader(d), nil, nil, keys)
			return err
		},
	} {
		if err := verify(log, []Key{k}); err != nil {
			t.Errorf("legacy log: %v", err)
		}
		bad := bytes.Replace(log, []byte(`"mac":"`), []byte(`"mac":"0`), 1)
		if err := verify(bad, []Key{k}); err == nil {
			t.Errorf("legacy log with a changed MAC verified")
		}
	}
	if signed := k.sign([]byte(`{"seq":1}` + "\n")); !bytes.Contains(signed, []byte(`"mac":"s:`)) {
		t.Errorf("new lines are not digest-signed: %s", signed)
	}
}
