package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The Landlock ladder: every protection the sandbox gives, and on this
// kernel and for this user the mechanism that enforces it. Landlock ABI 6
// enforces them all by itself; below it each missing one is made up by
// another kernel mechanism, chosen per protection:
//
//   - refer (ABI 2): nothing to make up. Without the refer right Landlock
//     ABI 1 refuses every rename and link across directories (stricter:
//     `mv a/x b/x` falls back to copy and delete; renames within one
//     directory, git's lock files among them, work).
//   - truncate (ABI 3): the read-only mount namespace (root directly, a
//     regular user through a user namespace): truncate(2) and O_TRUNC of a
//     file outside the writable areas fail with EROFS.
//   - TCP (ABI 4): a network namespace of the run's own with loopback
//     only (network none, or the proxy's namespace). A run that grants TCP
//     ports to hosts cannot have both: refused, --allow-weaker tcp.
//   - device ioctl (ABI 5): the seccomp filter refuses TIOCSTI and
//     TIOCLINUX on any descriptor; every device the plan lets the sandbox
//     open is granted ioctl anyway (/dev/null, tty, ptys...).
//   - signals (ABI 6): a pid namespace of the run's own: outside processes
//     have no pid there. The command is its init (see docs/threat-model.md).
//   - abstract unix sockets (ABI 6): the network namespace when the run
//     has one (abstract names are per network namespace), else seccomp
//     refusing socket(AF_UNIX) (what Landlock ABI < 9 gets anyway).
//
// Plus what Landlock never covers: chmod, chown, utime and xattrs of files
// outside the writable areas, by the read-only mount namespace.
//
// Where no mechanism is available (no user namespace for a regular user)
// the run is refused in one line naming every missing protection and the
// --allow-weaker names that accept their loss; --best-effort accepts all,
// and the launch line still lists what is not enforced.

// Mechanisms a protection can be enforced by.
const (
	ByLandlock = "landlock"
	ByMountNS  = "mount namespace"
	ByNetNS    = "network namespace"
	ByPidNS    = "pid namespace"
	BySeccomp  = "seccomp"
	ByNone     = "none"
)

// Protection is one guarantee and what enforces it here.
type Protection struct {
	// Name is the guarantee's short name, as --allow-weaker takes it.
	Name string
	// What says in words what it keeps from happening.
	What string
	// By is the mechanism enforcing it (By* constants); ByNone when none.
	By string
	// Note qualifies By (what remains possible), or says why nothing
	// enforces it.
	Note string
	// Fix says how to get it where By is ByNone or weaker than Landlock.
	Fix string
}

// WeakerNames are the protections --allow-weaker accepts the loss of.
var WeakerNames = []string{"truncate", "tcp", "signals", "abstract-unix", "metadata"}

// LadderInput is what decides the ladder: the kernel, the user, the run.
type LadderInput struct {
	ABI  int  // Landlock ABI in use (EffectiveLandlockABI)
	Root bool // agentbox runs as root: namespaces without a user namespace
	// UserNS is nil when a regular user can make a user namespace with
	// the capabilities to mount and unshare in it (UserNSAvailable).
	UserNS error
	// Proxy: network mode proxy (a network namespace in any case).
	Proxy bool
	// TCPGrants: ports granted to hosts outside (network tcp:PORT).
	TCPGrants bool
	// BestEffort: --best-effort (pathname unix sockets are not refused).
	BestEffort bool
}

// Ladder is the mechanisms a run uses and the protections they give.
type Ladder struct {
	In          LadderInput
	Protections []Protection
	// ReadOnly: the read-only-outside mount namespace; NetNS: a network
	// namespace of the run's own (not the proxy's); PidNS: a pid
	// namespace; UserNS: a regular user's helper starts in a user
	// namespace for them.
	ReadOnly, NetNS, PidNS, UserNS bool
	// DenyUnix: seccomp refuses socket(AF_UNIX).
	DenyUnix bool
}

