//go:build linux

package cgroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

const cgroupChildEnv = "AGENTBOX_TEST_CGROUP_CHILD"

// needCgroups skips unless running as root with usable cgroups.
func needCgroups(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("reason: cgroup tests need root")
	}
	if err := Available(); err != nil {
		t.Skipf("reason: %v", err)
	}
}

func testCgroupName(t testing.TB) string {
	return fmt.Sprintf("agentbox-test-%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), time.Now().UnixNano()%1e9)
}

// gated is a process started in a cgroup: it was held on a stdin read
// until it had been moved there, so it did nothing outside it.
type gated struct {
	cmd *exec.Cmd
	out *strings.Builder
}

func newTestCgroup(t testing.TB, lim Limits) *Cgroup {
	t.Helper()
	cg, err := New(testCgroupName(t), lim)
	if err != nil {
		t.Fatalf("New(%+v): %v", lim, err)
	}
	t.Cleanup(func() { cg.Destroy() })
	for ctrl, p := range cg.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("cgroup dir for %q: %v", ctrl, err)
		}
	}
	return cg
}

// killEmpty kills every process of cg and fails unless none is left.
func killEmpty(t *testing.T, cg *Cgroup) {
	t.Helper()
	start := time.Now()
	if err := cg.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kill took %v", time.Since(start))
	if pids, _ := cg.Pids(); len(pids) != 0 {
		t.Fatalf("after Kill: %v", pids)
	}
}

// destroyGone destroys cg and fails if a directory of it is left.
func destroyGone(t *testing.T, cg *Cgroup) {
	t.Helper()
	if err := cg.Destroy(); err != nil {
		t.Fatal(err)
	}
	for ctrl, p := range cg.Paths() {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("Destroy left %q dir %s (stat: %v)", ctrl, p, err)
		}
	}
}

// TestCgroupPidsLimitAndKill runs a fork-happy shell under pids=20: forks
// fail, the counter records it, and Kill empties the cgroup.
func TestCgroupPidsLimitAndKill(t *testing.T) {
	needCgroups(t)
	cg := newTestCgroup(t, Limits{Pids: 20})
	g := startIn(t, cg, nil, "/bin/sh", "-c",
		`i=0; while [ $i -lt 60 ]; do sleep 60 & i=$((i+1)); done; echo spawned; wait`)
	deadline := time.Now().Add(10 * time.Second)
	for cg.Events().PidsMaxHits == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("PidsMaxHits stayed 0; output: %s", g.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pids, err := cg.Pids()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) == 0 || len(pids) > 20 {
		t.Errorf("cgroup has %d processes, want 1..20", len(pids))
	}
	t.Logf("pids in cgroup: %d, events: %+v", len(pids), cg.Events())
	killEmpty(t, cg)
	g.cmd.Wait()
	destroyGone(t, cg)
}

// TestCgroupKillForkLoop kills a tree that keeps forking (no pids limit):
// the freezer (v1) or cgroup.kill stops it from outrunning the kill.
func TestCgroupKillForkLoop(t *testing.T) {
	needCgroups(t)
	cg := newTestCgroup(t, Limits{Pids: 200})
	g := startIn(t, cg, nil, "/bin/sh", "-c", `while :; do (sleep 60 &) ; done`)
	testkit.WaitCond(t, "the fork loop to get going (5 processes)", func() bool { pids, _ := cg.Pids(); return len(pids) >= 5 })
	killEmpty(t, cg)
	var ee *exec.ExitError
	if err := g.cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("shell wait: %v, want killed by SIGKILL", err)
	}
}

