package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/fault"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// cgroupsAvailable says whether limits can be applied, and prepares
// agentbox's cgroup for them (cgroup.Place; a variable so a test can
// simulate a host without cgroups).
var cgroupsAvailable = cgroup.Place

// launcher holds one run's resolved configuration.
type launcher struct {
	cfg    Config
	plan   *boundary.Plan
	limits Limits
	net    Network
	hc     helper.Config
	runID  string
	// runWorks release the work directories of the run's own that the
	// host cache layers the helper mounts have (spawn).
	runWorks []func() error
	useCG    bool
	cg       *cgroup.Cgroup
	grace    time.Duration
	start    time.Time
	weak     []string // protections --best-effort or --allow-weaker let go, reported at launch
	ladder   Ladder   // what enforces each protection here
	// limitsNote says why cgroup limits are not applied though asked for
	// (read-only cgroups in a container), reported at launch.
	limitsNote string
}

// activeRoots are the root pids of runs in progress in this process, so a
// run's cleanup never kills another run's command.
var activeRoots sync.Map // pid -> struct{}

func newLauncher(cfg Config) (*launcher, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New("no command given (usage: agentbox run [flags] -- CMD...)")
	}
	l := &launcher{cfg: cfg, grace: cfg.KillGrace, runID: cfg.RunID, start: cfg.T0}
	if l.start.IsZero() {
		// The clock of the --debug lines logged before begin (the
		// protections line read 9223372036854 ms).
		l.start = time.Now()
	}
	if l.grace <= 0 {
		l.grace = 5 * time.Second
	}
	if l.runID == "" {
		l.runID = NewRunID()
	}
	if err := CheckLandlock(cfg.BestEffort); err != nil {
		return nil, err
	}
	l.plan = cfg.Plan
	if l.plan == nil {
		return nil, errors.New("no boundary plan (boundary.Resolve)")
	}
	l.limits = cfg.Limits
	switch {
	case l.limits.MemoryBytes < 0:
		return nil, fmt.Errorf("memory limit %d: must not be negative", l.limits.MemoryBytes)
	case l.limits.CPUs < 0:
		return nil, fmt.Errorf("cpus limit %g: must not be negative", l.limits.CPUs)
	case l.limits.Pids < 0:
		return nil, fmt.Errorf("pids limit %d: must not be negative", l.limits.Pids)
	case l.limits.Timeout < 0:
		return nil, fmt.Errorf("timeout %v: must not be negative", l.limits.Timeout)
	}
	l.net = cfg.Network
	if cfg.NoCgroupLimits && (l.limits.MemoryBytes > 0 || l.limits.CPUs > 0 || l.limits.Pids > 0) {
		// --no-limits: the caller accepted running without memory, CPU and
		// process limits (rlimits still apply). Said at launch, every time.
		l.limitsNote = "not applied (--no-limits: no memory, CPU or process limits); rlimits still apply"
		l.limits.MemoryBytes, l.limits.CPUs, l.limits.Pids = 0, 0, 0
	}
	if l.limits.MemoryBytes > 0 || l.limits.CPUs > 0 || l.limits.Pids > 0 {
		err := cgroupsAvailable(cgroup.Limits{MemoryBytes: l.limits.MemoryBytes, CPUs: l.limits.CPUs, Pids: l.limits.Pids})
		switch {
		case err == nil:
			l.useCG = true
		case errors.Is(err, cgroup.ErrReadOnly):
			// In a container: its own cgroup bounds the run. Not a silent
			// skip: one line at launch and a note in the launch event.
			l.limitsNote = "not applied per run: " + err.Error() + "; the container's own cgroup limits apply"
		case !cfg.BestEffort:
			return nil, fmt.Errorf("resource limits (--memory/--cpus/--pids or the role's limits) need cgroups: %w; use --no-limits to run without them (rlimits still apply)", err)
		default:
			l.weak = append(l.weak, fmt.Sprintf("resource limits not applied: %v", err))
		}
	}
	outer := cfg.Env
	if outer == nil {
		outer = os.Environ()
	}
	if l.net.Proxy {
		if cfg.OnProxyListener == nil {
			return nil, errors.New("network mode proxy: no egress proxy to serve it (sandbox.Config.OnProxyListener)")
		}
		// Landlock lets the sandbox connect to the proxy (its namespace
		// holds nothing else to connect to).
		l.net.TCPConnect = append(append(slices.Clone(l.net.TCPConnect), ProxyPort), cfg.ForwardPorts...)
	}
	env := buildEnv(outer, cfg.PassEnv, l.plan, cfg.Role, len(l.net.TCPConnect) > 0 && !l.net.Proxy, l.net.Proxy)
	env = append(env, cfg.Markers...) // agentbox's own, after the scrub (which drops AGENTBOX_* from outside)
	l.hc = helper.Config{
		Argv:       cfg.Argv,
		Env:        env,
		Dir:        l.dir(),
		ParentPid:  os.Getpid(),
		Rules:      helperRules(l.plan.Rules),
		TCPConnect: l.net.TCPConnect,
		TCPBind:    l.net.TCPBind,
		BestEffort: cfg.BestEffort,
		Rlimits:    rlimitsFor(l.limits),
		NetNS:      l.net.Proxy,
	}
	if l.net.Proxy {
		l.hc.Forward = cfg.ForwardPorts
	}
	if cfg.Review {
		l.hc.Overlay = &helper.Overlay{Target: l.plan.Target, Upper: cfg.ReviewUpper, Work: cfg.ReviewWork}
	}
	l.hc.Caches = slices.Clone(cfg.HostCaches) // their Fd and Work are the run's (spawn)
	if cfg.Supervise != nil && !cfg.TraceAll {
		// Notify mode where the kernel offers it; otherwise the
		// supervisor traces every process (stronger, slower).
		if err := helper.ExecNotifySupported(); err != nil {
			l.logf("exec supervisor traces every process: %v", err)
		} else {
			l.hc.ExecNotify = true
		}
	}
	// The Landlock ladder (ladder.go): what enforces each protection
	// here, made up below Landlock ABI 6 by namespaces and seccomp.
	in := LadderInput{ABI: EffectiveLandlockABI(), Root: os.Geteuid() == 0 && HasCapSysAdmin(),
		Proxy: l.net.Proxy, TCPGrants: !l.net.Proxy && (len(l.net.TCPConnect) > 0 || len(l.net.TCPBind) > 0),
		BestEffort: cfg.BestEffort}
	if !in.Root {
		in.UserNS = UserNSAvailable()
	}
	l.ladder = NewLadder(in)
	l.logf("protections: %s", l.ladder.Short())
	if err := l.ladder.Check(cfg.BestEffort, cfg.AllowWeaker); err != nil {
		return nil, err
	}
	for _, p := range l.ladder.Missing() {
		// Accepted by --best-effort or --allow-weaker: said every time.
		l.weak = append(l.weak, fmt.Sprintf("%s not enforced (%s)", p.What, p.Note))
	}
	if in.ABI < LandlockABI() {
		l.hc.LandlockABI = in.ABI
	}
	if l.ladder.ReadOnly {
		// Landlock does not cover metadata (chmod, chown, utime, xattrs),
		// nor truncate below ABI 3: everything outside the writable
		// areas is read-only in the sandbox's mount namespace (a regular
		// user's in a user namespace of its own).
		l.hc.ReadOnlyOutside = writableDirs(l.plan)
		l.hc.ReadOnlyBestEffort = cfg.BestEffort
	}
	l.hc.IsolateNet = l.ladder.NetNS
	l.hc.NewPID = l.ladder.PidNS
	if cred, err := runAsFor(l.plan); err != nil {
		return nil, err
	} else if cred != nil {
		l.hc.RunAs = cred
		l.logf("running as uid %d gid %d (the workspace owner)", cred.UID, cred.GID)
	}
	// Below Landlock ABI 9 nothing stops connects to pathname unix
	// sockets outside but refusing unix sockets altogether (seccomp),
	// which --best-effort lets go (the ladder lists it as not enforced).
	l.hc.DenyUnixSockets = l.ladder.DenyUnix
	return l, nil
}

