package agentbox

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/redact"
	"github.com/agentbox/agentbox/internal/sandbox"
)

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

// startCheckpoints starts taking the run's start checkpoint while the
// helper starts, and returns the wait for it that the sandbox calls
// before it releases the command (Config.BeforeRelease), which sets r.rec
// or refuses the release: no command runs without its start checkpoint.
// It returns nil when the plan has checkpoints off. A recorder that was
// never waited for (the run failed before its release) is closed with the
// run.
// JournalEnv names the environment variable that, set to "off", keeps
// runs from starting or asking the checkpoint change journal (the process
// that follows a workspace between runs so checkpoints need not walk it):
// every checkpoint then walks the workspace. Test harnesses whose
// workspaces are temporary set it, so no journal outlives them.
const JournalEnv = "AGENTBOX_CHECKPOINT_JOURNAL"

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
			Journal: os.Getenv(JournalEnv) != "off"}
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

// finishCheckpoints takes the end checkpoint and prunes the store, with
// one line when pruning removed checkpoints or the end one failed.
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

// debugf writes one --debug timing line (WithDebugLog).
func (r *Run) debugf(format string, args ...any) {
	if r.o.log != nil {
		fmt.Fprintf(r.o.log, "agentbox: %7.2fms "+format+"\n", append([]any{float64(time.Since(r.o.t0).Microseconds()) / 1000}, args...)...)
	}
}