// TestCgroupKillV1Freezer forces the pure-v1 kill path (freeze, SIGKILL
// every member, thaw, repeat) by dropping the hybrid unified directory,
// then kills a fork loop with it.
func TestCgroupKillV1Freezer(t *testing.T) {
	needCgroups(t)
	cg := newTestCgroup(t, Limits{Pids: 200})
	if cg.V2() || cg.paths["freezer"] == "" {
		t.Skip("reason: needs the cgroup v1 freezer controller")
	}
	if dir, ok := cg.paths[""]; ok {
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		delete(cg.paths, "")
	}
	g := startIn(t, cg, nil, "/bin/sh", "-c", `while :; do (sleep 60 &) ; done`)
	testkit.WaitCond(t, "the fork loop to get going (5 processes)", func() bool { pids, _ := cg.Pids(); return len(pids) >= 5 })
	killEmpty(t, cg)
	if st, _ := cgroups.ReadFile(cg.paths["freezer"], "freezer.state"); strings.TrimSpace(st) != "THAWED" {
		t.Errorf("freezer left in state %q", st)
	}
	g.cmd.Wait()
	destroyGone(t, cg)
}

// TestCgroupMemoryOOM runs a child that allocates 200 MiB under a 32 MiB
// limit: the kernel OOM-kills it and the event is counted.
func TestCgroupMemoryOOM(t *testing.T) {
	needCgroups(t)
	cg := newTestCgroup(t, Limits{MemoryBytes: 32 << 20})
	g := startIn(t, cg, []string{cgroupChildEnv + "=alloc"}, os.Args[0], "-test.run=^TestCgroupHelperProcess$")
	err := g.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("allocator: %v, want killed by SIGKILL; output: %s", err, g.out)
	}
	ev := cg.Events()
	if ev.OOMKills == 0 {
		t.Fatalf("OOMKills = 0 after an OOM kill; events %+v", ev)
	}
	t.Logf("events: %+v", ev)
}

// startIn starts name with args (and env) held on a stdin read, moves it
// into cg and releases it.
func startIn(t testing.TB, cg *Cgroup, env []string, name string, args ...string) *gated {
	t.Helper()
	full := append([]string{"-c", `read _ && exec "$@"`, "sh", name}, args...)
	cmd := exec.Command("/bin/sh", full...)
	cmd.Env = append(os.Environ(), env...)
	gate, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := cg.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	gate.Close()
	return &gated{cmd: cmd, out: out}
}

// TestCgroupCPUQuota checks --cpus becomes a CFS quota.
func TestCgroupCPUQuota(t *testing.T) {
	needCgroups(t)
	if err := availableFor([]string{"cpu"}); err != nil {
		t.Skipf("reason: %v", err)
	}
	cg := newTestCgroup(t, Limits{CPUs: 0.5})
	if cg.V2() {
		got, err := cgroups.ReadFile(cg.Paths()[""], "cpu.max")
		if err != nil || strings.TrimSpace(got) != "50000 100000" {
			t.Fatalf("cpu.max = %q, %v; want \"50000 100000\"", got, err)
		}
		return
	}
	dir := cg.Paths()["cpu"]
	q, _ := cgroups.ReadFile(dir, "cpu.cfs_quota_us")
	p, _ := cgroups.ReadFile(dir, "cpu.cfs_period_us")
	if strings.TrimSpace(q) != "50000" || strings.TrimSpace(p) != "100000" {
		t.Fatalf("cfs quota/period = %q/%q, want 50000/100000", q, p)
	}
}

func TestNewCgroupRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  Limits
		want string
	}{
		{"../escape", Limits{}, "invalid cgroup name"},
		{"a/b", Limits{}, "invalid cgroup name"},
		{"", Limits{}, "invalid cgroup name"},
		{"x.owner-1-2", Limits{}, "invalid cgroup name"},
		{"agentbox-ok", Limits{Pids: -1}, "negative limit"},
		{"agentbox-ok", Limits{CPUs: 0.001}, "minimum 0.01"},
	} {
		if _, err := New(tc.name, tc.lim); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %+v) = %v, want error containing %q", tc.name, tc.lim, err, tc.want)
		}
	}
}