// helperRules are the plan's Landlock path rules as the helper takes them.
func helperRules(rs []boundary.Rule) []helper.Rule {
	out := make([]helper.Rule, len(rs))
	for i, r := range rs {
		out[i] = helper.Rule{Path: r.Path, Access: uint64(r.Rights), Optional: r.Optional}
	}
	return out
}

func (l *launcher) logf(format string, args ...any) {
	if l.cfg.Log != nil {
		fmt.Fprintf(l.cfg.Log, "agentbox: %7.2fms "+format+"\n", append([]any{float64(time.Since(l.start).Microseconds()) / 1000}, args...)...)
	}
}

// warnf writes one "agentbox: warning: ..." line for the user.
// limitLine tells the user a limit was hit, as it happens.
func (l *launcher) limitLine(msg string) {
	w := l.cfg.Warnings
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "agentbox: %s\n", msg)
}

func (l *launcher) warnf(format string, args ...any) {
	w := l.cfg.Warnings
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "agentbox: warning: "+format+"\n", args...)
}

// emit passes one event to Config.Events.
func (l *launcher) emit(e Event) {
	if l.cfg.Events != nil {
		l.cfg.Events(e)
	}
}

// helperStatus is what the helper reported on the status pipe.
type helperStatus struct {
	code int    // 0: reached execve
	msg  string // one line
}

