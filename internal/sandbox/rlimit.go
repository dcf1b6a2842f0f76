package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// defaultNoFile caps open files when the role says nothing.
const defaultNoFile = 4096

// rlimitsFor returns the rlimits of a run: no core dumps (a core file of a
// process holding secrets must not land in the workspace), the role's
// maximum file size (the role's max_file_size; RLIMIT_FSIZE makes writes past
// it fail with EFBIG/SIGXFSZ) and a bound on open files.
func rlimitsFor(l Limits) []helper.Rlimit {
	rs := []helper.Rlimit{{Resource: unix.RLIMIT_CORE, Name: "core", Cur: 0, Max: 0}}
	if l.MaxFileSize > 0 {
		rs = append(rs, helper.Rlimit{Resource: unix.RLIMIT_FSIZE, Name: "fsize", Cur: uint64(l.MaxFileSize), Max: uint64(l.MaxFileSize)})
	}
	nofile := l.NoFile
	if nofile == 0 {
		nofile = defaultNoFile
	}
	rs = append(rs, helper.Rlimit{Resource: unix.RLIMIT_NOFILE, Name: "nofile", Cur: nofile, Max: nofile})
	return rs
}
