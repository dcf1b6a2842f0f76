//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// TestPlaceThroughSystemdUserManager runs a real systemd user manager
// (systemd --user, as uid 65534) on a cgroup v2 hierarchy mounted in a
// mount namespace of the test's own, with /run/systemd/system made there
// so it (and Place) see a systemd machine, and starts agentbox under it
// as that user:
//   - in a service without Delegate= (like a terminal's application
//     scope): Place asks the manager over D-Bus (its private socket; no
//     bus daemon here) for a transient scope with Delegate=yes, moves in,
//     and makes the run's cgroup there;
//   - in a service with Delegate=yes beside its shell (as under
//     `systemd-run --user --scope -p Delegate=yes sh`): Place asks for
//     nothing, and divides that cgroup: a leaf for agentbox, one for the
//     shell, the run's cgroup beside them.
//
// The hierarchy here has only the hugetlb controller (memory and pids are
// v1's on this host), so hugetlb stands in for them. On a cgroup v2 host
// the scope path is checked by the VM test (scripts/vm) with real limits.
func TestPlaceThroughSystemdUserManager(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: needs root to mount cgroup2 and make a user manager's cgroup")
	}
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("reason: host is cgroup v2: the VM test (scripts/vm) checks Place under the host's own systemd")
	}
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		t.Skip("reason: systemd is not installed (/lib/systemd/systemd)")
	}
	if _, err := exec.LookPath("systemd-run"); err != nil {
		t.Skip("reason: systemd-run is not installed")
	}
	runChildInMountNS(t, "sd", "SD")
}

// systemdChild runs in a private mount namespace as root: it sets up the
// user manager and starts the launcher cases under it.
func systemdChild() error {
	const nobody = 65534
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, ""); err != nil {
		fmt.Println("SKIP-SD: cannot mount cgroup2:", err)
		os.Exit(0)
	}
	if avail, _ := v2List("/sys/fs/cgroup", "cgroup.controllers"); !strings.Contains(strings.Join(avail, " "), "hugetlb") {
		fmt.Println("SKIP-SD: the v2 hierarchy has no controller to delegate (want hugetlb)")
		os.Exit(0)
	}
	if err := os.MkdirAll("/run/systemd", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/run/systemd", "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on /run/systemd: %w", err)
	}
	if err := os.Mkdir("/run/systemd/system", 0o755); err != nil {
		return err
	}
	if err := cgroups.WriteFile("/sys/fs/cgroup", "cgroup.subtree_control", "+hugetlb"); err != nil {
		return fmt.Errorf("enable hugetlb at root: %w", err)
	}
	base := fmt.Sprintf("/sys/fs/cgroup/agentbox-test-sd-%d", os.Getpid())
	mgr := filepath.Join(base, fmt.Sprintf("user@%d.service", nobody))
	if err := os.MkdirAll(mgr, 0o755); err != nil {
		return err
	}
	defer func() {
		cgroups.WriteFile(base, "cgroup.kill", "1")
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if p, _ := cgroups.GetAllPids(base); len(p) == 0 {
				break
			}
		}
		cgroups.RemovePath(base)
	}()
	if err := cgroups.WriteFile(base, "cgroup.subtree_control", "+hugetlb"); err != nil {
		return err
	}
	// Delegated to the user, as systemd's user@.service is: chowned, and
	// marked user.delegate (by the system manager). The mark is the
	// user manager's, not that of the units below it.
	if err := delegate(mgr, nobody); err != nil {
		return err
	}
	if err := unix.Setxattr(mgr, "user.delegate", []byte("1"), 0); err != nil {
		return fmt.Errorf("marking %s delegated: %w", mgr, err)
	}
	dir, err := os.MkdirTemp("", "agentbox-sdtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rt, home := filepath.Join(dir, "run"), filepath.Join(dir, "home")
	for _, d := range []string{rt, home} {
		os.Mkdir(d, 0o700)
		os.Chown(d, nobody, nobody)
	}
	exe, err := testBinaryIn(dir)
	if err != nil {
		return err
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + rt}
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}

	// The user manager, moved into its delegated cgroup before it runs.
	sd := exec.Command("/bin/sh", "-c", `read _ && exec /lib/systemd/systemd --user`)
	sd.Env, sd.SysProcAttr = env, cred
	gate, err := sd.StdinPipe()
	if err != nil {
		return err
	}
	var sdLog strings.Builder
	sd.Stdout, sd.Stderr = &sdLog, &sdLog
	if err := sd.Start(); err != nil {
		return err
	}
	defer func() { sd.Process.Signal(unix.SIGTERM); sd.Wait() }()
	if err := cgroups.WriteCgroupProc(mgr, sd.Process.Pid); err != nil {
		return err
	}
	gate.Write([]byte("go\n"))
	gate.Close()
	appSlice := filepath.Join(mgr, "app.slice")
	if err := waitFor(20*time.Second, func() bool {
		_, e1 := os.Stat(filepath.Join(rt, "systemd", "private"))
		_, e2 := os.Stat(appSlice)
		return e1 == nil && e2 == nil
	}); err != nil {
		return fmt.Errorf("user manager not up (private socket, app.slice): %w\n%s", err, sdLog.String())
	}
	// systemd does not know hugetlb and leaves it alone: enabled down to
	// app.slice, delegated units get it.
	for _, d := range []string{mgr, appSlice} {
		if err := cgroups.WriteFile(d, "cgroup.subtree_control", "+hugetlb"); err != nil {
			return fmt.Errorf("enable hugetlb in %s: %w", d, err)
		}
	}

	for _, c := range []struct {
		name, want string
		props      []string
	}{
		{"a service without Delegate=", "scope", nil},
		{"a service with Delegate=yes, beside its shell", "inplace", []string{"-p", "Delegate=yes"}},
	} {
		args := append([]string{"--user", "--wait", "--pipe", "--quiet",
			"-E", cgroupChildEnv + "=sd-launcher", "-E", "AGENTBOX_TEST_SD_WANT=" + c.want}, c.props...)
		// sh stays (the "; true"): a member besides agentbox.
		args = append(args, "/bin/sh", "-c", `"$0" -test.run='^TestCgroupHelperProcess$'; true`, exe)
		run := exec.Command("systemd-run", args...)
		run.Env, run.SysProcAttr, run.Dir = env, cred, dir
		out, err := run.CombinedOutput()
		fmt.Printf("%s:\n%s", c.name, out)
		if err != nil || !strings.Contains(string(out), "SDL-OK") {
			return fmt.Errorf("%s: %v", c.name, err)
		}
	}
	return nil
}