// run carries out one run in named steps, as runc's process start does:
// begin (subreaper), prepareCgroup, then the helper is spawned and handed
// to the supervisor (or released), waited for, and the outcome reported.
// Deferred in reverse: every process of the run killed and reaped, the
// helper's pipes closed, the cgroup removed.
func (l *launcher) run(ctx context.Context) (*Result, error) {
	if err := l.begin(); err != nil {
		return nil, err
	}
	removeCgroup, err := l.prepareCgroup()
	if err != nil {
		return nil, err
	}
	defer removeCgroup()
	for _, w := range l.weak {
		flag := "--best-effort"
		if !l.cfg.BestEffort {
			flag = "--allow-weaker"
		}
		l.warnf("%s: %s", flag, w)
	}
	if l.limitsNote != "" {
		l.warnf("resource limits %s", l.limitsNote)
	}
	l.logf("prepared (%d landlock rules)", len(l.hc.Rules))

	defer l.removeRunWorks() // after the helper's namespace is gone (below)
	c := l.newChild()
	defer c.close()
	defer func() {
		if c.pid != 0 {
			l.killAll(c.pid)
			activeRoots.Delete(c.pid)
			l.logf("cleaned up")
		}
	}()
	ws, timedOut, err := l.handOffAndWait(ctx, c)
	if err != nil {
		return nil, err
	}
	st := c.finalStatus()
	if st.code == ExitFailure {
		return nil, fmt.Errorf("sandbox setup: %s", st.msg)
	}
	return l.report(c.pid, ws, timedOut, st), nil
}

// removeRunWorks removes the work directories the run's own overlays of
// host caches had (spawn), once every process of the run is gone and
// with them its mount namespace.
func (l *launcher) removeRunWorks() {
	for _, release := range l.runWorks {
		if err := release(); err != nil {
			l.logf("a host cache layer's work directory not removed: %v", err)
		}
	}
}

// begin starts the clock and makes the launcher the subreaper of the
// command's orphans.
func (l *launcher) begin() error {
	l.start = time.Now()
	if !l.cfg.T0.IsZero() {
		l.start = l.cfg.T0
	}
	l.logf("launcher started")
	// os/signal starts its signal-mask thread on the first Notify; from the
	// supervisor's locked thread, with the helper starting on the other
	// CPU, that took 1-5 ms on the launch path (the watchdog's Notify).
	// Start it now, off that path. SIGURG is always caught by the Go
	// runtime, so registering and dropping it changes no disposition.
	PrestartThreads()
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, unix.SIGURG)
		signal.Stop(c)
	}()
	// Orphans of the command are re-parented to us, so we can kill and
	// reap them. The setting is process-wide and harmless to keep.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// PrestartThreads starts, beside the caller, the thread the Go runtime
// makes at a process's first runtime.LockOSThread (its template thread, a
// clone: ~0.15 ms of CPU). The supervisor locks its thread first thing
// (supervise.Run), on the launch path; a launcher calls this early in a
// launch (Run calls it too, later), so that lock finds the thread made.
func PrestartThreads() {
	go func() {
		runtime.LockOSThread()
		runtime.UnlockOSThread()
	}()
}

