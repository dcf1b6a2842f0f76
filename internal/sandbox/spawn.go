package sandbox

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

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// spawned is a helper process and the launcher's ends of its descriptors.
// The helper does nothing until its configuration arrives on cfgW.
type spawned struct {
	pid      int
	exe      string
	cfgW     *os.File // its config socket (fd 3; sendConfig)
	goW      *os.File // its release pipe (fd 4)
	stR      *os.File // its status pipe (fd 5)
	net      *os.File // the proxy listeners come out here (fd 6), or nil
	notify   *os.File // the exec-notification listener comes out here (fd 7), or nil
	inCgroup bool     // born in the run's cgroup (CLONE_INTO_CGROUP)
}

// spawnOptions say how to start a helper.
type spawnOptions struct {
	exe                   string
	stdin, stdout, stderr *os.File
	setctty               bool
	net, notify           bool   // create the fd 6 / fd 7 socket pairs
	cgroupDir             string // cgroup v2: the directory to be born in
	// cgroup v1: the tasks files this thread enters the run's cgroups
	// through before the fork; it leaves through their parents' after it
	// (runCgroup.threadTasks).
	cgroupTasks []string
	// userns starts the helper in a user namespace of its own (uid and
	// gid mapped to themselves): a regular user's network namespace and
	// review overlay need one, and a multithreaded process cannot
	// unshare(CLONE_NEWUSER) for itself.
	userns bool
	// usernsWhy names what needs the user namespace and the flag that
	// does without it, for the one line when it cannot be made.
	usernsWhy string
	// pidns starts the helper in a pid namespace of its own (the ladder's
	// stand-in for Landlock's signal scope); the helper sets its own
	// pdeathsig (Go's would see a parent pid of 0 and kill the child).
	pidns bool
}

// spawnHelper starts a helper (argv[0] helper.Argv0, its own session,
// pdeathsig SIGKILL tied to the calling thread) with its pipes in place.
func spawnHelper(o spawnOptions) (sp *spawned, err error) {
	var closeOnErr []*os.File
	defer func() {
		for _, f := range closeOnErr {
			if f != nil && err != nil {
				f.Close()
			}
		}
	}()
	sp, files, err := helperFiles(o, &closeOnErr)
	if err != nil {
		return nil, err
	}
	attr := helperAttr(o, files)
	pid, err := sp.start(o, attr)
	// The helper's ends live on in the helper only.
	for _, f := range files[3:] {
		if f != nil {
			f.Close()
		}
	}
	if err != nil && o.userns {
		return nil, usernsError(o.usernsWhy, err)
	}
	if err != nil {
		return nil, fmt.Errorf("starting sandbox helper %s: %w", o.exe, err)
	}
	sp.pid = pid
	return sp, nil
}

// helperFiles makes the helper's pipes and socket pairs and returns the
// launcher's ends (in sp) and the helper's descriptor table: fds 0-5,
// then 6 (helper.NetFd) and 7 (helper.NotifyFd) when used (a nil entry
// is closed in the helper). Every descriptor made is added to closeOnErr.
func helperFiles(o spawnOptions, closeOnErr *[]*os.File) (*spawned, []*os.File, error) {
	pipe := func(what string) (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("%s pipe: %w", what, err)
		}
		*closeOnErr = append(*closeOnErr, r, w)
		return r, w, nil
	}
	// The config goes on a stream socket: the host caches' overlays
	// follow it (SCM_RIGHTS) once made, after the fork (sendConfig).
	cfgW, cfgR, err := streamPair("agentbox-config")
	if err != nil {
		return nil, nil, fmt.Errorf("config socket pair: %w", err)
	}
	*closeOnErr = append(*closeOnErr, cfgW, cfgR)
	goR, goW, err := pipe("release")
	if err != nil {
		return nil, nil, err
	}
	stR, stW, err := pipe("status")
	if err != nil {
		return nil, nil, err
	}
	sp := &spawned{exe: o.exe, cfgW: cfgW, goW: goW, stR: stR}
	files := []*os.File{o.stdin, o.stdout, o.stderr, cfgR, goR, stW, nil, nil}
	// pair gives the helper the child end of a socket pair at fd and
	// returns the launcher's end.
	pair := func(name string, fd int) (*os.File, error) {
		parent, child, err := socketPair(name)
		if err != nil {
			return nil, fmt.Errorf("%s socket pair: %w", name, err)
		}
		*closeOnErr = append(*closeOnErr, parent, child)
		files[fd] = child
		return parent, nil
	}
	if o.net {
		if sp.net, err = pair("agentbox-net", helper.NetFd); err != nil {
			return nil, nil, err
		}
	}
	if o.notify {
		if sp.notify, err = pair("agentbox-exec-notify", helper.NotifyFd); err != nil {
			return nil, nil, err
		}
	}
	for len(files) > 0 && files[len(files)-1] == nil {
		files = files[:len(files)-1]
	}
	return sp, files, nil
}

