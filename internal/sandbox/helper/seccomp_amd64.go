//go:build linux

package helper

import "golang.org/x/sys/unix"

// seccompAuditArch is the only architecture the filter lets through.
const seccompAuditArch = unix.AUDIT_ARCH_X86_64

// seccompX32Bit is __X32_SYSCALL_BIT: x86_64 syscall numbers at or above it
// use the x32 ABI, a second syscall table the filter does not model, so
// they are killed.
const seccompX32Bit = 0x40000000

// seccompArchRefused adds x86-only privileged I/O port access.
var seccompArchRefused = []seccompSyscall{
	{"iopl", unix.SYS_IOPL},
	{"ioperm", unix.SYS_IOPERM},
}

// seccompArchModeCalls adds amd64's path-only forms of the calls whose
// mode argument the mode filter checks (arm64 has only the *at forms).
var seccompArchModeCalls = []modeCall{
	{"chmod", unix.SYS_CHMOD, -1, 1},
	{"creat", unix.SYS_CREAT, -1, 1},
	{"mkdir", unix.SYS_MKDIR, -1, 1},
	{"mknod", unix.SYS_MKNOD, -1, 1},
	{"open", unix.SYS_OPEN, 1, 2},
}