// prepareCgroup creates the run's cgroup when limits need one (after
// removing cgroups a killed agentbox left); the returned function removes
// it.
func (l *launcher) prepareCgroup() (func(), error) {
	if !l.useCG {
		return func() {}, nil
	}
	if err := cgroup.CleanupStale(); err != nil {
		l.logf("cleaning stale cgroups: %v", err)
	}
	cg, err := cgroup.New("agentbox-"+l.runID, cgroup.Limits{MemoryBytes: l.limits.MemoryBytes, CPUs: l.limits.CPUs, Pids: l.limits.Pids})
	if err != nil {
		if !l.cfg.BestEffort {
			return nil, fmt.Errorf("creating cgroup for limits: %w; use --no-limits to run without them (rlimits still apply)", err)
		}
		l.weak = append(l.weak, fmt.Sprintf("resource limits not applied: %v", err))
		return func() {}, nil
	}
	l.cg = cg
	return func() {
		if derr := cg.Destroy(); derr != nil {
			l.logf("removing cgroup: %v", derr)
		}
		l.logf("cgroup removed")
	}, nil
}

// handOffAndWait spawns the helper and hands it to the exec supervisor,
// which releases it and waits for the command (Config.Supervise), or
// releases it and waits itself. It returns the command's wait status and
// whether the run's timeout fired.
func (l *launcher) handOffAndWait(ctx context.Context, c *child) (syscall.WaitStatus, bool, error) {
	wd := newWatchdog(l, ctx)
	var ws syscall.WaitStatus
	var err error
	if l.cfg.Supervise != nil {
		h := Helper{Release: c.release, Exe: c.exe}
		h.Start = func() (int, error) {
			pid, err := c.spawn()
			if err == nil {
				l.auditLaunch(pid)
				wd.watch(pid)
			}
			return pid, err
		}
		if l.cfg.Log != nil {
			h.Logf = l.logf
		}
		if l.hc.ExecNotify {
			h.ExecListener = c.execListener
		}
		ws, err = l.cfg.Supervise(ctx, h)
		wd.stop()
		var refused *releaseRefused
		if errors.As(err, &refused) {
			return 0, false, refused.err // the helper is gone: killed by spawn or the supervisor
		}
		if err != nil && c.pid == 0 {
			return 0, false, err
		}
	} else {
		pid, serr := c.spawn()
		if serr != nil {
			return 0, false, serr
		}
		l.auditLaunch(pid)
		if err := c.release(); err != nil {
			var refused *releaseRefused
			if errors.As(err, &refused) {
				_ = unix.Kill(pid, unix.SIGKILL)
				_, _ = waitRoot(pid)
				return 0, false, refused.err
			}
			// The helper died before exec; its status says why.
			l.logf("%v", err)
		}
		wd.watch(pid)
		ws, err = waitRoot(pid)
		wd.stop()
	}
	l.logf("command exited: %v", ws)
	if err != nil {
		// A helper that failed closed first (its seccomp filter refused,
		// say) says why on its status pipe; what the supervisor then
		// met (a seize of an exiting helper is EPERM) is the symptom.
		if c.sp != nil {
			if st := c.finalStatus(); st.msg != "" && st.code == ExitFailure {
				return 0, false, fmt.Errorf("sandbox setup: %s", st.msg)
			}
		}
		return 0, false, fmt.Errorf("waiting for the command: %w", err)
	}
	return ws, wd.timedOut(), nil
}

