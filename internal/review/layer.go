package agentbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/gitleft"
	"github.com/agentbox/agentbox/internal/gitsum"
	"github.com/agentbox/agentbox/internal/layer"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// Review runs: target/ inside the run is a copy-on-write view of the real
// one, and everything the run writes lands in a layer of its own, kept
// outside the workspace (docs/architecture.md, "Review runs"). The real
// target/ is not changed until the layer is applied.

// LayerChange is one path a review run's layer changes.
type LayerChange = layer.Change

// ApplyResult is what an apply changed.
type ApplyResult = layer.ApplyResult

// ConflictError refuses an apply: paths changed in target/ since the run
// started.
type ConflictError = layer.ConflictError

// LiveError refuses reading or applying the layer of a run still running.
type LiveError = layer.LiveError

// ErrNoLayer is returned for a run that has no layer.
var ErrNoLayer = layer.ErrNoLayer

// ReviewLayer describes a review run's layer.
type ReviewLayer = layer.Meta

// WithReview makes the run a review run: its writes to target/ land in a
// layer of its own (Run.Changes, Run.Apply, Run.Discard afterwards; or
// ReviewChanges, ApplyReview, DiscardReview by run id).
func WithReview() Option { return func(o *options) error { o.review = true; return nil } }

// WithReviewStore keeps review layers under dir instead of the default
// (under $XDG_STATE_HOME/agentbox/layers); it must be outside the
// workspace and every writable area.
func WithReviewStore(dir string) Option {
	return func(o *options) error { o.reviewDir = dir; return nil }
}

// DefaultReviewStore is where review layers are kept by default.
func DefaultReviewStore() string { return layer.DefaultRoot() }

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
	return ReviewChanges(r.plan.Review.Root, r.plan.ID)
}

// Undo takes back what the run changed, once it has ended: for a run with
// checkpoints as Undo(store, run, o) does; for a review run, whose work
// never reached target/, by discarding its layer (o.DryRun: nothing is
// removed). The one entry point for both.
func (r *Run) Undo(o UndoOptions) (*UndoResult, error) {
	if r.plan.Review == nil && r.plan.Checkpoints != nil {
		if err := r.endedAny(); err != nil {
			return nil, err
		}
		return Undo(r.plan.Checkpoints.Dir, r.plan.ID, o)
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
	return ApplyReview(r.plan.Review.Root, r.plan.ID, paths, force, r.o.warnings)
}

// Discard removes the review run's layer.
func (r *Run) Discard() error {
	if err := r.ended(); err != nil {
		return err
	}
	return DiscardReview(r.plan.Review.Root, r.plan.ID)
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

func storeOr(store string) string {
	if store == "" {
		return layer.DefaultRoot()
	}
	return store
}

// ReviewLayers lists the review layers kept in store ("" the default).
func ReviewLayers(store string) ([]ReviewLayer, error) { return layer.List(storeOr(store)) }

// ReviewChanges lists what run's layer changes in target/ as it is now.
func ReviewChanges(store, run string) ([]LayerChange, error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return nil, err
	}
	if l.Live() {
		return nil, &LiveError{Run: run}
	}
	return l.Changes()
}

// ReviewDiff is a unified diff of one change (diff -u of target/'s file
// and the layer's); a binary file is named, not shown; a symlink shows
// its target. Control characters are escaped: everything here is the
// agent's.
func ReviewDiff(store, run string, c LayerChange) (string, error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return "", err
	}
	p := escapeControls(c.Path)
	var head strings.Builder
	from := c.Path
	if c.Kind == layer.Renamed {
		from = c.From
		fmt.Fprintf(&head, "rename from %s\nrename to %s\n", escapeControls(c.From), p)
	}
	if c.OldMode != 0 && c.Mode != 0 && c.OldMode != c.Mode {
		fmt.Fprintf(&head, "old mode %o\nnew mode %o\n", c.OldMode, c.Mode)
	}
	switch {
	case c.Type == "dir":
		if c.Kind == layer.Added {
			fmt.Fprintf(&head, "new directory %s\n", p)
		} else if c.Kind == layer.Deleted {
			fmt.Fprintf(&head, "deleted directory %s\n", p)
		}
		return head.String(), nil
	case c.Type == "symlink" || c.Kind == layer.Deleted && c.Type == "symlink":
		if c.Kind == layer.Deleted {
			fmt.Fprintf(&head, "deleted symlink %s\n", p)
		} else {
			fmt.Fprintf(&head, "symlink %s -> %s\n", p, escapeControls(c.Target))
		}
		return head.String(), nil
	case c.Kind == layer.Mode:
		return head.String(), nil
	case c.Binary:
		fmt.Fprintf(&head, "Binary files a/%s and b/%s differ\n", escapeControls(from), p)
		return head.String(), nil
	}
	a, b := filepath.Join(l.Meta.Target, from), filepath.Join(l.Upper(), c.Path)
	if c.Kind == layer.Added {
		a = "/dev/null"
	}
	if c.Kind == layer.Deleted {
		b = "/dev/null"
	}
	out, err := exec.Command("diff", "-u", "--label", "a/"+from, "--label", "b/"+c.Path, a, b).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return "", fmt.Errorf("diff of %s: %w", c.Path, err)
	}
	return head.String() + escapeControls(string(out)), nil
}

