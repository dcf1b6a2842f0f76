package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// AreaChange is one path that differs, named with its area ("target/a.c").
type AreaChange struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
}

// Step is one command of a run and what changed while it ran: from the
// checkpoint before it to the one before the next command (or the end).
// Changes in that span were made by the command, or by the agent itself
// (its file tools) or programs still running meanwhile.
type Step struct {
	IndexEntry
	Before, After string // checkpoint ids
	Changes       []AreaChange
}

// Changes lists, per command of run, what changed in the areas. The
// first step is the run's start (Kind start, no changes) when nothing
// changed before the first command; a run without an end checkpoint
// (live, or its agentbox was killed) ends at its last checkpoint.
func Changes(dir, run string) ([]Step, []Area, error) {
	idx, err := ReadIndex(dir, run)
	if err != nil {
		return nil, nil, err
	}
	ld := newLoader(dir, idx[0].Areas)
	var steps []Step
	for i, e := range idx {
		if e.Kind == IndexEnd {
			break
		}
		next := ""
		if i+1 < len(idx) {
			next = idx[i+1].Checkpoint
		}
		st := Step{IndexEntry: e, Before: e.Checkpoint, After: next}
		if next != "" && next != e.Checkpoint {
			ch, err := ld.diff(e.Checkpoint, next)
			if err != nil {
				return nil, nil, err
			}
			st.Changes = ch
		}
		steps = append(steps, st)
	}
	return steps, idx[0].Areas, nil
}

// loader loads and caches a run's manifests, per area.
type loader struct {
	dir   string
	areas []Area
	cache map[string][]*Manifest // checkpoint id -> one per area
}

func newLoader(dir string, areas []Area) *loader {
	return &loader{dir: dir, areas: areas, cache: map[string][]*Manifest{}}
}

func (l *loader) load(id string) ([]*Manifest, error) {
	if ms, ok := l.cache[id]; ok {
		return ms, nil
	}
	var ms []*Manifest
	for _, a := range l.areas {
		s := &Store{dir: filepath.Join(l.dir, a.Name)}
		m, err := s.Load(id)
		if err != nil {
			if errors.Is(err, errNoRecord) {
				return nil, fmt.Errorf("checkpoint %s of %s/ is no longer in the store (pruned to its budget)", id, a.Name)
			}
			return nil, fmt.Errorf("checkpoint store %s: %w", l.dir, err)
		}
		ms = append(ms, m)
	}
	l.cache[id] = ms
	return ms, nil
}

func (l *loader) diff(a, b string) ([]AreaChange, error) {
	ma, err := l.load(a)
	if err != nil {
		return nil, err
	}
	mb, err := l.load(b)
	if err != nil {
		return nil, err
	}
	var out []AreaChange
	for i, ar := range l.areas {
		for _, c := range Diff(ma[i], mb[i]) {
			out = append(out, AreaChange{Path: ar.Name + "/" + c.Path, Kind: c.Kind})
		}
	}
	return out, nil
}

// UndoOptions say what Undo restores.
type UndoOptions struct {
	// To restores the areas as they were before the command whose audit
	// event has this seq (0: before the run).
	To uint64
	// Only reverts only what the command with this seq changed, when no
	// later command changed the same paths.
	Only uint64
	// DryRun says what would change and changes nothing.
	DryRun bool
	// Force overwrites paths changed since the run ended by someone else.
	Force bool
	// Options are the exclusions the undo's own checkpoints use.
	Options Options
}

// UndoResult says what Undo did (or would do).
type UndoResult struct {
	Restored []AreaChange // paths put back
	// Kept are paths changed since the run ended, outside it, that the
	// undo left as they are (without Force).
	Kept []AreaChange
	// Redo is the undo's own run id: undoing it brings the work back
	// ("" for a dry run).
	Redo string
	// Notes are one line each about what was restored differently from
	// its record: a set-uid or set-gid bit is never put back.
	Notes []string
}

// ConflictError is returned when an undo would overwrite work it must not:
// later commands' changes (Only) or changes made since the run ended
// (without Force). Nothing was changed.
type ConflictError struct {
	Paths []string
	// Steps are the later commands that changed those paths.
	Steps []Step
	// Outside is true when the paths were changed after the run, not by it.
	Outside bool
}

func (e *ConflictError) Error() string {
	paths := strings.Join(clip(e.Paths, 8), ", ")
	if e.Outside {
		return fmt.Sprintf("changed since the run ended, not by it: %s; nothing was restored (--force overwrites them)", paths)
	}
	var cmds []string
	for _, s := range e.Steps {
		cmds = append(cmds, fmt.Sprintf("seq %d (%s)", s.Seq, strings.Join(s.Argv, " ")))
	}
	return fmt.Sprintf("later commands changed the same paths (%s): %s; nothing was restored", paths, strings.Join(clip(cmds, 5), ", "))
}

