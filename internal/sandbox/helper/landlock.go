package helper

import (
	"errors"
	"fmt"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// RequiredLandlockABI is the Landlock ABI that enforces every protection
// by Landlock alone: file reparenting (2), truncate (3), TCP bind/connect
// (4), ioctl on devices (5) and the IPC scopes that keep signals and
// abstract unix sockets inside the sandbox (6). Below it the launcher's
// ladder (sandbox/ladder.go) makes up each missing one with another
// mechanism or refuses, naming it.
const RequiredLandlockABI = 6

// landlockFeatures names what each ABI level adds, for messages.
var landlockFeatures = map[int]string{
	1: "Landlock filesystem rules",
	2: "Landlock file reparenting control (refer)",
	3: "Landlock truncate control",
	4: "Landlock TCP bind/connect rules",
	5: "Landlock device ioctl control",
	6: "Landlock IPC scopes (signals, abstract unix sockets)",
}

// LandlockABI returns the kernel's Landlock ABI version (0 if Landlock is
// unavailable or disabled).
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// CheckLandlock refuses a kernel without Landlock at all, unless
// bestEffort. What a Landlock below RequiredLandlockABI lacks is the
// launcher's ladder's business (sandbox.Ladder), which names every
// missing protection.
func CheckLandlock(bestEffort bool) error {
	if LandlockABI() >= 1 || bestEffort {
		return nil
	}
	return fmt.Errorf("kernel lacks Landlock (not built into this kernel or not enabled at boot: add landlock to lsm=); use --best-effort to run with weaker isolation")
}

// landlockPresets are go-landlock's configurations by ABI, index abi-1.
var landlockPresets = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// handledFS are the file system rights Landlock ABI abi handles.
func handledFS(abi int) uint64 {
	h := uint64(llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSReadDir |
		llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar | llsys.AccessFSMakeDir |
		llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock |
		llsys.AccessFSMakeSym)
	if abi >= 2 {
		h |= llsys.AccessFSRefer
	}
	if abi >= 3 {
		h |= llsys.AccessFSTruncate
	}
	if abi >= 5 {
		h |= llsys.AccessFSIoctlDev
	}
	return h
}

// effectiveABI is the ABI the helper applies: the kernel's, capped by
// cfg.LandlockABI when set, and never above what go-landlock knows.
func effectiveABI(cfg *Config) int {
	abi := LandlockABI()
	if cfg.LandlockABI > 0 && cfg.LandlockABI < abi {
		abi = cfg.LandlockABI
	}
	if abi > len(landlockPresets) {
		abi = len(landlockPresets)
	}
	return abi
}

// applyLandlock restricts the helper's locked thread, the one that execs
// the command (run), to the plan's path rules, its TCP ports and the IPC
// scopes, as far as Landlock ABI abi handles them, and sets its
// no_new_privs. The handled rights are exactly go-landlock's preset for
// abi, each rule cut to the rights abi handles: go-landlock's best-effort
// mode is not used, because on ABI 1 it drops Landlock altogether when a
// rule grants refer, which the writable areas do. Cut to ABI 1, refer is
// not handled, and Landlock then refuses every cross-directory rename and
// link (stricter than ABI 2). Later presets handle more rights (ABI 9:
// connecting to pathname unix sockets outside the sandbox; ABI 10: UDP)
// and the plan grants none of those extra rights, so they are denied.
//
// Only this thread: a Landlock domain (like no_new_privs and the
// capabilities dropCapabilities clears) belongs to a thread's
// credentials, and execve keeps only the calling thread's, so the
// command and everything it starts get this domain; the helper's other
// threads run nothing but the Go runtime until the exec ends them.
// go-landlock's Restrict applies it to every thread, below ABI 8 with
// the runtime's all-threads syscall, which stops the world and signals
// each thread in turn and spun 0.3-3.6 ms per launch on a loaded 2-CPU
// machine (docs/benchmarks.md).
func applyLandlock(cfg *Config) error {
	abi := effectiveABI(cfg)
	if abi < 1 {
		if cfg.BestEffort {
			return nil // --best-effort on a kernel without Landlock: the launcher said so
		}
		return CheckLandlock(false)
	}
	handled := handledFS(abi)
	preset := landlockPresets[abi-1]
	attr := llsys.RulesetAttr{HandledAccessFS: uint64(preset.HandledAccessFS),
		HandledAccessNet: uint64(preset.HandledAccessNet), Scoped: uint64(preset.Scoped)}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("landlock (ABI %d): landlock_create_ruleset: %w", abi, err)
	}
	defer unix.Close(fd)
	rules := cfg.Rules
	if privatePTYs {
		rules = append(slices.Clip(rules), ptyRules(handled)...)
	}
	for _, r := range rules {
		a := r.Access & handled
		if a == 0 {
			continue
		}
		if err := addPathRule(fd, r.Path, a); err != nil {
			if r.Optional && errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("landlock (ABI %d): %w", abi, err)
		}
	}
	if abi >= 4 {
		for _, p := range cfg.TCPConnect {
			if err := addPortRule(fd, p, llsys.AccessNetConnectTCP); err != nil {
				return fmt.Errorf("landlock (ABI %d): %w", abi, err)
			}
		}
		for _, p := range cfg.TCPBind {
			if err := addPortRule(fd, p, llsys.AccessNetBindTCP); err != nil {
				return fmt.Errorf("landlock (ABI %d): %w", abi, err)
			}
		}
	}
	// landlock_restrict_self needs no_new_privs (or CAP_SYS_ADMIN); set
	// on this thread, the seccomp filter's TSYNC later carries it to the
	// others.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("landlock (ABI %d): prctl(PR_SET_NO_NEW_PRIVS): %w", abi, err)
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock (ABI %d): landlock_restrict_self: %w", abi, err)
	}
	return nil
}

// addPathRule grants access beneath path (a directory, or a file alone)
// in the ruleset fd; path is opened O_PATH as go-landlock opens it.
func addPathRule(fd int, path string, access uint64) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("rule for %q: open: %w", path, err)
	}
	defer unix.Close(pfd)
	attr := llsys.PathBeneathAttr{ParentFd: pfd, AllowedAccess: access}
	if err := llsys.LandlockAddPathBeneathRule(fd, &attr, 0); err != nil {
		return fmt.Errorf("rule for %q with access %#x: landlock_add_rule: %w", path, access, err)
	}
	return nil
}

// addPortRule grants access (connect or bind) to TCP port in the ruleset fd.
func addPortRule(fd int, port uint16, access uint64) error {
	attr := llsys.NetPortAttr{AllowedAccess: access, Port: uint64(port)}
	if err := llsys.LandlockAddNetPortRule(fd, &attr, 0); err != nil {
		return fmt.Errorf("rule for TCP port %d: landlock_add_rule: %w", port, err)
	}
	return nil
}

// LandlockFeature names what Landlock ABI level abi adds ("" past the
// levels the sandbox needs), for messages.
func LandlockFeature(abi int) string { return landlockFeatures[abi] }
