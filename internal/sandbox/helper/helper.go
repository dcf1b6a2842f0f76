// Package helper is the child side of a launch (runc's parent/child init
// split): the process agentbox starts for each run, which reads its Config
// from fd 3 and, on itself, in this order: checks its parent is still the
// launcher, sets rlimits, enters the proxy's network namespace (network
// mode proxy), makes the outside read-only (root runs), changes into the
// working directory, switches to the workspace owner (root on a user's
// workspace), drops every capability, applies Landlock, installs the
// seccomp filter and the chmod/unix-socket filter, passes the
// exec-notification listener out (notify mode), waits for the launcher's
// go byte and execs the command. Each failure is one line on StatusFd and
// an exit status; nothing runs half set up.
//
// It imports nothing else of agentbox, so cmd/agentbox-helper, the binary
// made of it, starts in a fraction of the time agentbox's own binary takes.
package helper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Argv0 is the argv[0] the launcher starts the helper with, whether the
// binary is cmd/agentbox-helper or agentbox itself (see Main).
const Argv0 = "agentbox-sandbox-helper"

// File descriptors the helper inherits (fixed positions in the launcher's
// ExtraFiles).
const (
	// ConfigFd is a unix stream socket: the encoded Config, read to its
	// end then closed, with the host caches' overlays made ahead attached
	// (SCM_RIGHTS; CacheLayer.Fd numbers them).
	ConfigFd = 3
	GoFd     = 4 // one byte from the launcher releases execve
	StatusFd = 5 // close-on-exec; carries "<code> <reason>" on failure
	NetFd    = 6 // network mode proxy: the listeners go out on it
	NotifyFd = 7 // notify mode: the exec-notification listener goes out on it
)

// MaxCacheFds bounds the descriptors a config may carry: more than a
// launcher ever sends (one per host cache layer) is a refusal.
const MaxCacheFds = 32

// Exit statuses of a run that did not reach the command (the command's own
// status otherwise).
const (
	ExitFailure  = 125 // agentbox itself failed or refused to run
	ExitDenied   = 126 // the command was denied or is not executable
	ExitNotFound = 127 // the command was not found
)

// DefaultPath is the sandbox PATH when the launcher has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// Main runs the helper when the process was started as one (argv[0] ==
// Argv0) and never returns then: it execs the command or exits with a
// status the launcher reads on StatusFd. Otherwise it returns false at
// once. Call it first thing in main.
func Main() bool {
	if len(os.Args) == 0 || os.Args[0] != Argv0 {
		return false
	}
	run()
	os.Exit(ExitFailure) // not reached: run execs or exits
	return true
}

// helperFail reports a setup failure to the launcher on the status pipe and
// exits with code.
func helperFail(code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(msg, "\n", " ")
	_, _ = unix.Write(StatusFd, []byte(fmt.Sprintf("%d %s\n", code, msg)))
	if code != ExitFailure {
		// Exec failures are the command's business: say so on its stderr.
		_, _ = unix.Write(2, []byte("agentbox: "+msg+"\n"))
	}
	os.Exit(code)
}

// run sets the helper up in the order the package comment gives and execs
// the command; every failure exits through helperFail.
func run() {
	// Everything per-thread (capabilities, the seccomp fallback) happens on
	// this thread, and execve runs from it.
	runtime.LockOSThread()
	closeInherited()
	cfg := loadConfig()
	checkParent(cfg)
	if err := applyRlimits(cfg.Rlimits); err != nil {
		helperFail(ExitFailure, "%v", err)
	}
	setUpNetwork(cfg)
	setUpMounts(cfg)
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
	confine(cfg)
	awaitRelease()
	execCommand(cfg)
}

// closeInherited keeps every descriptor of agentbox's own parent out of
// the sandbox: os.StartProcess passes only the files we list, but
// descriptors that agentbox itself inherited without O_CLOEXEC would
// survive the exec. Everything above the helper's pipes is marked
// close-on-exec (the Go runtime's own descriptors stay usable until then).
func closeInherited() {
	if err := unix.CloseRange(StatusFd+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		closeOnExecAbove(StatusFd + 1)
	}
	unix.CloseOnExec(StatusFd)
}

