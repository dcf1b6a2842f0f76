//go:build linux && (amd64 || arm64)

package helper

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompOptions selects the variable parts of the seccomp filter.
type seccompOptions struct {
	// AllowNetwork false (the default) refuses every AF_INET/AF_INET6 socket
	// except plain TCP (SOCK_STREAM with protocol 0 or IPPROTO_TCP): UDP,
	// raw, SCTP and MPTCP sockets get EPERM. TCP itself is left to Landlock's
	// bind/connect port rules, which only understand TCP — that is why the
	// other stream protocols are refused here.
	//
	// AllowNetwork true allows inet sockets of type stream, datagram and
	// seqpacket; raw and SOCK_PACKET inet sockets stay refused.
	//
	// Sockets of any family but AF_UNIX, AF_NETLINK, AF_INET and AF_INET6
	// (AF_VSOCK, AF_PACKET, ...) are refused either way; AF_UNIX and
	// AF_NETLINK are allowed (Landlock scopes cover abstract unix sockets).
	AllowNetwork bool
}

// seccomp_data layout (linux/seccomp.h). Both supported architectures are
// little-endian, so the low 32 bits of argument i are at argLo(i).
const (
	seccompDataNr   = 0
	seccompDataArch = 4
)

func argLo(i int) uint32 { return uint32(16 + 8*i) }

// Seccomp return values.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// cloneNewMask is every CLONE_NEW* namespace flag. unshare(2) and clone(2)
// with any of them set are refused; the rest of their flags are allowed
// (unshare(CLONE_FILES), threads, vfork...).
const cloneNewMask = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWTIME

// seccompSyscall names a syscall number for the filter tables.
type seccompSyscall struct {
	name string
	nr   uint32
}

// seccompRefused lists syscalls refused with EPERM whatever their
// arguments: mounts and the new mount API, namespace entry, kernel keyrings,
// eBPF, perf, io_uring (its ring would bypass this filter), kexec and
// modules, writing other processes' memory and tracing (the exec supervisor
// outside relies on being the only tracer), userfaultfd (race amplifier),
// system administration calls, file-handle opens (escape bind mounts and
// Landlock-visible paths), vhangup, and the architecture table's additions
// (iopl/ioperm on amd64). pidfd_getfd is refused too: it is ptrace by
// another name.
var seccompRefused = append([]seccompSyscall{
	{"mount", unix.SYS_MOUNT},
	{"umount2", unix.SYS_UMOUNT2},
	{"pivot_root", unix.SYS_PIVOT_ROOT},
	{"move_mount", unix.SYS_MOVE_MOUNT},
	{"open_tree", unix.SYS_OPEN_TREE},
	{"open_tree_attr", unix.SYS_OPEN_TREE_ATTR},
	{"fsopen", unix.SYS_FSOPEN},
	{"fsconfig", unix.SYS_FSCONFIG},
	{"fsmount", unix.SYS_FSMOUNT},
	{"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR},
	{"setns", unix.SYS_SETNS},
	{"keyctl", unix.SYS_KEYCTL},
	{"add_key", unix.SYS_ADD_KEY},
	{"request_key", unix.SYS_REQUEST_KEY},
	{"bpf", unix.SYS_BPF},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
	{"kexec_load", unix.SYS_KEXEC_LOAD},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
	{"init_module", unix.SYS_INIT_MODULE},
	{"finit_module", unix.SYS_FINIT_MODULE},
	{"delete_module", unix.SYS_DELETE_MODULE},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
	{"ptrace", unix.SYS_PTRACE},
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
	{"userfaultfd", unix.SYS_USERFAULTFD},
	{"acct", unix.SYS_ACCT},
	{"swapon", unix.SYS_SWAPON},
	{"swapoff", unix.SYS_SWAPOFF},
	{"reboot", unix.SYS_REBOOT},
	{"syslog", unix.SYS_SYSLOG},
	{"quotactl", unix.SYS_QUOTACTL},
	{"quotactl_fd", unix.SYS_QUOTACTL_FD},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT},
	{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE},
	{"vhangup", unix.SYS_VHANGUP},
}, seccompArchRefused...)