// TestCleanupStaleCgroups lets a helper process create a cgroup with a
// process in it and exit without cleaning up (as a killed agentbox would);
// CleanupStale must kill the process and remove the directories,
// and must leave a live owner's cgroup alone.
func TestCleanupStaleCgroups(t *testing.T) {
	needCgroups(t)
	live := newTestCgroup(t, Limits{Pids: 10})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupHelperProcess$")
	cmd.Env = append(os.Environ(), cgroupChildEnv+"=stale")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var rep struct {
		Paths map[string]string
		Pid   int
	}
	line := out
	if i := strings.Index(string(out), "STALE "); i >= 0 {
		line = []byte(strings.SplitN(string(out[i+6:]), "\n", 2)[0])
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	for _, p := range rep.Paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("stale cgroup %s missing before cleanup: %v", p, err)
		}
	}
	if err := unix.Kill(rep.Pid, 0); err != nil {
		t.Fatalf("process in stale cgroup not running: %v", err)
	}
	if err := CleanupStale(); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale cgroup %s survived cleanup (%v)", p, err)
		}
	}
	// The orphan was reparented to init, which reaps it; wait until gone.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := procState(rep.Pid)
		if err != nil || st == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d in stale cgroup still running (state %s)", rep.Pid, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range live.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("live cgroup %s removed by cleanup: %v", p, err)
		}
	}
}

func procState(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0], nil
}

func TestParseOwner(t *testing.T) {
	for _, tc := range []struct {
		in    string
		pid   int
		start uint64
		ok    bool
	}{
		{"agentbox-r1.owner-123-456", 123, 456, true},
		{"agentbox-a.owner-b.owner-7-8", 7, 8, true},
		{"agentbox-r1", 0, 0, false},
		{"agentbox-r1.owner-x-1", 0, 0, false},
		{"agentbox-r1.owner-0-1", 0, 0, false},
		{"agentbox-r1.owner-12", 0, 0, false},
	} {
		pid, start, ok := parseOwner(tc.in)
		if pid != tc.pid || start != tc.start || ok != tc.ok {
			t.Errorf("parseOwner(%q) = %d, %d, %v; want %d, %d, %v", tc.in, pid, start, ok, tc.pid, tc.start, tc.ok)
		}
	}
	me, err := ownerSuffix(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	pid, start, ok := parseOwner("agentbox-x" + me)
	if !ok || pid != os.Getpid() || !ownerAlive(pid, start) {
		t.Errorf("own suffix %q: parsed %d %d %v, alive %v", me, pid, start, ok, ownerAlive(pid, start))
	}
	if ownerAlive(pid, start+1) {
		t.Error("owner with a different start time counted as alive (pid reuse)")
	}
}

// TestCgroupV2InMountNamespace exercises the cgroup v2 code on a v1/hybrid
// host: a helper in a private mount namespace mounts the (controller-less)
// unified hierarchy at /sys/fs/cgroup and checks creation in a delegated
// subtree, cgroup.kill, Destroy, stale cleanup, the launcher-leaf move and
// errors for controllers v2 does not have here.
func TestCgroupV2InMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: needs root to mount cgroup2 in a mount namespace")
	}
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("reason: host is cgroup v2 already; the other cgroup tests cover v2")
	}
	runChildInMountNS(t, "v2", "V2")
}

// runChildInMountNS runs TestCgroupHelperProcess as child (its
// AGENTBOX_TEST_CGROUP_CHILD) in a private mount namespace. The child
// prints "TAG-OK" when all it checked held, or "SKIP-TAG: why" where the
// machine lacks what it needs, which skips the test.
func runChildInMountNS(t *testing.T, child, tag string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupHelperProcess$")
	cmd.Env = append(os.Environ(), cgroupChildEnv+"="+child)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if _, why, ok := strings.Cut(string(out), "SKIP-"+tag+":"); ok {
		t.Skip("reason: " + strings.TrimSpace(why))
	}
	if err != nil || !strings.Contains(string(out), tag+"-OK") {
		t.Fatalf("%s helper: %v\n%s", child, err, out)
	}
	t.Logf("%s", out)
}

