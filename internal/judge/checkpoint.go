package judge

import (
	"log/slog"

	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/supervise"
	"golang.org/x/sys/unix"
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
	// The process: a pidfd of it, plus one (0: none), or else its start
	// time (start, read from /proc: with the pid it names the process
	// across pid reuse).
	pidfd      int
	start      uint64
	shell      bool // its children's programs are commands of their own
	checkpoint string
}

// maxUnits bounds the judge's table of commands; past it, entries of
// processes gone are dropped.
const maxUnits = 4096

// maxUnitPidfds bounds the pidfds the table holds; past it (once the
// entries of processes gone are dropped), processes are named by their
// start time.
const maxUnitPidfds = 256

// alive reports whether the process u recorded is still pid: a pidfd is
// polled (one system call; a live process's pid is never reused), a start
// time compared with /proc/PID/stat's.
func (u unit) alive(pid int) bool {
	if u.pidfd > 0 {
		return !procfs.PidfdExited(u.pidfd - 1)
	}
	return u.start != 0 && procfs.Alive(pid, u.start)
}

// unitFor names ev's process for the table: a duplicate of the event's
// pidfd while the table holds fewer than maxUnitPidfds, else its start
// time. ok is false when neither could be had (it has exited). p.mu is
// held.
func (p *Judge) unitFor(ev *supervise.ExecEvent) (unit, bool) {
	if fd := ev.Pidfd(); fd >= 0 {
		if p.unitPidfds >= maxUnitPidfds && !p.pidfdsFull {
			// once per pidfd freed at most: a table of live commands
			// is not walked again at every exec
			p.pruneUnits()
			p.pidfdsFull = p.unitPidfds >= maxUnitPidfds
		}
		if p.unitPidfds < maxUnitPidfds {
			if d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err == nil {
				p.unitPidfds++
				return unit{pidfd: d + 1}, true
			}
		}
	}
	start := ev.Start
	if start == 0 {
		st, err := procfs.ReadStat(ev.Pid)
		if err != nil {
			return unit{}, false
		}
		start = st.StartTime
	}
	return unit{start: start}, true
}

// setUnit records u for pid, releasing the entry it replaces. p.mu is held.
func (p *Judge) setUnit(pid int, u unit) {
	if old, ok := p.units[pid]; ok {
		p.dropUnit(pid, old)
	}
	if p.units == nil {
		p.units = map[int]unit{}
	}
	p.units[pid] = u
}

// dropUnit removes pid's entry u and closes its pidfd. p.mu is held.
func (p *Judge) dropUnit(pid int, u unit) {
	delete(p.units, pid)
	if u.pidfd > 0 {
		unix.Close(u.pidfd - 1)
		p.unitPidfds--
		p.pidfdsFull = false
	}
}

// pruneUnits drops the entries of processes that are gone. p.mu is held.
func (p *Judge) pruneUnits() {
	for q, u := range p.units {
		if !u.alive(q) {
			p.dropUnit(q, u)
		}
	}
}

// closeUnits releases the table (the judge's Close).
func (p *Judge) closeUnits() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for q, u := range p.units {
		p.dropUnit(q, u)
	}
}

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
	if u, ok := p.units[ev.Pid]; ok && u.alive(ev.Pid) {
		// a recorded process execs again: a shell's exec is a command
		if u.shell {
			return "", true
		}
		return u.checkpoint, false
	}
	q := ev.Ppid
	for depth := 0; depth < 64 && q > 1; depth++ {
		if u, ok := p.units[q]; ok && u.alive(q) {
			if u.shell {
				return "", true
			}
			if depth > 0 && len(p.units) < maxUnits {
				// remembered, so its children's programs find it
				// without reading their grandparents (cc1 under cc)
				if nu, ok := p.unitFor(ev); ok {
					nu.checkpoint = u.checkpoint
					p.setUnit(ev.Pid, nu)
				}
			}
			return u.checkpoint, false
		}
		st, err := procfs.ReadStat(q) // not recorded: its parent, then
		if err != nil {
			return "", true
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.units) >= maxUnits {
		p.pruneUnits()
	}
	u, ok := p.unitFor(ev)
	if !ok {
		return
	}
	first := !p.sawCommand
	p.sawCommand = true
	u.shell, u.checkpoint = shells[prog] || (first && p.cfg.AgentFirst), id
	p.setUnit(ev.Pid, u)
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