// buildSeccompFilter returns the assembled filter for opts.
//
// Layout: check the architecture (anything else, e.g. the i386 entry via
// int 0x80, is killed), kill x32 syscall numbers on amd64, dispatch the
// syscalls whose arguments matter to their own blocks, refuse the fixed
// list, allow the rest. Only seccomp_data loads of nr/arch/argument words,
// AND, JEQ/JGE/JSET and returns are used, so the kernel's seccomp action
// cache can prove "always allowed" for every syscall not named here and skip
// running the filter for them entirely.
//
// Argument checks compare only the low 32 bits: the arguments checked are
// all declared int or unsigned int in the kernel (ioctl's cmd, socket's
// domain/type/protocol, personality) or truncated to 32 bits (clone flags),
// so the kernel ignores the high bits. A check that also required the high
// bits to be zero could be bypassed by setting them (ioctl(fd,
// 0x1_00005412) is still TIOCSTI to the kernel). unshare's flags are an
// unsigned long, but unknown high bits make it fail with EINVAL.
func buildSeccompFilter(opts seccompOptions) ([]unix.SockFilter, error) {
	var p bpfProgram
	p.LoadAbs(seccompDataArch)
	p.JumpEq(seccompAuditArch, "", "kill")
	p.LoadAbs(seccompDataNr)
	if seccompX32Bit != 0 {
		p.JumpGE(seccompX32Bit, "kill", "")
	}
	p.JumpEq(unix.SYS_IOCTL, "ioctl", "")
	p.JumpEq(unix.SYS_SOCKET, "socket", "")
	p.JumpEq(unix.SYS_CLONE, "nsflags", "")
	p.JumpEq(unix.SYS_UNSHARE, "nsflags", "")
	p.JumpEq(unix.SYS_PERSONALITY, "personality", "")
	p.JumpEq(unix.SYS_CLONE3, "enosys", "")
	for _, s := range seccompRefused {
		p.JumpEq(s.nr, "eperm", "")
	}
	p.Ret(retAllow)

	// ioctl(fd, cmd, ...): TIOCSTI pushes bytes into a terminal's input
	// queue, TIOCLINUX can do the same on a virtual console.
	p.Label("ioctl")
	p.LoadAbs(argLo(1))
	p.JumpEq(unix.TIOCSTI, "eperm", "")
	p.JumpEq(unix.TIOCLINUX, "eperm", "allow")

	// socket(domain, type, protocol).
	// Families: unix and netlink, inet and inet6 (their types checked);
	// every other family (vsock — a channel to the hypervisor on a VM —,
	// packet, bluetooth, CAN, XDP, key, alg, ...) is refused whatever the
	// network grant.
	p.Label("socket")
	p.LoadAbs(argLo(0))
	p.JumpEq(unix.AF_INET, "inet", "")
	p.JumpEq(unix.AF_INET6, "inet", "")
	p.JumpEq(unix.AF_UNIX, "allow", "")
	p.JumpEq(unix.AF_NETLINK, "allow", "eperm")
	p.Label("inet")
	p.LoadAbs(argLo(1))
	p.And(0xf) // SOCK_TYPE_MASK: drop SOCK_NONBLOCK/SOCK_CLOEXEC
	if opts.AllowNetwork {
		p.JumpEq(unix.SOCK_STREAM, "allow", "")
		p.JumpEq(unix.SOCK_DGRAM, "allow", "")
		p.JumpEq(unix.SOCK_SEQPACKET, "allow", "eperm")
	} else {
		p.JumpEq(unix.SOCK_STREAM, "", "eperm")
		p.LoadAbs(argLo(2))
		p.JumpEq(0, "allow", "")
		p.JumpEq(unix.IPPROTO_TCP, "allow", "eperm")
	}

	// clone(flags, ...) and unshare(flags): no new namespaces, and no
	// CLONE_UNTRACED: a child created with it is not auto-attached by the
	// exec supervisor's PTRACE_O_TRACEFORK, so its execs would go undecided
	// (TestExecIntegrationWindowClosed).
	p.Label("nsflags")
	p.LoadAbs(argLo(0))
	p.JumpSet(cloneNewMask|unix.CLONE_UNTRACED, "eperm", "allow")

	// personality(p): querying (0xffffffff) and resetting to PER_LINUX (0)
	// are allowed; setting flags such as ADDR_NO_RANDOMIZE or
	// READ_IMPLIES_EXEC is not.
	p.Label("personality")
	p.LoadAbs(argLo(0))
	p.JumpEq(0xffffffff, "allow", "")
	p.JumpEq(0, "allow", "eperm")

	p.Label("allow")
	p.Ret(retAllow)
	p.Label("eperm")
	p.Ret(retEPERM)
	// clone3 passes its flags in a struct the filter cannot read; ENOSYS
	// makes glibc and Go fall back to clone(2), whose flags are checked.
	p.Label("enosys")
	p.Ret(retENOSYS)
	p.Label("kill")
	p.Ret(retKill)
	return p.Assemble()
}