// TestCgroupHelperProcess is the child side of the cgroup tests; it does
// nothing unless re-executed by one of them.
func TestCgroupHelperProcess(t *testing.T) {
	switch os.Getenv(cgroupChildEnv) {
	case "":
		t.Skip("reason: helper process for the cgroup tests, runs only when re-executed")
	case "alloc":
		var chunks [][]byte
		for i := 0; i < 200; i++ {
			b := make([]byte, 1<<20)
			for j := range len(b) / 4096 {
				b[j*4096] = 1
			}
			chunks = append(chunks, b)
		}
		fmt.Println("allocated", len(chunks), "MiB without being killed")
		os.Exit(0)
	case "stale":
		cg, err := New(fmt.Sprintf("agentbox-test-stale-%d", os.Getpid()), Limits{Pids: 50})
		if err != nil {
			fmt.Println("newCgroup:", err)
			os.Exit(1)
		}
		sleep := exec.Command("/bin/sleep", "1000")
		sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := sleep.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		if err := cg.AddProc(sleep.Process.Pid); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		b, _ := json.Marshal(map[string]any{"Paths": cg.Paths(), "Pid": sleep.Process.Pid})
		fmt.Printf("STALE %s\n", b)
		os.Exit(0) // no Destroy: this is the killed agentbox
	}
	// The children that check a whole setup say TAG-OK when all held,
	// TAG-FAIL and why otherwise.
	checks := map[string]struct {
		tag string
		run func() error
	}{
		"v2": {"V2", cgroupV2Child}, "v2-unpriv": {"V2U", cgroupV2UnprivChild},
		"sd": {"SD", systemdChild}, "sd-launcher": {"SDL", systemdLauncher},
	}
	if c, ok := checks[os.Getenv(cgroupChildEnv)]; ok {
		if err := c.run(); err != nil {
			fmt.Println(c.tag+"-FAIL:", err)
			os.Exit(1)
		}
		fmt.Println(c.tag + "-OK")
		os.Exit(0)
	}
}

