package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Area is one writable area of a workspace that a run's checkpoints cover.
type Area struct {
	Name string `json:"name"` // "target", "feedback": its store's subdirectory
	Dir  string `json:"dir"`  // its absolute path
}

// DefaultExcludeNames are the directory names left out of checkpoints
// unless the workspace says otherwise: dependency trees and caches that
// a command recreates (restoring them is what `npm ci` is for).
var DefaultExcludeNames = []string{"node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox", ".gradle"}

// DefaultMaxFileSize is the size above which a file is left out of
// checkpoints unless the workspace says otherwise.
const DefaultMaxFileSize = 64 << 20

// DefaultBudget bounds a workspace's store unless the workspace says
// otherwise: 2 GiB, 14 days, the newest 20 checkpoints always kept.
var DefaultBudget = Budget{MaxBytes: 2 << 30, MaxAge: 14 * 24 * time.Hour, Keep: 20}

// DefaultDir is the checkpoint store of the workspace ws (an absolute,
// clean path) when none is configured: under $XDG_STATE_HOME/agentbox
// (else ~/.local/state/agentbox, else /var/lib/agentbox), one directory
// per workspace, named by a hash of its path. It is outside the workspace,
// so no sandbox can write it.
func DefaultDir(ws string) string {
	base := "/var/lib/agentbox"
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		base = filepath.Join(d, "agentbox")
	} else if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		base = filepath.Join(home, ".local", "state", "agentbox")
	}
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(base, "checkpoints", hex.EncodeToString(sum[:8]))
}

// Index kinds: what a line of a run's index records.
const (
	IndexStart   = "start"   // before the run's command started
	IndexCommand = "command" // before one program the agent started
	IndexEnd     = "end"     // after every process of the run was gone
)

// IndexEntry is one line of a run's index (runs/RUN.jsonl in the store):
// a checkpoint and what it precedes. Checkpoint ids repeat when nothing
// changed between two commands.
type IndexEntry struct {
	Kind       string    `json:"kind"`
	Run        string    `json:"run"`
	Checkpoint string    `json:"checkpoint"`
	Time       time.Time `json:"time"`
	Seq        uint64    `json:"seq,omitempty"` // the audit event of the program
	Pid        int       `json:"pid,omitempty"`
	Argv       []string  `json:"argv,omitempty"`
	Areas      []Area    `json:"areas,omitempty"` // on the start line
	// Of is the run an undo restored (kind start of an undo's index).
	Of string `json:"of,omitempty"`
	// Exit is the run's exit status (kind end, when the run said it:
	// SetExit), for agentbox changes --runs.
	Exit *int `json:"exit,omitempty"`
}

// RecorderConfig configures a run's Recorder.
type RecorderConfig struct {
	Dir     string // the workspace's store (DefaultDir)
	Run     string // the run id: checkpoint ids are RUN.N
	Areas   []Area
	Options Options
	Budget  Budget
	// Of names the run an undo restores (an undo is recorded like a run,
	// so that undoing it is a redo).
	Of string
	// Journal asks the store's change journal (journal.go) what changed
	// since the last checkpoint instead of walking the areas at the start,
	// before each command and at the end; without an answer the recorder
	// walks, as without it. JournalExe, when set, is the program (whose
	// main calls MaybeRunJournal first) started as the journal at the
	// run's end when none answered.
	Journal    bool
	JournalExe string
	// Argv is the run's command, on the start line (redacted and
	// bounded by the caller): agentbox changes --runs names it.
	Argv []string
}

