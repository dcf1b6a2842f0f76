package checkpoint

import (
	"errors"
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
	id, gen, seq, done, err := r.startFromJournal()
	if done || err != nil {
		if err == nil && r.j != nil {
			r.jseq = seq
		}
		return id, err
	}
	// the journal could not vouch: walk with the stat cache, then tell it
	// the walk covers everything up to its answer
	for _, a := range r.areas {
		a.partial = false
		a.last = a.s.statCache()
		if a.last != nil {
			a.cacheRoot = a.last.Root
		}
	}
	id, err = r.take(true)
	if err == nil && r.j != nil && gen > 0 {
		r.rebase(nil, gen)
	}
	if err == nil && r.j != nil {
		r.jseq = seq // the walk came after the answer
	}
	return id, err
}

// journalUnchanged reports whether nothing changed under the areas since
// the journal's answer the last checkpoint is current as of
// (journal_share.go): no question needed.
func (r *Recorder) journalUnchanged() bool {
	return r.j != nil && r.jseq != 0 && r.j.unchanged(r.jseq)
}

// startFromJournal takes the start checkpoint from the journal's answer.
// done is false when the journal did not vouch (gen is its answer's
// generation, 0 without one): the caller walks. seq is the answer's
// sequence (journal_share.go).
func (r *Recorder) startFromJournal() (id string, gen, seq uint64, done bool, err error) {
	resp, err := r.j.askShare(journalReq{Op: "dirty", Head: true, Roots: make([]string, len(r.areas))})
	if err != nil {
		r.j.close()
		r.j = nil
		return "", 0, 0, false, nil
	}
	seq = resp.Seq
	if resp.Pruned != nil {
		addPruned(&r.pruned, *resp.Pruned)
	}
	if !resp.OK || len(resp.Areas) != len(r.areas) {
		return "", resp.Gen, seq, false, nil
	}
	for _, ra := range resp.Areas {
		if ra.All || ra.Base == nil {
			return "", resp.Gen, seq, false, nil
		}
	}
	if id, ok := r.startSame(resp); ok {
		return id, resp.Gen, seq, true, nil
	}
	id = r.nextID()
	ms := make([]*Manifest, len(r.areas))
	roots := make([]string, len(r.areas))
	deltas := make([]*jdelta, len(r.areas))
	for i, a := range r.areas {
		b := resp.Areas[i].Base
		m, d, err := r.startArea(a, id, b, resp.Areas[i].Dirty)
		if err != nil {
			return "", resp.Gen, seq, true, err
		}
		if m == nil {
			return "", resp.Gen, seq, false, nil
		}
		ms[i], deltas[i], roots[i] = m, d, b.Root
	}
	for i, a := range r.areas {
		// the entries stay in the journal: a walk (the journal gone
		// meanwhile) reads the stat cache file (full)
		a.last, a.cacheRoot, a.partial = ms[i], roots[i], true
	}
	r.n++
	r.last = id
	r.rebaseDelta(roots, deltas, resp.Gen)
	return id, resp.Gen, seq, true, nil
}

// startSame makes the checkpoint the journal vouches for the run's start
// checkpoint when nothing changed since it in any area and every area's
// is the same checkpoint (one id names a checkpoint of every area): the
// index's start line names it, and no record, tree or content is written
// (a launch created a record per area before, ~1 ms each on a busy disk).
// Records are never rewritten once saved, so the id names the same trees
// for as long as it is in the store; its record's mtime is set to now, so
// that pruning counts its age from this run (List; at most touchAfter
// off). ok is false when the answer does not allow it or a record is
// missing or names another root: the caller records a new checkpoint as
// before.
func (r *Recorder) startSame(resp journalResp) (string, bool) {
	id := resp.Areas[0].Base.ID
	for _, ra := range resp.Areas {
		if len(ra.Dirty) > 0 || ra.Base.ID != id {
			return "", false
		}
	}
	if validID(id) != nil {
		return "", false
	}
	ms := make([]*Manifest, len(r.areas))
	for i, a := range r.areas {
		m, ok := a.sameAs(resp.Areas[i].Base)
		if !ok {
			return "", false
		}
		ms[i] = m
	}
	for i, a := range r.areas {
		a.last, a.cacheRoot, a.partial = ms[i], ms[i].Root, true
	}
	// no rebase: the journal's base is this checkpoint already, and
	// nothing it answered was dirty
	r.last = id
	return id, true
}

// sameAs returns area a's checkpoint b (no entries: the journal holds
// them) when its record is in the store and names b's root tree, and
// marks it used now (unless it was within touchAfter). The record is
// read without the store's lock: a prune may remove it right after, as
// it may remove any checkpoint of a running run (prune), and holding
// the lock while reading changes nothing about that. The mark is made
// under the shared lock, with the record checked again, so that a
// prune (exclusive) either removed it before (the caller records a new
// checkpoint) or lists it as used now.
func (a *areaRec) sameAs(b *jbase) (*Manifest, bool) {
	rec, used, err := a.s.recordAt(b.ID)
	if err != nil || rec.Root != b.Root {
		return nil, false
	}
	if time.Since(used) > touchAfter {
		unlock, err := a.s.lock(unix.LOCK_SH)
		if err != nil {
			return nil, false
		}
		defer unlock()
		if !a.s.hasRecord(b.ID) {
			return nil, false
		}
		a.s.touchRecord(b.ID)
	}
	return &Manifest{ID: b.ID, Time: rec.Time, Root: rec.Root, Excluded: rec.Excluded}, true
}