// systemdLauncher is agentbox as the user, started by the user manager.
func systemdLauncher() error {
	want := os.Getenv("AGENTBOX_TEST_SD_WANT")
	own, err := ownCgroups()
	if err != nil {
		return err
	}
	start := filepath.Join("/sys/fs/cgroup", own[""])
	fmt.Println("started in", start)
	var shell int
	if pids, _ := cgroups.GetPids(start); len(pids) == 2 {
		shell = pids[0]
		if shell == os.Getpid() {
			shell = pids[1]
		}
	}
	if shell == 0 {
		return fmt.Errorf("want agentbox and its shell in %s", start)
	}
	t0 := time.Now()
	if err := place([]string{"hugetlb"}); err != nil {
		return fmt.Errorf("place: %w", err)
	}
	fmt.Println("place took", time.Since(t0).Round(time.Microsecond))
	own, _ = ownCgroups()
	now := filepath.Join("/sys/fs/cgroup", own[""])
	fmt.Println("now in", now)
	parent := filepath.Dir(now)
	owner, _ := ownerSuffix(os.Getpid())
	if filepath.Base(now) != launcherLeafPrefix+owner {
		return fmt.Errorf("agentbox in %s, not in a launcher leaf", now)
	}
	switch want {
	case "scope":
		unit := "agentbox-" + strings.TrimPrefix(owner, cgroupOwnerMarker) + ".scope"
		if parent != filepath.Join(filepath.Dir(start), unit) {
			return fmt.Errorf("launcher leaf in %s, want in the scope %s beside %s", parent, unit, start)
		}
		if !unitDelegated("/" + strings.TrimPrefix(parent, "/sys/fs/cgroup/")) {
			return fmt.Errorf("the manager does not report %s as delegated", unit)
		}
		// Stopping the service agentbox was started in stops the scope.
		partOf, err := scopeProperty(unit, "PartOf")
		if from := filepath.Base(start); err != nil || fmt.Sprint(partOf) != "["+from+"]" {
			return fmt.Errorf("%s PartOf = %v (%v), want [%s]", unit, partOf, err, from)
		}
	case "inplace":
		if parent != start {
			return fmt.Errorf("launcher leaf in %s, want in %s (already delegated)", parent, start)
		}
		theirs, err := cgroups.ParseCgroupFile(fmt.Sprintf("/proc/%d/cgroup", shell))
		if err != nil || filepath.Join("/sys/fs/cgroup", theirs[""]) != filepath.Join(start, movedLeaf) {
			return fmt.Errorf("shell %d in %q, want %s", shell, theirs[""], filepath.Join(start, movedLeaf))
		}
	}
	cg, err := New("agentbox-test-sd", Limits{})
	if err != nil {
		return fmt.Errorf("New: %w", err)
	}
	defer cg.Destroy()
	if d := filepath.Dir(cg.Paths()[""]); d != parent {
		return fmt.Errorf("run cgroup in %s, want beside the launcher leaf in %s", d, parent)
	}
	if ctl, _ := v2List(cg.Paths()[""], "cgroup.controllers"); !strings.Contains(strings.Join(ctl, " "), "hugetlb") {
		return fmt.Errorf("run cgroup %s lacks hugetlb: %v", cg.Paths()[""], ctl)
	}
	fmt.Println("run cgroup", cg.Paths()[""])
	return nil
}

// waitFor polls cond until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) error {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("timed out after " + d.String())
		}
	}
	return nil
}

// scopeProperty reads a property of the unit from the user manager.
func scopeProperty(unit, name string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	conn, _, err := managerConn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	p, err := conn.GetUnitPropertyContext(ctx, unit, name)
	if err != nil {
		return nil, err
	}
	return p.Value.Value(), nil
}
