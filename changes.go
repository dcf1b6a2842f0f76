package agentbox

// A run's record of what it changed: the checkpoints taken before each
// command (or the review layer its writes land in), and what an
// orchestrator does with them once the run has ended (Run.Changes,
// Run.Undo, Run.Apply, Run.Discard). The same by run id, after the
// process that ran it is gone, is internal/review's (agentbox changes,
// undo, apply, discard).

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/layer"
	"github.com/agentbox/agentbox/internal/redact"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// LayerChange is one path a run changed ("target/a.go" and its kind:
// added, modified, deleted, mode, renamed), as Run.Changes lists it.
type LayerChange = layer.Change

// ApplyResult is what Run.Apply carried into target/.
type ApplyResult = layer.ApplyResult

// ConflictError refuses Run.Apply: paths changed in target/ since the run
// started (force applies them anyway).
type ConflictError = layer.ConflictError

// LiveError refuses reading or applying the layer of a run still running.
type LiveError = layer.LiveError

// ErrNoLayer is wrapped by Run.Changes', Run.Apply's and Run.Discard's
// errors for a run that has no layer (not started with WithReview).
var ErrNoLayer = layer.ErrNoLayer

// UndoOptions say what Run.Undo restores: everything the run changed
// (zero value), the state before the command with audit seq To, or only
// what command Only changed.
type UndoOptions struct {
	To, Only uint64
	DryRun   bool // say what would change; change nothing
	Force    bool // overwrite paths changed since the run, outside it
}

// UndoResult says what Run.Undo restored, what it kept, and the undo's
// own run id (undoing that redoes).
type UndoResult = checkpoint.UndoResult

// UndoConflict is the error of an undo that would overwrite later
// commands' or someone else's changes; nothing was changed.
type UndoConflict = checkpoint.ConflictError

// recorder adapts a run's checkpoint.Recorder to the judge: argv is
// redacted as in the audit log before it goes into the run's index. The
// recorder is r.rec, set before the command is released (the judge is
// built before the start checkpoint is taken, which overlaps the
// helper's start).
type recorder struct{ r *Run }

func (c recorder) Before() (string, error) { return c.r.rec.Before() }
func (c recorder) Clean() bool             { return c.r.rec.Clean() }
func (c recorder) Link(id string, seq uint64, pid int, argv []string) error {
	shown, _ := redact.Argv(argv)
	// bounded like the audit event's argv: the agent chooses it (the
	// whole is in the audit event, with its hash)
	shown = capfield.Words(shown, 1024, 4096)
	return c.r.rec.Link(checkpoint.IndexEntry{Kind: checkpoint.IndexCommand, Checkpoint: id, Seq: seq, Pid: pid, Argv: shown})
}

// journalEnv names the environment variable that, set to "off", keeps
// runs from starting or asking the checkpoint change journal (the process
// that follows a workspace between runs so checkpoints need not walk it):
// every checkpoint then walks the workspace. Test harnesses whose
// workspaces are temporary set it, so no journal outlives them.
const journalEnv = "AGENTBOX_CHECKPOINT_JOURNAL"

// startCheckpoints starts taking the run's start checkpoint while the
// helper starts, and returns the wait for it that the sandbox calls
// before it releases the command (Config.BeforeRelease), which sets r.rec
// or refuses the release: no command runs without its start checkpoint.
// It returns nil when the plan has checkpoints off. A recorder that was
// never waited for (the run failed before its release) is closed with the
// run.
func (r *Run) startCheckpoints() func() error {
	cp := r.plan.Checkpoints
	if cp == nil {
		return nil
	}
	type started struct {
		rec *checkpoint.Recorder
		err error
	}
	ch := make(chan started, 1)
	go func() {
		cfg := checkpoint.RecorderConfig{Dir: cp.Dir, Run: r.plan.ID, Areas: cp.Areas, Options: cp.Options, Budget: cp.Budget,
			Journal: os.Getenv(journalEnv) != "off"}
		// the run's command on its index's start line (agentbox changes --runs), redacted and bounded as its audit event's
		argv, _ := redact.Argv(r.plan.Argv)
		cfg.Argv = capfield.Words(argv, 1024, 4096)
		if wired.Load() {
			// the journal is this executable (its main calls MaybeRunHelper)
			cfg.JournalExe, _ = os.Executable()
		}
		rec, err := checkpoint.StartRecorder(cfg)
		r.debugf("start checkpoint taken")
		ch <- started{rec, err}
	}()
	var once sync.Once
	var res started
	wait := func() started {
		once.Do(func() { res = <-ch })
		return res
	}
	r.closer = append(r.closer, func() {
		if s := wait(); s.rec != nil {
			s.rec.Close() // after Finish, or when the run never released its command
		}
	})
	return func() error {
		s := wait()
		if s.err != nil {
			err := &OptionError{Option: "checkpoints", Err: fmt.Errorf("%w (--checkpoints off runs without undo)", s.err)}
			if r.emit != nil {
				// the launch is audited already: say why nothing ran
				code := ExitFailure
				_ = r.emit(audit.Event{Event: audit.EventExit, Exit: &code, Reason: "the command was not started: " + err.Error()})
			}
			return err
		}
		r.rec = s.rec
		return nil
	}
}

