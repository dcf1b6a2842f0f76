package helper

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// privatePTYs is set once the sandbox has pseudo-terminals of its own
// (mountPrivatePTYs); applyLandlock then grants them.
var privatePTYs bool

// mountPrivatePTYs gives the sandbox a devpts instance of its own, in the
// run's mount namespace: /dev/pts is a new instance (newinstance) and
// /dev/ptmx its multiplexer, so programs can open pseudo-terminals (tests
// of terminal code, `script`, expect) while the machine's terminals — the
// user's outer one included — stay out of reach: they are not in this
// instance, and no rule names the host's. The run's own pty still
// reaches the command as inherited fds 0-2 (ttyname(3) of it fails: its
// /dev/pts/N is not in this instance).
func mountPrivatePTYs() error {
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("a private /dev/pts: %w", err)
	}
	if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("a private /dev/ptmx: %w", err)
	}
	privatePTYs = true
	return nil
}

// ptyRules are the Landlock rules for the private instance.
func ptyRules(handled uint64) []Rule {
	dev := uint64(ll.AccessFSReadFile|ll.AccessFSWriteFile|ll.AccessFSTruncate|ll.AccessFSIoctlDev) & handled
	return []Rule{
		{Path: "/dev/ptmx", Access: dev},
		{Path: "/dev/pts", Access: dev | uint64(ll.AccessFSReadDir)&handled},
	}
}