// NewLadder decides the mechanisms for in.
func NewLadder(in LadderInput) Ladder {
	l := Ladder{In: in}
	ns := in.Root || in.UserNS == nil // namespaces can be made
	l.ReadOnly = ns
	noNS := "no user namespace for a regular user"
	if in.UserNS != nil {
		noNS += " (" + in.UserNS.Error() + ")"
	}
	usernsFix := "allow unprivileged user namespaces (sysctl user.max_user_namespaces=15000; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for agentbox), or run agentbox as root"
	kernelFix := func(abi int) string {
		return fmt.Sprintf("a kernel with Landlock ABI %d (%s)", abi, kernelFor(abi))
	}
	add := func(p Protection) { l.Protections = append(l.Protections, p) }

	// Files: Landlock's path rules, the core.
	if in.ABI >= 1 {
		add(Protection{Name: "files", What: "file access outside the granted areas", By: ByLandlock})
	} else {
		add(Protection{Name: "files", What: "file access outside the granted areas", By: ByNone,
			Note: "no Landlock in this kernel", Fix: "a kernel with Landlock enabled (lsm=...,landlock)"})
	}
	switch {
	case in.ABI >= 2:
		add(Protection{Name: "refer", What: "renames and links that would widen a file's access", By: ByLandlock})
	case in.ABI == 1:
		add(Protection{Name: "refer", What: "renames and links that would widen a file's access", By: ByLandlock,
			Note: "ABI 1 refuses every rename and link across directories", Fix: kernelFix(2)})
	default:
		add(Protection{Name: "refer", What: "renames and links that would widen a file's access", By: ByNone, Note: "no Landlock"})
	}
	trunc := Protection{Name: "truncate", What: "truncating files in read-only areas"}
	switch {
	case in.ABI >= 3:
		trunc.By = ByLandlock
	case ns:
		trunc.By, trunc.Note, trunc.Fix = ByMountNS, "read-only outside the writable areas: EROFS", kernelFix(3)
	default:
		trunc.By, trunc.Note, trunc.Fix = ByNone, noNS, usernsFix+", or "+kernelFix(3)
	}
	add(trunc)
	tcp := Protection{Name: "tcp", What: "TCP connections and listening beyond the granted ports"}
	switch {
	case in.ABI >= 4:
		tcp.By = ByLandlock
	case in.Proxy:
		tcp.By, tcp.Note = ByNetNS, "the proxy's namespace: loopback only"
	case in.TCPGrants:
		tcp.By, tcp.Note, tcp.Fix = ByNone, "ports granted to outside hosts cannot be kept apart from the rest without Landlock ABI 4", kernelFix(4)+", or --network proxy"
	case ns:
		tcp.By, tcp.Note, tcp.Fix = ByNetNS, "loopback only", kernelFix(4)
		l.NetNS = true
	default:
		tcp.By, tcp.Note, tcp.Fix = ByNone, noNS, usernsFix+", or "+kernelFix(4)
	}
	add(tcp)
	if in.ABI >= 5 {
		add(Protection{Name: "ioctl", What: "ioctl on device files", By: ByLandlock})
	} else {
		add(Protection{Name: "ioctl", What: "ioctl on device files", By: BySeccomp,
			Note: "TIOCSTI and TIOCLINUX refused; other ioctls on devices a read or write grant reaches remain", Fix: kernelFix(5)})
	}
	sig := Protection{Name: "signals", What: "signals to processes outside the sandbox"}
	switch {
	case in.ABI >= 6:
		sig.By = ByLandlock
	case ns:
		sig.By, sig.Note, sig.Fix = ByPidNS, "outside processes have no pid inside; the command is the namespace's init", kernelFix(6)
		l.PidNS = true
	default:
		sig.By, sig.Note, sig.Fix = ByNone, noNS, usernsFix+", or "+kernelFix(6)
	}
	add(sig)
	l.DenyUnix = in.ABI < 9 && !in.BestEffort
	abs := Protection{Name: "abstract-unix", What: "abstract unix sockets outside the sandbox"}
	switch {
	case in.ABI >= 6:
		abs.By = ByLandlock
	case in.Proxy || l.NetNS:
		abs.By, abs.Note = ByNetNS, "abstract names are per network namespace"
	case l.DenyUnix:
		abs.By, abs.Note, abs.Fix = BySeccomp, "socket(AF_UNIX) refused", kernelFix(6)
	case ns:
		abs.By, abs.Note = ByNetNS, "abstract names are per network namespace"
		l.NetNS = !in.TCPGrants
		if in.TCPGrants {
			abs.By, abs.Note, abs.Fix = ByNone, "--best-effort allows unix sockets and the TCP grant rules out a network namespace", kernelFix(6)
		}
	default:
		abs.By, abs.Note, abs.Fix = ByNone, noNS, usernsFix+", or "+kernelFix(6)
	}
	add(abs)
	pu := Protection{Name: "pathname-unix", What: "connecting to pathname unix sockets outside the sandbox"}
	switch {
	case in.ABI >= 9:
		pu.By = ByLandlock
	case l.DenyUnix:
		pu.By, pu.Note, pu.Fix = BySeccomp, "socket(AF_UNIX) refused", kernelFix(9)
	default:
		pu.By, pu.Note, pu.Fix = ByNone, "--best-effort allows unix sockets", kernelFix(9)
	}
	add(pu)
	meta := Protection{Name: "metadata", What: "chmod, chown, utime and xattrs of files outside the writable areas"}
	if ns {
		meta.By, meta.Note = ByMountNS, "read-only outside the writable areas: EROFS"
	} else {
		meta.By, meta.Note, meta.Fix = ByNone, noNS, usernsFix
	}
	add(meta)
	l.UserNS = !in.Root && in.UserNS == nil
	return l
}