// finishCheckpoints takes the end checkpoint and prunes the store (or
// has the journal prune it), with one line when pruning removed
// checkpoints (this run's, or the journal's since the last run it told)
// or the end one failed.
func (r *Run) finishCheckpoints(res *sandbox.Result, runErr error) {
	if r.rec == nil {
		return
	}
	// the end line of the run's index says how it ended (agentbox
	// changes --runs)
	if runErr == nil && res != nil {
		r.rec.SetExit(res.ExitCode)
	} else {
		r.rec.SetExit(ExitFailure)
	}
	_, pr, err := r.rec.Finish()
	r.debugf("end checkpoint taken, store pruned")
	if err != nil {
		fmt.Fprintf(r.o.warnings, "agentbox: warning: the run's end checkpoint failed (%v): undo restores to its last command's checkpoint\n", err)
		return
	}
	if len(pr.Removed) > 0 {
		fmt.Fprintf(r.o.warnings, "agentbox: checkpoints: pruned %d oldest to the store's budget (freed %d MiB, store now %d MiB): %s\n",
			len(pr.Removed), pr.Freed>>20, pr.Size>>20, r.plan.Checkpoints.Dir)
	}
}

// WithReview makes the run a review run: its writes to target/ land in a
// layer of its own (Run.Changes, Run.Apply, Run.Discard afterwards; or
// agentbox changes, apply, discard by run id).
func WithReview() Option { return func(o *options) error { o.review = true; return nil } }

// WithReviewStore keeps review layers under dir instead of the default
// (under $XDG_STATE_HOME/agentbox/layers); it must be outside the
// workspace and every writable area.
func WithReviewStore(dir string) Option {
	return func(o *options) error { o.reviewDir = dir; return nil }
}

// startReview creates the run's layer and points the sandbox at it; the
// layer is closed (its run recorded as ended) once every process is gone.
// makeLayer creates the layer in the background (its file creations cost
// ~1 ms on a journaled file system), while Start sets up the rest.
func (r *Run) makeLayer() chan layerMade {
	ch := make(chan layerMade, 1)
	rv := r.plan.Review
	if rv == nil {
		ch <- layerMade{}
		return ch
	}
	m := layer.Meta{Run: r.plan.ID, Agent: r.plan.Agent, Role: r.plan.Role.Name, Workspace: r.plan.Workspace(),
		Target: r.plan.Boundary.Target, Started: time.Now().UTC(), UserXattr: os.Geteuid() != 0}
	if p := r.auditPathForEntry(); p != "" && p != "-" {
		m.Audit, m.AuditKey = p, r.o.auditKey
	}
	go func() {
		l, err := layer.Create(rv.Root, m)
		ch <- layerMade{l, err}
	}()
	return ch
}

// dropPendingLayer removes a layer made for a Start that failed before
// the sandbox was configured.
func (r *Run) dropPendingLayer() {
	if r.layerCh == nil {
		return
	}
	lm := <-r.layerCh
	r.layerCh = nil
	if lm.l != nil {
		lm.l.Close()
		lm.l.Discard()
	}
}

type layerMade struct {
	l   *layer.Layer
	err error
}

