//go:build linux

// Package cgroup gives one run a cgroup of its own, on cgroup v1 or v2
// (through github.com/opencontainers/cgroups): memory, CPU and process
// limits, counts of OOM kills and refused forks, usage, a kill of every
// process in it (freezer on v1), and removal of cgroups a crashed agentbox
// left behind. Names carry an owner suffix (pid and start time) so a
// stale cgroup can be told from a live run's.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/fscommon"
	"golang.org/x/sys/unix"
)

// Limits are the resource limits of one run. A zero field means "no
// limit" for that resource.
type Limits struct {
	// MemoryBytes caps the run's memory. On cgroup v1 the memory+swap
	// limit (memory.memsw.limit_in_bytes, when the kernel has swap
	// accounting) is set to the same value, and on v2 memory.swap.max is
	// 0, so swap cannot stretch the limit. Exceeding it triggers the
	// kernel's OOM killer inside the cgroup only.
	MemoryBytes int64
	// CPUs is the CPU bandwidth in CPUs (1.5 = 150 ms per 100 ms period),
	// via CFS quota (v1 cpu.cfs_quota_us, v2 cpu.max). Minimum 0.01.
	CPUs float64
	// Pids caps the number of processes and threads (pids.max): fork and
	// clone fail with EAGAIN beyond it.
	Pids int64
}

// Events counts limit hits, for the audit log.
type Events struct {
	// OOMKills is how many processes the OOM killer killed in the cgroup
	// (v2 memory.events oom_kill, v1 memory.oom_control oom_kill).
	OOMKills uint64
	// MemoryMaxHits is how often usage hit the memory limit (v2
	// memory.events max, v1 memory.failcnt); reclaim may have coped.
	MemoryMaxHits uint64
	// PidsMaxHits is how many forks were refused by pids.max (pids.events max).
	PidsMaxHits uint64
}

// Cgroup is one run's cgroup: a directory per v1 controller (plus the
// unified hierarchy on hybrid systems, used for tracking and cgroup.kill),
// or one directory on v2. It is created below agentbox's own cgroup, so
// limits set on agentbox itself (a container, a systemd unit, a delegated
// subtree) still apply to the run.
//
// The directory name is the caller's name plus ".owner-<pid>-<starttime>"
// of the creating process, so CleanupStale can tell a live run's
// cgroup from one left by a killed agentbox without any state file.
type Cgroup struct {
	name  string // full directory name, with the owner suffix
	v2    bool
	mgr   cgroups.Manager
	paths map[string]string // controller -> directory; "" is the unified (v2) directory
	// mounts are the v1 hierarchies' mount points and roots (ThreadTasks).
	mounts map[string]cgroupMount
	limits Limits
	mu     sync.Mutex
}

// cgroupV1Controllers are the v1 hierarchies a run joins. memory, cpu and
// pids carry limits; freezer makes Kill race-free without cgroup.kill.
var cgroupV1Controllers = []string{"memory", "cpu", "pids", "freezer"}

const cgroupOwnerMarker = ".owner-"

