package registry

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func self(t *testing.T) (int, uint64) {
	t.Helper()
	st, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return os.Getpid(), st
}

func TestPutGetListRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	pid, st := self(t)
	e := Entry{ID: "abc123", Agent: "a", Role: "developer", Launcher: pid, LauncherStart: st, Started: time.Now()}
	if err := Put(dir, e); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("registry dir %v %v; want mode 0700", fi, err)
	}
	e.Pending = 2
	if err := Put(dir, e); err != nil {
		t.Fatal(err)
	}
	got, err := Get(dir, "abc123")
	if err != nil || got.Pending != 2 || got.Agent != "a" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	list, err := List(dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("registry holds %d files, want 1 (no temporary files left)", len(ents))
	}
	if err := Remove(dir, "abc123"); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(dir, "abc123"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Remove = %v; want ErrNotFound", err)
	}
	if err := Remove(dir, "abc123"); err != nil {
		t.Errorf("second Remove = %v; want nil", err)
	}
}

// TestStaleEntry: the entry of a launcher that died (a real process that
// exited) is not listed and is removed.
func TestStaleEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	st, _ := StartTime(pid)
	c.Wait()
	if err := Put(dir, Entry{ID: "dead", Launcher: pid, LauncherStart: st}); err != nil {
		t.Fatal(err)
	}
	me, myStart := self(t)
	// A live pid with another start time is a reused pid: stale too.
	if err := Put(dir, Entry{ID: "reused", Launcher: me, LauncherStart: myStart + 1}); err != nil {
		t.Fatal(err)
	}
	list, err := List(dir)
	if err != nil || len(list) != 0 {
		t.Fatalf("List = %+v, %v; want no live runs", list, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("stale entries left: %v", ents)
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"", "../x", "a/b", "x.json", string(make([]byte, 65))} {
		if err := Put(dir, Entry{ID: id}); err == nil {
			t.Errorf("Put with id %q accepted", id)
		}
		if _, err := Get(dir, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v; want ErrNotFound", id, err)
		}
	}
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if err := Put(open, Entry{ID: "x"}); err == nil {
		t.Error("Put into a world-writable registry directory accepted")
	}
}

// TestEntryMarshal: the hand encoder writes JSON that decodes to the same
// entry as encoding/json's, and the same bytes where encoding/json does
// not escape HTML characters.
func TestEntryMarshal(t *testing.T) {
	base := Entry{ID: "r1", Agent: "a1", Role: "developer", Workspace: "/w", Argv: []string{"claude", "--print", "x"},
		Started: time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC), Launcher: 10, LauncherStart: 99, Pid: 11, PidStart: 100, Pending: 2, Audit: "/var/log/a.jsonl"}
	review := base
	review.Review = true // ps marks it (review): the field must survive the hand encoder
	cases := []Entry{base, review, {}, {ID: "x", Argv: []string{}}}
	odd := base
	odd.Workspace, odd.Argv = "/w/\"q\"\\\n\t\x01é\u2028", []string{"a b", "<&>", "\xff"}
	odd.Started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 5*3600+1800))
	odd.PidStart, odd.Audit = 0, ""
	cases = append(cases, odd)
	for _, e := range cases {
		got, err := e.marshal()
		if err != nil {
			t.Fatal(err)
		}
		var a, b Entry
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		want, _ := json.Marshal(e)
		json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("decoded %+v, encoding/json's decodes to %+v", a, b)
		}
		if !strings.ContainsAny(strings.Join(e.Argv, ""), "<&>") && string(got) != string(want) {
			t.Errorf("bytes differ:\n%s\n%s", got, want)
		}
	}
	far := base
	far.Started = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := far.marshal(); err == nil {
		t.Error("a year past 9999 encoded without error")
	}
}