// report turns the command's end into the run's Result and its limit,
// violation and exit events.
func (l *launcher) report(rootPid int, ws syscall.WaitStatus, timedOut bool, st helperStatus) *Result {
	res := &Result{Pid: rootPid, Status: ws, TimedOut: timedOut}
	switch {
	case res.TimedOut:
		res.ExitCode = ExitTimeout
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
	default:
		res.ExitCode = ExitFailure
	}
	if l.cg != nil {
		ev := l.cg.Events()
		res.OOMKills, res.PidsMaxHits = int(ev.OOMKills), int(ev.PidsMaxHits)
		if l.cg.Gone() {
			msg := "the run's cgroup was removed from outside during the run: its limits (memory, cpus, pids) stopped applying then"
			l.emit(Event{Kind: EventViolation, Pid: rootPid, Reason: msg, Detail: map[string]string{"cgroup": "removed"}})
			l.warnf("%s", msg)
		}
	}
	if res.TimedOut {
		l.emit(Event{Kind: EventLimit, Pid: rootPid, Limit: "timeout", Reason: fmt.Sprintf("timeout %v reached: SIGTERM, then SIGKILL after %v", l.limits.Timeout, l.grace)})
	}
	if res.OOMKills > 0 {
		l.emit(Event{Kind: EventLimit, Pid: rootPid, Limit: "memory", Reason: fmt.Sprintf("%d process(es) killed by the OOM killer at memory limit %d bytes", res.OOMKills, l.limits.MemoryBytes)})
	}
	if res.PidsMaxHits > 0 {
		l.emit(Event{Kind: EventLimit, Pid: rootPid, Limit: "pids", Reason: fmt.Sprintf("fork refused %d time(s) at pids limit %d", res.PidsMaxHits, l.limits.Pids)})
	}
	code := res.ExitCode
	rec := Event{Kind: EventExit, Pid: rootPid, Exit: &code, Detail: l.exitDetail()}
	if ws.Signaled() {
		rec.Signal = unix.SignalName(ws.Signal())
	}
	if st.code != 0 {
		rec.Reason = st.msg
	}
	l.emit(rec)
	return res
}

// child is the run's helper as the launcher holds it: spawned blocked,
// configured over its pipe, put in the cgroup, handed its listeners, then
// released.
type child struct {
	l                     *launcher
	exe                   string
	stdin, stdout, stderr *os.File
	pid                   int
	sp                    *spawned
	status                chan helperStatus
}

func (l *launcher) newChild() *child {
	c := &child{l: l, exe: helperExe(l.cfg.Exe), status: make(chan helperStatus, 1)}
	c.stdin, c.stdout, c.stderr = stdio(l.cfg.Stdin, l.cfg.Stdout, l.cfg.Stderr)
	return c
}

// close closes the launcher's ends of the helper's pipes.
func (c *child) close() {
	if c.sp != nil {
		c.sp.close()
	}
}

