package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// makeLog writes n events through a Writer and returns the log path and its lines.
func makeLog(t *testing.T, n int) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Write(Event{Event: EventExec, Agent: "a", Action: "tool:exec:cmd" + strconv.Itoa(i), Decision: DecisionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, bytes.SplitAfter(raw, []byte("\n"))[:n]
}

func join(lines [][]byte) []byte { return bytes.Join(lines, nil) }

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(lines [][]byte) []byte
		dropHead bool
		wantLine int    // 0: whole-log error
		want     string // substring of the reason
	}{
		{"edit a field mid-log", func(l [][]byte) []byte {
			l[4] = bytes.Replace(l[4], []byte(`"allow"`), []byte(`"deny"`), 1)
			return join(l)
		}, false, 6, "prev hash does not match line 5"},
		{"edit the last line", func(l [][]byte) []byte {
			l[9] = bytes.Replace(l[9], []byte("cmd9"), []byte("cmdX"), 1)
			return join(l)
		}, false, 10, "differs from the one the head file records"},
		{"delete a line", func(l [][]byte) []byte {
			return join(append(l[:3:3], l[4:]...))
		}, false, 4, "seq 5 follows seq 3"},
		{"swap two lines", func(l [][]byte) []byte {
			l[2], l[3] = l[3], l[2]
			return join(l)
		}, false, 3, "seq 4 follows seq 2"},
		{"delete the first line", func(l [][]byte) []byte { return join(l[1:]) }, false, 1, "does not start at seq 1"},
		{"truncate the end", func(l [][]byte) []byte { return join(l[:7]) }, false, 0, "log truncated: the head file records seq 10 but the log ends at seq 7"},
		{"truncate everything", func(l [][]byte) []byte { return nil }, false, 0, "log truncated"},
		{"torn last line", func(l [][]byte) []byte {
			b := join(l)
			return b[:len(b)-20]
		}, false, 10, "torn last line"},
		{"garbage line", func(l [][]byte) []byte {
			l[5] = []byte("not json\n")
			return join(l)
		}, false, 6, "not a JSON event"},
		{"forged line with recomputed chain but stale head", func(l [][]byte) []byte {
			// Rewrite the last line and fix nothing else: head catches it.
			e, _ := ParseLine(bytes.TrimSuffix(l[9], []byte("\n")))
			e.Decision = DecisionDeny
			line, _ := marshalLine(&e)
			l[9] = line
			return join(l)
		}, false, 10, "differs from the one the head file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, lines := makeLog(t, 10)
			if err := os.WriteFile(path, tc.mutate(lines), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.dropHead {
				os.Remove(path + HeadSuffix)
			}
			_, err := VerifyFile(path)
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("verify: err %v, want a VerifyError", err)
			}
			if ve.Line != tc.wantLine || !strings.Contains(ve.Reason, tc.want) {
				t.Fatalf("verify: %v; want line %d containing %q", ve, tc.wantLine, tc.want)
			}
		})
	}
}