func (r *Run) startReview(cfg *sandbox.Config) error {
	ch := r.layerCh
	r.layerCh = nil
	if r.plan.Review == nil {
		<-ch
		return nil
	}
	// The layer is still being made (makeLayer): the helper gets its
	// paths now and its configuration once it exists (BeforeConfig), so
	// its Go runtime starts meanwhile.
	var once sync.Once
	var lm layerMade
	wait := func() layerMade {
		once.Do(func() { lm = <-ch })
		return lm
	}
	ok := false
	r.closer = append(r.closer, func() {
		l := wait().l
		if l == nil {
			return
		}
		l.Close()
		if !ok {
			l.Discard() // the command never started: nothing to review
			return
		}
		// A run that changed nothing leaves no layer: nothing to review,
		// apply or discard (the end line says "no file changed").
		if cs, err := l.Changes(); err == nil && len(cs) == 0 {
			l.Discard()
		}
	})
	cfg.Review = true
	cfg.ReviewUpper, cfg.ReviewWork = layer.Paths(r.plan.Review.Root, r.plan.ID)
	cfg.BeforeConfig = func() error {
		m := wait()
		if m.err != nil {
			return &OptionError{Option: "review", Err: m.err}
		}
		r.layer = m.l
		return nil
	}
	started := cfg.Started
	cfg.Started = func(pid int) {
		ok = true
		if started != nil {
			started(pid)
		}
	}
	return nil
}

// Changes lists what the run changed, once it has ended: for a review
// run what its layer would change in target/; for a run with checkpoints
// what it changed in the writable areas from its first checkpoint to its
// last ("target/a.go", Kind added, modified, deleted or mode). A run with
// neither has nothing to list (an error wrapping ErrNoLayer).
func (r *Run) Changes() ([]LayerChange, error) {
	if r.plan.Review == nil && r.plan.Checkpoints != nil {
		if err := r.endedAny(); err != nil {
			return nil, err
		}
		ch, err := checkpoint.NetChanges(r.plan.Checkpoints.Dir, r.plan.ID)
		if err != nil {
			return nil, err
		}
		out := make([]LayerChange, len(ch))
		for i, c := range ch {
			out[i] = LayerChange{Path: c.Path, Kind: layer.Kind(c.Kind)}
		}
		return out, nil
	}
	if err := r.ended(); err != nil {
		return nil, err
	}
	return review.LayerChanges(r.plan.Review.Root, r.plan.ID)
}

// Undo takes back what the run changed, once it has ended: for a run with
// checkpoints it puts the writable areas back as the run found them (or
// before command o.To, or reverts command o.Only), refusing with an
// *UndoConflict what would overwrite changes made since, and records
// itself so that undoing UndoResult.Redo brings the work back (agentbox
// undo REDO); for a review run, whose work
// never reached target/, by discarding its layer (o.DryRun: nothing is
// removed). The one entry point for both.
func (r *Run) Undo(o UndoOptions) (*UndoResult, error) {
	if r.plan.Review == nil && r.plan.Checkpoints != nil {
		if err := r.endedAny(); err != nil {
			return nil, err
		}
		return review.Undo(r.plan.Checkpoints.Dir, r.plan.ID, review.UndoOptions(o))
	}
	if err := r.ended(); err != nil {
		return nil, err
	}
	if !o.DryRun {
		if err := r.Discard(); err != nil {
			return nil, err
		}
	}
	return &UndoResult{}, nil
}

// endedAny is nil once the run has ended (any kind of run).
func (r *Run) endedAny() error {
	if r.done == nil {
		return errors.New("agentbox: the run was not started")
	}
	select {
	case <-r.done:
		return nil
	default:
		return fmt.Errorf("run %s has not ended", r.plan.ID)
	}
}

// Apply carries the review run's layer (or the paths given) into target/.
func (r *Run) Apply(paths []string, force bool) (*ApplyResult, error) {
	if err := r.ended(); err != nil {
		return nil, err
	}
	return review.Apply(r.plan.Review.Root, r.plan.ID, paths, force, r.o.warnings)
}

// Discard removes the review run's layer.
func (r *Run) Discard() error {
	if err := r.ended(); err != nil {
		return err
	}
	return review.Discard(r.plan.Review.Root, r.plan.ID)
}

func (r *Run) ended() error {
	if r.plan.Review == nil {
		return fmt.Errorf("run %s: %w (not started with WithReview)", r.plan.ID, ErrNoLayer)
	}
	if r.done == nil {
		return errors.New("agentbox: the run was not started")
	}
	if r.layer != nil && !r.layer.Live() {
		return nil // every process is gone and the layer closed (the run's end line reads it)
	}
	select {
	case <-r.done:
		return nil
	default:
		return &LiveError{Run: r.plan.ID}
	}
}
