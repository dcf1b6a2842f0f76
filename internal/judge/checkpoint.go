package judge

import (
	"log/slog"

	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/supervise"
)

// Checkpointer records the run's writable areas before a command runs
// (issue 28: every change an agent makes can be undone). The run's
// checkpoint.Recorder, adapted; nil in Config means checkpoints are off.
type Checkpointer interface {
	// Before returns the checkpoint of the areas as they are now (the
	// last one when nothing changed since). An error means none could be
	// taken: the program is denied, never run unprotected.
	Before() (string, error)
	// Clean reports whether Before would return at once.
	Clean() bool
	// Link records that the program pid (argv), audited as seq, runs
	// after checkpoint id.
	Link(id string, seq uint64, pid int, argv []string) error
}

// A command is the unit a checkpoint precedes: each program the agent
// starts, and each program a shell started by it (or by another such
// shell) runs, such as each line of a Bash tool call. Programs started
// deeper, inside a build say, share their command's checkpoint: what
// they change is that command's change.
type unit struct {
	start      uint64 // the process's start time (pid reuse)
	shell      bool   // its children's programs are commands of their own
	checkpoint string
}

// maxUnits bounds the judge's table of commands; past it, entries of
// processes gone are dropped.
const maxUnits = 4096

// shells are the programs whose children's programs are commands of
// their own.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "fish": true, "busybox": true}

// commandOf finds the command pid's program belongs to: the nearest of
// pid and its ancestors that is recorded. It returns that unit's
// checkpoint, and new=true when this program is a command of its own
// (the nearest recorded is a shell or the agent, or none is).
func (p *Judge) commandOf(pid int) (checkpoint string, isNew bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := pid
	for depth := 0; depth < 64 && q > 1; depth++ {
		st, err := procfs.ReadStat(q)
		if err != nil {
			return "", true
		}
		if u, ok := p.units[q]; ok && u.start == st.StartTime {
			if u.shell {
				return "", true
			}
			return u.checkpoint, false
		}
		q = st.Ppid
	}
	return "", true
}

// noteCommand records pid as a command that ran after checkpoint id.
// The run's first program (no recorded ancestor) counts as a shell: the
// agent's own children are commands.
func (p *Judge) noteCommand(pid int, prog, id string) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.units == nil {
		p.units = map[int]unit{}
	}
	if len(p.units) >= maxUnits {
		for q, u := range p.units {
			if !procfs.Alive(q, u.start) {
				delete(p.units, q)
			}
		}
	}
	first := len(p.units) == 0 && !p.sawCommand
	p.sawCommand = true
	p.units[pid] = unit{start: st.StartTime, shell: first || shells[prog], checkpoint: id}
}

// checkpointFor returns the checkpoint the program of ev runs after:
// a new one for a command, its command's for a program inside one.
func (p *Judge) checkpointFor(ev *supervise.ExecEvent, prog string) (id string, isNew bool, err error) {
	id, isNew = p.commandOf(ev.Pid)
	if !isNew {
		return id, false, nil
	}
	if id, err = p.cfg.Checkpoints.Before(); err != nil {
		return "", true, err
	}
	p.noteCommand(ev.Pid, prog, id)
	return id, true, nil
}

// needsWalk reports whether the checkpoint ev needs could take a walk of
// changed directories (DecideFast leaves those to Decide, off the
// tracer thread).
func (p *Judge) needsWalk(ev *supervise.ExecEvent) bool {
	if p.cfg.Checkpoints == nil {
		return false
	}
	if _, isNew := p.commandOf(ev.Pid); !isNew {
		return false
	}
	return !p.cfg.Checkpoints.Clean()
}

// linkCheckpoint records the command's audit seq with its checkpoint.
func (p *Judge) linkCheckpoint(id string, seq uint64, ev *supervise.ExecEvent) {
	if err := p.cfg.Checkpoints.Link(id, seq, ev.Pid, ev.Argv); err != nil {
		slog.Warn("checkpoint: the run's index misses a command", "checkpoint", id, "seq", seq, "err", err)
	}
}