// cgroupNameRE is compiled on first use: the bounded repetition makes a large
// program (~0.3-0.8 ms and ~1000 allocations at every process start, the
// sandbox helper's included).
var cgroupNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`) })

// cgroupLayout is where run cgroups go on this machine.
type cgroupLayout struct {
	v2 bool
	// parents maps a controller to the directory runs are created in
	// (agentbox's own cgroup in that hierarchy). On v2 the only key is "";
	// on hybrid v1 systems "" is the unified hierarchy (no controllers).
	parents map[string]string
	// missing lists v1 controllers that are not mounted.
	missing []string
	// mounts are the v1 hierarchies' mount points and roots.
	mounts map[string]cgroupMount
}

// cgroupMount is where a v1 hierarchy is mounted and which of its cgroups
// the mount shows as its root (not "/" inside a container).
type cgroupMount struct{ mnt, root string }

func detectCgroupLayout() (*cgroupLayout, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, fmt.Errorf("cgroups: no cgroup filesystem at /sys/fs/cgroup: %w", err)
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	if cgroups.IsCgroup2UnifiedMode() {
		p, ok := own[""]
		if !ok {
			return nil, errors.New("cgroups: /proc/thread-self/cgroup has no cgroup v2 (0::) entry")
		}
		dir := filepath.Join("/sys/fs/cgroup", p)
		if launcherLeaf(dir) || filepath.Base(dir) == movedLeaf {
			// A leaf Place moved agentbox into: runs go beside it.
			dir = filepath.Dir(dir)
		}
		return &cgroupLayout{v2: true, parents: map[string]string{"": dir}}, nil
	}
	l := &cgroupLayout{parents: map[string]string{}, mounts: map[string]cgroupMount{}}
	for _, ctrl := range cgroupV1Controllers {
		mnt, root, err := cgroups.FindCgroupMountpointAndRoot("", ctrl)
		if err != nil || mnt == "" {
			l.missing = append(l.missing, ctrl)
			continue
		}
		p, ok := own[ctrl]
		if !ok {
			l.missing = append(l.missing, ctrl)
			continue
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("cgroups: own %s cgroup %q lies outside the mounted root %q (%s)", ctrl, p, root, mnt)
		}
		l.parents[ctrl] = filepath.Join(mnt, rel)
		l.mounts[ctrl] = cgroupMount{mnt: mnt, root: root}
	}
	if cgroups.IsCgroup2HybridMode() {
		if p, ok := own[""]; ok {
			l.parents[""] = filepath.Join("/sys/fs/cgroup/unified", p)
		}
	}
	if len(l.parents) == 0 {
		return nil, errors.New("cgroups: no cgroup v1 controller (memory, cpu, pids, freezer) is mounted under /sys/fs/cgroup")
	}
	return l, nil
}

// ownCgroups reads the calling thread's cgroups: the launcher's own.
// Not /proc/self/cgroup, which shows the main thread's: on cgroup v1 a
// launcher thread enters a run's cgroups for the moment it forks that
// run's helper (spawnHelper), and when that thread is the main one a run
// planned meanwhile would be made inside the other run's cgroup, and
// killed and removed with it. That thread is locked to its goroutine, so
// no other goroutine reads from it. Kernels before 3.17 have no
// thread-self; there /proc/self/task/TID/cgroup is read.
func ownCgroups() (map[string]string, error) {
	f := "/proc/thread-self/cgroup"
	if _, err := os.Stat(f); err != nil {
		f = fmt.Sprintf("/proc/self/task/%d/cgroup", unix.Gettid())
	}
	own, err := cgroups.ParseCgroupFile(f)
	if err != nil {
		return nil, fmt.Errorf("cgroups: reading %s: %w", f, err)
	}
	return own, nil
}

// v2Controllers reads a cgroup v2 directory's space-separated list file
// (cgroup.controllers or cgroup.subtree_control).
func v2List(dir, file string) ([]string, error) {
	s, err := cgroups.ReadFile(dir, file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(s), nil
}

// neededControllers lists the controllers lim requires.
func neededControllers(lim Limits) []string {
	var need []string
	if lim.MemoryBytes > 0 {
		need = append(need, "memory")
	}
	if lim.CPUs > 0 {
		need = append(need, "cpu")
	}
	if lim.Pids > 0 {
		need = append(need, "pids")
	}
	return need
}

// Available reports whether a cgroup with memory and process limits (the
// built-in roles' limits) could be made right here, without moving
// agentbox (tests use it to skip). The cpu controller is not asked for: a
// run needs it only for a CPU limit. The error names what is missing: no
// cgroup filesystem, a controller not mounted (v1) or not delegated to
// agentbox's cgroup (v2), or a directory agentbox cannot write. A run
// checks with Place, which requires only the controllers its limits need
// and can ask systemd for a delegated cgroup.
func Available() error { return availableFor([]string{"memory", "pids"}) }

// availableFor is Available for the need controllers.
func availableFor(need []string) error {
	l, err := detectCgroupLayout()
	if err != nil {
		return err
	}
	if ro := l.readOnly(); ro != "" {
		return fmt.Errorf("%w (%s is mounted read-only)", ErrReadOnly, ro)
	}
	if !l.v2 {
		return checkV1(l, need)
	}
	if err := checkV2(l.parents[""], need, false); err != nil {
		return &UnavailableError{Reason: err.Error()}
	}
	return nil
}

// ErrReadOnly is returned by Available when agentbox's own
// cgroup lies on a read-only cgroup mount: it runs inside a container,
// whose own cgroup (set by the container runtime) bounds everything
// agentbox starts. The launcher then runs without per-run limits and says
// so in one line, instead of refusing to run in every pod.
var ErrReadOnly = errors.New("cgroups are read-only here (inside a container?)")

// readOnly returns the first parent cgroup directory that is on a
// read-only mount, or "" when none is.
func (l *cgroupLayout) readOnly() string {
	dirs := make([]string, 0, len(l.parents))
	for _, d := range l.parents {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
			return d
		}
	}
	return ""
}

// cgroupSetMu serializes cgroup manager Set calls (see newCgroup).
var cgroupSetMu sync.Mutex

// newCgroup creates the run's cgroup below agentbox's own cgroup and sets
// lim. name identifies the run (e.g. "agentbox-<runid>"; letters, digits,
// '.', '_', '-'); the owner suffix is added here. The cgroup is empty until
// AddProc. On error nothing is left behind.
//
// It calls Place first: on cgroup v2 that may move agentbox into a
// delegated systemd scope and into a leaf of its own, with the run's
// cgroup beside it.
func New(name string, lim Limits) (*Cgroup, error) {
	if !cgroupNameRE().MatchString(name) || strings.Contains(name, cgroupOwnerMarker) || strings.Contains(name, "..") {
		return nil, fmt.Errorf("cgroups: invalid cgroup name %q (want letters, digits, '.', '_', '-')", name)
	}
	if lim.MemoryBytes < 0 || lim.Pids < 0 || lim.CPUs < 0 {
		return nil, fmt.Errorf("cgroups: negative limit in %+v", lim)
	}
	res := &cgroups.Resources{SkipDevices: true}
	if lim.MemoryBytes > 0 {
		res.Memory = lim.MemoryBytes
	}
	if lim.CPUs > 0 {
		quota := int64(lim.CPUs * 100000)
		if quota < 1000 {
			return nil, fmt.Errorf("cgroups: --cpus %g is below the minimum 0.01", lim.CPUs)
		}
		res.CpuPeriod = 100000
		res.CpuQuota = quota
	}
	if lim.Pids > 0 {
		n := lim.Pids
		res.PidsLimit = &n
	}
	owner, err := ownerSuffix(os.Getpid())
	if err != nil {
		return nil, err
	}
	need := neededControllers(lim)
	if err := place(need); err != nil {
		return nil, err
	}
	l, err := detectCgroupLayout()
	if err != nil {
		return nil, err
	}
	c := &Cgroup{name: name + owner, v2: l.v2, limits: lim, paths: map[string]string{}, mounts: l.mounts}
	cfg := &cgroups.Cgroup{Name: c.name, Resources: res}
	if l.v2 {
		parent := l.parents[""]
		dir := filepath.Join(parent, c.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroups v2: creating %s: %w", dir, err)
		}
		c.paths[""] = dir
		mgr, err := fs2.NewManager(cfg, dir)
		if err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("cgroups v2: %s: %w", dir, err)
		}
		c.mgr = mgr
	} else {
		for _, ctrl := range need {
			if slices.Contains(l.missing, ctrl) {
				return nil, fmt.Errorf("cgroups v1: controller %s is not mounted under /sys/fs/cgroup (needed for the %s limit)", ctrl, ctrl)
			}
		}
		for ctrl, parent := range l.parents {
			// Only the hierarchies the limits need, plus the freezer
			// (a race-free Kill) where agentbox can write it: each
			// hierarchy joined is a write to cgroup.procs, which on v1
			// can stall for milliseconds (the kernel's threadgroup
			// rwsem); the unified hierarchy and unused controllers are
			// left alone.
			if !slices.Contains(need, ctrl) && (ctrl != "freezer" || unix.Access(parent, unix.W_OK) != nil) {
				continue
			}
			c.paths[ctrl] = filepath.Join(parent, c.name)
		}
		if lim.MemoryBytes > 0 && cgroups.PathExists(filepath.Join(l.parents["memory"], "memory.memsw.limit_in_bytes")) {
			res.MemorySwap = lim.MemoryBytes
		}
		mgr, err := fs.NewManager(cfg, c.paths)
		if err != nil {
			return nil, fmt.Errorf("cgroups v1: %w", err)
		}
		c.mgr = mgr
		if err := mgr.Apply(-1); err != nil {
			cgroups.RemovePaths(maps(c.paths))
			return nil, fmt.Errorf("cgroups v1: creating %s: %w", c.name, err)
		}
	}
	// The v1 manager's Set reads and fills package-level state in
	// opencontainers/cgroups (blkio weight file names) without a lock:
	// runs started concurrently in one process must not Set at once.
	cgroupSetMu.Lock()
	err = c.mgr.Set(res)
	cgroupSetMu.Unlock()
	if err != nil {
		c.mgr.Destroy()
		return nil, fmt.Errorf("cgroups: setting limits %+v on %s: %w", lim, c.name, err)
	}
	return c, nil
}

// maps copies a path map (RemovePaths deletes from its argument).
func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Name returns the cgroup's directory name (the run name plus owner suffix).
func (c *Cgroup) Name() string { return c.name }

// Paths returns the cgroup's directories: controller -> path on v1 ("" is
// the unified hierarchy on hybrid systems), {"": path} on v2.
func (c *Cgroup) Paths() map[string]string { return maps(c.paths) }

// Gone reports whether any of the cgroup's directories has disappeared
// (removed from outside during the run: its limits stopped applying).
func (c *Cgroup) Gone() bool {
	for _, p := range c.paths {
		if _, err := os.Stat(p); err != nil {
			return true
		}
	}
	return false
}

// ThreadTasks returns, on cgroup v1, the tasks files of the run's
// hierarchies: a launcher thread that writes "0" to each enters the run's
// cgroups, and a helper it forks then is born in them; the tasks files of
// their parent directories take it back (spawnHelper). A thread that
// moves itself takes no global lock, where moving a process through
// cgroup.procs takes the kernel's threadgroup rwsem: an RCU grace period,
// 1-25 ms here. Nil on v2 (CLONE_INTO_CGROUP does this), or when the
// calling thread is not in the cgroups the run's were created under (the
// parents), where it could not go back.
func (c *Cgroup) ThreadTasks() []string {
	if c.v2 || len(c.mounts) == 0 {
		return nil
	}
	mine, err := cgroups.ParseCgroupFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil
	}
	var tasks []string
	for _, ctrl := range c.order() {
		m, ok := c.mounts[ctrl]
		p, in := mine[ctrl]
		if !ok || !in {
			return nil
		}
		rel, err := filepath.Rel(m.root, p)
		dir := c.paths[ctrl]
		if err != nil || filepath.Join(m.mnt, rel) != filepath.Dir(dir) {
			return nil // this thread is elsewhere: move the process instead
		}
		tasks = append(tasks, filepath.Join(dir, "tasks"))
	}
	return tasks
}

// V2Dir is the run's cgroup v2 directory ("" on cgroup v1): the launcher
// starts the helper in it with CLONE_INTO_CGROUP.
func (c *Cgroup) V2Dir() string {
	if !c.v2 {
		return ""
	}
	return c.paths[""]
}

// V2 reports whether this is a cgroup v2 (unified) cgroup.
func (c *Cgroup) V2() bool { return c.v2 }

// AddProc moves pid (and only pid; its future children follow) into every
// hierarchy of the cgroup. Call it while the helper is still blocked, before
// it executes anything untrusted.
func (c *Cgroup) AddProc(pid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ctrl := range c.order() {
		if err := cgroups.WriteCgroupProc(c.paths[ctrl], pid); err != nil {
			return fmt.Errorf("cgroups: adding pid %d to %s: %w", pid, c.paths[ctrl], err)
		}
	}
	return nil
}

// order lists the cgroup's hierarchies in a fixed order, the one used for
// membership (unified, freezer, pids, memory, cpu) first.
func (c *Cgroup) order() []string {
	var out []string
	for _, k := range []string{"", "freezer", "pids", "memory", "cpu"} {
		if _, ok := c.paths[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// Pids lists the processes in the cgroup.
func (c *Cgroup) Pids() ([]int, error) {
	o := c.order()
	if len(o) == 0 {
		return nil, nil
	}
	pids, err := cgroups.GetAllPids(c.paths[o[0]])
	if err != nil && os.IsNotExist(err) {
		return nil, nil
	}
	return pids, err
}

// Kill kills every process in the cgroup and waits (up to 5 s) until it is
// empty. With cgroup.kill (v2, Linux 5.14, also the unified hierarchy of a
// hybrid system) the kernel does it atomically. Otherwise on v1 it freezes
// the cgroup, sends SIGKILL to every member, thaws, and repeats until no
// member is left, so a fork bomb cannot outrun it; without a freezer it
// repeats SIGKILL rounds. Zombies awaiting their parent's wait are not
// members; reaping them is the caller's job (agentbox is a subreaper).
func (c *Cgroup) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	if dir, ok := c.paths[""]; ok && cgroups.PathExists(filepath.Join(dir, "cgroup.kill")) {
		if err := cgroups.WriteFile(dir, "cgroup.kill", "1"); err != nil {
			return fmt.Errorf("cgroups: writing %s/cgroup.kill: %w", dir, err)
		}
		return c.waitEmpty(deadline)
	}
	freezer, hasFreezer := c.paths["freezer"]
	for {
		pids, done, err := c.remaining(deadline, "5 s of SIGKILL")
		if done || err != nil {
			return err
		}
		frozen := false
		if hasFreezer {
			if err := c.mgr.Freeze(cgroups.Frozen); err == nil {
				frozen = true
				// Re-list: nothing can fork while frozen.
				if p, err := cgroups.GetAllPids(freezer); err == nil {
					pids = p
				}
			}
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		if frozen {
			if err := c.mgr.Freeze(cgroups.Thawed); err != nil {
				return fmt.Errorf("cgroups: thawing %s: %w", freezer, err)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// remaining lists the processes still in the cgroup: done when there are
// none, an error naming them (and what was tried, after) once deadline
// has passed.
func (c *Cgroup) remaining(deadline time.Time, after string) (pids []int, done bool, err error) {
	pids, err = c.Pids()
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("cgroups: listing %s: %w", c.name, err)
	case len(pids) == 0:
		return nil, true, nil
	case time.Now().After(deadline):
		return pids, false, fmt.Errorf("cgroups: %s still has processes %v after %s", c.name, pids, after)
	}
	return pids, false, nil
}

func (c *Cgroup) waitEmpty(deadline time.Time) error {
	for {
		if _, done, err := c.remaining(deadline, "cgroup.kill"); done || err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Events reads the limit-hit counters; a counter the kernel does not
// provide reads as zero.
func (c *Cgroup) Events() Events {
	var ev Events
	if c.v2 {
		dir := c.paths[""]
		ev.OOMKills, _ = fscommon.GetValueByKey(dir, "memory.events", "oom_kill")
		ev.MemoryMaxHits, _ = fscommon.GetValueByKey(dir, "memory.events", "max")
		ev.PidsMaxHits, _ = fscommon.GetValueByKey(dir, "pids.events", "max")
		return ev
	}
	if dir, ok := c.paths["memory"]; ok {
		ev.OOMKills, _ = fscommon.GetValueByKey(dir, "memory.oom_control", "oom_kill")
		ev.MemoryMaxHits, _ = fscommon.GetCgroupParamUint(dir, "memory.failcnt")
	}
	if dir, ok := c.paths["pids"]; ok {
		ev.PidsMaxHits, _ = fscommon.GetValueByKey(dir, "pids.events", "max")
	}
	return ev
}

// Usage is what the run used, from its cgroup (zero when the kernel
// does not provide a figure).
type Usage struct {
	PeakMemory uint64 // bytes (v2 memory.peak, v1 memory.max_usage_in_bytes)
	CPUNanos   uint64 // CPU time (v2 cpu.stat usage_usec, v1 cpuacct.usage)
	PeakPids   uint64 // most tasks at once (v2 pids.peak; v1 has none)
}

// Usage reads the run's resource use.
func (c *Cgroup) Usage() Usage {
	var u Usage
	if c.v2 {
		dir := c.paths[""]
		u.PeakMemory, _ = fscommon.GetCgroupParamUint(dir, "memory.peak")
		if us, err := fscommon.GetValueByKey(dir, "cpu.stat", "usage_usec"); err == nil {
			u.CPUNanos = us * 1000
		}
		u.PeakPids, _ = fscommon.GetCgroupParamUint(dir, "pids.peak")
		return u
	}
	if dir, ok := c.paths["memory"]; ok {
		u.PeakMemory, _ = fscommon.GetCgroupParamUint(dir, "memory.max_usage_in_bytes")
	}
	if dir, ok := c.paths["cpu"]; ok {
		u.CPUNanos, _ = fscommon.GetCgroupParamUint(dir, "cpuacct.usage")
	}
	return u
}

// Destroy kills anything still in the cgroup and removes all its
// directories. It is safe to call more than once.
func (c *Cgroup) Destroy() error {
	if pids, err := c.Pids(); err == nil && len(pids) > 0 {
		if err := c.Kill(); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := cgroups.RemovePaths(maps(c.paths)); err != nil {
		return fmt.Errorf("cgroups: removing %s: %w", c.name, err)
	}
	return nil
}

// CleanupStale removes agentbox cgroups (under agentbox's own cgroup,
// in every hierarchy) whose owner process is gone: left by an agentbox that
// was killed before it could clean up. Processes still inside are killed
// first. A reused pid does not protect a stale cgroup: the owner's start
// time is part of the name.
func CleanupStale() error {
	l, err := detectCgroupLayout()
	if err != nil {
		return err
	}
	stale := map[string]*Cgroup{}
	for ctrl, parent := range l.parents {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "agentbox") {
				continue
			}
			pid, start, ok := parseOwner(e.Name())
			if !ok || ownerAlive(pid, start) {
				continue
			}
			c := stale[e.Name()]
			if c == nil {
				c = &Cgroup{name: e.Name(), v2: l.v2, paths: map[string]string{}}
				stale[e.Name()] = c
			}
			c.paths[ctrl] = filepath.Join(parent, e.Name())
		}
	}
	var errs []error
	for _, c := range stale {
		res := &cgroups.Resources{SkipDevices: true}
		cfg := &cgroups.Cgroup{Name: c.name, Resources: res}
		if c.v2 {
			c.mgr, err = fs2.NewManager(cfg, c.paths[""])
		} else {
			c.mgr, err = fs.NewManager(cfg, maps(c.paths))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroups: stale %s: %w", c.name, err))
			continue
		}
		if err := c.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("cgroups: removing stale %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// ownerSuffix returns ".owner-<pid>-<starttime>" for pid.
func ownerSuffix(pid int) (string, error) {
	start, err := procfs.StartTime(pid)
	if err != nil {
		return "", fmt.Errorf("cgroups: start time of pid %d: %w", pid, err)
	}
	return fmt.Sprintf("%s%d-%d", cgroupOwnerMarker, pid, start), nil
}

// parseOwner extracts the owner pid and start time from a directory name.
func parseOwner(name string) (pid int, start uint64, ok bool) {
	i := strings.LastIndex(name, cgroupOwnerMarker)
	if i < 0 {
		return 0, 0, false
	}
	p, s, found := strings.Cut(name[i+len(cgroupOwnerMarker):], "-")
	if !found {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, 0, false
	}
	return pid, start, true
}

// ownerAlive reports whether pid is running and started at start.
func ownerAlive(pid int, start uint64) bool { return procfs.Alive(pid, start) }