// touchAfter is how stale a record's mtime may be before a run that
// starts from its checkpoint sets it again: back-to-back launches do not
// each update two inodes, and an age is counted to within an hour of a
// checkpoint's last use (pruning's MaxAge is days).
const touchAfter = time.Hour

// startArea records area a's start checkpoint id from the journal's base
// b: b's checkpoint again when nothing in dirty changed, else a rescan of
// the dirty directories. nil without an error: b's checkpoint is gone
// (pruned) or the answer lacks a directory: walk.
func (r *Recorder) startArea(a *areaRec, id string, b *jbase, dirty []string) (*Manifest, *jdelta, error) {
	unlock, err := a.s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	if validID(b.ID) != nil {
		return nil, nil, nil
	}
	rec, err := a.s.record(b.ID)
	if err != nil || rec.Root != b.Root {
		return nil, nil, nil
	}
	b.Excluded = rec.Excluded
	m, d, st, err := a.s.takeFromJournal(id, a.a.Dir, r.cfg.Options, b, setOf(dirty))
	if errors.Is(err, errJournalBase) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, r.areaErr(a, err)
	}
	r.stored += st.Stored
	return m, d, nil
}

// takeJournal takes a checkpoint of every area from the journal's answer
// (the last checkpoint again when nothing changed), or walks when it
// does not vouch. The checkpoint taken is current as of the answer
// (jseq): whatever it walked or rescanned, it did after it.
func (r *Recorder) takeJournal() (string, error) {
	r.jseq = 0
	id, seq, err := r.takeJournalAt()
	if err == nil && r.j != nil && r.last == id {
		r.jseq = seq
	}
	return id, err
}

// takeJournalAt is takeJournal; seq is the sequence of the answer it
// took the checkpoint after (0: none).
func (r *Recorder) takeJournalAt() (id string, seq uint64, err error) {
	roots := make([]string, len(r.areas))
	for i, a := range r.areas {
		if a.last == nil || a.last.Root == "" {
			id, err = r.walkJournal(0)
			return id, 0, err
		}
		roots[i] = a.last.Root
	}
	resp, err := r.j.ask(journalReq{Op: "dirty", Roots: roots})
	if err != nil {
		r.j.close()
		r.j = nil
		id, err = r.take(true)
		return id, 0, err
	}
	seq = resp.Seq
	if resp.Pruned != nil {
		addPruned(&r.pruned, *resp.Pruned)
	}
	if !resp.OK || len(resp.Areas) != len(r.areas) || r.last == "" {
		id, err = r.walkJournal(resp.Gen)
		return id, seq, err
	}
	clean := true
	for i, ra := range resp.Areas {
		if ra.All || ra.Base == nil || ra.Base.Root != roots[i] || ra.Base.ID != r.areas[i].last.ID {
			id, err = r.walkJournal(resp.Gen)
			return id, seq, err
		}
		if len(ra.Dirty) > 0 {
			clean = false
		}
	}
	if clean {
		return r.last, seq, nil
	}
	if err := r.flush(); err != nil {
		return "", 0, err
	}
	id = r.nextID()
	ms := make([]*Manifest, len(r.areas))
	deltas := make([]*jdelta, len(r.areas))
	for i, a := range r.areas {
		b := resp.Areas[i].Base
		b.Excluded = a.last.Excluded
		walk := false
		err := func() error {
			unlock, err := a.s.lock(unix.LOCK_SH)
			if err != nil {
				return err
			}
			defer unlock()
			if !a.s.hasRecord(b.ID) {
				walk = true // pruned meanwhile
				return nil
			}
			m, d, st, err := a.s.takeFromJournal(id, a.a.Dir, r.cfg.Options, b, setOf(resp.Areas[i].Dirty))
			if errors.Is(err, errJournalBase) {
				walk = true
				return nil
			}
			ms[i], deltas[i] = m, d
			r.stored += st.Stored
			return err
		}()
		if err != nil {
			return "", 0, r.areaErr(a, err)
		}
		if walk {
			id, err = r.walkJournal(resp.Gen)
			return id, seq, err
		}
	}
	for i, a := range r.areas {
		a.last, a.partial = ms[i], true
	}
	r.n++
	r.last = id
	r.pruneIfGrown()
	if r.last == id {
		r.rebaseDelta(roots, deltas, resp.Gen)
	}
	return id, seq, nil
}

// rebaseDelta tells the journal that the areas' last checkpoints, taken
// from its answer gen over the checkpoints of roots from, are what
// deltas found. It does not wait for the answer: the journal holds
// another run's question until it has this (journal.pending), and the
// next question on this connection drops it.
func (r *Recorder) rebaseDelta(from []string, deltas []*jdelta, gen uint64) {
	if r.j == nil {
		return
	}
	roots := make([]string, len(r.areas))
	for i, a := range r.areas {
		roots[i] = a.last.Root
	}
	if err := r.j.send(journalReq{Op: "rebase", From: from, Roots: roots, Gen: gen, Delta: deltas}); err != nil {
		r.j.close()
		r.j = nil
	}
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

func setOf(dirs []string) map[string]bool {
	m := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		m[d] = true
	}
	return m
}
