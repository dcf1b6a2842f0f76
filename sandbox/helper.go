package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/boundary"
	"github.com/agentbox/agentbox/policy"
)

// HelperArgv0 is the argv[0] under which agentbox re-executes itself as the
// in-sandbox helper. Only MaybeRunHelper reacts to it.
const HelperArgv0 = "agentbox-sandbox-helper"

// File descriptors the helper inherits (fixed positions in ExtraFiles).
const (
	helperConfigFd = 3 // JSON helperConfig, read once then closed
	helperGoFd     = 4 // one byte from the launcher releases execve
	helperStatusFd = 5 // close-on-exec; carries "<code> <reason>" on failure
	helperNotifyFd = 7 // notify mode: the exec-notification listener goes out on it
)

// helperConfig is everything the helper needs, passed as JSON on fd 3.
type helperConfig struct {
	Argv       []string
	Env        []string
	Dir        string
	ParentPid  int
	Rules      []boundary.Rule
	Network    policy.Network
	BestEffort bool
	Rlimits    []rlimit
	// DenyUnixSockets refuses socket(AF_UNIX): set when Landlock cannot
	// control connecting to pathname unix sockets outside (ABI < 9).
	DenyUnixSockets bool
	// RunAs, when set, is the uid/gid the command runs as (agentbox runs
	// as root on a workspace owned by a regular user; see runAsFor).
	RunAs *credential `json:",omitempty"`
	// ReadOnlyOutside, when set (root runs), lists the writable areas: the
	// helper makes everything else read-only in a mount namespace of its
	// own (mounts.go), closing metadata changes Landlock does not cover.
	ReadOnlyOutside []string `json:",omitempty"`
	// ReadOnlyBestEffort accepts a kernel that refuses the mount namespace
	// (one warning line instead of a refusal).
	ReadOnlyBestEffort bool `json:",omitempty"`
	// NetNS: network mode proxy — a network namespace of the sandbox's
	// own with only loopback; the proxy listener goes out on fd 6.
	NetNS bool `json:",omitempty"`
	// Forward are loopback ports listened on inside that namespace and
	// passed out with the proxy listener, in this order.
	Forward []uint16 `json:",omitempty"`
	// ExecNotify: install the exec-notification filter last and pass its
	// listener out on fd 7 (notify-mode supervision, supervise_notify.go).
	ExecNotify bool `json:",omitempty"`
}

// credential is a uid/gid pair the sandboxed command runs as.
type credential struct {
	UID, GID int
	// Groups are the owner's supplementary groups (from the group
	// database), never root's.
	Groups []int `json:",omitempty"`
}

// MaybeRunHelper runs the sandbox helper and never returns when the process
// was started as one (argv[0] == HelperArgv0); otherwise it returns false at
// once. Call it first thing in main (and in TestMain of packages whose tests
// launch sandboxes).
func MaybeRunHelper() bool {
	if len(os.Args) == 0 || os.Args[0] != HelperArgv0 {
		return false
	}
	helperMain()
	os.Exit(ExitFailure) // not reached: helperMain execs or exits
	return true
}

// helperFail reports a setup failure to the launcher on the status pipe and
// exits with code.
func helperFail(code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(msg, "\n", " ")
	_, _ = unix.Write(helperStatusFd, []byte(fmt.Sprintf("%d %s\n", code, msg)))
	if code != ExitFailure {
		// Exec failures are the command's business: say so on its stderr.
		_, _ = unix.Write(2, []byte("agentbox: "+msg+"\n"))
	}
	os.Exit(code)
}

