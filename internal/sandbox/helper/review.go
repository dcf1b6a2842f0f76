//go:build linux

package helper

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// A review run sees target/ as an overlay: the real directory is the lower
// layer, the run's own layer (a directory outside every writable area) the
// upper one, so every write, deletion, rename and mode change of the run
// lands in the layer and the real target/ stays as it was. The mount is
// made in the sandbox's own mount namespace — as root directly, as a
// regular user inside a user namespace of its own (overlayfs allows that
// since Linux 5.11, with user.* attributes: userxattr) — before Landlock,
// whose rules on target/ then bind to the merged view.

// mountOverlay mounts o in a new mount namespace. A regular user's
// helper was started in a user namespace of its own (spawn.go: a
// multithreaded process cannot unshare one), where overlayfs keeps its
// marks in user.* attributes (userxattr).
func mountOverlay(o *Overlay) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	return overlayMount(o, os.Geteuid() != 0)
}

// overlayError marks a failure inside readOnlyOutside that --best-effort
// never accepts: the overlay mount, the pid namespace's /proc.
type overlayError struct{ err error }

func (e *overlayError) Error() string { return e.err.Error() }

// overlayMount mounts o in the current mount namespace; unpriv adds
// userxattr (a user namespace's overlay keeps its marks in user.*).
func overlayMount(o *Overlay, unpriv bool) error {
	for _, p := range []string{o.Target, o.Upper, o.Work} {
		if strings.ContainsAny(p, ",:\\") {
			return fmt.Errorf("overlay: path %q holds ',', ':' or '\\', which overlayfs options cannot carry", p)
		}
	}
	// redirect_dir, metacopy and index off: the layer holds whole files,
	// whiteouts and opaque directories only, which is what agentbox diff
	// and apply read.
	opts := "lowerdir=" + o.Target + ",upperdir=" + o.Upper + ",workdir=" + o.Work + ",redirect_dir=nofollow,metacopy=off,index=off"
	if unpriv {
		opts += ",userxattr"
	}
	if err := unix.Mount("overlay", o.Target, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay on %s: %w", o.Target, err)
	}
	return nil
}