// cgroupV2Child runs in a private mount namespace (see
// TestCgroupV2InMountNamespace).
func cgroupV2Child() error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, ""); err != nil {
		fmt.Println("SKIP-V2: cannot mount cgroup2:", err)
		os.Exit(0)
	}
	if !cgroups.IsCgroup2UnifiedMode() {
		return errors.New("library does not see unified mode after mounting cgroup2")
	}
	rootCtrls, _ := v2List("/sys/fs/cgroup", "cgroup.controllers")
	if err := Available(); !slices.Contains(rootCtrls, "memory") && (err == nil || !strings.Contains(err.Error(), "controller memory not available")) {
		return fmt.Errorf("Available with no memory controller = %v", err)
	}

	// A delegated subtree: agentbox runs in a non-root cgroup of its own.
	deleg := fmt.Sprintf("/sys/fs/cgroup/agentbox-test-deleg-%d", os.Getpid())
	leave, err := joinNew(deleg)
	if err != nil {
		return err
	}
	defer leave()

	cg, err := New("agentbox-test-v2", Limits{})
	if err != nil {
		return fmt.Errorf("newCgroup: %w", err)
	}
	dir := cg.Paths()[""]
	if !cg.V2() || filepath.Dir(dir) != deleg {
		return fmt.Errorf("cgroup at %s (v2=%v), want a child of %s", dir, cg.V2(), deleg)
	}
	var sleeps []*exec.Cmd
	for i := 0; i < 3; i++ {
		s := exec.Command("/bin/sleep", "1000")
		if err := s.Start(); err != nil {
			return err
		}
		defer s.Process.Kill()
		if err := cg.AddProc(s.Process.Pid); err != nil {
			return fmt.Errorf("AddProc: %w", err)
		}
		sleeps = append(sleeps, s)
	}
	// The launcher starts the helper in the cgroup (CLONE_INTO_CGROUP on
	// the V2Dir fd) instead of writing cgroup.procs afterwards.
	fd, err := unix.Open(cg.V2Dir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", cg.V2Dir(), err)
	}
	born := exec.Command("/bin/sleep", "1000")
	born.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := born.Start(); err != nil {
		return fmt.Errorf("CLONE_INTO_CGROUP: %w", err)
	}
	unix.Close(fd)
	defer born.Process.Kill()
	sleeps = append(sleeps, born)
	if pids, _ := cg.Pids(); len(pids) != 4 || !slices.Contains(pids, born.Process.Pid) {
		return fmt.Errorf("Pids() = %v, want 3 sleeps and %d born in the cgroup", pids, born.Process.Pid)
	}
	start := time.Now()
	if err := cg.Kill(); err != nil {
		return fmt.Errorf("Kill: %w", err)
	}
	fmt.Println("v2 cgroup.kill took", time.Since(start))
	for _, s := range sleeps {
		if err := s.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			return fmt.Errorf("sleep after Kill: %v", err)
		}
	}
	if ev := cg.Events(); ev != (Events{}) {
		return fmt.Errorf("Events() = %+v, want zeros", ev)
	}
	if err := cg.Destroy(); err != nil {
		return fmt.Errorf("Destroy: %w", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		return fmt.Errorf("Destroy left %s", dir)
	}

	if !slices.Contains(rootCtrls, "pids") {
		if _, err := New("agentbox-test-v2p", Limits{Pids: 5}); err == nil || !strings.Contains(err.Error(), "controller pids not available") {
			return fmt.Errorf("newCgroup with pids on a v2 without pids = %v", err)
		}
	}

	// Stale cleanup on v2: a cgroup whose owner pid does not exist.
	stale := filepath.Join(deleg, "agentbox-test-gone.owner-999999999-1")
	if err := os.Mkdir(stale, 0o755); err != nil {
		return err
	}
	s := exec.Command("/bin/sleep", "1000")
	if err := s.Start(); err != nil {
		return err
	}
	defer s.Process.Kill()
	if err := cgroups.WriteCgroupProc(stale, s.Process.Pid); err != nil {
		return err
	}
	if err := CleanupStale(); err != nil {
		return fmt.Errorf("CleanupStale: %w", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		return fmt.Errorf("stale v2 cgroup %s survived", stale)
	}
	if err := s.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		return fmt.Errorf("sleep in stale cgroup: %v", err)
	}

	if err := cgroupV2Unprivileged(); err != nil {
		return fmt.Errorf("unprivileged delegated subtree: %w", err)
	}

	// No-internal-process rule: agentbox started in a delegated cgroup,
	// alone or beside other processes (the shell of a `systemd-run
	// --scope -p Delegate=yes` session): Place moves agentbox into a leaf
	// of its own and the others into movedLeaf, enables the controller,
	// and run cgroups go beside the leaves.
	if slices.Contains(rootCtrls, "hugetlb") {
		if err := cgroups.WriteFile("/sys/fs/cgroup", "cgroup.subtree_control", "+hugetlb"); err != nil {
			return fmt.Errorf("enable hugetlb at root: %w", err)
		}
		defer cgroups.WriteFile("/sys/fs/cgroup", "cgroup.subtree_control", "-hugetlb")
		for _, others := range []int{0, 1, 3} {
			if err := checkLeafArrangement(others); err != nil {
				return fmt.Errorf("agentbox with %d other members: %w", others, err)
			}
		}
		fmt.Println("launcher-leaf and member moves checked")
	}
	return nil
}

