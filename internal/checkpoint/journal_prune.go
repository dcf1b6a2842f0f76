package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The store's prune, off a run's path.
//
// A run's end prunes the store to its budget at most every pruneEvery
// (Recorder.Finish): 31 ms for a small store, 112 ms for ~700 records,
// all of it between the command's exit and the prompt. With the journal
// answering, the run's end asks it to prune instead ("prune", with the
// budget of each area's store) and returns at once; the journal prunes
// each store it follows with Store.Prune, under the store's exclusive
// lock as a run's end does (so never beside another prune or a
// checkpoint being taken), one prune at a time, and tells the next run
// that asks it what was removed (journalResp.Pruned: that run's end line
// says it). A journal that exits with something untold writes it to
// pruneReportName in the store, which the next run's end without a
// journal takes (claimPruneReport). Without a journal (the first run in
// a workspace, AGENTBOX_CHECKPOINT_JOURNAL=off, a library caller without
// JournalExe) or when it does not accept, the run's end prunes as before.

// pruneReportName is the file (in the workspace's store) holding what a
// journal pruned that no run was told.
const pruneReportName = "pruned.report"

// startPrune starts a prune of every store the journal follows to b
// (j.mu held); it answers OK when one is started or already running.
func (j *journal) startPrune(b *Budget) journalResp {
	if b == nil || b.MaxBytes < 0 || b.MaxAge < 0 || b.Keep < 0 {
		return journalResp{Why: "bad budget"}
	}
	if j.pruneDone {
		return journalResp{Why: "exiting"}
	}
	if j.pruning {
		return journalResp{OK: true, Why: "a prune is running"}
	}
	j.pruning = true
	j.pruneWG.Add(1)
	go j.prune(*b)
	return journalResp{OK: true}
}

// prune prunes every store the journal follows to b and keeps what it
// removed for the next run that asks.
func (j *journal) prune(b Budget) {
	defer j.pruneWG.Done()
	var p Pruned
	for _, s := range j.stores {
		if s == nil {
			continue
		}
		sp, err := s.Prune(b, time.Now())
		p.Removed = append(p.Removed, sp.Removed...)
		p.Freed += sp.Freed
		p.Size += sp.Size
		if err != nil {
			break // a damaged record: the next run's end prunes, and says why
		}
	}
	j.mu.Lock()
	j.pruning = false
	j.report.Removed = append(j.report.Removed, p.Removed...)
	j.report.Freed += p.Freed
	j.report.Size = p.Size
	j.mu.Unlock()
	if testAfterPrune != nil {
		testAfterPrune()
	}
}

// testAfterPrune, when set (a benchmark), is called after each prune of
// the journal.
var testAfterPrune func()

// finishPrune, as the journal exits, starts no prune, waits for the one
// running and writes what no run was told to the store.
func (j *journal) finishPrune() {
	j.mu.Lock()
	j.pruneDone = true
	j.mu.Unlock()
	j.pruneWG.Wait()
	j.mu.Lock()
	p := j.report
	j.report = Pruned{}
	j.mu.Unlock()
	if len(p.Removed) == 0 {
		return
	}
	dst := filepath.Join(j.spec.Dir, pruneReportName)
	if b, err := os.ReadFile(dst); err == nil {
		var old Pruned
		if json.Unmarshal(b, &old) == nil {
			p.Removed = append(old.Removed, p.Removed...)
			p.Freed += old.Freed
		}
	}
	if b, err := json.Marshal(p); err == nil {
		_ = replaceFile(dst, b, false)
	}
}

// claimPruneReport takes the report a journal left in the store dir
// (finishPrune): renamed away first, so that of two runs ending at once
// one says it. ok is false when there is none.
func claimPruneReport(dir string) (Pruned, bool) {
	var p Pruned
	src := filepath.Join(dir, pruneReportName)
	taken := filepath.Join(dir, ".taken-"+pruneReportName+"-"+strconv.Itoa(os.Getpid()))
	if err := os.Rename(src, taken); err != nil {
		return p, false
	}
	b, err := os.ReadFile(taken)
	os.Remove(taken)
	if err != nil || json.Unmarshal(b, &p) != nil {
		return Pruned{}, false
	}
	return p, len(p.Removed) > 0
}

// journalPrune asks the journal to prune every area's store to b. An
// error: it did not accept (the caller prunes).
func (r *Recorder) journalPrune(b Budget) error {
	resp, err := r.j.ask(journalReq{Op: "prune", Roots: make([]string, len(r.areas)), Budget: &b})
	if err != nil {
		r.j.close()
		r.j = nil
		return err
	}
	if !resp.OK {
		return fmt.Errorf("checkpoint journal: %s", resp.Why)
	}
	return nil
}

// addPruned adds q to p (Size is the latest's).
func addPruned(p *Pruned, q Pruned) {
	p.Removed = append(p.Removed, q.Removed...)
	p.Freed += q.Freed
	if q.Size > 0 {
		p.Size = q.Size
	}
}
