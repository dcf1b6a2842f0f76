//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// UnavailableError says why a run's limits cannot be applied here. The
// launcher refuses the run with it (unless --no-limits or --best-effort);
// the command line adds how to make running without limits the default.
type UnavailableError struct {
	// Reason is what is missing, naming the cgroup, controller or
	// systemd manager concerned.
	Reason string
	// SystemdScope is set when a systemd manager is running on a cgroup v2
	// machine: started under `systemd-run --user --scope -p Delegate=yes`
	// (or as root, `systemd-run --scope -p Delegate=yes`) agentbox gets a
	// delegated cgroup of its own even where it could not ask for one.
	SystemdScope bool
}

func (e *UnavailableError) Error() string { return "cgroups unusable: " + e.Reason }

// Hint is the way out the refusal names: the systemd-run prefix when
// it can help, else "".
func (e *UnavailableError) Hint() string {
	if !e.SystemdScope {
		return ""
	}
	if os.Geteuid() == 0 {
		return "systemd-run --scope -p Delegate=yes agentbox run ..."
	}
	return "systemd-run --user --scope -p Delegate=yes agentbox run ..."
}

// placeMu serializes Place: a launcher running several runs moves itself
// (into a systemd scope, into a leaf) at most once.
var placeMu sync.Mutex

// systemdDir is where a systemd-booted machine has its runtime marker
// directory (sd_booted(3)); a variable for tests.
var systemdDir = "/run/systemd/system"

// systemdBooted reports whether systemd manages this machine's cgroups.
func systemdBooted() bool {
	fi, err := os.Lstat(systemdDir)
	return err == nil && fi.IsDir()
}

// Place makes sure a run's cgroup with lim can be made below agentbox's
// own cgroup, and reports why not. Only the controllers lim needs are
// required: memory for a memory limit, pids for a process limit, cpu for
// a CPU limit.
//
// On cgroup v2 agentbox's cgroup must be its own to divide: delegated by
// systemd (Delegate=yes, seen in the trusted.delegate or user.delegate
// attribute or asked of the manager), or, on a machine systemd does not
// manage, writable. When it is not (a login session, a service without
// Delegate=, an application scope), Place asks systemd over D-Bus for a
// transient scope with Delegate=yes holding the launcher — the user
// manager for a regular user, the system manager for root — and uses it.
// In its cgroup, Place moves the launcher into a leaf of its own
// ("agentbox-launcher.owner-...") and any other member processes (the
// shell that started agentbox in a delegated scope) into the leaf
// "moved-by-agentbox", so that the controllers can be enabled for the
// run cgroups, which are the launcher leaf's siblings (the kernel's
// no-internal-process rule).
//
// On cgroup v1 the needed controllers must be mounted and agentbox's
// cgroups in them writable; v1 has no delegation to regular users.
//
// A read-only cgroup mount gives ErrReadOnly; anything else missing an
// *UnavailableError.
func Place(lim Limits) error {
	return place(neededControllers(lim))
}

func place(need []string) error {
	placeMu.Lock()
	defer placeMu.Unlock()
	l, err := detectCgroupLayout()
	if err != nil {
		return &UnavailableError{Reason: err.Error()}
	}
	if ro := l.readOnly(); ro != "" {
		return fmt.Errorf("%w (%s is mounted read-only)", ErrReadOnly, ro)
	}
	if !l.v2 {
		return checkV1(l, need)
	}
	if len(need) == 0 {
		return nil
	}
	booted := systemdBooted()
	parent := l.parents[""]
	here := checkV2(parent, need, booted)
	if here == nil {
		if err := arrangeV2(parent, need); err != nil {
			return &UnavailableError{Reason: err.Error(), SystemdScope: booted}
		}
		return nil
	}
	if !booted {
		return &UnavailableError{Reason: here.Error()}
	}
	unit, err := startScope()
	if err != nil {
		return &UnavailableError{Reason: fmt.Sprintf("%v; asking systemd for a delegated scope: %v", here, err), SystemdScope: true}
	}
	l, err = detectCgroupLayout()
	if err != nil {
		return &UnavailableError{Reason: fmt.Sprintf("after moving into %s: %v", unit, err), SystemdScope: true}
	}
	parent = l.parents[""]
	knownDelegated[parent] = true // made with Delegate=yes just now
	if err := checkV2(parent, need, true); err != nil {
		return &UnavailableError{Reason: fmt.Sprintf("in the delegated scope %s systemd made: %v", unit, err), SystemdScope: true}
	}
	if err := arrangeV2(parent, need); err != nil {
		return &UnavailableError{Reason: fmt.Sprintf("in the delegated scope %s systemd made: %v", unit, err), SystemdScope: true}
	}
	return nil
}