// spawn starts the helper, blocked before its exec, and returns its pid:
// configuration sent, cgroup joined, network listeners received.
func (c *child) spawn() (int, error) {
	l := c.l
	if c.pid != 0 {
		return 0, errors.New("start called twice")
	}
	o := spawnOptions{exe: c.exe, stdin: c.stdin, stdout: c.stdout, stderr: c.stderr,
		setctty: l.cfg.Setctty, net: l.net.Proxy, notify: l.hc.ExecNotify,
		// A regular user's network namespace and overlay need a user
		// namespace, made at the helper's start.
		userns: !l.ladder.In.Root && (l.hc.NetNS || l.hc.Overlay != nil || len(l.hc.Caches) > 0 || l.ladder.UserNS),
		pidns:  l.hc.NewPID}
	switch {
	case l.ladder.UserNS:
		o.usernsWhy = "the read-only view outside the writable areas and the ladder's namespaces need a user namespace; accept their loss with --allow-weaker " + strings.Join(WeakerNames, ",")
	case l.hc.NetNS:
		o.usernsWhy = "network mode proxy needs a network namespace of the sandbox's own; use --network none, or --network tcp:PORT to grant ports without host checks"
	case l.hc.Overlay != nil:
		o.usernsWhy = "--review needs overlayfs in the run's own mount namespace; run without --review"
	case len(l.hc.Caches) > 0:
		o.usernsWhy = "the host caches' copy-on-write layers need overlayfs in the run's own mount namespace; run with --no-host-caches"
	}
	if l.cg != nil {
		if l.cg.V2() {
			o.cgroupDir = l.cg.V2Dir()
		} else if !noThreadMoves {
			o.cgroupTasks = l.cg.ThreadTasks()
		}
	}
	sp, err := spawnHelper(o)
	if err != nil {
		return 0, err
	}
	c.sp, c.pid = sp, sp.pid
	activeRoots.Store(c.pid, struct{}{})
	stR := sp.stR
	go func() {
		b, _ := bufio.NewReader(stR).ReadString('\n')
		st := helperStatus{}
		if code, msg, ok := strings.Cut(strings.TrimSpace(b), " "); ok {
			st.code, _ = strconv.Atoi(code)
			st.msg = msg
		}
		c.status <- st
	}()
	if l.cfg.BeforeConfig != nil {
		if err := l.cfg.BeforeConfig(); err != nil {
			// The helper waits for its configuration: end it here.
			_ = unix.Kill(c.pid, unix.SIGKILL)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(c.pid, &ws, 0, nil)
			activeRoots.Delete(c.pid)
			c.pid = 0
			return 0, &releaseRefused{err}
		}
	}
	// The host caches' overlays made ahead go with the configuration:
	// the helper was forked without waiting for them.
	var cacheFiles []*os.File
	if !o.userns {
		cacheFiles = l.cfg.CacheMounts.cacheFiles(l.hc.Caches)
	}
	// A layer the helper mounts itself (not a parked overlay's clone)
	// gets a work directory of this run's own: another run of the agent
	// may be on the shared one (removed after the run, removeRunWorks).
	// A work directory that cannot be made leaves the layer unmounted
	// (the helper does not follow a symlink there either).
	for i, lc := range l.hc.Caches {
		if lc.Fd == 0 {
			if release, err := helper.TakeRunWork(lc.Work, l.runID); err == nil {
				l.runWorks = append(l.runWorks, release)
			}
			l.hc.Caches[i].Work = helper.RunWork(lc.Work, l.runID)
		}
	}
	fds := make([]int, len(cacheFiles))
	for i, f := range cacheFiles {
		fds[i] = int(f.Fd())
	}
	err = sp.sendConfig(l.hc.Encode(nil), fds)
	for _, f := range cacheFiles {
		f.Close()
	}
	if err != nil {
		return c.pid, fmt.Errorf("sending helper config: %w", err)
	}
	if l.cg != nil && !sp.inCgroup {
		if err := l.cg.AddProc(c.pid); err != nil {
			return c.pid, fmt.Errorf("adding pid %d to its cgroup: %w", c.pid, err)
		}
	}
	l.logf("helper %d started (%s)", c.pid, sp.exe)
	fault.Point("helper-started")
	if sp.net != nil {
		lns, err := recvListeners(sp.net, 1+len(l.hc.Forward))
		if err != nil {
			// The helper's status line says why (it failed closed):
			// its end of the socket closes as it exits, and its status
			// line is written before that.
			select {
			case st := <-c.status:
				c.status <- st
				if st.msg != "" {
					return c.pid, fmt.Errorf("sandbox setup: %s", st.msg)
				}
			case <-time.After(2 * time.Second):
			}
			return c.pid, fmt.Errorf("network mode proxy: %w", err)
		}
		sp.net.Close()
		sp.net = nil
		l.cfg.OnProxyListener(lns[0])
		for i, port := range l.hc.Forward {
			if l.cfg.OnForwardListener != nil {
				l.cfg.OnForwardListener(port, lns[i+1])
			} else {
				lns[i+1].Close()
			}
		}
		l.logf("egress proxy listening in the sandbox's network namespace")
	}
	if l.cfg.Started != nil {
		l.cfg.Started(c.pid)
	}
	return c.pid, nil
}

// execListener receives the exec-notification listener the helper passes
// out once its filters are installed.
func (c *child) execListener() (int, error) {
	fd, err := recvFd(c.sp.notify)
	c.sp.notify.Close()
	c.sp.notify = nil
	if err != nil {
		// The helper ended first: its status line says why.
		select {
		case st := <-c.status:
			c.status <- st
			if st.msg != "" {
				return -1, fmt.Errorf("sandbox setup: %s", st.msg)
			}
		case <-time.After(2 * time.Second):
		}
		return -1, err
	}
	return fd, nil
}