func clip(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// Undo puts the areas of run back: to before the run, before command
// To, or reverts only command Only. Every object it needs is verified
// before the first change (a corrupted store changes nothing), and the
// undo is itself recorded as a run whose id is UndoResult.Redo. The
// caller makes sure the run is not live.
func Undo(dir, run string, o UndoOptions) (*UndoResult, error) {
	if o.To != 0 && o.Only != 0 {
		return nil, errors.New("undo: --to and --only exclude each other")
	}
	if err := Live(dir, run); err != nil {
		return nil, err
	}
	idx, err := ReadIndex(dir, run)
	if err != nil {
		return nil, err
	}
	areas := idx[0].Areas
	ld := newLoader(dir, areas)
	endID := idx[len(idx)-1].Checkpoint
	end, err := ld.load(endID)
	if err != nil {
		return nil, err
	}
	// The state each area should get: want, path by path.
	wantID, only, err := undoWant(dir, run, idx, o)
	if err != nil {
		return nil, err
	}
	want, err := ld.load(wantID)
	if err != nil {
		return nil, err
	}
	res := &UndoResult{}
	targets := make([]*Manifest, len(areas))
	for i, a := range areas {
		if targets[i], err = undoTarget(dir, a, wantID, want[i], end[i], only, o, res); err != nil {
			return nil, err
		}
	}
	if o.Force {
		res.Kept = nil
	}
	if o.DryRun {
		return res, nil
	}
	if res.Redo, err = restoreTargets(dir, run, areas, targets, o); err != nil {
		return nil, err
	}
	return res, nil
}

// undoWant is the checkpoint Undo restores from (wantID) and, for Only,
// the paths of that command, refused when later commands changed them.
func undoWant(dir, run string, idx []IndexEntry, o UndoOptions) (string, map[string]bool, error) {
	switch {
	case o.Only != 0:
		steps, _, err := Changes(dir, run)
		if err != nil {
			return "", nil, err
		}
		i := slices.IndexFunc(steps, func(s Step) bool { return s.Kind == IndexCommand && s.Seq == o.Only })
		if i < 0 {
			return "", nil, fmt.Errorf("run %s has no command with seq %d (agentbox changes %s lists them)", run, o.Only, run)
		}
		only := map[string]bool{}
		for _, c := range steps[i].Changes {
			only[c.Path] = true
		}
		var clash []string
		var by []Step
		for _, later := range steps[i+1:] {
			hit := false
			for _, c := range later.Changes {
				for p := range only {
					if related(p, c.Path) {
						clash = append(clash, c.Path)
						hit = true
					}
				}
			}
			if hit {
				by = append(by, later)
			}
		}
		if len(clash) > 0 {
			slices.Sort(clash)
			return "", nil, &ConflictError{Paths: slices.Compact(clash), Steps: by}
		}
		return steps[i].Before, only, nil
	case o.To != 0:
		i := slices.IndexFunc(idx, func(e IndexEntry) bool { return e.Kind == IndexCommand && e.Seq == o.To })
		if i < 0 {
			return "", nil, fmt.Errorf("run %s has no command with seq %d (agentbox changes %s lists them)", run, o.To, run)
		}
		return idx[i].Checkpoint, nil, nil
	default:
		return idx[0].Checkpoint, nil, nil
	}
}

// undoTarget is the state Undo gives area a: want (of checkpoint wantID),
// or with only the run's end with those paths as in want; paths changed
// since the run ended (end) outside it are kept as they are now (noted in
// res.Kept) unless o.Force, or refused when the undo must change them.
// What it restores is added to res.
func undoTarget(dir string, a Area, wantID string, want, end *Manifest, only map[string]bool, o UndoOptions, res *UndoResult) (*Manifest, error) {
	s := &Store{dir: filepath.Join(dir, a.Name)}
	now, _, err := s.scan(a.Dir, want)
	if err != nil {
		return nil, fmt.Errorf("undo: %w", err)
	}
	// what changed since the run ended, outside it
	sinceRun := Diff(end, now)
	nowIdx := index(now)
	t := &Manifest{ID: wantID, Excluded: want.Excluded}
	wantIdx := index(want)
	endIdx := index(end)
	pick := map[string]Entry{}
	if only != nil {
		// the run's end state, with that command's paths as before it
		for p, e := range endIdx {
			pick[p] = e
		}
		for p := range only {
			rel, ok := strings.CutPrefix(p, a.Name+"/")
			if !ok {
				continue
			}
			if e, ok := wantIdx[rel]; ok {
				pick[rel] = e
			} else {
				delete(pick, rel)
			}
		}
	} else {
		for p, e := range wantIdx {
			pick[p] = e
		}
	}
	// Paths changed since the run ended: kept as they are now, unless
	// forced or the undo must change them.
	var clash []string
	for _, c := range sinceRun {
		p := c.Path
		w, inWant := pick[p]
		e, inEnd := endIdx[p]
		if inWant == inEnd && (!inWant || sameEntry(w, e)) {
			// the undo leaves this path as the run left it: keep now's
			res.Kept = append(res.Kept, AreaChange{Path: a.Name + "/" + p, Kind: c.Kind})
			if o.Force {
				continue
			}
			if ne, ok := nowIdx[p]; ok {
				pick[p] = ne
				for d := path.Dir(p); d != "."; d = path.Dir(d) {
					if de, ok := nowIdx[d]; ok {
						if _, has := pick[d]; !has {
							pick[d] = de
						}
					}
				}
			} else {
				delete(pick, p)
			}
			continue
		}
		clash = append(clash, a.Name+"/"+p)
	}
	if len(clash) > 0 && !o.Force {
		slices.Sort(clash)
		return nil, &ConflictError{Paths: clash, Outside: true}
	}
	for _, e := range pick {
		t.Entries = append(t.Entries, e)
	}
	slices.SortFunc(t.Entries, func(x, y Entry) int { return strings.Compare(x.Path, y.Path) })
	tIdx := index(t)
	for _, c := range Diff(now, t) {
		res.Restored = append(res.Restored, AreaChange{Path: a.Name + "/" + c.Path, Kind: c.Kind})
		if e, ok := tIdx[c.Path]; ok && e.Mode&setidModes != 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s/%s: restored without its set-uid/set-gid bit (mode %v recorded)", a.Name, c.Path, e.Mode))
		}
	}
	return t, nil
}

