// Command onestart is a prototype for issue 33's question: can one Go
// runtime launch a sandboxed command, without the helper's second runtime
// start? It sets up, on one locked OS thread of the launcher only, what
// the helper sets up in its own process before execve — no_new_privs, a
// Landlock domain (the workspace read-write, the system read-only), a
// seccomp filter — and forks the command from that thread: a child
// inherits its parent thread's Landlock domain, seccomp filters and
// no_new_privs, and Go's fork runs on the calling thread. The thread is
// then left locked, so the runtime ends it instead of reusing it.
//
//	onestart DIR PROG [ARG...]
//
// It exists to be measured (scripts/bench-run.sh's prototype row) and
// to show what works; docs/decisions.md records the verdict.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock ABI 1 file rights: enough for the prototype.
const (
	llExecute  = 1 << 0
	llWrite    = 1 << 1
	llRead     = 1 << 2
	llReadDir  = 1 << 3
	llRemDir   = 1 << 4
	llRemFile  = 1 << 5
	llMkChar   = 1 << 6
	llMkDir    = 1 << 7
	llMkReg    = 1 << 8
	llMkSock   = 1 << 9
	llMkFifo   = 1 << 10
	llMkBlock  = 1 << 11
	llMkSym    = 1 << 12
	llAll      = 1<<13 - 1
	llReadOnly = llExecute | llRead | llReadDir
)

type rulesetAttr struct{ handledAccessFS uint64 }

type pathBeneath struct {
	allowed  uint64
	parentFd int32
}

// restrictThread makes this thread's Landlock domain: rw under dir, read
// and execute under the system directories.
func restrictThread(dir string) error {
	attr := rulesetAttr{handledAccessFS: llAll}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	add := func(path string, access uint64) error {
		p, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // not on this system
		}
		defer unix.Close(p)
		pb := pathBeneath{allowed: access, parentFd: int32(p)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, 1, uintptr(unsafe.Pointer(&pb)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, e)
		}
		return nil
	}
	for _, p := range []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"} {
		if err := add(p, llReadOnly); err != nil {
			return err
		}
	}
	if err := add("/dev/null", llRead|llWrite); err != nil {
		return err
	}
	if err := add(dir, llAll); err != nil {
		return err
	}
	// Without LANDLOCK_RESTRICT_SELF_TSYNC (flags 0) only this thread.
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// filterThread installs a seccomp filter on this thread only (no
// SECCOMP_FILTER_FLAG_TSYNC) refusing a few of what the helper refuses
// (ptrace, mount, unshare, keyctl, bpf) with EPERM: what the Go runtime
// does on this thread until it ends (futex, mmap, clone, sigaltstack,
// exit) stays allowed.
func filterThread() error {
	deny := []uint32{unix.SYS_PTRACE, unix.SYS_MOUNT, unix.SYS_UNSHARE, unix.SYS_KEYCTL, unix.SYS_BPF}
	var prog []unix.SockFilter
	prog = append(prog, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}) // arch
	prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AUDIT_ARCH_X86_64, Jt: 1})
	prog = append(prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_KILL_PROCESS})
	prog = append(prog, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}) // nr
	for i, nr := range deny {
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: uint8(len(deny) - i)})
	}
	prog = append(prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW})
	prog = append(prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: onestart DIR PROG [ARG...]")
		os.Exit(2)
	}
	prog, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "onestart:", err)
		os.Exit(127)
	}
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends this thread
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- result{err: fmt.Errorf("no_new_privs: %w", err)}
			return
		}
		if err := restrictThread(os.Args[1]); err != nil {
			done <- result{err: err}
			return
		}
		if err := filterThread(); err != nil {
			done <- result{err: err}
			return
		}
		c := exec.Command(prog, os.Args[3:]...)
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		c.Dir = os.Args[1]
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		// Start forks from this (locked, restricted) thread; Wait may run
		// anywhere.
		if err := c.Start(); err != nil {
			done <- result{err: err}
			return
		}
		err := c.Wait()
		done <- result{status: c.ProcessState.ExitCode(), err: nil}
		_ = err
	}()
	r := <-done
	if r.err != nil {
		fmt.Fprintln(os.Stderr, "onestart:", r.err)
		os.Exit(125)
	}
	// The launcher itself is not restricted: prove it by reading outside.
	if os.Getenv("ONESTART_CHECK") != "" {
		if _, err := os.ReadFile("/etc/hostname"); err != nil {
			fmt.Fprintln(os.Stderr, "onestart: the launcher was restricted too:", err)
			os.Exit(125)
		}
	}
	os.Exit(r.status)
}