// release lets the helper exec the command.
func (c *child) release() error {
	if c.l.cfg.BeforeRelease != nil {
		if err := c.l.cfg.BeforeRelease(); err != nil {
			return &releaseRefused{err}
		}
	}
	if _, err := c.sp.goW.Write([]byte{1}); err != nil {
		return fmt.Errorf("releasing sandbox helper: %w", err)
	}
	c.sp.goW.Close()
	c.sp.goW = nil
	return nil
}

// releaseRefused is release's error when Config.BeforeRelease refused
// (the helper was not released and is to be killed), and spawn's when
// Config.BeforeConfig did (the helper was killed and reaped).
type releaseRefused struct{ err error }

func (e *releaseRefused) Error() string { return e.err.Error() }
func (e *releaseRefused) Unwrap() error { return e.err }

// finalStatus is what the helper said on its status pipe: that it reached
// its exec, or why not (waited for briefly: the pipe closes at exec).
func (c *child) finalStatus() helperStatus {
	select {
	case st := <-c.status:
		return st
	case <-time.After(2 * time.Second):
		return helperStatus{}
	}
}

// dir is the command's working directory (Config.Dir, default W/target).
func (l *launcher) dir() string {
	if l.cfg.Dir != "" {
		return l.cfg.Dir
	}
	return l.plan.Target
}

// auditLaunch records the launch with a summary of grants and limits.
func (l *launcher) auditLaunch(pid int) {
	d := map[string]string{
		"workspace":   l.plan.Workspace,
		"landlock":    fmt.Sprintf("abi %d", l.ladder.In.ABI),
		"protections": l.ladder.Detail(),
		"network":     netSummary(l.net),
		"env":         strings.Join(envNames(l.hc.Env), ","),
		"run":         l.runID,
	}
	var grants []string
	for _, r := range l.plan.Rules {
		if strings.HasPrefix(r.Why, "system") {
			continue
		}
		grants = append(grants, r.Path+"="+r.Rights.String())
	}
	sort.Strings(grants)
	d["grants"] = strings.Join(grants, " ")
	lim := []string{}
	if l.limits.MemoryBytes > 0 {
		lim = append(lim, fmt.Sprintf("memory=%d", l.limits.MemoryBytes))
	}
	if l.limits.CPUs > 0 {
		lim = append(lim, fmt.Sprintf("cpus=%g", l.limits.CPUs))
	}
	if l.limits.Pids > 0 {
		lim = append(lim, fmt.Sprintf("pids=%d", l.limits.Pids))
	}
	if l.limits.Timeout > 0 {
		lim = append(lim, "timeout="+l.limits.Timeout.String())
	}
	for _, r := range l.hc.Rlimits {
		lim = append(lim, fmt.Sprintf("rlimit_%s=%d", r.Name, r.Cur))
	}
	d["limits"] = strings.Join(lim, " ")
	if l.limitsNote != "" {
		d["cgroup"] = l.limitsNote
	}
	if len(l.weak) > 0 {
		d["best_effort"] = strings.Join(l.weak, "; ")
	}
	if len(l.plan.Notes) > 0 {
		d["notes"] = strings.Join(l.plan.Notes, "; ")
	}
	d["role"] = l.cfg.Role
	d["kernel_refusals"] = "not recorded: Landlock and seccomp refusals (EACCES, EPERM) reach the program, not agentbox"
	if u, err := user.Current(); err == nil {
		d["invoker"] = u.Username
		d["invoker_uid"] = u.Uid
	} else {
		d["invoker_uid"] = strconv.Itoa(os.Getuid())
	}
	if h, err := os.Hostname(); err == nil {
		d["host"] = h
	}
	if l.cfg.LaunchDetail != nil {
		for k, v := range l.cfg.LaunchDetail() {
			d[k] = v
		}
	}
	l.emit(Event{Kind: EventLaunch, Pid: pid, Argv: l.cfg.Argv, Cwd: l.dir(), Detail: d})
}

func netSummary(n Network) string {
	if len(n.TCPConnect) == 0 && len(n.TCPBind) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range n.TCPConnect {
		parts = append(parts, strconv.Itoa(int(p)))
	}
	s := "tcp-connect:" + strings.Join(parts, ",")
	if len(n.TCPBind) > 0 {
		parts = parts[:0]
		for _, p := range n.TCPBind {
			parts = append(parts, strconv.Itoa(int(p)))
		}
		s += " tcp-bind:" + strings.Join(parts, ",")
	}
	return s
}