// Recorder takes a run's checkpoints: one at its start, one before each
// command that may change the areas (Before; free when nothing changed
// since the last), one at its end. It is safe for concurrent use.
type Recorder struct {
	cfg   RecorderConfig
	mu    sync.Mutex
	areas []*areaRec
	n     int
	last  string
	// first is the run's start checkpoint (NetChanges)
	first string
	index *os.File
	// stored is what this run stored since its last prune; pruned what
	// pruning during the run removed (Finish reports it with its own)
	stored int64
	pruned Pruned
	// befores counts Before calls; watching is true once the change
	// feed runs (from the second command on)
	befores  int
	watching bool
	// exit is the run's exit status for the end line (SetExit)
	exit *int
	// buf holds index lines not yet written: lines of commands that share
	// the last checkpoint are written when the next checkpoint is taken
	// (so a lost buffer loses only commands that changed nothing since),
	// when it grows past 32 KiB, and at the end.
	buf []byte
	// j is the store's journal (nil: none answered, or Journal is off)
	j *journalClient
	// jseq is the sequence of the journal's answer as of which last is
	// current (0: none): while nothing changed since (journalUnchanged),
	// last is the areas' checkpoint without asking (journal_share.go)
	jseq uint64
}

type areaRec struct {
	a         Area
	s         *Store
	w         *Watcher
	last      *Manifest
	cacheRoot string // the root of the stat cache loaded at the start
	// partial: last was taken from the journal, whose memory holds its
	// entries (journal_cache.go); the recorder has none
	partial bool
}

// full returns the area's last checkpoint with its entries, for a walk's
// stat cache (Take) or the in-run change feed's base (TakeWatched). After
// checkpoints taken from the journal it reads the stat cache file, which
// the journal writes later: an older checkpoint's is still a stat cache
// for a walk, and a walk is what follows (the journal stopped
// answering). nil: none is known (the walk rehashes).
func (a *areaRec) full() *Manifest {
	if a.partial {
		a.partial = false
		m := a.s.statCache()
		if m != nil && a.last != nil && m.Root == a.last.Root {
			a.last.Entries, a.last.trees = m.Entries, m.trees
		} else {
			a.last = m
		}
	}
	return a.last
}

// ValidRunID reports whether run can name a run's index and checkpoints.
func ValidRunID(run string) error {
	if run == "" || len(run) > 128 || strings.ContainsAny(run, "/\\\x00. ") {
		return fmt.Errorf("run id %q: want letters, digits, '-' or '_'", run)
	}
	return nil
}

// StartRecorder opens the store, starts following the areas and takes
// the start checkpoint (a full walk, the store's stat cache saving the
// rehash of unchanged files).
func StartRecorder(cfg RecorderConfig) (*Recorder, error) {
	if err := ValidRunID(cfg.Run); err != nil {
		return nil, err
	}
	if len(cfg.Areas) == 0 {
		return nil, errors.New("checkpoints: no writable area to cover")
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "runs"), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", cfg.Dir, err)
	}
	idx, err := os.OpenFile(indexPath(cfg.Dir, cfg.Run), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store %s: run index: %w", cfg.Dir, err)
	}
	// Held while the run lasts: an undo of a live run is refused (Live).
	if err := unix.Flock(int(idx.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		idx.Close()
		return nil, fmt.Errorf("checkpoint store %s: run index lock: %w", cfg.Dir, err)
	}
	if cfg.Budget.MaxBytes > 0 && cfg.Options.MaxStored == 0 {
		// one checkpoint of one area never stores more than the area's
		// share of the budget (a budget over the whole store is no bound
		// if a single checkpoint can exceed it)
		cfg.Options.MaxStored = cfg.Budget.MaxBytes / int64(len(cfg.Areas))
	}
	r := &Recorder{cfg: cfg, index: idx}
	if cfg.Journal {
		r.j = dialJournal(cfg.Dir, cfg.Areas, cfg.Options.ExcludeNames)
	}
	for _, a := range cfg.Areas {
		if a.Name == "" || strings.ContainsAny(a.Name, "/\\") || a.Name == "." || a.Name == ".." || a.Name == "runs" {
			r.Close()
			return nil, fmt.Errorf("checkpoints: bad area name %q", a.Name)
		}
		s, err := Open(filepath.Join(cfg.Dir, a.Name))
		if err != nil {
			r.Close()
			return nil, err
		}
		ar := &areaRec{a: a, s: s}
		if r.j == nil {
			ar.last = s.statCache()
			if ar.last != nil {
				ar.cacheRoot = ar.last.Root
			}
		}
		r.areas = append(r.areas, ar)
	}
	id, err := r.start()
	if err != nil {
		r.Close()
		return nil, err
	}
	r.first = id
	if err := r.Link(IndexEntry{Kind: IndexStart, Checkpoint: id, Areas: cfg.Areas, Of: cfg.Of, Argv: cfg.Argv}); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Dir is the store the recorder writes.
func (r *Recorder) Dir() string { return r.cfg.Dir }

// Before returns the checkpoint of the areas as they are now, before a
// program runs: the last one when nothing under them changed since (no
// walk), else a new one that rescans the directories that changed. An
// error means no checkpoint could be taken: the caller does not run the
// program unprotected.
//
// The change feed (inotify) starts at the second command: the first
// program (the agent, or the run's only command) runs right after the
// start checkpoint, and a run of one command (agentbox run -- make)
// never pays for watches it would not use. The second command's
// checkpoint is a whole walk, the ones after it follow the feed.
func (r *Recorder) Before() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.befores++
	if r.j != nil {
		if r.last != "" && (r.befores == 1 || r.journalUnchanged()) {
			// nothing ran since the start checkpoint, or nothing
			// changed since the journal's last answer
			return r.last, nil
		}
		return r.takeJournal()
	}
	if r.last == "" {
		// the latest checkpoint was pruned to the budget (or none was
		// taken): a whole walk, which fails again if the areas still
		// need more than the budget
		if !r.watching {
			r.watch()
		}
		return r.take(true)
	}
	if !r.watching {
		if r.befores == 1 {
			return r.last, nil // nothing ran since the start checkpoint
		}
		r.watch()
		return r.take(true)
	}
	return r.take(false)
}

