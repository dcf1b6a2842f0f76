// Package procfs is agentbox's one reader of /proc/PID/stat: a process's
// state, parent, session, start time (which, with the pid, names a process
// uniquely across pid reuse) and the address ranges of its argv and
// environment; and a walk over every process.
package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat is the part of /proc/PID/stat agentbox uses.
type Stat struct {
	State     byte   // field 3: R, S, D, Z, T, ...
	Ppid      int    // field 4
	Session   int    // field 6
	StartTime uint64 // field 22: clock ticks since boot
	// ArgStart..ArgEnd and EnvStart..EnvEnd (fields 48-51, Linux 3.5+;
	// zero when absent) are where argv and the environment lie in the
	// process's memory.
	ArgStart, ArgEnd, EnvStart, EnvEnd uint64
}

// ReadStat parses /proc/PID/stat. The command name (field 2) may hold any
// bytes, including spaces and parentheses, so parsing starts after its
// last ')'.
func ReadStat(pid int) (Stat, error) {
	return ReadStatAt(unix.AT_FDCWD, "/proc/"+strconv.Itoa(pid))
}

// ReadStatAt is ReadStat of the process whose /proc directory dir is open
// as dfd (unix.AT_FDCWD: dir itself is opened), as the exec supervisor
// holds it at an exec stop.
func ReadStatAt(dfd int, dir string) (Stat, error) {
	// One open and one read into a stack buffer (os.ReadFile adds an fstat
	// and a read to see the end): this runs on launch and exec paths.
	name := "stat"
	if dfd == unix.AT_FDCWD {
		name = dir + "/stat"
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stat{}, fmt.Errorf("read %s/stat: %w", dir, err)
	}
	var buf [2048]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 || n == len(buf) {
		// an error, or longer than the buffer: read it whole
		b, err := os.ReadFile(dir + "/stat")
		if err != nil {
			return Stat{}, fmt.Errorf("read %s/stat: %w", dir, err)
		}
		return ParseStat(string(b))
	}
	return ParseStat(string(buf[:n]))
}

// Each calls fn with the pid and stat of every process in /proc that
// can be read (a process that exits meanwhile is skipped).
func Each(fn func(pid int, st Stat)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil {
			fn(pid, st)
		}
	}
}

// ParseStat parses the contents of a /proc/PID/stat file.
func ParseStat(s string) (Stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc stat: no ')' after the command name")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): field N is f[N-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("/proc stat: %d fields after the command name, want at least 20", len(f))
	}
	st := Stat{State: f[0][0]}
	var err error
	if st.Ppid, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("/proc stat: ppid %q: %w", f[1], err)
	}
	if st.Session, err = strconv.Atoi(f[3]); err != nil {
		return Stat{}, fmt.Errorf("/proc stat: session %q: %w", f[3], err)
	}
	if st.StartTime, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Stat{}, fmt.Errorf("/proc stat: start time %q: %w", f[19], err)
	}
	if len(f) >= 49 {
		st.ArgStart, _ = strconv.ParseUint(f[45], 10, 64)
		st.ArgEnd, _ = strconv.ParseUint(f[46], 10, 64)
		st.EnvStart, _ = strconv.ParseUint(f[47], 10, 64)
		st.EnvEnd, _ = strconv.ParseUint(f[48], 10, 64)
	}
	return st, nil
}

// StartTime returns pid's start time in clock ticks since boot.
func StartTime(pid int) (uint64, error) {
	st, err := ReadStat(pid)
	return st.StartTime, err
}

// Alive reports whether pid is still the process that started at start:
// present, not a zombie, not a reused pid.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := ReadStat(pid)
	return err == nil && st.StartTime == start && st.State != 'Z'
}
