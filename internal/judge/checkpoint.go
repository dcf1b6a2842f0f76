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

// commandOf finds the command the program of ev belongs to: the nearest
// of its process and their ancestors that is recorded. It returns that
// unit's checkpoint, and isNew=true when this program is a command of its
// own (the nearest recorded is a shell or the agent, or none is). It
// reads /proc only for a recorded pid (to tell it from a reused one) and
// for ancestors above the parent.
func (p *Judge) commandOf(ev *supervise.ExecEvent) (checkpoint string, isNew bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.units) == 0 {
		return "", true // the run's first program
	}
	if u, ok := p.units[ev.Pid]; ok && ev.Start != 0 && u.start == ev.Start {
		// a recorded process execs again: a shell's exec is a command
		if u.shell {
			return "", true
		}
		return u.checkpoint, false
	}
	q := ev.Ppid
	for depth := 0; depth < 64 && q > 1; depth++ {
		u, ok := p.units[q]
		st, err := procfs.ReadStat(q)
		if err != nil {
			return "", true
		}
		if ok && u.start == st.StartTime {
			if u.shell {
				return "", true
			}
			if depth > 0 && ev.Start != 0 && len(p.units) < maxUnits {
				// remembered, so its children's programs find it
				// without reading their grandparents (cc1 under cc)
				p.units[ev.Pid] = unit{start: ev.Start, checkpoint: u.checkpoint}
			}
			return u.checkpoint, false
		}
		q = st.Ppid
	}
	return "", true
}

// noteCommand records the process of ev as a command that runs after
// checkpoint id. The run's first program counts as a shell when it is one
// or the agent (an agent profile applies): its children's programs are
// commands; any other first program (agentbox run -- make) is one command,
// everything it starts sharing the start checkpoint.
func (p *Judge) noteCommand(ev *supervise.ExecEvent, prog, id string) {
	start := ev.Start
	if start == 0 {
		st, err := procfs.ReadStat(ev.Pid)
		if err != nil {
			return
		}
		start = st.StartTime
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
	first := !p.sawCommand
	p.sawCommand = true
	p.units[ev.Pid] = unit{start: start, shell: shells[prog] || (first && p.cfg.AgentFirst), checkpoint: id}
}

// checkpointFor returns the checkpoint the program of ev runs after:
// a new one for a command (isNew, from commandOf), its command's for a
// program inside one.
func (p *Judge) checkpointFor(ev *supervise.ExecEvent, prog, shared string, isNew bool) (string, error) {
	if !isNew {
		return shared, nil
	}
	id, err := p.cfg.Checkpoints.Before()
	if err != nil {
		return "", err
	}
	p.noteCommand(ev, prog, id)
	return id, nil
}

// needsWalk reports whether the checkpoint ev needs could take a walk of
// changed directories (DecideFast leaves those to Decide, off the
// tracer thread).
func (p *Judge) needsWalk(d *decision) bool {
	return p.cfg.Checkpoints != nil && d.newCheckpoint && !p.cfg.Checkpoints.Clean()
}

// linkCheckpoint records the command's audit seq with its checkpoint.
func (p *Judge) linkCheckpoint(id string, seq uint64, ev *supervise.ExecEvent) {
	if err := p.cfg.Checkpoints.Link(id, seq, ev.Pid, ev.Argv); err != nil {
		slog.Warn("checkpoint: the run's index misses a command", "checkpoint", id, "seq", seq, "err", err)
	}
}
