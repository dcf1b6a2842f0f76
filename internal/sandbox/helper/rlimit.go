package helper

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// applyRlimits sets each limit, never raising a hard limit above what the
// launcher had (an unprivileged launcher could not anyway).
func applyRlimits(rs []Rlimit) error {
	for _, r := range rs {
		var old unix.Rlimit
		if err := unix.Getrlimit(r.Resource, &old); err != nil {
			return fmt.Errorf("getrlimit %s: %w", r.Name, err)
		}
		nl := unix.Rlimit{Cur: r.Cur, Max: r.Max}
		if nl.Max > old.Max {
			nl.Max = old.Max
		}
		if nl.Cur > nl.Max {
			nl.Cur = nl.Max
		}
		if err := unix.Setrlimit(r.Resource, &nl); err != nil {
			return fmt.Errorf("setrlimit %s=%d: %w", r.Name, r.Cur, err)
		}
	}
	return nil
}
