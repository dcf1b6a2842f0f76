package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/policy"
)

// rlimit is one setrlimit call the helper makes before exec.
type rlimit struct {
	Resource int
	Name     string
	Cur, Max uint64
}

// defaultNoFile caps open files when the role says nothing.
const defaultNoFile = 4096

// rlimitsFor returns the rlimits of a run: no core dumps (a core file of a
// process holding secrets must not land in the workspace), the role's
// maximum file size (the role's max_file_size; RLIMIT_FSIZE makes writes past
// it fail with EFBIG/SIGXFSZ) and a bound on open files.
func rlimitsFor(l policy.Limits) []rlimit {
	rs := []rlimit{{Resource: unix.RLIMIT_CORE, Name: "core", Cur: 0, Max: 0}}
	if l.MaxFileSize > 0 {
		rs = append(rs, rlimit{Resource: unix.RLIMIT_FSIZE, Name: "fsize", Cur: uint64(l.MaxFileSize), Max: uint64(l.MaxFileSize)})
	}
	nofile := l.NoFile
	if nofile == 0 {
		nofile = defaultNoFile
	}
	rs = append(rs, rlimit{Resource: unix.RLIMIT_NOFILE, Name: "nofile", Cur: nofile, Max: nofile})
	return rs
}

// applyRlimits sets each limit, never raising a hard limit above what the
// launcher had (an unprivileged launcher could not anyway).
func applyRlimits(rs []rlimit) error {
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