// checkLeafArrangement starts agentbox (this process) in a fresh cgroup
// with others more processes and checks Place for the hugetlb controller
// (the one this host's v2 hierarchy has; memory and pids are v1's here).
func checkLeafArrangement(others int) error {
	deleg := fmt.Sprintf("/sys/fs/cgroup/agentbox-test-leaf-%d-%d", os.Getpid(), others)
	leave, err := joinNew(deleg)
	if err != nil {
		return err
	}
	defer leave()
	var pids []int
	for range others {
		// A shell that keeps forking: members may multiply while they move.
		o := exec.Command("/bin/sh", "-c", "while :; do /bin/sleep 0.01; done")
		if err := o.Start(); err != nil {
			return err
		}
		defer func() { o.Process.Kill(); o.Wait() }()
		if err := cgroups.WriteCgroupProc(deleg, o.Process.Pid); err != nil {
			return err
		}
		pids = append(pids, o.Process.Pid)
	}
	if err := place([]string{"hugetlb"}); err != nil {
		return fmt.Errorf("place: %w", err)
	}
	own, _ := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if !strings.HasPrefix(filepath.Base(own[""]), "agentbox-launcher.owner-") || filepath.Dir(filepath.Join("/sys/fs/cgroup", own[""])) != deleg {
		return fmt.Errorf("agentbox not moved into a launcher leaf of %s: %q", deleg, own[""])
	}
	for _, pid := range pids {
		theirs, err := cgroups.ParseCgroupFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || filepath.Join("/sys/fs/cgroup", theirs[""]) != filepath.Join(deleg, movedLeaf) {
			return fmt.Errorf("member %d in %q, want %s (%v)", pid, theirs[""], filepath.Join(deleg, movedLeaf), err)
		}
	}
	if ctl, _ := v2List(deleg, "cgroup.subtree_control"); !slices.Contains(ctl, "hugetlb") {
		return fmt.Errorf("hugetlb not enabled in %s: %v", deleg, ctl)
	}
	// A second run of the same launcher: nothing moves again, and the run
	// cgroup is the leaves' sibling.
	if err := place([]string{"hugetlb"}); err != nil {
		return fmt.Errorf("second place: %w", err)
	}
	cg, err := New("agentbox-test-sibling", Limits{})
	if err != nil {
		return fmt.Errorf("New after place: %w", err)
	}
	defer cg.Destroy()
	if got := filepath.Dir(cg.Paths()[""]); got != deleg {
		return fmt.Errorf("run cgroup in %s, want %s (beside the launcher leaf)", got, deleg)
	}
	if ctl, _ := v2List(cg.Paths()[""], "cgroup.controllers"); !slices.Contains(ctl, "hugetlb") {
		return fmt.Errorf("run cgroup lacks hugetlb: %v", ctl)
	}
	return nil
}

// joinNew makes the v2 cgroup dir and moves this process into it; leave
// moves it back to the root cgroup and removes dir.
func joinNew(dir string) (leave func(), err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	leave = func() {
		cgroups.WriteCgroupProc("/sys/fs/cgroup", os.Getpid())
		cgroups.RemovePath(dir)
	}
	if err := cgroups.WriteCgroupProc(dir, os.Getpid()); err != nil {
		leave()
		return nil, fmt.Errorf("joining %s: %w", dir, err)
	}
	return leave, nil
}

// delegate hands the v2 cgroup dir to uid as systemd's Delegate=yes does:
// the directory and the files a delegate writes are chowned to it.
func delegate(dir string, uid int) error {
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		if err := os.Chown(filepath.Join(dir, f), uid, uid); err != nil {
			return err
		}
	}
	return nil
}

// testBinaryIn copies the test binary into dir, made readable to all: it
// lives in a 0700 build directory, out of another user's reach.
func testBinaryIn(dir string) (string, error) {
	os.Chmod(dir, 0o755)
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		return "", err
	}
	exe := filepath.Join(dir, "cgroup.test")
	return exe, os.WriteFile(exe, bin, 0o755)
}

