package sandbox

import "github.com/agentbox/agentbox/internal/sandbox/helper"

// RequiredLandlockABI is the Landlock ABI every role needs: file reparenting
// (2), truncate (3), TCP bind/connect (4), ioctl on devices (5) and the IPC
// scopes that keep signals and abstract unix sockets inside the sandbox (6).
const RequiredLandlockABI = helper.RequiredLandlockABI

// LandlockABI returns the kernel's Landlock ABI version (0 if Landlock is
// unavailable or disabled).
func LandlockABI() int { return helper.LandlockABI() }

// CheckLandlock refuses a kernel whose Landlock ABI is below what the
// sandbox needs, naming the first missing feature, unless bestEffort. The
// helper checks again before it applies the rules.
func CheckLandlock(bestEffort bool) error { return helper.CheckLandlock(bestEffort) }