// ApplyReview applies run's layer (or the paths given) to its target/,
// refusing conflicts unless force, and records it in the run's audit log.
// What would make git run a program and arrives with the apply (hooks,
// config) is reported on warnings and audited as a violation.
func ApplyReview(store, run string, paths []string, force bool, warnings interface{ Write([]byte) (int, error) }) (*ApplyResult, error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return nil, err
	}
	before := gitleft.Scan([]string{l.Meta.Target})
	res, err := l.Apply(paths, force)
	if res != nil && len(res.Applied) > 0 {
		var ps, hs []string
		for _, c := range res.Applied {
			ps = append(ps, string(c.Kind)+" "+c.Path)
			if c.Hash != "" {
				hs = append(hs, c.Path+"="+c.Hash[:16])
			}
		}
		d := map[string]string{"paths": strings.Join(ps, "\n"), "sha256": strings.Join(hs, " "), "left": strconv.Itoa(res.Left),
			"applied_by": invoker(), "target": l.Meta.Target}
		if force {
			d["force"] = "true"
		}
		reviewEvent(l.Meta, audit.EventApply, fmt.Sprintf("%d path(s) applied to target/", len(res.Applied)), d)
		for _, f := range gitleft.Compare(before, gitleft.Scan([]string{l.Meta.Target})) {
			reviewEvent(l.Meta, audit.EventViolation, f.String()+"; arrived with agentbox apply", map[string]string{"path": f.Path, "git": f.What})
			if warnings != nil {
				fmt.Fprintf(warnings, "agentbox: warning: %s: %s, arrived with the apply; git would run it: review it, or %s\n",
					shellquote.Sanitize(f.Path), shellquote.Sanitize(f.What), shellquote.Command(f.Command()))
			}
		}
	}
	return res, err
}

// GitSummary is what changed inside one repository's .git directory, in
// one line ("2 commits on main, index changed") and the paths it stands
// for.
type GitSummary = gitsum.Summary

// ReviewGitSummary separates the changes of run's layer inside .git
// directories from the others (rest, in order) and summarises them per
// repository, reading refs and commits from target/ and the layer (no git
// is run).
func ReviewGitSummary(store, run string, cs []LayerChange) (rest []LayerChange, sums []GitSummary, err error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return nil, nil, err
	}
	in := make([]gitsum.Change, len(cs))
	for i, c := range cs {
		in[i] = gitsum.Change{Path: c.Path, Kind: string(c.Kind)}
	}
	_, sums = gitsum.Split(in, l)
	for _, c := range cs {
		if gitsum.GitDirOf(c.Path) == "" {
			rest = append(rest, c)
		}
	}
	return rest, sums, nil
}

// DiscardReview removes run's layer, recording it in the run's audit log.
func DiscardReview(store, run string) error {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return err
	}
	if err := l.Discard(); err != nil {
		return err
	}
	reviewEvent(l.Meta, audit.EventDiscard, "the layer was discarded", map[string]string{"discarded_by": invoker()})
	return nil
}

// reviewEvent appends an event to the run's audit log (best effort: the
// apply itself stands).
func reviewEvent(m layer.Meta, kind, reason string, detail map[string]string) {
	if m.Audit == "" {
		return
	}
	w, err := audit.OpenKeyed(m.Audit, m.AuditKey)
	if err != nil {
		return
	}
	defer w.Close()
	_ = w.Write(audit.Event{Event: kind, Agent: m.Agent, Role: m.Role, Run: m.Run, Reason: reason, Detail: detail})
}

// invoker names who runs agentbox: user name and uid.
func invoker() string {
	uid := os.Getuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username + " (uid " + strconv.Itoa(uid) + ")"
	}
	return "uid " + strconv.Itoa(uid)
}