// kernelFor names the Linux release that brought Landlock ABI abi.
func kernelFor(abi int) string {
	v := map[int]string{1: "Linux 5.13", 2: "Linux 5.19", 3: "Linux 6.2", 4: "Linux 6.7", 5: "Linux 6.10", 6: "Linux 6.12", 9: "Linux 6.19"}[abi]
	if v == "" {
		return "a newer Linux"
	}
	return v
}

// Missing are the protections nothing enforces here.
func (l Ladder) Missing() []Protection {
	var out []Protection
	for _, p := range l.Protections {
		if p.By == ByNone {
			out = append(out, p)
		}
	}
	return out
}

// Check refuses a ladder with missing protections that neither
// bestEffort nor allow (--allow-weaker names) accepts: one line naming
// every one of them and the flag that accepts each.
func (l Ladder) Check(bestEffort bool, allow []string) error {
	var refused, names []string
	for _, p := range l.Missing() {
		if bestEffort || slices.Contains(allow, p.Name) {
			continue
		}
		refused = append(refused, p.What)
		names = append(names, p.Name)
	}
	if len(refused) == 0 {
		return nil
	}
	if slices.Contains(names, "files") || slices.Contains(names, "refer") {
		return fmt.Errorf("kernel lacks Landlock (not built into this kernel or not enabled at boot: add landlock to lsm=); use --best-effort to run with weaker isolation")
	}
	who := "a regular user here"
	switch {
	case l.In.Root:
		who = "root"
	case os.Geteuid() == 0:
		who = "root without CAP_SYS_ADMIN"
	}
	var why []string
	for _, p := range l.Missing() {
		if slices.Contains(names, p.Name) && p.Note != "" && !slices.Contains(why, p.Note) {
			why = append(why, p.Note)
		}
	}
	return fmt.Errorf("this kernel (Landlock ABI %d) and %s cannot enforce: %s (%s); accept with --allow-weaker %s or --best-effort",
		l.In.ABI, who, strings.Join(refused, ", "), strings.Join(why, "; "), strings.Join(names, ","))
}