// installSeccomp sets no_new_privs (if not already set) and installs the
// agentbox seccomp filter on every thread of the calling process
// (SECCOMP_FILTER_FLAG_TSYNC). It is meant for the re-exec'd helper right
// before execve: the filter is inherited across fork and execve and cannot
// be removed.
//
// Refused syscalls return EPERM (clone3 returns ENOSYS); a syscall made
// with the wrong architecture's calling convention or an x32 number kills
// the whole process. See buildSeccompFilter and seccompRefused for the rules.
//
// If the kernel lacks TSYNC (before Linux 3.17) the filter is installed on
// the calling thread only and the calling goroutine is left locked to that
// thread, so an execve from the same goroutine carries the filter. Errors
// name the kernel feature that failed; nothing is half-installed (the filter
// is one syscall).
func installSeccomp(opts seccompOptions) error {
	filter, err := buildSeccompFilter(opts)
	if err != nil {
		return fmt.Errorf("seccomp: building filter: %w", err)
	}
	if err := seccompActionAvail(retKill); err != nil {
		if errors.Is(err, unix.EPERM) {
			// seccomp(2) itself refused: a seccomp filter agentbox runs
			// under (a container runtime's profile) does not allow it
			return fmt.Errorf("seccomp: the seccomp(2) system call is refused (%w): agentbox runs under a seccomp filter that does not allow it (a container's seccomp profile: use the runtime's default, which allows it)", err)
		}
		return fmt.Errorf("seccomp: kernel lacks SECCOMP_RET_KILL_PROCESS (Linux 4.14): %w", err)
	}
	runtime.LockOSThread()
	locked := true
	defer func() {
		if locked {
			runtime.UnlockOSThread()
		}
	}()
	if err := setNoNewPrivs(); err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	switch {
	case errno == 0 && r == 0:
		return nil
	case errno == 0:
		return fmt.Errorf("seccomp: TSYNC could not synchronize thread %d (it has a diverging filter)", r)
	case errno == unix.EINVAL:
		// Kernel without TSYNC: install on this thread only.
		_, _, errno = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
		runtime.KeepAlive(filter)
		if errno != 0 {
			return fmt.Errorf("seccomp: SECCOMP_SET_MODE_FILTER: %w", errno)
		}
		locked = false // keep the goroutine on the filtered thread
		return nil
	default:
		return fmt.Errorf("seccomp: SECCOMP_SET_MODE_FILTER with TSYNC: %w", errno)
	}
}

// setNoNewPrivs sets no_new_privs on the calling thread (applyLandlock
// has already, where Landlock is on); the TSYNC filter install then
// propagates it to every thread, and without TSYNC the filter stays on
// this thread alone, the one that execs. Not the runtime's all-threads
// syscall: it stops the world and waits for every thread to be
// scheduled (milliseconds on a loaded machine).
func setNoNewPrivs() error {
	v, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0)
	if errno == 0 && v == 1 {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}

// seccompActionAvail asks the kernel whether it supports a return action.
func seccompActionAvail(action uint32) error {
	a := action
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&a)))
	if errno != 0 {
		if errno == unix.ENOSYS {
			return errors.New("seccomp(2) not available")
		}
		return errno
	}
	return nil
}

// modeCall is a syscall whose mode argument the mode filter checks: the
// set-user-ID and set-group-ID bits in argument mode are refused. flags
// is the argument holding open flags (-1: none): then the mode counts
// only when O_CREAT or O_TMPFILE is set, as it does for the kernel.
type modeCall struct {
	name        string
	nr          uint32
	flags, mode int
}

// modeCalls are the calls that set a file's mode from an argument: the
// chmod family, and the calls that create a file, a directory or a node
// with a mode. openat2(2) is not here: its mode is inside struct
// open_how, which seccomp cannot read, so the filter refuses openat2
// whole with ENOSYS (see buildModeFilter).
var modeCalls = append([]modeCall{
	{"fchmod", unix.SYS_FCHMOD, -1, 1},
	{"fchmodat", unix.SYS_FCHMODAT, -1, 2},
	{"fchmodat2", unix.SYS_FCHMODAT2, -1, 2},
	{"mkdirat", unix.SYS_MKDIRAT, -1, 2},
	{"mknodat", unix.SYS_MKNODAT, -1, 2},
	{"openat", unix.SYS_OPENAT, 2, 3},
}, seccompArchModeCalls...)

