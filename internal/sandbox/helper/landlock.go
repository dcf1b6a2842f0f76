package helper

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
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

// applyLandlock restricts the calling process (all threads) to the plan's
// path rules, its TCP ports and the IPC scopes, as far as Landlock ABI
// abi handles them, and sets no_new_privs. The preset is exactly abi's,
// each rule cut to the rights abi handles: go-landlock's best-effort mode
// is not used, because on ABI 1 it drops Landlock altogether when a rule
// grants refer, which the writable areas do. Cut to ABI 1, refer is not
// handled, and Landlock then refuses every cross-directory rename and
// link (stricter than ABI 2). Later presets handle more rights (ABI 9:
// connecting to pathname unix sockets outside the sandbox; ABI 10: UDP)
// and the plan grants none of those extra rights, so they are denied.
func applyLandlock(cfg *Config) error {
	abi := effectiveABI(cfg)
	if abi < 1 {
		if cfg.BestEffort {
			return nil // --best-effort on a kernel without Landlock: the launcher said so
		}
		return CheckLandlock(false)
	}
	handled := handledFS(abi)
	var opts []landlock.Rule
	for _, r := range cfg.Rules {
		a := r.Access & handled
		if a == 0 {
			continue
		}
		fr := landlock.PathAccess(landlock.AccessFSSet(a), r.Path)
		if r.Optional {
			fr = fr.IgnoreIfMissing()
		}
		opts = append(opts, fr)
	}
	if privatePTYs {
		for _, r := range ptyRules(handled) {
			opts = append(opts, r)
		}
	}
	if abi >= 4 {
		for _, p := range cfg.TCPConnect {
			opts = append(opts, landlock.ConnectTCP(p))
		}
		for _, p := range cfg.TCPBind {
			opts = append(opts, landlock.BindTCP(p))
		}
	}
	if err := landlockPresets[abi-1].Restrict(opts...); err != nil {
		return fmt.Errorf("landlock (ABI %d): %w", abi, err)
	}
	return nil
}

// LandlockFeature names what Landlock ABI level abi adds ("" past the
// levels the sandbox needs), for messages.
func LandlockFeature(abi int) string { return landlockFeatures[abi] }