// loadConfig reads and decodes the launcher's Config from ConfigFd, and
// gives each host cache layer the overlay descriptor that came with it.
func loadConfig() *Config {
	data, fds, err := readConfig()
	if err != nil {
		helperFail(ExitFailure, "helper: reading config: %v", err)
	}
	if len(data) == 0 {
		// The launcher closed the pipe without a word: a helper started
		// ahead of its run that is not needed after all.
		os.Exit(ExitFailure)
	}
	cfg, err := Decode(data)
	if errors.Is(err, ErrFormat) {
		exe, _ := os.Executable()
		helperFail(ExitFailure, "helper %s is from another agentbox build (%v): install the agentbox-helper built with this agentbox, or remove it (agentbox then starts itself as the helper)", exe, err)
	}
	if err != nil {
		helperFail(ExitFailure, "helper: %v", err)
	}
	if len(cfg.Argv) == 0 {
		helperFail(ExitFailure, "helper: config names no command")
	}
	if err := cfg.takeCacheFds(fds); err != nil {
		helperFail(ExitFailure, "helper: %v", err)
	}
	return cfg
}

// checkParent exits unless the launcher is still the helper's parent.
// pdeathsig was set at fork; if the launcher died before that took effect
// we would be orphaned already. In a pid namespace of its own the
// helper's parent is outside it (getppid is 0) and Go's fork cannot set
// pdeathsig (its check of the parent's pid would kill the child): set it
// here. The launcher is alive: it sent the config, and the helper does
// nothing more without its go byte.
func checkParent(cfg *Config) {
	if cfg.NewPID {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
			helperFail(ExitFailure, "prctl(PR_SET_PDEATHSIG): %v", err)
		}
		if unix.Getppid() != 0 {
			os.Exit(ExitFailure)
		}
	} else if unix.Getppid() != cfg.ParentPid {
		os.Exit(ExitFailure)
	}
}

// setUpNetwork enters the proxy's network namespace and passes its
// listeners out (network mode proxy), or a namespace of its own standing
// in for Landlock's TCP rules.
func setUpNetwork(cfg *Config) {
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
	if cfg.IsolateNet && !cfg.NetNS {
		if err := isolateNet(); err != nil {
			helperFail(ExitFailure, "a network namespace of the run's own (standing in for Landlock's TCP rules, ABI < 4): %v; accept the loss with --allow-weaker tcp", err)
		}
	}
}

// reviewFail reports a review overlay that could not be mounted.
func reviewFail(err error) {
	helperFail(ExitFailure, "--review needs overlayfs in the run's own mount namespace (Linux 5.11 or later for a regular user; the layer's directory on a file system overlayfs can write to): %v; run without --review", err)
}

// setUpMounts makes the run's mount namespace: the review overlay, the
// host caches' layers and the read-only view outside the writable areas,
// adding the Landlock rules the mounted layers need to cfg.Rules.
func setUpMounts(cfg *Config) {
	if cfg.Overlay != nil && len(cfg.ReadOnlyOutside) == 0 {
		if err := mountOverlay(cfg.Overlay); err != nil {
			reviewFail(err)
		}
	}
	if len(cfg.Caches) > 0 && len(cfg.ReadOnlyOutside) == 0 {
		// Host caches copy-on-write (cachelayers.go); a review run is in
		// its own mount namespace already.
		if cfg.Overlay == nil {
			if err := privateMountNS(); err != nil {
				fmt.Fprintf(os.Stderr, "agentbox: note: host caches not layered (%v): this run starts from the agent's own caches\n", err)
				cfg.Caches = nil
			}
		}
		cfg.Rules = append(cfg.Rules, mountCaches(cfg.Caches, os.Geteuid() != 0)...)
	}
	if len(cfg.ReadOnlyOutside) == 0 {
		return
	}
	grants, err := readOnlyOutside(cfg.ReadOnlyOutside, cfg.Overlay, cfg.Caches, cfg.NewPID)
	cfg.Rules = append(cfg.Rules, grants...)
	var oe *overlayError
	if errors.As(err, &oe) {
		if cfg.NewPID && strings.Contains(oe.err.Error(), "pid namespace") {
			helperFail(ExitFailure, "%v (standing in for Landlock's signal scope, ABI < 6); accept the loss with --allow-weaker signals", oe.err)
		}
		reviewFail(oe.err) // never accepted with --best-effort
	}
	if err != nil {
		if !cfg.ReadOnlyBestEffort {
			helperFail(ExitFailure, "cannot make the file system outside the writable areas read-only (%v): the command could change mode, owner, times and xattrs of its uid's files outside (and truncate files in read-only areas below Landlock ABI 3); accept the loss with --allow-weaker metadata,truncate or --best-effort", err)
		}
		fmt.Fprintf(os.Stderr, "agentbox: warning: --best-effort: files outside the writable areas are not read-only (%v): their metadata can be changed\n", err)
	}
}