// restoreTargets restores every area to its target, recorded as a run
// (its id returned: undoing it is a redo) whose start checkpoint stores
// the areas as they are, paths kept included. Every object is verified
// first: a missing or corrupted one changes nothing.
func restoreTargets(dir, run string, areas []Area, targets []*Manifest, o UndoOptions) (string, error) {
	redo := "undo-" + randomHex(6)
	rec, err := StartRecorder(RecorderConfig{Dir: dir, Run: redo, Areas: areas, Options: o.Options, Of: run})
	if err != nil {
		return "", fmt.Errorf("undo: the checkpoint before it (for redo) could not be taken: %w; nothing was restored", err)
	}
	for i, a := range areas {
		s := &Store{dir: filepath.Join(dir, a.Name)}
		for _, e := range targets[i].Entries {
			if e.Kind != File {
				continue
			}
			if err := s.verify(e.Hash); err != nil {
				rec.Close()
				_ = os.Remove(indexPath(dir, redo))
				return "", fmt.Errorf("undo: %s/%s: %w; nothing was restored", a.Name, e.Path, err)
			}
		}
	}
	for i, a := range areas {
		s := &Store{dir: filepath.Join(dir, a.Name)}
		if _, err := s.Restore(targets[i], a.Dir); err != nil {
			rec.Close()
			return "", fmt.Errorf("undo: %w (agentbox undo %s puts back what was restored so far)", err, redo)
		}
	}
	if _, _, err := rec.Finish(); err != nil {
		return "", fmt.Errorf("undo: restored, but its end checkpoint failed: %w", err)
	}
	return redo, nil
}

// related reports whether a and b are the same path or one is below the other.
func related(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

func sameEntry(a, b Entry) bool {
	return a.Kind == b.Kind && a.Hash == b.Hash && a.Link == b.Link && a.Mode == b.Mode
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Contents returns the store's files holding path (an area path like
// "target/a.c") at checkpoints before and after ("" where it was no
// regular file then), for a diff of one change.
func Contents(dir string, areas []Area, before, after, p string) (string, string, error) {
	ld := newLoader(dir, areas)
	var out [2]string
	for k, id := range []string{before, after} {
		if id == "" {
			continue
		}
		ms, err := ld.load(id)
		if err != nil {
			return "", "", err
		}
		for i, a := range areas {
			rel, ok := strings.CutPrefix(p, a.Name+"/")
			if !ok {
				continue
			}
			if e, ok := index(ms[i])[rel]; ok && e.Kind == File {
				out[k] = (&Store{dir: filepath.Join(dir, a.Name)}).objectPath(e.Hash)
			}
		}
	}
	return out[0], out[1], nil
}

// RunAreas returns the areas run's checkpoints cover.
func RunAreas(dir, run string) ([]Area, error) {
	idx, err := ReadIndex(dir, run)
	if err != nil {
		return nil, err
	}
	return idx[0].Areas, nil
}

// Excluded lists what run's last checkpoint left out (directories named
// in the exclusions, files over the size limit), named with their areas:
// an undo neither restores nor removes them.
func Excluded(dir, run string) ([]string, error) {
	idx, err := ReadIndex(dir, run)
	if err != nil {
		return nil, err
	}
	ms, err := newLoader(dir, idx[0].Areas).load(idx[len(idx)-1].Checkpoint)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, a := range idx[0].Areas {
		for _, x := range ms[i].Excluded {
			out = append(out, a.Name+"/"+x)
		}
	}
	return out, nil
}
