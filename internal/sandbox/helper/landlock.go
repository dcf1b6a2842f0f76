package helper

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// RequiredLandlockABI is the Landlock ABI every role needs: file reparenting
// (2), truncate (3), TCP bind/connect (4), ioctl on devices (5) and the IPC
// scopes that keep signals and abstract unix sockets inside the sandbox (6).
const RequiredLandlockABI = 6

// landlockFeatures names what each ABI level adds, for error messages.
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

// CheckLandlock refuses a kernel whose Landlock ABI is below what the
// sandbox needs, naming the first missing feature, unless bestEffort.
func CheckLandlock(bestEffort bool) error {
	abi := LandlockABI()
	if abi >= RequiredLandlockABI || bestEffort {
		return nil
	}
	missing := landlockFeatures[abi+1]
	if abi == 0 {
		missing = "Landlock (not built into this kernel or not enabled at boot: add landlock to lsm=)"
	}
	return fmt.Errorf("kernel lacks %s (Landlock ABI %d, need %d); use --best-effort to run with weaker isolation", missing, abi, RequiredLandlockABI)
}

// landlockConfig picks the strongest preset the kernel supports, at least
// RequiredLandlockABI. Later presets handle more rights (ABI 9: connecting
// to pathname unix sockets outside the sandbox; ABI 10: UDP) and the plan
// grants none of those extra rights, so they are simply denied.
func landlockConfig(bestEffort bool) landlock.Config {
	presets := []landlock.Config{landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	abi := LandlockABI()
	c := landlock.V6
	for i, p := range presets {
		if RequiredLandlockABI+i <= abi {
			c = p
		}
	}
	if bestEffort {
		c = c.BestEffort()
	}
	return c
}

// applyLandlock restricts the calling process (all threads) to the plan's
// path rules, its TCP ports and the IPC scopes. It also sets
// no_new_privs.
func applyLandlock(cfg *Config) error {
	bestEffort := cfg.BestEffort
	if err := CheckLandlock(bestEffort); err != nil {
		return err
	}
	var opts []landlock.Rule
	for _, r := range cfg.Rules {
		if r.Access == 0 {
			continue
		}
		fr := landlock.PathAccess(landlock.AccessFSSet(r.Access), r.Path)
		if r.Optional {
			fr = fr.IgnoreIfMissing()
		}
		opts = append(opts, fr)
	}
	if privatePTYs {
		opts = append(opts, ptyRules()...)
	}
	for _, p := range cfg.TCPConnect {
		opts = append(opts, landlock.ConnectTCP(p))
	}
	for _, p := range cfg.TCPBind {
		opts = append(opts, landlock.BindTCP(p))
	}
	if err := landlockConfig(bestEffort).Restrict(opts...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// LandlockFeature names what Landlock ABI level abi adds ("" past the
// levels the sandbox needs), for messages.
func LandlockFeature(abi int) string { return landlockFeatures[abi] }