// Short is the launch line's part: the mechanisms in use and the
// protections left unenforced, e.g. "Landlock ABI 3; truncate, metadata
// by mount namespace; tcp, abstract-unix by network namespace".
func (l Ladder) Short() string {
	var order []string
	by := map[string][]string{}
	for _, p := range l.Protections {
		if p.Name == "files" || (p.By == ByLandlock && p.Note == "") {
			continue
		}
		if _, ok := by[p.By]; !ok {
			order = append(order, p.By)
		}
		by[p.By] = append(by[p.By], p.Name)
	}
	parts := []string{"Landlock ABI " + strconv.Itoa(l.In.ABI)}
	if len(order) == 0 {
		parts[0] += " enforces all"
	}
	for _, m := range order {
		if m == ByNone {
			continue
		}
		parts = append(parts, strings.Join(by[m], ", ")+" by "+m)
	}
	if n := by[ByNone]; len(n) > 0 {
		parts = append(parts, "NOT enforced: "+strings.Join(n, ", "))
	}
	return strings.Join(parts, "; ")
}

// Detail is the launch event's whole list: "name=mechanism" for each
// protection, a note in parentheses.
func (l Ladder) Detail() string {
	var parts []string
	for _, p := range l.Protections {
		s := p.Name + "=" + p.By
		if p.Note != "" {
			s += " (" + p.Note + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// ParseAllowWeaker checks a --allow-weaker value: comma-separated names of
// WeakerNames.
func ParseAllowWeaker(v string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(WeakerNames, n) {
			return nil, fmt.Errorf("--allow-weaker %q: unknown protection %q (known: %s)", v, n, strings.Join(WeakerNames, ","))
		}
		out = append(out, n)
	}
	return out, nil
}

// ABIMaxEnv caps the Landlock ABI agentbox uses below the kernel's, so
// that the ladder's rungs can be tested on a newer kernel. It can only
// lower the ABI, and every protection the cap drops is made up or refused
// as on an older kernel, and stated: it is no way to weaken a run
// silently (and a nested agentbox cannot loosen the outer sandbox).
const ABIMaxEnv = "AGENTBOX_LANDLOCK_ABI_MAX"

// EffectiveLandlockABI is the kernel's Landlock ABI, capped by
// AGENTBOX_LANDLOCK_ABI_MAX when that is set to a lower number.
func EffectiveLandlockABI() int {
	abi := LandlockABI()
	if v := os.Getenv(ABIMaxEnv); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n < abi {
			abi = n
		}
	}
	return abi
}

var userNSOnce = sync.OnceValue(probeUserNS)

// UserNSAvailable says whether this process, not root, can make a user
// namespace with the capabilities to mount and unshare in it: nil, or
// why not (user.max_user_namespaces=0, Ubuntu's AppArmor restriction, a
// container's seccomp profile). The answer is cached.
func UserNSAvailable() error {
	if os.Geteuid() == 0 {
		return nil
	}
	return userNSOnce()
}

// probeUserNS starts true(1) in a user and mount namespace with
// CAP_SYS_ADMIN ambient, as spawnHelper starts the helper.
func probeUserNS() error {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return errors.New("user.max_user_namespaces is 0")
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		for _, p := range []string{"/usr/bin/true", "/bin/true"} {
			if _, e := os.Stat(p); e == nil {
				truePath, err = p, nil
				break
			}
		}
		if err != nil {
			return fmt.Errorf("cannot probe user namespaces: %w", err)
		}
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command(truePath)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN},
	}
	if err := cmd.Run(); err != nil {
		if b, rerr := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); rerr == nil && strings.TrimSpace(string(b)) == "1" {
			return fmt.Errorf("refused by AppArmor: kernel.apparmor_restrict_unprivileged_userns=1 (%v)", err)
		}
		return fmt.Errorf("unprivileged user namespaces refused: %v", err)
	}
	return nil
}