// confine applies Landlock, the seccomp filters and (notify mode) the
// exec-notification filter, whose listener goes out to the launcher.
func confine(cfg *Config) {
	if err := applyLandlock(cfg); err != nil {
		helperFail(ExitFailure, "%v", err)
	}
	if err := installSeccomp(seccompOptions{}); err != nil {
		helperFail(ExitFailure, "%v (seccomp is always required)", err)
	}
	if err := installModeFilter(cfg.DenyUnixSockets); err != nil {
		helperFail(ExitFailure, "%v (seccomp is always required)", err)
	}
	if !cfg.ExecNotify {
		return
	}
	// On this locked thread, which execs: the command and everything it
	// starts inherit the filter.
	fd, err := InstallExecNotify()
	if err != nil {
		helperFail(ExitFailure, "%v (the exec supervisor needs it; --trace-all traces every process instead)", err)
	}
	err = unix.Sendmsg(NotifyFd, []byte{1}, unix.UnixRights(fd), nil, 0)
	unix.Close(fd)
	unix.Close(NotifyFd)
	if err != nil {
		helperFail(ExitFailure, "passing the exec notification listener out: %v", err)
	}
}

// awaitRelease waits for the launcher: cgroup membership and the
// supervisor are in place once the go byte arrives. EOF means the
// launcher gave up.
func awaitRelease() {
	var b [1]byte
	for {
		n, err := unix.Read(GoFd, b[:])
		if err == unix.EINTR {
			continue
		}
		if n != 1 || err != nil {
			os.Exit(ExitFailure)
		}
		break
	}
	unix.Close(GoFd)
}

// execCommand execs the command, or reports why it could not be.
func execCommand(cfg *Config) {
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
		path = DefaultPath
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

// EnvValue returns name's value in env ("NAME=value" entries; the last
// one wins, as for a process), or "".
func EnvValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
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
func becomeUser(c Credential) error {
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

// readConfig reads ConfigFd to its end (the launcher closes its side after
// writing), with the descriptors that came with it (close-on-exec), and
// closes it. The config is at most a few hundred KiB; 64 MiB bounds a
// launcher gone wrong. A pipe (a test's) carries no descriptors.
func readConfig() (data []byte, fds []int, err error) {
	defer unix.Close(ConfigFd)
	buf := make([]byte, 0, 16<<10)
	oob := make([]byte, unix.CmsgSpace(4*MaxCacheFds))
	sock := true
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= 64<<20 {
				return nil, fds, errors.New("config larger than 64 MiB")
			}
			buf = append(buf, 0)[:len(buf)]
		}
		var n, oobn, flags int
		if sock {
			n, oobn, flags, _, err = unix.Recvmsg(ConfigFd, buf[len(buf):cap(buf)], oob, unix.MSG_CMSG_CLOEXEC)
			if err == unix.ENOTSOCK {
				sock = false
				continue
			}
		} else {
			n, err = unix.Read(ConfigFd, buf[len(buf):cap(buf)])
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fds, err
		}
		if oobn > 0 {
			got, perr := unixRights(oob[:oobn])
			fds = append(fds, got...)
			if perr != nil {
				return nil, fds, perr
			}
		}
		if flags&unix.MSG_CTRUNC != 0 || len(fds) > MaxCacheFds {
			return nil, fds, fmt.Errorf("more than %d descriptors came with the config", MaxCacheFds)
		}
		if n == 0 {
			return buf, fds, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// unixRights are the descriptors in a control message; anything else in
// it is an error (the descriptors found are returned to be closed).
func unixRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control message with the config: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		fds = append(fds, got...)
		if err != nil {
			return fds, fmt.Errorf("control message with the config: %w", err)
		}
	}
	return fds, nil
}

// takeCacheFds gives each host cache layer its overlay among fds, the
// descriptors that came with the config: a layer's Fd i (1-based) names
// the i-th; 0, none (the helper mounts the layer). Every descriptor must
// be named exactly once, else the config is refused: the helper holds
// nothing it does not expect. The descriptors are close-on-exec.
func (c *Config) takeCacheFds(fds []int) error {
	used := make([]bool, len(fds))
	named := 0
	for i := range c.Caches {
		n := c.Caches[i].Fd
		if n == 0 {
			continue
		}
		named++
		if n < 0 || n > len(fds) || used[n-1] {
			return fmt.Errorf("config names %d host cache overlays (layer %s: descriptor %d), %d descriptors came with it", countFds(c.Caches), c.Caches[i].Name, n, len(fds))
		}
		used[n-1] = true
		c.Caches[i].Fd = fds[n-1]
	}
	if named != len(fds) {
		return fmt.Errorf("config names %d host cache overlays, %d descriptors came with it", named, len(fds))
	}
	return nil
}

// countFds is how many layers name an overlay descriptor.
func countFds(cs []CacheLayer) int {
	n := 0
	for _, c := range cs {
		if c.Fd != 0 {
			n++
		}
	}
	return n
}
