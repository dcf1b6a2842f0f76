//go:build linux && amd64

package supervise

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// exitViaVDSO starts making pid, stopped at its exec event, call
// exit_group(code) without running a single instruction of the new program.
// The instruction pointer is moved to a `syscall` instruction inside the
// vDSO (code the kernel maps into every process; the new image has not run,
// so it cannot have touched it) and the process is resumed with
// PTRACE_SYSCALL. rax cannot be set here (execve's return value 0 is stored
// after this stop), so the syscall it enters is read(2); finishExit turns it
// into exit_group(code) at the syscall-entry stop. Signal handlers were reset
// by execve, so nothing of the program can run in between. Only 64-bit
// images are handled; the caller kills the process on any error.
func exitViaVDSO(pid, code int) error {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &regs); err != nil {
		return fmt.Errorf("PTRACE_GETREGS: %w", err)
	}
	if regs.Cs != 0x33 {
		return fmt.Errorf("not a 64-bit image (cs=%#x)", regs.Cs)
	}
	start, end, err := vdsoRange(pid)
	if err != nil {
		return err
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return err
	}
	defer mem.Close()
	buf := make([]byte, end-start)
	if _, err := mem.ReadAt(buf, int64(start)); err != nil {
		return fmt.Errorf("read vdso: %w", err)
	}
	i := bytes.Index(buf, []byte{0x0f, 0x05}) // syscall
	if i < 0 {
		return fmt.Errorf("no syscall instruction in vdso")
	}
	regs.Rip = start + uint64(i)
	regs.Rdi = uint64(code)
	if err := unix.PtraceSetRegs(pid, &regs); err != nil {
		return fmt.Errorf("PTRACE_SETREGS: %w", err)
	}
	if err := unix.PtraceSetOptions(pid, ptraceOptions|unix.PTRACE_O_TRACESYSGOOD); err != nil {
		return fmt.Errorf("PTRACE_SETOPTIONS: %w", err)
	}
	return unix.PtraceSyscall(pid, 0)
}

// finishExit runs at each syscall stop that exitViaVDSO led to. The first
// one is execve's own syscall-exit stop (rax is its result): the process is
// resumed to the next stop. The syscall-entry stop (rax = -ENOSYS on x86-64)
// is the vDSO `syscall`: it is turned into exit_group(code). done reports
// that the exit was set up.
func finishExit(pid, code int) (done bool, err error) {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &regs); err != nil {
		return false, err
	}
	if int64(regs.Rax) != -int64(unix.ENOSYS) {
		return false, unix.PtraceSyscall(pid, 0) // execve's syscall-exit stop
	}
	regs.Orig_rax = unix.SYS_EXIT_GROUP
	regs.Rdi = uint64(code)
	if err := unix.PtraceSetRegs(pid, &regs); err != nil {
		return false, err
	}
	return true, unix.PtraceCont(pid, 0)
}

// vdsoRange returns the address range of pid's [vdso] mapping.
func vdsoRange(pid int) (uint64, uint64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		a, b, ok := strings.Cut(rng, "-")
		if !ok {
			break
		}
		s, err1 := strconv.ParseUint(a, 16, 64)
		e, err2 := strconv.ParseUint(b, 16, 64)
		if err1 != nil || err2 != nil || e <= s || e-s > 1<<20 {
			break
		}
		return s, e, nil
	}
	return 0, 0, fmt.Errorf("no [vdso] mapping in /proc/%d/maps", pid)
}

// The new image's stack is read in two parts: stackHead bytes at the
// stack pointer (argc and the argv and envp pointers of two hundred
// variables; more is read when they do not fit), then the strings, from
// argv[0] to the last environment variable plus stackTail bytes for that
// variable's own length. Strings or pointers of more than
// maxStackStrings fall back to the ranges /proc/PID/stat names.
const (
	stackHead       = 2048
	stackTail       = 1024
	maxStackStrings = 256 << 10
)

// readArgEnvStack reads argv and environment strings of pid, stopped at
// its exec event, from its new stack: PTRACE_GETREGS gives the stack
// pointer, which the kernel left at argc with the argv and envp pointers
// above it and their strings, contiguous, above those (the same bytes
// /proc/PID/cmdline and environ return: mm->arg_start is argv[0]). A
// register read and two process_vm_readv(2) instead of opening, reading
// and parsing /proc/PID/stat. ok is false when that does not work out
// (the caller reads the /proc ranges then).
func readArgEnvStack(pid int) (argv, env []byte, execFn string, ok bool) {
	var regs unix.PtraceRegs
	if unix.PtraceGetRegs(pid, &regs) != nil || regs.Cs != 0x33 {
		return nil, nil, "", false // a 32-bit image has 4-byte pointers
	}
	sp := regs.Rsp
	// The pointers first: a head that does not hold them all (a long
	// environment) is read again, larger.
	var head []byte
	var ptrs []uint64
	var argc int
	for n := stackHead; ; n *= 8 {
		if head, ok = readRemote(pid, sp, n); !ok {
			return nil, nil, "", false
		}
		if ptrs, argc, ok = stackPointers(head, sp); ok {
			break
		}
		if len(head) < n || n >= maxStackStrings {
			return nil, nil, "", false
		}
	}
	fnAddr, fnKnown := auxValue(head, len(ptrs)+3, atExecFn)
	// The strings lie above a random gap of up to 8 KiB below the stack's
	// top (arch_align_stack): usually beyond the head.
	w, base := head, sp
	if argv, env, ok = stackStrings(head, sp, ptrs, argc); !ok {
		first, last := ptrs[0], ptrs[len(ptrs)-1]
		if last < first || last-first > maxStackStrings {
			return nil, nil, "", false
		}
		// stackTail covers the last variable; the file name execve was
		// given follows it (the kernel copies it first, at the top).
		if w, ok = readRemote(pid, first, int(last-first)+stackTail+unix.PathMax); !ok {
			return nil, nil, "", false
		}
		base = first
		if argv, env, ok = stackStrings(w, first, ptrs, argc); !ok {
			return nil, nil, "", false
		}
	}
	if !fnKnown {
		// Not in the head: the kernel's layout puts it right after the
		// environment's strings.
		fnAddr = ptrs[0] + uint64(len(argv)+len(env))
	}
	return argv, env, stackString(pid, w, base, fnAddr), true
}