// cgroupV2Unprivileged delegates a subtree to uid 65534 (chown of the
// directory and its cgroup.procs, cgroup.subtree_control, cgroup.threads, as
// systemd's Delegate=yes does) and runs the cgroup code there as that user.
func cgroupV2Unprivileged() error {
	const nobody = 65534
	deleg := fmt.Sprintf("/sys/fs/cgroup/agentbox-test-unpriv-%d", os.Getpid())
	if err := os.Mkdir(deleg, 0o755); err != nil {
		return err
	}
	defer cgroups.RemovePath(deleg)
	if err := delegate(deleg, nobody); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "agentbox-cgtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, err := testBinaryIn(dir)
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", `read _ && exec "$@"`, "sh", exe, "-test.run=^TestCgroupHelperProcess$")
	cmd.Env = append(os.Environ(), cgroupChildEnv+"=v2-unpriv", "TMPDIR="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	gate, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	if err := cgroups.WriteCgroupProc(deleg, cmd.Process.Pid); err != nil {
		return err
	}
	gate.Write([]byte("go\n"))
	gate.Close()
	err = cmd.Wait()
	fmt.Print(out.String())
	if err != nil || !strings.Contains(out.String(), "V2U-OK") {
		return fmt.Errorf("unprivileged helper: %v", err)
	}
	return nil
}

// cgroupV2UnprivChild runs as uid 65534 inside a delegated subtree.
func cgroupV2UnprivChild() error {
	if os.Geteuid() == 0 {
		return errors.New("still root")
	}
	if unix.Access("/sys/fs/cgroup/cgroup.procs", unix.W_OK) == nil {
		return errors.New("the cgroup root is writable: not an unprivileged test")
	}
	if err := Available(); err != nil && strings.Contains(err.Error(), "not writable") {
		return fmt.Errorf("Available in a delegated subtree: %w", err)
	}
	cg, err := New("agentbox-test-unpriv", Limits{})
	if err != nil {
		return fmt.Errorf("newCgroup: %w", err)
	}
	own, _ := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if want := filepath.Join("/sys/fs/cgroup", own[""], cg.Name()); cg.Paths()[""] != want {
		return fmt.Errorf("cgroup at %s, want %s", cg.Paths()[""], want)
	}
	s := exec.Command("/bin/sleep", "1000")
	if err := s.Start(); err != nil {
		return err
	}
	defer s.Process.Kill()
	if err := cg.AddProc(s.Process.Pid); err != nil {
		return fmt.Errorf("AddProc: %w", err)
	}
	if err := cg.Kill(); err != nil {
		return fmt.Errorf("Kill: %w", err)
	}
	if err := s.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		return fmt.Errorf("sleep after Kill: %v", err)
	}
	if err := cg.Destroy(); err != nil {
		return fmt.Errorf("Destroy: %w", err)
	}
	fmt.Println("unprivileged: created, killed and removed", cg.Name())
	return nil
}

// BenchmarkCgroupLifecycle measures one run's cgroup overhead: newCgroup
// with memory, cpu and pids limits, AddProc of a running process, Kill and
// Destroy (starting the process is not timed; reaping it is).
func BenchmarkCgroupLifecycle(b *testing.B) {
	needCgroups(b)
	lim := Limits{MemoryBytes: 256 << 20, CPUs: 1, Pids: 100}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := exec.Command("/bin/sleep", "1000")
		if err := s.Start(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cg, err := New(fmt.Sprintf("agentbox-bench-%d", i), lim)
		if err != nil {
			b.Fatal(err)
		}
		if err := cg.AddProc(s.Process.Pid); err != nil {
			b.Fatal(err)
		}
		if err := cg.Kill(); err != nil {
			b.Fatal(err)
		}
		s.Wait() // the launcher reaps promptly; a zombie keeps a v1 cgroup busy
		if err := cg.Destroy(); err != nil {
			b.Fatal(err)
		}
	}
}
