package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/procfs"
	"golang.org/x/sys/unix"
)

// forwardedSignals are passed on from the launcher to the command's process
// group. (Terminal keys such as Ctrl-C reach the command through its pty.)
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT}

// watchdog enforces the timeout (SIGTERM, grace, SIGKILL) and forwards
// signals while a command runs. It works the same whether the plain wait
// loop or the exec supervisor owns waiting.
type watchdog struct {
	l        *launcher
	ctx      context.Context
	done     chan struct{}
	once     sync.Once
	fired    atomic.Bool
	sigs     chan os.Signal
	wg       sync.WaitGroup
	watching atomic.Bool
}

func newWatchdog(l *launcher, ctx context.Context) *watchdog {
	return &watchdog{l: l, ctx: ctx, done: make(chan struct{})}
}

// watch starts enforcing for root pid.
func (w *watchdog) watch(pid int) {
	if !w.watching.CompareAndSwap(false, true) {
		return
	}
	w.sigs = make(chan os.Signal, 4)
	if w.l.cfg.ForwardSignals {
		signal.Notify(w.sigs, forwardedSignals...)
	}
	var timeout <-chan time.Time
	if d := w.l.limits.Timeout; d > 0 {
		timeout = time.After(d)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var kill <-chan time.Time
		terminate := func() {
			_ = unix.Kill(-pid, unix.SIGTERM)
			_ = unix.Kill(pid, unix.SIGTERM)
			kill = time.After(w.l.grace)
		}
		ctxDone := w.ctx.Done()
		// A limit hit is said when it happens, once per limit: the
		// program itself often prints only "Killed" or "Cannot fork".
		var limits <-chan time.Time
		if w.l.cg != nil && (w.l.limits.MemoryBytes > 0 || w.l.limits.Pids > 0) {
			t := time.NewTicker(limitPoll)
			defer t.Stop()
			limits = t.C
		}
		var saidOOM, saidPids bool
		for {
			select {
			case <-w.done:
				return
			case <-limits:
				ev := w.l.cg.Events()
				if ev.OOMKills > 0 && !saidOOM {
					saidOOM = true
					w.l.limitLine(fmt.Sprintf("the memory limit (%d MiB, --memory) killed a process; the run's end line says how many", w.l.limits.MemoryBytes>>20))
				}
				if ev.PidsMaxHits > 0 && !saidPids {
					saidPids = true
					w.l.limitLine(fmt.Sprintf("the process limit (%d, --pids) refused a fork (programs see \"Cannot fork\" or \"Resource temporarily unavailable\")", w.l.limits.Pids))
				}
				if saidOOM && saidPids {
					limits = nil
				}
			case s := <-w.sigs:
				sig := s.(syscall.Signal)
				_ = unix.Kill(-pid, sig)
				_ = unix.Kill(pid, sig)
			case <-timeout:
				timeout = nil
				w.fired.Store(true)
				terminate()
			case <-ctxDone:
				ctxDone = nil
				terminate()
			case <-kill:
				kill = nil
				w.l.killAll(pid)
			}
		}
	}()
}

// limitPoll is how often a run's cgroup counters are read for the line a
// limit hit gets when it happens (two small reads).
const limitPoll = 250 * time.Millisecond

// stop ends enforcement; it is safe to call more than once.
func (w *watchdog) stop() {
	w.once.Do(func() {
		close(w.done)
		w.wg.Wait()
		if w.sigs != nil {
			signal.Stop(w.sigs)
		}
	})
}

// timedOut reports whether the timeout fired.
func (w *watchdog) timedOut() bool { return w.fired.Load() }

// waitRoot waits for the root process only (never wait4(-1): other runs or
// other code in this process may have children of their own).
func waitRoot(pid int) (syscall.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		return syscall.WaitStatus(ws), err
	}
}

// procInfo is the part of /proc/PID/stat the cleanup needs.
type procInfo struct {
	pid, ppid, sid int
	zombie         bool
}

// readProcs scans /proc for every process.
func readProcs() map[int]procInfo {
	out := map[int]procInfo{}
	procfs.Each(func(pid int, st procfs.Stat) {
		out[pid] = procInfo{pid: pid, ppid: st.Ppid, sid: st.Session, zombie: st.State == 'Z' || st.State == 'X'}
	})
	return out
}

// sandboxed reports whether pid carries the marks every sandboxed process
// has: no_new_privs and a seccomp filter.
func sandboxed(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "\nNoNewPrivs:\t1") && strings.Contains(s, "\nSeccomp:\t2")
}

// runProcs returns the processes that belong to the run rooted at root:
// root's descendants, plus orphans re-parented to this (subreaper) process
// that are either still in root's session or carry the sandbox marks, and
// their descendants. Other runs' roots and their trees are excluded.
func runProcs(root int) map[int]procInfo {
	procs := readProcs()
	self := os.Getpid()
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	set := map[int]procInfo{}
	var add func(pid int)
	add = func(pid int) {
		if _, ok := set[pid]; ok {
			return
		}
		p, ok := procs[pid]
		if !ok {
			return
		}
		set[pid] = p
		for _, c := range children[pid] {
			add(c)
		}
	}
	add(root)
	for _, c := range children[self] {
		if c == root {
			continue
		}
		if _, other := activeRoots.Load(c); other {
			continue
		}
		p := procs[c]
		if p.sid == root || (!p.zombie && sandboxed(c)) {
			add(c)
		}
	}
	return set
}

// killAll SIGKILLs every process of the run (the cgroup first, when there
// is one) and reaps those re-parented to us, repeating until none is left:
// a process forking while we kill is found on the next pass.
func (l *launcher) killAll(root int) {
	if l.cg != nil {
		_ = l.cg.Kill()
	}
	// Fast path: a process with no children at all has nothing left to
	// kill or reap — every survivor of the run would have been re-parented
	// to us (we are its subreaper), so it would be our child.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err == unix.ECHILD {
		return
	}
	self := os.Getpid()
	delay := 200 * time.Microsecond
	for round := 0; round < 400; round++ {
		set := runProcs(root)
		live := 0
		for pid, p := range set {
			if p.ppid == self && pid != root && p.zombie {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
				continue
			}
			if pid == root && p.zombie {
				continue // reaped by waitRoot / the supervisor
			}
			if !p.zombie {
				live++
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if live == 0 {
			// One last reap of zombie orphans found in this pass.
			return
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}
