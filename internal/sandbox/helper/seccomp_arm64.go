//go:build linux

package helper

import "golang.org/x/sys/unix"

// seccompAuditArch is the only architecture the filter lets through
// (AArch32 compat syscalls report AUDIT_ARCH_ARM and are killed).
const seccompAuditArch = unix.AUDIT_ARCH_AARCH64

// seccompX32Bit is zero: arm64 has no x32-style second syscall table.
const seccompX32Bit = 0

// seccompArchRefused is empty: arm64 has no iopl/ioperm.
var seccompArchRefused = []seccompSyscall{}

// seccompArchModeCalls is empty: arm64 has only the *at forms (chmod,
// creat, mkdir, mknod and open are library functions over them).
var seccompArchModeCalls = []modeCall{}
