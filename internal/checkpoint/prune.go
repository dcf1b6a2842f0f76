package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lock takes the store's lock (LOCK_SH for taking a checkpoint, LOCK_EX
// for pruning: a content a checkpoint being taken reuses is never swept
// from under it) and returns its release.
func (s *Store) lock(how int) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint store: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Info is one checkpoint in the store.
type Info struct {
	ID   string
	Time time.Time
}

// List returns the store's checkpoints, oldest first.
func (s *Store) List() ([]Info, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "checkpoints"))
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	var out []Info
	for _, d := range ents {
		id, ok := strings.CutSuffix(d.Name(), ".json")
		if !ok || validID(id) != nil {
			continue
		}
		r, err := s.record(id)
		if err != nil {
			return nil, err
		}
		t := r.Time
		// a checkpoint a run started from again (Recorder.startSame)
		// has its record's mtime set then: its age counts from that use
		if fi, err := d.Info(); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime().UTC()
		}
		out = append(out, Info{ID: id, Time: t})
	}
	slices.SortFunc(out, func(a, b Info) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func (s *Store) record(id string) (record, error) {
	r, _, err := s.recordAt(id)
	return r, err
}

// recordAt is record with the record file's mtime (its last use as a
// run's start: List).
func (s *Store) recordAt(id string) (record, time.Time, error) {
	var r record
	f, err := os.Open(filepath.Join(s.dir, "checkpoints", id+".json"))
	if err != nil {
		return r, time.Time{}, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return r, time.Time{}, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return r, time.Time{}, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Root) != 64 {
		return r, time.Time{}, fmt.Errorf("checkpoint %s: corrupted manifest", id)
	}
	return r, fi.ModTime(), nil
}

// Budget bounds a store: checkpoints older than MaxAge go, the newest Keep
// excepted, then the oldest while the store takes more than MaxBytes on
// disk (its blocks, not its files' lengths) — the newest Keep too, down to
// none: a budget is a bound, and a run whose latest checkpoint went takes
// a new one before its next command or denies it (Recorder.Before).
// Zero MaxBytes or MaxAge means no such bound.
type Budget struct {
	MaxBytes int64
	MaxAge   time.Duration
	Keep     int
}

// Pruned says what Prune removed.
type Pruned struct {
	Removed []string // checkpoint ids, oldest first
	Freed   int64    // bytes on disk of contents and trees no checkpoint kept uses
	Size    int64    // the store's bytes on disk afterwards
}

// Prune removes checkpoints beyond b, oldest first, and the contents and
// trees only they used. Contents and trees written after Prune started
// (a checkpoint being taken) are never removed.
func (s *Store) Prune(b Budget, now time.Time) (Pruned, error) {
	var p Pruned
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return p, err
	}
	defer unlock()
	list, err := s.List()
	if err != nil {
		return p, err
	}
	started := time.Now()
	drop := func() error {
		id := list[0].ID
		if err := os.Remove(filepath.Join(s.dir, "checkpoints", id+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checkpoint store: %w", err)
		}
		p.Removed = append(p.Removed, id)
		list = list[1:]
		return nil
	}
	for len(list) > b.Keep && b.MaxAge > 0 && now.Sub(list[0].Time) > b.MaxAge {
		if err := drop(); err != nil {
			return p, err
		}
	}
	for {
		freed, size, err := s.sweep(list, started)
		if err != nil {
			return p, err
		}
		p.Freed += freed
		p.Size = size
		if b.MaxBytes <= 0 || size <= b.MaxBytes || len(list) == 0 {
			return p, nil
		}
		if err := drop(); err != nil {
			return p, err
		}
	}
}

// sweep removes every content and tree no checkpoint of keep reaches
// (and that is older than started), and returns the bytes freed and the
// store's remaining size.
func (s *Store) sweep(keep []Info, started time.Time) (freed, size int64, err error) {
	live := map[string]bool{}
	for _, in := range keep {
		r, err := s.record(in.ID)
		if err != nil {
			return 0, 0, err
		}
		if err := s.mark(r.Root, live, 0); err != nil {
			return 0, 0, fmt.Errorf("checkpoint %s: %w", in.ID, err)
		}
	}
	for _, sub := range []string{"objects", "trees"} {
		err := filepath.WalkDir(filepath.Join(s.dir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return nil // removed meanwhile
			}
			blocks := fi.Size()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				blocks = st.Blocks * 512 // a sparse object takes what its data takes
			}
			hash := filepath.Base(filepath.Dir(p)) + d.Name()
			if live[sub+hash] || fi.ModTime().After(started) || strings.HasPrefix(d.Name(), ".") {
				size += blocks
				return nil
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			freed += blocks
			return nil
		})
		if err != nil {
			return freed, size, fmt.Errorf("checkpoint store: %w", err)
		}
	}
	return freed, size, nil
}

// mark adds tree hash and everything it reaches to live ("trees"+hash,
// "objects"+hash).
func (s *Store) mark(hash string, live map[string]bool, depth int) error {
	if live["trees"+hash] {
		return nil
	}
	if depth > maxTreeDepth {
		return fmt.Errorf("trees nested deeper than %d", maxTreeDepth)
	}
	t, err := s.loadTree(hash, "")
	if err != nil {
		return err
	}
	live["trees"+hash] = true
	for _, b := range s.treeBases(hash) {
		live["trees"+b] = true // a delta needs its bases
	}
	for _, te := range t {
		switch te.Kind {
		case File:
			live["objects"+te.Hash] = true
		case Dir:
			if err := s.mark(te.Hash, live, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// pruneDue reports whether the store was last pruned (by any process)
// longer than every ago, and if so marks it pruned now.
func (s *Store) pruneDue(every time.Duration) bool {
	stamp := filepath.Join(s.dir, "pruned")
	if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < every {
		return false
	}
	f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_CLOEXEC, 0o600)
	if err == nil {
		f.Close()
		now := time.Now()
		os.Chtimes(stamp, now, now)
	}
	return true
}

// touchRecord sets the mtime of checkpoint id's record to now (List
// counts its age from then); best effort: a failure leaves the age from
// when it was taken.
func (s *Store) touchRecord(id string) {
	now := unix.NsecToTimespec(time.Now().UnixNano())
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(s.dir, "checkpoints", id+".json"), []unix.Timespec{{Nsec: unix.UTIME_OMIT}, now}, unix.AT_SYMLINK_NOFOLLOW)
}

// hasRecord reports whether checkpoint id is (still) in the store. Under
// the store's lock a checkpoint that has its record has its trees and
// contents: Prune removes the record first, under the exclusive lock.
func (s *Store) hasRecord(id string) bool {
	_, err := os.Lstat(filepath.Join(s.dir, "checkpoints", id+".json"))
	return err == nil
}