// setidBits are the mode bits the mode filter refuses.
const setidBits = unix.S_ISUID | unix.S_ISGID

// createFlags are the open flags with which open's mode is used:
// O_CREAT, and O_TMPFILE's own bit (__O_TMPFILE; O_TMPFILE also carries
// O_DIRECTORY, which alone means nothing here).
const createFlags = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// buildModeFilter returns the small filter installModeFilter stacks on
// the main one.
//
// A call of modeCalls fails with EPERM when its mode has the set-user-ID
// or set-group-ID bit — for open and openat only when O_CREAT or
// O_TMPFILE is set (without them the kernel ignores the mode), for
// mkdir/mkdirat and mknod/mknodat always (mkdir ignores the two bits
// today, but a set-group-ID directory is refused the way chmod refuses
// it: one rule for every file kind). openat2 fails with ENOSYS: its mode
// is in a struct the filter cannot read, and ENOSYS is what a kernel
// before 5.6 answers, on which every caller falls back to openat (glibc
// does not call openat2 at all; Go, node, python and git use openat).
//
// Only the low 32 bits of each argument are compared: mode_t and the open
// flags are 32-bit for the kernel, which ignores the high bits (setting
// them cannot get past the check).
//
// With denyUnix, socket(AF_UNIX, ...) fails with EPERM too.
func buildModeFilter(denyUnix bool) ([]unix.SockFilter, error) {
	var p bpfProgram
	p.LoadAbs(seccompDataArch)
	p.JumpEq(seccompAuditArch, "", "allow") // the main filter kills other arches
	p.LoadAbs(seccompDataNr)
	if denyUnix {
		p.JumpEq(unix.SYS_SOCKET, "socket", "")
	}
	p.JumpEq(unix.SYS_OPENAT2, "enosys", "")
	for _, c := range modeCalls {
		target := fmt.Sprintf("mode%d", c.mode)
		if c.flags >= 0 {
			target = fmt.Sprintf("open%d", c.flags)
		}
		p.JumpEq(c.nr, target, "")
	}
	p.Goto("allow")
	// open(path, flags, mode) and openat(dfd, path, flags, mode): the
	// mode only with O_CREAT or O_TMPFILE.
	p.Label("open1")
	p.LoadAbs(argLo(1))
	p.JumpSet(createFlags, "mode2", "allow")
	p.Label("open2")
	p.LoadAbs(argLo(2))
	p.JumpSet(createFlags, "mode3", "allow")
	for i := 1; i <= 3; i++ {
		p.Label(fmt.Sprintf("mode%d", i))
		p.LoadAbs(argLo(i))
		p.JumpSet(setidBits, "eperm", "allow")
	}
	if denyUnix {
		p.Label("socket")
		p.LoadAbs(argLo(0))
		p.JumpEq(unix.AF_UNIX, "eperm", "allow")
	}
	p.Label("allow")
	p.Ret(retAllow)
	p.Label("eperm")
	p.Ret(retEPERM)
	p.Label("enosys")
	p.Ret(retENOSYS)
	return p.Assemble()
}

// installModeFilter stacks buildModeFilter's filter on the main one: no
// file gets a set-user-ID or set-group-ID bit from the sandbox, by chmod
// or by creating it with that mode. Landlock does not cover modes, so
// without this a sandbox could mark a file it owns set-uid (as root: a
// root-owned file that a later write by root, the human's build, fills
// with a program every local user can run with root's privileges). Other
// mode changes remain possible on files the sandbox's uid owns (see
// docs/threat-model.md).
//
// With denyUnix, socket(AF_UNIX, ...) fails with EPERM too: before Landlock
// ABI 9 nothing stops a sandbox from connecting to any pathname unix socket
// it can name (a container runtime's socket, a session bus, an approval
// socket). socketpair(2) stays allowed, so pipes-between-processes built on
// it keep working.
func installModeFilter(denyUnix bool) error {
	filter, err := buildModeFilter(denyUnix)
	if err != nil {
		return fmt.Errorf("seccomp: building the mode filter: %w", err)
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
		return fmt.Errorf("seccomp: installing the mode filter: %w", errno)
	}
	return nil
}
