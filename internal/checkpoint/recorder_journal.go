package checkpoint

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// start takes the run's start checkpoint: from the journal when it
// vouches for the store's last checkpoint (no walk), else a whole walk
// with the stat cache.
func (r *Recorder) start() (string, error) {
	if r.j == nil {
		return r.take(true)
	}
	id, gen, done, err := r.startFromJournal()
	if done || err != nil {
		return id, err
	}
	// the journal could not vouch: walk with the stat cache, then tell it
	// the walk covers everything up to its answer
	for _, a := range r.areas {
		a.lazy = false
		a.last = a.s.statCache()
		if a.last != nil {
			a.cacheRoot = a.last.Root
		}
	}
	id, err = r.take(true)
	if err == nil && r.j != nil && gen > 0 {
		r.rebase(nil, gen)
	}
	return id, err
}

// startFromJournal takes the start checkpoint from the journal's answer.
// done is false when the journal did not vouch (gen is its answer's
// generation, 0 without one): the caller walks.
func (r *Recorder) startFromJournal() (id string, gen uint64, done bool, err error) {
	roots := make([]string, len(r.areas))
	ids := make([]string, len(r.areas))
	for i, a := range r.areas {
		sid, root, ok := a.s.statCacheHead()
		if !ok {
			return "", 0, false, nil
		}
		ids[i], roots[i] = sid, root
	}
	resp, err := r.j.ask(journalReq{Op: "dirty", Roots: roots})
	if err != nil {
		r.j.close()
		r.j = nil
		return "", 0, false, nil
	}
	if !resp.OK || len(resp.Areas) != len(r.areas) {
		return "", resp.Gen, false, nil
	}
	for _, ra := range resp.Areas {
		if ra.All {
			return "", resp.Gen, false, nil
		}
	}
	id = r.cfg.Run + "." + strconv.Itoa(r.n)
	ms := make([]*Manifest, len(r.areas))
	loads := make([]bool, len(r.areas))
	for i, a := range r.areas {
		m, lazy, err := r.startArea(a, id, ids[i], roots[i], resp.Areas[i].Dirty)
		if err != nil {
			return "", resp.Gen, true, err
		}
		if m == nil {
			return "", resp.Gen, false, nil
		}
		ms[i], loads[i] = m, lazy
	}
	for i, a := range r.areas {
		a.last, a.cacheRoot = ms[i], roots[i]
		// the entries are needed only when something changes: read then
		// (reading them while the command starts cost the launch 1.36x in
		// a 12k-file workspace, 2.1x in a 100k one, on two loaded CPUs)
		a.lazy = loads[i]
	}
	r.n++
	r.last = id
	r.rebase(roots, resp.Gen)
	return id, resp.Gen, true, nil
}

// startArea records area a's start checkpoint id: the stat cache's
// checkpoint sid (root tree root) again when nothing in dirty changed
// (lazy: its entries not read), else a rescan of the dirty directories.
// nil without an error: the stat cache's checkpoint is gone (pruned),
// walk.
func (r *Recorder) startArea(a *areaRec, id, sid, root string, dirty []string) (*Manifest, bool, error) {
	unlock, err := a.s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	rec, err := a.s.record(sid)
	if err != nil || rec.Root != root {
		return nil, false, nil
	}
	if len(dirty) == 0 {
		m := &Manifest{ID: id, Time: time.Now().UTC(), Root: root, Excluded: rec.Excluded}
		if err := a.s.saveRecord(m); err != nil {
			return nil, false, err
		}
		return m, true, nil
	}
	prev := a.s.statCache()
	if prev == nil || prev.Root != root {
		return nil, false, nil
	}
	prev.Excluded = rec.Excluded
	m, st, err := a.s.takeDirty(id, a.a.Dir, r.cfg.Options, prev, setOf(dirty), nil, nil)
	if err != nil {
		return nil, false, r.areaErr(a, err)
	}
	r.stored += st.Stored
	return m, false, nil
}

