package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// RequiredLandlockABI is the Landlock ABI that enforces every protection by
// itself: file reparenting (2), truncate (3), TCP bind/connect (4), ioctl on
// devices (5) and the IPC scopes that keep signals and abstract unix sockets
// inside the sandbox (6). Below it the ladder (ladder.go) makes up for each.
const RequiredLandlockABI = helper.RequiredLandlockABI

// LandlockABI returns the kernel's Landlock ABI version (0 if Landlock is
// unavailable or disabled).
func LandlockABI() int { return helper.LandlockABI() }

// CheckLandlock refuses a kernel without Landlock, unless bestEffort. What
// an older Landlock lacks is the ladder's (NewLadder, Ladder.Check).
func CheckLandlock(bestEffort bool) error { return helper.CheckLandlock(bestEffort) }

// HasCapSysAdmin says whether this process has CAP_SYS_ADMIN in its
// effective set (root in a container often has not): namespaces are then
// made directly, else through a user namespace.
func HasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
}