// streamPair returns the two ends of a close-on-exec, blocking
// SOCK_STREAM pair: the launcher's and the helper's.
func streamPair(name string) (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name+"-helper"), nil
}

// sendConfig sends the helper its encoded configuration with fds attached
// to its first byte (the helper receives them close-on-exec and refuses a
// count its config does not name), and closes the config socket: the
// helper reads to its end.
func (sp *spawned) sendConfig(data []byte, fds []int) error {
	defer func() {
		sp.cfgW.Close()
		sp.cfgW = nil
	}()
	fd := int(sp.cfgW.Fd())
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for len(data) > 0 {
		n, err := unix.SendmsgN(fd, data, oob, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data, oob = data[n:], nil
	}
	return nil
}

// helperAttr is how the helper is started: its descriptors (a nil file is
// closed in it), environment, session and terminal, and the pid and user
// namespaces o asks for.
func helperAttr(o spawnOptions, files []*os.File) *syscall.ProcAttr {
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = ^uintptr(0)
		if f != nil {
			fds[i] = f.Fd()
		}
	}
	attr := &syscall.ProcAttr{
		Dir: "/",
		// The helper lives ~1 ms of Go code: no GC, one P (fewer runtime
		// threads, each a clone event under the supervisor). Its
		// environment is replaced by the command's at execve.
		Env:   []string{"AGENTBOX_HELPER=1", "GOGC=off", "GOMAXPROCS=1"},
		Files: fds,
		Sys: &syscall.SysProcAttr{
			Setsid:    true,
			Setctty:   o.setctty,
			Ctty:      0,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if o.pidns {
		attr.Sys.Cloneflags |= syscall.CLONE_NEWPID
		attr.Sys.Pdeathsig = 0
	}
	if o.userns {
		uid, gid := os.Getuid(), os.Getgid()
		attr.Sys.Cloneflags |= syscall.CLONE_NEWUSER
		attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.Sys.GidMappingsEnableSetgroups = false
		// The helper is exec'd as a regular uid, which clears its
		// capabilities in the new namespace unless they are ambient: it
		// needs CAP_SYS_ADMIN (mounts, namespaces) and CAP_NET_ADMIN
		// (loopback up) there, CAP_SETPCAP to drop the bounding set, and
		// CAP_DAC_OVERRIDE for overlayfs: the mount keeps its mounter's
		// credentials for its own work, which starts by creating files
		// in work/work, a directory it made with mode 0 (without it the
		// review overlay fails with EACCES). The capabilities hold only
		// over the user's own files (the only uid mapped), and it drops
		// every capability before the command's execve.
		attr.Sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_DAC_OVERRIDE}
	}
	return attr
}

// start forks and execs the helper, born in the run's cgroup where it
// can be (sp.inCgroup says whether it was), else outside it, for the
// launcher to move it, and returns its pid. syscall.ForkExec, not
// os.StartProcess: the launcher needs only the pid (the supervisor and
// waitRoot wait by it), and os's first start checks that pidfds work by
// cloning and reaping a process (~0.15 ms CPU on the launch path),
// then makes a pidfd per start that would be released unused.
func (sp *spawned) start(o spawnOptions, attr *syscall.ProcAttr) (int, error) {
	// On cgroup v2 the helper is born in the run's cgroup (clone3
	// CLONE_INTO_CGROUP): no cgroup.procs write afterwards, which can stall
	// for milliseconds. A kernel that refuses it gets the write instead.
	if o.cgroupDir != "" {
		if fd, err := unix.Open(o.cgroupDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			defer unix.Close(fd)
			attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, fd
			sp.inCgroup = true
		}
	}
	// On cgroup v1 the forking thread enters the run's cgroups itself
	// (a thread moving itself takes no global lock; moving the helper
	// afterwards through cgroup.procs waits for an RCU grace period, 1-25
	// ms) and leaves them right after the fork: the helper is born inside,
	// a child of this thread as the supervisor needs. The thread is
	// locked, so the Go runtime starts no thread from it meanwhile (new
	// threads come from its template thread). If it cannot enter, the
	// launcher moves the helper afterwards, as on v2 without
	// CLONE_INTO_CGROUP.
	entered := false
	if len(o.cgroupTasks) > 0 && !sp.inCgroup {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := moveThread(o.cgroupTasks); err != nil {
			if lerr := leaveCgroups(o.cgroupTasks); lerr != nil {
				return 0, lerr
			}
		} else {
			entered, sp.inCgroup = true, true
		}
	}
	pid, err := forkHelper(o.exe, attr)
	if entered {
		if lerr := leaveCgroups(o.cgroupTasks); lerr != nil {
			if err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, 0, nil)
			}
			return 0, lerr
		}
		if err != nil { // a pids limit too small for the launcher thread and the helper
			sp.inCgroup = false
			pid, err = forkHelper(o.exe, attr)
		}
	}
	if err != nil && sp.inCgroup {
		attr.Sys.UseCgroupFD, sp.inCgroup = false, false
		pid, err = forkHelper(o.exe, attr)
	}
	return pid, err
}

