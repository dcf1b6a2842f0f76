// Package registry is the per-user record of agentbox runs in progress, so
// that `agentbox ps` can list them and `agentbox stop` can end one, whichever
// process (the CLI or an embedding orchestrator) launched it.
//
// Each run is one JSON file, <dir>/<run id>.json, written atomically
// (temporary file + rename) by the process that launched the run and removed
// when the run ends. The directory is private to its user (0700, owned by
// them); the launcher refuses a registry directory the sandbox could write
// (see agentbox.New), so a sandboxed command cannot forge or remove entries.
// An entry whose launcher is gone (killed with SIGKILL) is stale: List skips
// and removes it.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/jsonstr"
	"github.com/agentbox/agentbox/internal/procfs"
)

// Entry describes one run in progress.
type Entry struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Role      string    `json:"role"`
	Workspace string    `json:"workspace"`
	Argv      []string  `json:"argv"`
	Started   time.Time `json:"started"`
	// Launcher is the pid of the process running the supervisor, and
	// LauncherStart its start time (clock ticks since boot), so a reused
	// pid is never mistaken for it.
	Launcher      int    `json:"launcher"`
	LauncherStart uint64 `json:"launcher_start"`
	// Pid is the sandboxed command's pid (leader of its own session and
	// process group), PidStart its start time; 0 until it has started.
	Pid      int    `json:"pid"`
	PidStart uint64 `json:"pid_start,omitempty"`
	// Pending is the number of approvals the run is waiting for.
	Pending int    `json:"pending"`
	Audit   string `json:"audit,omitempty"`
	// Review: the run writes into a layer of its own (agentbox diff,
	// apply, discard once it ends).
	Review bool `json:"review,omitempty"`
}

// DefaultDir is where runs are registered: $AGENTBOX_RUN_REGISTRY when set
// (tests, or several registries on one host), else /run/agentbox/runs for
// root, $XDG_RUNTIME_DIR/agentbox/runs for a user who has one, else
// /tmp/agentbox-UID/runs.
func DefaultDir() string {
	if d := os.Getenv("AGENTBOX_RUN_REGISTRY"); d != "" && filepath.IsAbs(d) {
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/agentbox/runs"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", "runs")
	}
	return filepath.Join(os.TempDir(), "agentbox-"+strconv.Itoa(os.Geteuid()), "runs")
}

// ensureDir creates dir (and a private parent) and checks that it is a real
// directory owned by us and closed to others.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("run registry %s: %w", dir, err)
	}
	return checkDir(dir)
}

func checkDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("run registry %s: %w", dir, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("run registry %s: not a directory", dir)
	case ok && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("run registry %s: owned by uid %d, not by us (uid %d)", dir, sys.Uid, os.Geteuid())
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("run registry %s: writable by group or others (mode %v)", dir, st.Mode().Perm())
	}
	return nil
}

// marshal encodes e as encoding/json would (strings without HTML escaping,
// which readers do not need), by hand: a launch writes the entry twice and
// would otherwise be the one user of encoding/json's encoder on its path.
// TestEntryMarshal holds the two to the same decoded entry.
func (e Entry) marshal() ([]byte, error) {
	if y := e.Started.Year(); y < 0 || y > 9999 {
		return json.Marshal(e) // its error names the problem
	}
	b := make([]byte, 0, 256)
	str := func(key, v string) {
		b = append(b, key...)
		b = jsonstr.Append(b, v)
	}
	num := func(key string, v uint64) {
		b = append(b, key...)
		b = strconv.AppendUint(b, v, 10)
	}
	str(`{"id":`, e.ID)
	str(`,"agent":`, e.Agent)
	str(`,"role":`, e.Role)
	str(`,"workspace":`, e.Workspace)
	b = append(b, `,"argv":`...)
	if e.Argv == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range e.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, a)
		}
		b = append(b, ']')
	}
	b = append(b, `,"started":"`...)
	b = e.Started.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = append(b, `,"launcher":`...)
	b = strconv.AppendInt(b, int64(e.Launcher), 10)
	num(`,"launcher_start":`, e.LauncherStart)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(e.Pid), 10)
	if e.PidStart != 0 {
		num(`,"pid_start":`, e.PidStart)
	}
	b = append(b, `,"pending":`...)
	b = strconv.AppendInt(b, int64(e.Pending), 10)
	if e.Audit != "" {
		str(`,"audit":`, e.Audit)
	}
	if e.Review {
		b = append(b, `,"review":true`...)
	}
	return append(b, '}'), nil
}

// Put writes e as dir/<e.ID>.json, replacing an earlier version atomically.
func Put(dir string, e Entry) error {
	if !validID(e.ID) {
		return fmt.Errorf("run registry: invalid run id %q", e.ID)
	}
	if err := ensureDir(dir); err != nil {
		return err
	}
	data, err := e.marshal()
	if err != nil {
		return fmt.Errorf("run registry: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+e.ID+".*")
	if err != nil {
		return fmt.Errorf("run registry: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("run registry: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("run registry: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, e.ID+".json")); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("run registry: %w", err)
	}
	return nil
}

// Remove deletes the entry of run id; a missing entry is not an error.
func Remove(dir, id string) error {
	if !validID(id) {
		return fmt.Errorf("run registry: invalid run id %q", id)
	}
	err := os.Remove(filepath.Join(dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// ErrNotFound is returned by Get for a run that is not registered (never
// was, has ended, or its launcher died).
var ErrNotFound = errors.New("no such run")

// Get returns the live entry of run id.
func Get(dir, id string) (Entry, error) {
	if !validID(id) {
		return Entry{}, fmt.Errorf("run id %q: %w", id, ErrNotFound)
	}
	e, err := read(filepath.Join(dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Entry{}, err
	}
	if !Alive(e.Launcher, e.LauncherStart) {
		_ = Remove(dir, id)
		return Entry{}, fmt.Errorf("run %s: %w (its launcher is gone)", id, ErrNotFound)
	}
	return e, nil
}

// List returns the live entries, oldest first. Stale entries (launcher
// gone) are removed; unreadable ones are skipped.
func List(dir string) ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		if err := checkDir(dir); err != nil {
			return nil, err
		}
	}
	var out []Entry
	for _, n := range names {
		e, err := read(n)
		if err != nil {
			continue
		}
		if !Alive(e.Launcher, e.LauncherStart) {
			_ = os.Remove(n)
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

func read(path string) (Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return Entry{}, fmt.Errorf("run registry %s: %w", path, err)
	}
	return e, nil
}

// validID accepts the run ids agentbox generates (hex) and similar safe
// names; it keeps ids from naming paths.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// StartTime returns a process's start time (see procfs.StartTime).
func StartTime(pid int) (uint64, error) { return procfs.StartTime(pid) }

// Alive reports whether pid is still the process that started at start.
func Alive(pid int, start uint64) bool { return procfs.Alive(pid, start) }
