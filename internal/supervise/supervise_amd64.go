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
