package agentbox

import (
	"fmt"
	"time"

	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/redact"
)

// recorder adapts a run's checkpoint.Recorder to the judge: argv is
// redacted as in the audit log before it goes into the run's index.
type recorder struct{ r *checkpoint.Recorder }

func (c recorder) Before() (string, error) { return c.r.Before() }
func (c recorder) Clean() bool             { return c.r.Clean() }
func (c recorder) Link(id string, seq uint64, pid int, argv []string) error {
	shown, _ := redact.Argv(argv)
	// bounded like the audit event's argv: the agent chooses it (the
	// whole is in the audit event, with its hash)
	shown = capfield.Words(shown, 1024, 4096)
	return c.r.Link(checkpoint.IndexEntry{Kind: checkpoint.IndexCommand, Checkpoint: id, Seq: seq, Pid: pid, Argv: shown})
}

// startCheckpoints takes the run's start checkpoint (nil when the plan
// has checkpoints off).
func (r *Run) startCheckpoints() error {
	cp := r.plan.Checkpoints
	if cp == nil {
		return nil
	}
	rec, err := checkpoint.StartRecorder(checkpoint.RecorderConfig{Dir: cp.Dir, Run: r.plan.ID, Areas: cp.Areas, Options: cp.Options, Budget: cp.Budget})
	r.debugf("start checkpoint taken")
	if err != nil {
		return &OptionError{Option: "checkpoints", Err: fmt.Errorf("%w (--checkpoints off runs without undo)", err)}
	}
	r.rec = rec
	r.closer = append(r.closer, rec.Close) // a Start that fails later
	return nil
}

// finishCheckpoints takes the end checkpoint and prunes the store, with
// one line when pruning removed checkpoints or the end one failed.
func (r *Run) finishCheckpoints() {
	if r.rec == nil {
		return
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

// debugf writes one --debug timing line (WithDebugLog).
func (r *Run) debugf(format string, args ...any) {
	if r.o.log != nil {
		fmt.Fprintf(r.o.log, "agentbox: %7.2fms "+format+"\n", append([]any{float64(time.Since(r.o.t0).Microseconds()) / 1000}, args...)...)
	}
}
