// Package procfs reads the few facts about a process agentbox needs from
// /proc/PID/stat: its start time (which, with the pid, names a process
// uniquely across pid reuse) and its state.
package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is the part of /proc/PID/stat agentbox uses.
type Stat struct {
	State     byte   // field 3: R, S, D, Z, T, ...
	StartTime uint64 // field 22: clock ticks since boot
}

// ReadStat parses /proc/PID/stat. The command name (field 2) may hold any
// bytes, including spaces and parentheses, so parsing starts after its
// last ')'.
func ReadStat(pid int) (Stat, error) {
	name := "/proc/" + strconv.Itoa(pid) + "/stat"
	// One open and one read into a stack buffer (os.ReadFile adds an fstat
	// and a read to see the end): this runs on launch and exec paths.
	f, err := os.Open(name)
	if err != nil {
		return Stat{}, err
	}
	var buf [1024]byte
	n, err := f.Read(buf[:])
	f.Close()
	if err != nil {
		return Stat{}, err
	}
	if n == len(buf) { // longer than the buffer: read it whole
		b, err := os.ReadFile(name)
		if err != nil {
			return Stat{}, err
		}
		return ParseStat(string(b))
	}
	return ParseStat(string(buf[:n]))
}

// ParseStat parses the contents of a /proc/PID/stat file.
func ParseStat(s string) (Stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc stat: no ')' after the command name")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("/proc stat: %d fields after the command name, want at least 20", len(f))
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("/proc stat: start time %q: %w", f[19], err)
	}
	return Stat{State: f[0][0], StartTime: st}, nil
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