// watch starts the change feed: one inotify instance for every area.
// Without inotify (its limits reached) every checkpoint walks.
func (r *Recorder) watch() {
	var roots []string
	for _, a := range r.areas {
		roots = append(roots, a.a.Dir)
	}
	ws, err := WatchAll(roots, r.cfg.Options)
	if err != nil {
		return
	}
	for i, a := range r.areas {
		a.w = ws[i]
	}
	r.watching = true
}

// Clean reports whether Before would return at once (nothing changed
// under the areas since the last checkpoint).
func (r *Recorder) Clean() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == "" {
		return false
	}
	if r.j != nil {
		return r.befores == 0 || r.journalUnchanged()
	}
	if !r.watching {
		return r.befores == 0
	}
	for _, a := range r.areas {
		if !a.w.clean() {
			return false
		}
	}
	return true
}

// nextID names the checkpoint the run takes next: RUN.N, N counting the
// run's checkpoints from 0.
func (r *Recorder) nextID() string { return r.cfg.Run + "." + strconv.Itoa(r.n) }

// take takes a checkpoint of every area (full: a whole walk of each).
func (r *Recorder) take(full bool) (string, error) {
	if !full && !r.watching {
		full = true // no change feed: walk
	}
	if !full && r.last != "" {
		clean := true
		for _, a := range r.areas {
			if !a.w.clean() {
				clean = false
			}
		}
		if clean {
			return r.last, nil
		}
	}
	if err := r.flush(); err != nil {
		return "", err
	}
	id := r.nextID()
	ms := make([]*Manifest, len(r.areas))
	if full {
		var same string
		var err error
		if ms, same, err = r.walkAll(id); err != nil {
			return "", err
		}
		if same != "" {
			for i, a := range r.areas {
				a.last = ms[i]
			}
			r.last = same
			return same, nil
		}
	}
	for i, a := range r.areas {
		if ms[i] != nil {
			continue // walked and saved
		}
		m, st, err := a.s.TakeWatched(id, a.w, a.full())
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
	return id, nil
}

// walkAll walks every area for checkpoint id, each with its last
// checkpoint as its stat cache, and saves them. When every area is as
// its last checkpoint records it (stat cache included) and those are one
// checkpoint still in the store, it saves nothing and returns that
// checkpoint (its manifests, and its id as same): a run that changes
// nothing and has no journal to ask (the first in a workspace, or with
// AGENTBOX_CHECKPOINT_JOURNAL=off) walks at its start and end as before
// but writes no record (two per area before), and its start names the
// checkpoint it found, as with the journal (startSame). Each store's
// shared lock is held from its walk to its save, so a prune cannot take
// the checkpoint in between.
func (r *Recorder) walkAll(id string) ([]*Manifest, string, error) {
	var unlocks []func()
	release := func() {
		for _, u := range unlocks {
			u()
		}
		unlocks = nil
	}
	defer release()
	fail := func(a *areaRec, err error) ([]*Manifest, string, error) {
		release() // areaErr may prune, which takes the lock exclusively
		return nil, "", r.areaErr(a, err)
	}
	ws := make([]walked, len(r.areas))
	for i, a := range r.areas {
		unlock, err := a.s.lock(unix.LOCK_SH)
		if err != nil {
			return fail(a, err)
		}
		unlocks = append(unlocks, unlock)
		// events queued before this walk are covered by it; those
		// during it are seen at the next checkpoint
		if a.w != nil {
			if err := a.w.reset(); err != nil {
				return fail(a, err)
			}
		}
		if ws[i], err = a.s.walkTake(id, a.a.Dir, a.full(), r.cfg.Options); err != nil {
			return fail(a, err)
		}
		r.stored += ws[i].st.Stored
	}
	ms := make([]*Manifest, len(r.areas))
	if same := r.sameWalked(ws); same != "" {
		for i := range ws {
			// a stat cache file keeps no exclusions: the record's,
			// which are the walk's (sameWalked)
			ms[i] = ws[i].prev
			ms[i].Excluded = ws[i].m.Excluded
		}
		return ms, same, nil
	}
	for i, a := range r.areas {
		if err := a.s.saveWalked(ws[i]); err != nil {
			return fail(a, err)
		}
		ms[i] = ws[i].m
	}
	return ms, "", nil
}

// sameWalked returns the id of the checkpoint every walk of ws found
// unchanged, when they are one checkpoint whose records are in the store
// and name the trees found; "" otherwise. It marks the records used
// (hourly: touchAfter), as startSame does.
func (r *Recorder) sameWalked(ws []walked) string {
	if len(ws) == 0 || ws[0].prev == nil {
		return ""
	}
	id := ws[0].prev.ID
	if validID(id) != nil {
		return ""
	}
	for _, w := range ws {
		if !w.same || w.prev.ID != id {
			return ""
		}
	}
	for i, a := range r.areas {
		rec, used, err := a.s.recordAt(id)
		if err != nil || rec.Root != ws[i].prev.Root || !slices.Equal(rec.Excluded, ws[i].m.Excluded) {
			return ""
		}
		if time.Since(used) > touchAfter {
			a.s.touchRecord(id)
		}
	}
	return id
}

// areaErr words a failed checkpoint of area a, walked or taken from the
// journal. Over the budget, what it copied before stopping goes now, not
// at the next prune.
func (r *Recorder) areaErr(a *areaRec, err error) error {
	if errors.Is(err, ErrOverBudget) {
		r.prune()
		return fmt.Errorf("checkpoint of %s/: %w: agentbox keeps checkpoints within --checkpoint-max-size (checkpoints.max_size); raise it, or leave large files out (checkpoints.max_file_size, checkpoints.exclude)", a.a.Name, err)
	}
	return fmt.Errorf("checkpoint of %s/: %w", a.a.Name, err)
}

// pruneIfGrown prunes the store to its budget while the run goes on, once
// the run has stored a quarter of the budget since the last prune: an
// agent that rewrites a large file with new content before every command
// would otherwise grow the store without bound while the workspace stays
// the same size. The newest Keep checkpoints (this run's latest among
// them) always stay.
func (r *Recorder) pruneIfGrown() {
	b := r.cfg.Budget
	if b.MaxBytes <= 0 || r.stored < b.MaxBytes/4 {
		return
	}
	r.stored = 0
	r.prune()
}

// prune prunes every area's store to its share of the budget. A
// checkpoint of this run that pruning removed (the budget is a bound, the
// latest checkpoint included) is forgotten: the next Before takes a new
// one, or fails.
func (r *Recorder) prune() {
	b := r.cfg.Budget
	if b.MaxBytes <= 0 {
		return
	}
	if len(r.areas) > 1 {
		b.MaxBytes /= int64(len(r.areas))
	}
	for _, a := range r.areas {
		if p, err := a.s.Prune(b, time.Now()); err == nil {
			r.pruned.Removed = append(r.pruned.Removed, p.Removed...)
			r.pruned.Freed += p.Freed
			r.pruned.Size = p.Size
		}
		if a.last != nil && a.last.ID != "" && !a.s.hasRecord(a.last.ID) {
			a.last = nil
			r.last = ""
		}
	}
}

// Link appends e to the run's index (Run and Time filled in).
func (r *Recorder) Link(e IndexEntry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.link(e)
}

// link is Link with r.mu held.
func (r *Recorder) link(e IndexEntry) error {
	e.Run = r.cfg.Run
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := appendIndexEntry(r.buf, e) // jsonfast.go
	if err != nil {
		return err
	}
	r.buf = append(b, '\n')
	if e.Kind != IndexCommand || len(r.buf) > 32<<10 {
		return r.flush()
	}
	return nil
}

// flush writes the buffered index lines (r.mu held).
func (r *Recorder) flush() error {
	if len(r.buf) == 0 || r.index == nil {
		return nil
	}
	_, err := r.index.Write(r.buf)
	r.buf = r.buf[:0]
	if err != nil {
		return fmt.Errorf("checkpoint store %s: run index: %w", r.cfg.Dir, err)
	}
	return nil
}

// SetExit records the run's exit status on its end line (Finish).
func (r *Recorder) SetExit(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exit = &code
}

// Finish takes the end checkpoint (from the change feed, as Before does:
// free when nothing changed since the last command), records it, prunes
// the store to its budget (every pruneEvery; the journal prunes instead
// when it answers: journal_prune.go) and stops following the areas. It
// returns what pruning removed, the journal's prunes since the last run
// that asked it included. A write inotify does not report (through a shared
// writable mmap) and nothing else followed is missing from the end
// checkpoint; an undo then sees it as changed after the run and keeps it
// (or refuses, naming it).
func (r *Recorder) Finish() (string, Pruned, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var id string
	var err error
	if r.j != nil && r.last != "" && r.journalUnchanged() {
		// nothing changed since the journal's last answer: that
		// answer's checkpoint, without asking again
		id = r.last
	} else if r.j != nil {
		id, err = r.takeJournal()
	} else {
		id, err = r.take(!r.watching)
	}
	pr := r.pruned // the journal's prunes told in its answers among them
	if err == nil {
		err = r.link(IndexEntry{Kind: IndexEnd, Checkpoint: id, Exit: r.exit})
	}
	for _, a := range r.areas {
		// a checkpoint from the journal's answer: the journal has its
		// entries and writes the file
		if a.last != nil && !a.partial && a.last.Root != a.cacheRoot {
			_ = a.s.SaveStatCache(a.last)
		}
	}
	if err == nil {
		b := r.cfg.Budget
		if b.MaxBytes > 0 && len(r.areas) > 1 {
			b.MaxBytes /= int64(len(r.areas))
		}
		var due []*areaRec
		for _, a := range r.areas {
			if a.s.pruneDue(pruneEvery) {
				due = append(due, a)
			}
		}
		if len(due) > 0 && r.j != nil && r.journalPrune(b) == nil {
			due = nil // the journal prunes, off this run's path (journal_prune.go)
		}
		if r.j == nil {
			// what a journal that exited pruned
			if p, ok := claimPruneReport(r.cfg.Dir); ok {
				addPruned(&pr, p)
			}
		}
		for _, a := range due {
			p, perr := a.s.Prune(b, time.Now())
			if perr != nil {
				err = perr
				break
			}
			pr.Removed = append(pr.Removed, p.Removed...)
			pr.Freed += p.Freed
			pr.Size += p.Size
		}
	}
	if err == nil && r.cfg.Journal && r.j == nil && r.cfg.JournalExe != "" {
		// none answered: start one for the next run (it compares the
		// tree with the stat cache just saved, off every run's path)
		_ = startJournal(r.cfg.JournalExe, journalSpec{Dir: r.cfg.Dir, Areas: r.cfg.Areas, Exclude: r.cfg.Options.ExcludeNames})
	}
	r.close()
	return id, pr, err
}

// NetChanges is NetChanges of the recorder's run, from the checkpoint
// ids it holds rather than its index read back (once Finish has
// returned: its start checkpoint against its end one, or its last
// command's when the end one failed). A run whose start and end are
// the same checkpoint changed nothing, and nothing is read.
func (r *Recorder) NetChanges() ([]AreaChange, error) {
	r.mu.Lock()
	first, last := r.first, r.last
	r.mu.Unlock()
	if first == "" || last == "" || first == last {
		return nil, nil
	}
	return newLoader(r.cfg.Dir, r.cfg.Areas).diff(first, last)
}

// pruneEvery is how often a run's end prunes its store: pruning reads
// every checkpoint's record and trees and walks the store (10-20 ms for a
// small store, more for a large one), too much for every short run. The
// budget can be overshot by what runs store in between. When the journal
// answers, it prunes instead, off the run's path (journal_prune.go).
const pruneEvery = 10 * time.Minute

// Close stops following the areas without an end checkpoint.
func (r *Recorder) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.close()
}