// forkHelper forks and execs exe as the helper; its error reads as
// os.StartProcess's (fork/exec EXE: ERRNO).
func forkHelper(exe string, attr *syscall.ProcAttr) (int, error) {
	pid, err := syscall.ForkExec(exe, []string{helper.Argv0}, attr)
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: exe, Err: err}
	}
	return pid, nil
}

// usernsError says that a helper needing a user namespace could not be
// started: what needed it, the kernel's refusal, and the flag that does
// without it (why is "WHAT needs ...; use FLAG ...").
func usernsError(why string, err error) error {
	what, fix, _ := strings.Cut(why, ";")
	msg := fmt.Sprintf("%s, and a user namespace could not be made for it (%v: unprivileged user namespaces disabled, or refused by a container runtime's seccomp profile?)",
		what, errors.Unwrap(err))
	if fix = strings.TrimSpace(fix); fix != "" {
		msg += "; " + fix
	}
	return errors.New(msg)
}

// noThreadMoves makes runs on cgroup v1 move the helper into the run's
// cgroup after the fork (cgroup.procs) instead of forking it from inside
// (tests of that fallback).
var noThreadMoves = false

// moveThread writes "0" (the calling thread) to each tasks file in turn.
func moveThread(tasks []string) error {
	for _, f := range tasks {
		fd, err := unix.Open(f, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, []byte("0"))
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("cgroups: moving the launcher thread to %s: %w", filepath.Dir(f), err)
		}
	}
	return nil
}

// leaveCgroups takes the calling thread back from the run's cgroups (their
// tasks files) to their parents, the launcher's cgroups. Should that fail,
// the whole launcher process is moved there (cgroup.procs), so that no
// launcher thread stays in a run's cgroup, where a kill would freeze it.
func leaveCgroups(runTasks []string) error {
	parents := make([]string, len(runTasks))
	for i, f := range runTasks {
		parents[i] = filepath.Join(filepath.Dir(filepath.Dir(f)), "tasks")
	}
	if err := moveThread(parents); err == nil {
		return nil
	}
	for _, f := range parents {
		procs := filepath.Join(filepath.Dir(f), "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("cgroups: the launcher cannot leave the run's cgroup for %s: %w", filepath.Dir(f), err)
		}
	}
	return nil
}

// close closes the launcher's ends still open.
func (sp *spawned) close() {
	for _, f := range []*os.File{sp.cfgW, sp.goW, sp.stR, sp.net, sp.notify} {
		if f != nil {
			f.Close()
		}
	}
}

// stdio applies the defaults (the launcher's own) to a run's standard
// descriptors.
func stdio(in, out, errf *os.File) (*os.File, *os.File, *os.File) {
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	if errf == nil {
		errf = os.Stderr
	}
	return in, out, errf
}
