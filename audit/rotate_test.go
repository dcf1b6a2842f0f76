package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeN(t *testing.T, w *Writer, n int, what string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := w.Write(Event{Event: EventExec, Action: "tool:exec:" + what}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRotationContinuesTheChain: the log renamed away (logrotate), removed,
// or rotated with Rotate while a writer has it open: the writer continues
// in a new file at its path whose first event names the old one and
// carries its last hash, and the set verifies as one chain.
func TestRotationContinuesTheChain(t *testing.T) {
	for _, how := range []string{"rename", "remove", "Rotate"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "a.jsonl")
			w, err := Open(log)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w2, err := Open(log) // a second writer (another run) on the same log
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			writeN(t, w, 3, "before")
			old := log + ".1"
			switch how {
			case "rename":
				must(t, os.Rename(log, old))
			case "remove":
				data, _ := os.ReadFile(log)
				must(t, os.WriteFile(old, data, 0o600)) // a copy, to verify with
				must(t, os.Remove(log))
			case "Rotate":
				got, err := Rotate(log)
				if err != nil || got != old {
					t.Fatalf("Rotate = %q, %v", got, err)
				}
			}
			writeN(t, w, 2, "after")
			writeN(t, w2, 2, "after2")
			evs, err := ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 5 || evs[0].Event != EventRotate || evs[0].Seq != 4 {
				t.Fatalf("new file: %d events, first %+v; want a rotate event (seq 4) then 4", len(evs), evs[0])
			}
			if how != "remove" && evs[0].Detail[DetailRotatedFrom] != old {
				t.Errorf("rotate event names %q, want %q", evs[0].Detail[DetailRotatedFrom], old)
			}
			if how == "remove" && !strings.Contains(evs[0].Detail[DetailRotatedFrom], "deleted") {
				t.Errorf("rotate event of a removed log names %q", evs[0].Detail[DetailRotatedFrom])
			}
			res, err := VerifyFiles(old, log)
			if err != nil || res.Lines != 8 || !res.HeadUsed {
				t.Fatalf("VerifyFiles = %+v, %v; want 8 lines, head checked", res, err)
			}
			alone, err := VerifyFile(log)
			if err != nil || !strings.Contains(strings.Join(alone.Warnings, " "), "was not given") {
				t.Errorf("VerifyFile(new) = %+v, %v; want ok with a continuity warning", alone, err)
			}
			// A line cut off the end of the rotated file breaks continuity.
			data, _ := os.ReadFile(old)
			lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
			must(t, os.WriteFile(old, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600))
			if _, err := VerifyFiles(old, log); err == nil || !strings.Contains(err.Error(), "does not continue") {
				t.Errorf("VerifyFiles after cutting the rotated file = %v; want a continuity error", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRotationBetweenRuns: logrotate's create mode while no agentbox has
// the log open (the usual case between runs): the log renamed to
// <log>.1 (or <log>-DATE) and an empty one created, or none. The next
// writer continues the chain from the renamed file with a rotate event.
// An emptied log with no such file beside it is still reported as
// truncated.
func TestRotationBetweenRuns(t *testing.T) {
	for _, c := range []struct {
		how       string
		rotatedTo string // "" = not renamed: emptied in place
		create    bool
	}{
		{"rename and create", ".1", true},
		{"rename only", ".1", false},
		{"dateext", "-20261124", true},
		{"emptied in place", "", false},
	} {
		t.Run(c.how, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "a.jsonl")
			w, err := Open(log)
			if err != nil {
				t.Fatal(err)
			}
			writeN(t, w, 3, "first run")
			must(t, w.Close())
			if c.rotatedTo != "" {
				must(t, os.Rename(log, log+c.rotatedTo))
				if c.create {
					must(t, os.WriteFile(log, nil, 0o600))
				}
			} else {
				must(t, os.Truncate(log, 0))
			}
			w2, err := Open(log)
			if err != nil {
				t.Fatal(err)
			}
			writeN(t, w2, 2, "second run")
			must(t, w2.Close())
			evs, err := ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if c.rotatedTo == "" {
				if evs[0].Event != EventViolation || !strings.Contains(evs[0].Reason, "truncated") {
					t.Errorf("an emptied log: first event %+v; want a truncation violation", evs[0])
				}
				return
			}
			if evs[0].Event != EventRotate || evs[0].Seq != 4 || evs[0].Detail[DetailRotatedFrom] != log+c.rotatedTo {
				t.Fatalf("first event %+v; want a rotate event (seq 4) naming %s", evs[0], log+c.rotatedTo)
			}
			if res, err := VerifyFiles(log+c.rotatedTo, log); err != nil || res.Lines != 6 {
				t.Errorf("VerifyFiles = %+v, %v; want one chain of 6 lines", res, err)
			}
		})
	}
}
