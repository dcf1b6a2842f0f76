package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCapFields: a 1 MB argv and a 4 MiB action are written as a bounded
// line whose markers carry the full length and SHA-256; the log still
// verifies; small events are written as they are.
func TestCapFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	target := strings.Repeat("h", 4<<20)
	argv := []string{"echo", big, "tail"}
	if err := w.Write(Event{Event: EventExec, Action: "tool:net:" + target + ":443", Argv: argv}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Event{Event: EventExec, Action: "tool:exec:ls", Argv: []string{"ls"}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || len(lines[0]) > 3*MaxArgv {
		t.Fatalf("%d lines, first %d bytes; want it bounded", len(lines), len(lines[0]))
	}
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := evs[0]
	sum := sha256.Sum256([]byte(big))
	if !strings.Contains(e.Argv[1], "cut: 1048576 bytes, sha256:"+hex.EncodeToString(sum[:])) || e.Argv[2] != "tail" {
		t.Errorf("argv word not marked with its length and hash: %.80q ... %q", e.Argv[1], e.Argv[len(e.Argv)-1])
	}
	if !strings.Contains(e.Action, "cut: ") || e.Detail["capped"] != "action,argv" {
		t.Errorf("action %.60q... capped %q", e.Action, e.Detail["capped"])
	}
	if evs[1].Detail["capped"] != "" || evs[1].Argv[0] != "ls" {
		t.Errorf("a small event was changed: %+v", evs[1])
	}
	if _, err := VerifyFile(path); err != nil {
		t.Errorf("capped log does not verify: %v", err)
	}
	// Many words: kept while they fit, the rest one marker.
	many := make([]string, 5000)
	for i := range many {
		many[i] = strings.Repeat("w", 20)
	}
	got := capArgv(many)
	if size := len(strings.Join(got, "")); size > MaxArgv+200 || !strings.Contains(got[len(got)-1], "more words cut") {
		t.Errorf("5000 words: %d kept, %d bytes, last %q", len(got), size, got[len(got)-1])
	}
}

// TestInvalidUTF8Argv: an argv word that is not UTF-8 is kept exactly, in
// $'...' form, instead of as U+FFFD; valid words are untouched.
func TestInvalidUTF8Argv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Event{Event: EventExec, Action: "tool:exec:printf x", Argv: []string{"printf", "\xff\xfeA", "é"}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := evs[0]
	if e.Argv[1] != `$'\xff\xfeA'` || e.Argv[2] != "é" || e.Detail["argv_quoted"] != "1" {
		t.Errorf("argv %q detail %v", e.Argv, e.Detail)
	}
}