// checkV1 reports what keeps run cgroups with the need controllers from
// being made on a cgroup v1 (or hybrid) machine.
func checkV1(l *cgroupLayout, need []string) error {
	var problems []string
	for _, c := range need {
		if slices.Contains(l.missing, c) {
			problems = append(problems, fmt.Sprintf("v1 controller %s not mounted", c))
			continue
		}
		if err := unix.Access(l.parents[c], unix.W_OK); err != nil {
			problems = append(problems, fmt.Sprintf("%s cgroup %s not writable (%v)", c, l.parents[c], err))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	reason := strings.Join(problems, "; ")
	if os.Geteuid() != 0 {
		reason += " (cgroup v1 is not delegated to regular users)"
	}
	return &UnavailableError{Reason: reason}
}

// checkV2 reports what keeps agentbox from dividing dir (its own cgroup
// v2) into the launcher's leaf and run cgroups with the need controllers.
// booted says systemd manages the machine: then dir must be delegated.
func checkV2(dir string, need []string, booted bool) error {
	avail, err := v2List(dir, "cgroup.controllers")
	if err != nil {
		return fmt.Errorf("reading %s/cgroup.controllers: %w", dir, err)
	}
	var problems []string
	for _, c := range need {
		if !slices.Contains(avail, c) {
			problems = append(problems, fmt.Sprintf("controller %s not available in %s (cgroup.controllers: %q)", c, dir, strings.Join(avail, " ")))
		}
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if err := unix.Access(filepath.Join(dir, f), unix.W_OK); err != nil {
			problems = append(problems, fmt.Sprintf("%s not writable (%v)", filepath.Join(dir, f), err))
		}
	}
	if len(problems) == 0 && booted && !delegated(dir) {
		problems = append(problems, fmt.Sprintf("%s belongs to a systemd unit without Delegate=yes", dir))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// delegated reports whether systemd delegated dir to its processes: the
// trusted.delegate or user.delegate attribute on dir itself (systemd 251
// and later), else the Delegate property of the unit the manager says
// owns dir (GetUnitByControlGroup walks up to it: a cgroup made inside a
// delegated unit). An ancestor's mark does not count: user@UID.service is
// delegated to the user manager, not to the units below it.
func delegated(dir string) bool {
	if knownDelegated[dir] {
		return true
	}
	if d := delegatedUncached(dir); d {
		knownDelegated[dir] = true
		return true
	}
	return false
}

// knownDelegated remembers cgroups found (or made) delegated, so that
// later runs of one launcher do not ask systemd again (under placeMu).
var knownDelegated = map[string]bool{}

func delegatedUncached(dir string) bool {
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		buf := make([]byte, 8)
		if n, err := unix.Getxattr(dir, attr, buf); err == nil && string(buf[:n]) == "1" {
			return true
		}
	}
	rel, err := filepath.Rel("/sys/fs/cgroup", dir)
	if err != nil {
		return false
	}
	return unitDelegated("/" + rel)
}

// launcherLeafPrefix names the leaf the launcher moves itself into; the
// owner suffix follows.
const launcherLeafPrefix = "agentbox-launcher"

// movedLeaf is the leaf other member processes of agentbox's cgroup are
// moved into. It carries no owner suffix: CleanupStale must never take
// it for a dead run's cgroup and kill what is inside.
const movedLeaf = "moved-by-agentbox"

// arrangeV2 enables the need controllers for dir's children. When the
// no-internal-process rule refuses that (dir has member processes), the
// launcher moves into a leaf of its own and every other member into
// movedLeaf, and the write is retried (a member may fork meanwhile).
func arrangeV2(dir string, need []string) error {
	enabled, err := v2List(dir, "cgroup.subtree_control")
	if err != nil {
		return fmt.Errorf("reading %s/cgroup.subtree_control: %w", dir, err)
	}
	var add []string
	for _, c := range need {
		if !slices.Contains(enabled, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	req := strings.Join(add, " ")
	err = cgroups.WriteFile(dir, "cgroup.subtree_control", req)
	if err == nil || !errors.Is(err, unix.EBUSY) {
		if err != nil {
			return fmt.Errorf("enabling %q in %s/cgroup.subtree_control: %w", req, dir, err)
		}
		return nil
	}
	owner, err := ownerSuffix(os.Getpid())
	if err != nil {
		return err
	}
	self := filepath.Join(dir, launcherLeafPrefix+owner)
	others := filepath.Join(dir, movedLeaf)
	for attempt := 0; ; attempt++ {
		procs, err := cgroups.GetPids(dir)
		if err != nil {
			return fmt.Errorf("listing %s/cgroup.procs: %w", dir, err)
		}
		for _, pid := range procs {
			leaf := others
			if pid == os.Getpid() {
				leaf = self
			}
			if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
				return fmt.Errorf("creating leaf %s: %w", leaf, err)
			}
			if err := cgroups.WriteCgroupProc(leaf, pid); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("moving pid %d from %s into %s (no-internal-process rule): %w", pid, dir, leaf, err)
			}
		}
		err = cgroups.WriteFile(dir, "cgroup.subtree_control", req)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || attempt == 20 {
			procs, _ := cgroups.GetPids(dir)
			return fmt.Errorf("enabling %q in %s/cgroup.subtree_control after moving its members (%v left) into leaves: %w", req, dir, procs, err)
		}
	}
}

// launcherLeaf reports whether dir is the leaf this process moved itself
// into (arrangeV2); run cgroups then go in its parent.
func launcherLeaf(dir string) bool {
	owner, err := ownerSuffix(os.Getpid())
	return err == nil && filepath.Base(dir) == launcherLeafPrefix+owner
}

// SystemdScopeHelps reports whether a systemd scope with Delegate=yes can
// hold a run's limits here: systemd manages the machine and cgroups are v2
// (systemd delegates no v1 controller to a regular user).
func SystemdScopeHelps() bool { return systemdBooted() && cgroups.IsCgroup2UnifiedMode() }