// TestVerifyMissingHead: a keyed log written by the writer, its tail cut
// off and its head file deleted, must not verify: nothing vouches for its
// end. The failure names the missing head file; NoHead accepts the log
// with a warning; the intact log with its head verifies; a rotated set
// whose current file lost its head fails the same way.
func TestVerifyMissingHead(t *testing.T) {
	write := func(t *testing.T, path string, n int) [][]byte {
		t.Helper()
		w, err := OpenKeyed(path, "")
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := w.Write(Event{Event: EventExec, Agent: "a", Action: "tool:exec:cmd" + strconv.Itoa(i), Decision: DecisionAllow}); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.SplitAfter(raw, []byte("\n"))[:n]
	}
	for _, tc := range []struct {
		name      string
		mutate    func(path string, lines [][]byte)
		noHead    bool
		want      string // "" verifies
		wantLines int
	}{
		{"intact with head", func(string, [][]byte) {}, false, "", 5},
		{"truncated, head deleted", func(p string, l [][]byte) {
			os.WriteFile(p, join(l[:3]), 0o600)
			os.Remove(p + HeadSuffix)
		}, false, "head file %s.head is missing or empty: nothing vouches for the end of the log (3 lines, last seq 3)", 0},
		{"truncated, head emptied", func(p string, l [][]byte) {
			os.WriteFile(p, join(l[:3]), 0o600)
			os.WriteFile(p+HeadSuffix, nil, 0o600)
		}, false, "head file %s.head is missing or empty", 0},
		{"truncated, head deleted, NoHead", func(p string, l [][]byte) {
			os.WriteFile(p, join(l[:3]), 0o600)
			os.Remove(p + HeadSuffix)
		}, true, "", 3},
		{"truncated, head kept", func(p string, l [][]byte) { os.WriteFile(p, join(l[:3]), 0o600) }, false, "log truncated: the head file records seq 5", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			tc.mutate(path, write(t, path, 5))
			keys, err := defaultKeys(path)
			if err != nil || len(keys) != 1 {
				t.Fatalf("key of the keyed log: %v %v", keys, err)
			}
			check := func(what string, res VerifyResult, err error) {
				t.Helper()
				if tc.want == "" {
					if err != nil || res.Lines != tc.wantLines || res.MACsChecked != tc.wantLines {
						t.Fatalf("%s: %+v, %v; want %d lines verified with their MACs", what, res, err, tc.wantLines)
					}
					if tc.noHead && (res.HeadUsed || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, "no head file") })) {
						t.Fatalf("%s: NoHead result %+v lacks the no-head warning", what, res)
					}
					return
				}
				want := tc.want
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, path)
				}
				var ve *VerifyError
				if !errors.As(err, &ve) || !strings.Contains(ve.Error(), want) {
					t.Fatalf("%s: %v; want a VerifyError containing %q", what, err, want)
				}
				if strings.Contains(tc.want, "missing") != errors.Is(err, ErrHeadMissing) {
					t.Fatalf("%s: errors.Is(%v, ErrHeadMissing) = %v", what, err, errors.Is(err, ErrHeadMissing))
				}
			}
			if !tc.noHead {
				res, err := VerifyFile(path)
				check("VerifyFile", res, err)
			}
			res, err := VerifyFilesWith(VerifyOptions{Keys: keys, NoHead: tc.noHead}, path)
			check("VerifyFilesWith", res, err)
		})
	}
	// A rotated set: the current file's missing head fails it, naming
	// that file; rotated files never had one of their own.
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	write(t, path, 3)
	old, err := Rotate(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, 2)
	if res, err := VerifyFiles(old, path); err != nil || res.Lines != 6 || !res.HeadUsed {
		t.Fatalf("rotated set: %+v, %v; want 6 lines, head checked", res, err)
	}
	os.Remove(path + HeadSuffix)
	if _, err := VerifyFiles(old, path); !errors.Is(err, ErrHeadMissing) || !strings.Contains(err.Error(), path+": head file "+path+".head is missing") {
		t.Fatalf("rotated set without the current head: %v; want ErrHeadMissing naming %s", err, path)
	}
}

func TestVerifyHeadLagging(t *testing.T) {
	path, _ := makeLog(t, 3)
	headBefore, _ := os.ReadFile(path + HeadSuffix)
	w, _ := Open(path)
	w.Write(Event{Event: EventExit})
	w.Close()
	// Simulate a writer killed after appending but before updating the head.
	os.WriteFile(path+HeadSuffix, headBefore, 0o600)
	res, err := VerifyFile(path)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "lags the log by 1") {
		t.Fatalf("want a lag warning, got %+v", res)
	}
}

// TestWriterRecordsTampering: a writer that finds the tail inconsistent with
// the head file appends a violation event, so later writes do not paper over
// the damage and Verify still fails.
func TestWriterRecordsTampering(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(path string, lines [][]byte)
		kind     string
		wantLine int
	}{
		{"truncated", func(p string, l [][]byte) { os.WriteFile(p, join(l[:3]), 0o600) }, "truncated", 4},
		{"emptied", func(p string, l [][]byte) { os.WriteFile(p, nil, 0o600) }, "truncated", 1},
		{"tail edited", func(p string, l [][]byte) {
			l[4] = bytes.Replace(l[4], []byte("cmd4"), []byte("cmdX"), 1)
			os.WriteFile(p, join(l), 0o600)
		}, "tail_edited", 6},
		{"head deleted", func(p string, l [][]byte) { os.Remove(p + HeadSuffix) }, "no_head", 6},
		{"head garbage", func(p string, l [][]byte) { os.WriteFile(p+HeadSuffix, []byte("junk"), 0o600) }, "bad_head", 6},
		{"torn tail", func(p string, l [][]byte) {
			b := join(l)
			os.WriteFile(p, b[:len(b)-10], 0o600)
		}, "torn_tail", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, lines := makeLog(t, 5)
			tc.mutate(path, lines)
			w, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(Event{Event: EventExec, Action: "after"}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			var evs []Event
			f, _ := os.Open(path)
			defer f.Close()
			Scan(f, Filter{}, func(e Event) error { evs = append(evs, e); return nil }, func(*LineError) error { return nil })
			var found bool
			for _, e := range evs {
				if e.Event == EventViolation && e.Detail[DetailTamper] == tc.kind {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s violation event in %+v", tc.kind, evs)
			}
			if last := evs[len(evs)-1]; last.Action != "after" {
				t.Fatalf("last event %+v, want the caller's", last)
			}
			_, err = VerifyFile(path)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Line != tc.wantLine {
				t.Fatalf("verify: %v, want failure at line %d", err, tc.wantLine)
			}
		})
	}
}

func TestVerifyWarnsAboutLoosePermissions(t *testing.T) {
	path, _ := makeLog(t, 2)
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	res, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "writable by group or others (mode 0666)") {
		t.Fatalf("warnings %q", res.Warnings)
	}
}