func (r *Recorder) close() {
	_ = r.flush()
	for _, a := range r.areas {
		if a.w != nil {
			a.w.Close()
			a.w = nil
		}
	}
	if r.index != nil {
		r.index.Close()
		r.index = nil
	}
	if r.j != nil {
		r.j.close()
		r.j = nil
	}
}

func indexPath(dir, run string) string { return filepath.Join(dir, "runs", run+".jsonl") }

// maxIndexLine bounds one line of a run's index.
const maxIndexLine = 1 << 20

// ReadIndex reads the index of run from the store dir.
func ReadIndex(dir, run string) ([]IndexEntry, error) {
	if err := ValidRunID(run); err != nil {
		return nil, err
	}
	f, err := os.Open(indexPath(dir, run))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no checkpoints of run %s in %s: %w", run, dir, ErrNoRun)
		}
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	}
	defer f.Close()
	var out []IndexEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxIndexLine)
	for line := 1; sc.Scan(); line++ {
		var e IndexEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Run != run || validID(e.Checkpoint) != nil {
			return nil, fmt.Errorf("%s line %d: %w: not an index entry of run %s", indexPath(dir, run), line, ErrCorrupt, run)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath(dir, run), err)
	}
	if len(out) == 0 || out[0].Kind != IndexStart {
		return nil, fmt.Errorf("%s: %w: no start checkpoint", indexPath(dir, run), ErrCorrupt)
	}
	return out, nil
}

// ErrLive is returned (wrapped) by Live for a run still recording.
var ErrLive = errors.New("the run is still going")

// Live returns an error wrapping ErrLive when run is still recording
// checkpoints (its agentbox holds the lock of the run's index).
func Live(dir, run string) error {
	if err := ValidRunID(run); err != nil {
		return err
	}
	f, err := os.Open(indexPath(dir, run))
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("run %s: %w (agentbox stop %s ends it)", run, ErrLive, run)
	}
	return nil
}

// ErrNoRun is returned (wrapped) when the store has no index of a run.
var ErrNoRun = errors.New("no such run")

// Runs lists the runs recorded in the store dir, oldest first.
func Runs(dir string) ([]IndexEntry, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []IndexEntry
	for _, d := range ents {
		run, ok := strings.CutSuffix(d.Name(), ".jsonl")
		if !ok || ValidRunID(run) != nil {
			continue
		}
		idx, err := ReadIndex(dir, run)
		if err != nil {
			continue
		}
		out = append(out, idx[0])
	}
	slices.SortFunc(out, func(a, b IndexEntry) int { return a.Time.Compare(b.Time) })
	return out, nil
}