func helperMain() {
	// Everything per-thread (capabilities, the seccomp fallback) happens on
	// this thread, and execve runs from it.
	runtime.LockOSThread()
	// No descriptor of agentbox's own parent may leak into the sandbox:
	// os.StartProcess passes only the files we list, but descriptors that
	// agentbox itself inherited without O_CLOEXEC would survive the exec.
	// Mark everything above the helper's pipes close-on-exec (the Go
	// runtime's own descriptors stay usable until then).
	if err := unix.CloseRange(helperStatusFd+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		closeOnExecAbove(helperStatusFd + 1)
	}
	unix.CloseOnExec(helperStatusFd)

	cfgFile := os.NewFile(helperConfigFd, "agentbox-config")
	data, err := io.ReadAll(io.LimitReader(cfgFile, 64<<20))
	cfgFile.Close()
	if err != nil {
		helperFail(ExitFailure, "helper: reading config: %v", err)
	}
	var cfg helperConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		helperFail(ExitFailure, "helper: decoding config: %v", err)
	}
	// pdeathsig was set at fork; if the launcher died before that took
	// effect we would be orphaned already.
	if unix.Getppid() != cfg.ParentPid {
		os.Exit(ExitFailure)
	}
	if err := applyRlimits(cfg.Rlimits); err != nil {
		helperFail(ExitFailure, "%v", err)
	}
	if cfg.NetNS {
		l, err := enterNetNS()
		if err != nil {
			helperFail(ExitFailure, "network mode proxy needs a network namespace of the sandbox's own, and %v; use --network none, or --network tcp:PORT to grant ports without host checks", err)
		}
		ls := []int{l}
		for _, port := range cfg.Forward {
			f, err := loopbackListener(port)
			if err != nil {
				helperFail(ExitFailure, "forwarded port: %v", err)
			}
			ls = append(ls, f)
		}
		if err := sendListeners(ls); err != nil {
			helperFail(ExitFailure, "%v", err)
		}
	}
	if len(cfg.ReadOnlyOutside) > 0 {
		if err := readOnlyOutside(cfg.ReadOnlyOutside); err != nil {
			if !cfg.ReadOnlyBestEffort {
				helperFail(ExitFailure, "cannot make the file system outside the writable areas read-only (%v): as root the command could change mode, owner, times and xattrs of root-owned files outside; use --best-effort to run without it", err)
			}
			fmt.Fprintf(os.Stderr, "agentbox: warning: --best-effort: files outside the writable areas are not read-only (%v): their metadata can be changed\n", err)
		}
	}
	if err := unix.Chdir(cfg.Dir); err != nil {
		helperFail(ExitFailure, "chdir %s: %v", cfg.Dir, err)
	}
	if cfg.RunAs != nil {
		if err := becomeUser(*cfg.RunAs); err != nil {
			helperFail(ExitFailure, "%v", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		helperFail(ExitFailure, "%v", err)
	}
	if err := applyLandlock(cfg.Rules, cfg.Network, cfg.BestEffort); err != nil {
		helperFail(ExitFailure, "%v", err)
	}
	if err := installSeccomp(seccompOptions{}); err != nil {
		helperFail(ExitFailure, "%v (seccomp is always required)", err)
	}
	if err := installModeFilter(cfg.DenyUnixSockets); err != nil {
		helperFail(ExitFailure, "%v (seccomp is always required)", err)
	}
	if cfg.ExecNotify {
		// On this locked thread, which execs: the command and everything
		// it starts inherit the filter.
		fd, err := installExecNotify()
		if err != nil {
			helperFail(ExitFailure, "%v (the exec supervisor needs it; --trace-all traces every process instead)", err)
		}
		err = unix.Sendmsg(helperNotifyFd, []byte{1}, unix.UnixRights(fd), nil, 0)
		unix.Close(fd)
		unix.Close(helperNotifyFd)
		if err != nil {
			helperFail(ExitFailure, "passing the exec notification listener out: %v", err)
		}
	}

	// Wait for the launcher: cgroup membership and the supervisor are in
	// place once the go byte arrives. EOF means the launcher gave up.
	var b [1]byte
	for {
		n, err := unix.Read(helperGoFd, b[:])
		if err == unix.EINTR {
			continue
		}
		if n != 1 || err != nil {
			os.Exit(ExitFailure)
		}
		break
	}
	unix.Close(helperGoFd)

	path, err := lookPath(cfg.Argv[0], EnvValue(cfg.Env, "PATH"))
	if err != nil {
		helperFail(ExitNotFound, "%s: %v", cfg.Argv[0], err)
	}
	err = syscall.Exec(path, cfg.Argv, cfg.Env)
	switch {
	case errors.Is(err, unix.ENOENT):
		helperFail(ExitNotFound, "%s: %v", cfg.Argv[0], err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		helperFail(ExitDenied, "%s: %v (not executable here, or denied by the sandbox)", cfg.Argv[0], err)
	default:
		helperFail(ExitDenied, "%s: %v", cfg.Argv[0], err)
	}
}

// lookPath finds file in path (a PATH value) like a shell does: names with
// a slash are used as they are; a found file must be a regular file with
// some execute bit. Landlock's execute right is checked by execve itself.
func lookPath(file, path string) (string, error) {
	if file == "" {
		return "", errors.New("empty command name")
	}
	if strings.Contains(file, "/") {
		if _, err := os.Stat(file); err != nil {
			return "", errors.New("no such file or directory")
		}
		return file, nil
	}
	if path == "" {
		path = defaultPath
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("command not found")
}

// legacyChmodNr is chmod(2)'s number where the architecture has it
// (amd64; set in helper_amd64.go), else -1.
var legacyChmodNr = -1

// installModeFilter stacks a second, small seccomp filter on the main one:
// chmod, fchmod, fchmodat and fchmodat2 fail with EPERM when the new mode
// has the set-user-ID or set-group-ID bit. Landlock does not cover chmod, so
// without this a sandbox could mark a file it owns outside the workspace
// (as root: any root-owned program) set-uid, and every local user could
// later run it with those privileges. Other mode changes remain possible
// on files the sandbox's uid owns (see docs/threat-model.md).
//
// With denyUnix, socket(AF_UNIX, ...) fails with EPERM too: before Landlock
// ABI 9 nothing stops a sandbox from connecting to any pathname unix socket
// it can name (a container runtime's socket, a session bus, an approval
// socket). socketpair(2) stays allowed, so pipes-between-processes built on
// it keep working.
func installModeFilter(denyUnix bool) error {
	const suidBits = unix.S_ISUID | unix.S_ISGID
	var p bpfProgram
	p.LoadAbs(seccompDataArch)
	p.JumpEq(seccompAuditArch, "", "allow") // the main filter kills other arches
	p.LoadAbs(seccompDataNr)
	if legacyChmodNr >= 0 {
		p.JumpEq(uint32(legacyChmodNr), "mode1", "")
	}
	if denyUnix {
		p.JumpEq(unix.SYS_SOCKET, "socket", "")
	}
	p.JumpEq(unix.SYS_FCHMOD, "mode1", "")
	p.JumpEq(unix.SYS_FCHMODAT, "mode2", "")
	p.JumpEq(unix.SYS_FCHMODAT2, "mode2", "allow")
	p.Label("mode1")
	p.LoadAbs(argLo(1))
	p.JumpSet(suidBits, "eperm", "allow")
	p.Label("mode2")
	p.LoadAbs(argLo(2))
	p.JumpSet(suidBits, "eperm", "allow")
	if denyUnix {
		p.Label("socket")
		p.LoadAbs(argLo(0))
		p.JumpEq(unix.AF_UNIX, "eperm", "allow")
	}
	p.Label("allow")
	p.Ret(retAllow)
	p.Label("eperm")
	p.Ret(retEPERM)
	filter, err := p.Assemble()
	if err != nil {
		return fmt.Errorf("seccomp: building the chmod filter: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno == unix.EINVAL {
		// No TSYNC: this (locked) thread is the one that execs.
		_, _, errno = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	}
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp: installing the chmod filter: %w", errno)
	}
	return nil
}

// dropCapabilities empties the bounding and ambient sets and clears the
// effective, permitted and inheritable sets of this thread (the one that
// execs), so a command started by root keeps uid 0 but no capability:
// with no_new_privs and an empty bounding set, execve grants none back.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 {
		// Unprivileged: only the bounding set can matter, and dropping it
		// needs CAP_SETPCAP, which we lack; execve cannot raise anything
		// under no_new_privs anyway.
		return nil
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL {
				break // past CAP_LAST_CAP
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset (dropping all capabilities): %w", err)
	}
	return nil
}

// becomeUser empties the capability bounding set while it still can, then
// switches every thread to c's uid and gid with no supplementary groups.
// Leaving uid 0 clears the permitted and effective capability sets, so the
// command cannot chmod, utime or otherwise touch root-owned files outside
// the workspace — things Landlock does not cover.
func becomeUser(c credential) error {
	for cap := 0; cap < 64; cap++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(cap), 0, 0, 0); err != nil {
			if err == unix.EINVAL {
				break // past CAP_LAST_CAP
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", cap, err)
		}
	}
	if err := syscall.Setgroups(c.Groups); err != nil {
		return fmt.Errorf("setgroups (run as uid %d): %w", c.UID, err)
	}
	if err := syscall.Setresgid(c.GID, c.GID, c.GID); err != nil {
		return fmt.Errorf("setresgid %d: %w", c.GID, err)
	}
	if err := syscall.Setresuid(c.UID, c.UID, c.UID); err != nil {
		return fmt.Errorf("setresuid %d: %w", c.UID, err)
	}
	return nil
}

// closeOnExecAbove marks every open descriptor >= min close-on-exec
// (fallback for kernels without close_range, before 5.11).
func closeOnExecAbove(min int) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= min {
			unix.CloseOnExec(fd)
		}
	}
}