// runAsFor decides who the command runs as. agentbox started by root on a
// workspace that belongs to a regular user (the usual `sudo agentbox run`)
// runs the command as that user: uid 0 without capabilities could still
// chmod and utime root-owned files anywhere, which Landlock does not cover.
// The agent's own directories are handed to that user. Otherwise (not root,
// or a root-owned workspace) it returns nil and the command keeps agentbox's
// uid; the threat model documents that case.
func runAsFor(plan *boundary.Plan) (*helper.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(plan.Workspace, &st); err != nil {
		return nil, fmt.Errorf("stat workspace %s: %w", plan.Workspace, err)
	}
	if st.Uid == 0 {
		return nil, nil
	}
	c := ownerCredential(int(st.Uid), int(st.Gid))
	for _, d := range []string{plan.OwnAgent, plan.Home, plan.Tmp, plan.Cache} {
		if err := unix.Lchown(d, c.UID, c.GID); err != nil {
			return nil, fmt.Errorf("hand %s to the workspace owner (uid %d): %w", d, c.UID, err)
		}
	}
	return c, nil
}

// writableDirs are the directories the plan grants write access to (the
// writable areas, the agent's own area, extra_write grants).
func writableDirs(p *boundary.Plan) []string {
	var out []string
	for _, r := range p.Rules {
		if r.Rights&boundary.RightsWrite != 0 && !strings.HasPrefix(r.Why, "system") {
			out = append(out, r.Path)
		}
	}
	return out
}

// ownerCredential is who the command runs as on a workspace owned by uid:
// the owner's primary group and supplementary groups from the user and
// group databases; for a uid with no entry, the workspace's group unless it
// is root's (then nogroup). Group 0 is never kept.
func ownerCredential(uid, wsGID int) *helper.Credential {
	c := &helper.Credential{UID: uid, GID: wsGID}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if g, err := strconv.Atoi(u.Gid); err == nil {
			c.GID = g
		}
		if ids, err := u.GroupIds(); err == nil {
			for _, s := range ids {
				if g, err := strconv.Atoi(s); err == nil && g != 0 && !slices.Contains(c.Groups, g) {
					c.Groups = append(c.Groups, g)
				}
			}
		}
	}
	if c.GID == 0 {
		c.GID = 65534
	}
	return c
}

// exitDetail is the exit event's resource summary: duration, and peak
// memory, CPU time and peak task count from the run's cgroup, else from the
// launcher's reaped children (which, in a process running several
// sandboxes, also counts the others').
func (l *launcher) exitDetail() map[string]string {
	d := map[string]string{"duration": time.Since(l.start).Round(time.Millisecond).String()}
	if l.cg != nil {
		u := l.cg.Usage()
		mem, cpu, pids := u.PeakMemory, u.CPUNanos, u.PeakPids
		var ru unix.Rusage
		haveRu := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) == nil
		if mem > 0 {
			d["peak_memory_bytes"] = strconv.FormatUint(mem, 10)
		} else if haveRu {
			// No memory controller joined (no memory limit asked).
			d["peak_memory_bytes"] = strconv.FormatInt(ru.Maxrss*1024, 10)
			d["peak_memory_source"] = "rusage of reaped children (largest single process)"
		}
		if cpu > 0 {
			d["cpu_time"] = time.Duration(cpu).Round(time.Microsecond).String()
		} else if haveRu {
			// No CPU controller in this run's cgroup (no CPU limit asked).
			d["cpu_time"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Round(time.Microsecond).String()
			d["cpu_time_source"] = "rusage of reaped children"
		}
		if pids > 0 {
			d["peak_pids"] = strconv.FormatUint(pids, 10)
		}
		d["usage_source"] = "cgroup"
		return d
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) == nil {
		d["peak_memory_bytes"] = strconv.FormatInt(ru.Maxrss*1024, 10)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		d["cpu_time"] = cpu.Round(time.Microsecond).String()
		d["usage_source"] = "rusage of reaped children (largest single process)"
	}
	return d
}