// takeJournal takes a checkpoint of every area from the journal's answer
// (the last checkpoint again when nothing changed), or walks when it
// does not vouch.
func (r *Recorder) takeJournal() (string, error) {
	roots := make([]string, len(r.areas))
	for i, a := range r.areas {
		if a.last == nil || a.last.Root == "" {
			return r.walkJournal(0)
		}
		roots[i] = a.last.Root
	}
	resp, err := r.j.ask(journalReq{Op: "dirty", Roots: roots})
	if err != nil {
		r.j.close()
		r.j = nil
		return r.take(true)
	}
	if !resp.OK || len(resp.Areas) != len(r.areas) || r.last == "" {
		return r.walkJournal(resp.Gen)
	}
	clean := true
	for _, ra := range resp.Areas {
		if ra.All {
			return r.walkJournal(resp.Gen)
		}
		if len(ra.Dirty) > 0 {
			clean = false
		}
	}
	if clean {
		return r.last, nil
	}
	if err := r.flush(); err != nil {
		return "", err
	}
	id := r.cfg.Run + "." + strconv.Itoa(r.n)
	ms := make([]*Manifest, len(r.areas))
	for i, a := range r.areas {
		prev := a.full()
		var m *Manifest
		var st Stats
		err := func() error {
			unlock, err := a.s.lock(unix.LOCK_SH)
			if err != nil {
				return err
			}
			defer unlock()
			if prev != nil && prev.ID != "" && !a.s.hasRecord(prev.ID) {
				prev = nil
			}
			if prev == nil {
				m, st, err = a.s.take(id, a.a.Dir, nil, r.cfg.Options)
			} else {
				m, st, err = a.s.takeDirty(id, a.a.Dir, r.cfg.Options, prev, setOf(resp.Areas[i].Dirty), nil, nil)
			}
			return err
		}()
		if err != nil {
			return "", r.areaErr(a, err)
		}
		ms[i] = m
		r.stored += st.Stored
	}
	for i, a := range r.areas {
		a.last = ms[i]
	}
	r.n++
	r.last = id
	r.pruneIfGrown()
	if r.last == id {
		newRoots := make([]string, len(ms))
		for i, m := range ms {
			newRoots[i] = m.Root
		}
		r.rebaseTo(roots, newRoots, resp.Gen)
	}
	return id, nil
}

// walkJournal walks every area (the journal could not vouch) and tells
// the journal the walk covers its answer gen (0: none).
func (r *Recorder) walkJournal(gen uint64) (string, error) {
	id, err := r.take(true)
	if err == nil && gen > 0 && r.j != nil {
		r.rebase(nil, gen)
	}
	return id, err
}

// rebase tells the journal that the areas' last checkpoints cover what
// it answered with generation gen, taken from the checkpoint of roots
// from (nil: a whole walk).
func (r *Recorder) rebase(from []string, gen uint64) {
	roots := make([]string, len(r.areas))
	for i, a := range r.areas {
		if a.last == nil {
			return
		}
		roots[i] = a.last.Root
	}
	r.rebaseTo(from, roots, gen)
}

func (r *Recorder) rebaseTo(from, roots []string, gen uint64) {
	if r.j == nil {
		return
	}
	if _, err := r.j.ask(journalReq{Op: "rebase", From: from, Roots: roots, Gen: gen}); err != nil {
		r.j.close()
		r.j = nil
	}
}

// areaErr words a failed checkpoint of area a as take does.
func (r *Recorder) areaErr(a *areaRec, err error) error {
	if errors.Is(err, ErrOverBudget) {
		r.prune()
		return fmt.Errorf("checkpoint of %s/: %w: agentbox keeps checkpoints within --checkpoint-max-size (checkpoints.max_size); raise it, or leave large files out (checkpoints.max_file_size, checkpoints.exclude)", a.a.Name, err)
	}
	return fmt.Errorf("checkpoint of %s/: %w", a.a.Name, err)
}

func setOf(dirs []string) map[string]bool {
	m := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		m[d] = true
	}
	return m
}
