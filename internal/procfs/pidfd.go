package procfs

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A process's parent and liveness through a pidfd (pidfd_open(2), Linux
// 5.3; PIDFD_GET_INFO, Linux 6.13) instead of /proc/PID/stat: the exec
// supervisor reads both at every program start, and each /proc lookup of
// a new pid instantiates its directory entries (a stat read there costs
// about twice the open, ioctl and close of a pidfd). A held pidfd also
// answers "is this still the process I recorded" with one poll(2): the
// pid of a live process is never reused, and a pidfd becomes readable
// when its process exits.

// pidfdGetInfo is PIDFD_GET_INFO: _IOWR(PIDFS_IOCTL_MAGIC 0xFF, 11,
// struct pidfd_info), the structure's first version being 64 bytes.
const pidfdGetInfo = 0xC040FF0B

// pidfdInfoPid is PIDFD_INFO_PID: pid, tgid and ppid are filled.
const pidfdInfoPid = 1 << 0

// pidfdInfo is struct pidfd_info as of Linux 6.13 (PIDFD_INFO_SIZE_VER0).
type pidfdInfo struct {
	Mask                                             uint64
	CgroupID                                         uint64
	Pid, Tgid, Ppid                                  uint32
	Ruid, Rgid, Euid, Egid, Suid, Sgid, Fsuid, Fsgid uint32
	Spare0                                           uint32
}

var (
	pidfdOnce sync.Once
	pidfdErr  error
)

// PidfdUsable reports (nil) whether pidfds can stand in for /proc stat
// reads here: pidfd_open works and PIDFD_GET_INFO returns a parent. It is
// probed once, on this process.
func PidfdUsable() error {
	pidfdOnce.Do(func() {
		fd, err := unix.PidfdOpen(unix.Getpid(), 0)
		if err != nil {
			pidfdErr = fmt.Errorf("pidfd_open: %w", err)
			return
		}
		defer unix.Close(fd)
		ppid, err := PidfdParent(fd)
		if err != nil {
			pidfdErr = err
			return
		}
		if ppid != unix.Getppid() {
			pidfdErr = fmt.Errorf("PIDFD_GET_INFO: parent %d, getppid %d", ppid, unix.Getppid())
		}
	})
	return pidfdErr
}

// OpenPidfd returns a pidfd (close-on-exec) of the process pid.
func OpenPidfd(pid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return fd, nil
}

// PidfdParent returns the parent pid of the process fd refers to, as seen
// from this process's pid namespace (PIDFD_GET_INFO).
func PidfdParent(fd int) (int, error) {
	info := pidfdInfo{Mask: pidfdInfoPid}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), pidfdGetInfo, uintptr(unsafe.Pointer(&info)))
	if e != 0 {
		return 0, fmt.Errorf("PIDFD_GET_INFO: %w", e)
	}
	if info.Mask&pidfdInfoPid == 0 {
		return 0, errors.New("PIDFD_GET_INFO: no pid information")
	}
	return int(info.Ppid), nil
}

// PidfdExited reports whether the process fd refers to has exited (a
// zombie included): poll(2) without waiting. An error counts as exited,
// so a caller that treats "exited" as "not the process I recorded" stays
// on the safe side.
func PidfdExited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}
