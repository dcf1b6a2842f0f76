package supervise

import (
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/procfs"
	"golang.org/x/sys/unix"
)

// BenchmarkReadExec: what reading a stopped exec costs, on one process
// stopped at its exec (its /proc entries cached, unlike a new pid's):
// argv, environment and parent from /proc/PID/stat's ranges against the
// new stack and a pidfd; the whole readExecEvent; and the two ways the
// judge checks that a recorded command's process is still the one with
// its pid (a /proc/PID/stat read against a poll of a held pidfd).
func BenchmarkReadExec(b *testing.B) {
	if err := procfs.PidfdUsable(); err != nil {
		b.Skipf("reason: %v", err)
	}
	b.Run("args-proc-stat", func(b *testing.B) {
		pid, dir, dfd := stoppedExec(b)
		for b.Loop() {
			st, err := procfs.ReadStatAt(dfd, dir)
			if _, _, ok := readArgEnv(pid, st); err != nil || !ok {
				b.Fatal("read failed")
			}
		}
	})
	b.Run("args-stack-pidfd", func(b *testing.B) {
		pid, _, _ := stoppedExec(b)
		for b.Loop() {
			if _, _, _, ok := readArgEnvStack(pid); !ok {
				b.Fatal("read failed")
			}
			fd, err := procfs.OpenPidfd(pid)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := procfs.PidfdParent(fd); err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	})
	b.Run("whole", func(b *testing.B) {
		pid, _, _ := stoppedExec(b)
		for b.Loop() {
			ev, err := readExecEvent(pid)
			if err != nil {
				b.Fatal(err)
			}
			ev.closePidfd()
		}
	})
	b.Run("alive-proc-stat", func(b *testing.B) {
		pid, _, _ := stoppedExec(b)
		st, _ := procfs.ReadStat(pid)
		for b.Loop() {
			if !procfs.Alive(pid, st.StartTime) {
				b.Fatal("not alive")
			}
		}
	})
	b.Run("alive-pidfd-poll", func(b *testing.B) {
		pid, _, _ := stoppedExec(b)
		fd, err := procfs.OpenPidfd(pid)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(fd)
		for b.Loop() {
			if procfs.PidfdExited(fd) {
				b.Fatal("exited")
			}
		}
	})
}

// stoppedExec starts /bin/true stopped at its exec (startStopped) and
// returns it with its /proc directory open.
func stoppedExec(b *testing.B) (pid int, dir string, dfd int) {
	pid = startStopped(b, exec.Command("/bin/true"))
	dir = "/proc/" + strconv.Itoa(pid)
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(dfd) })
	return pid, dir, dfd
}

// startStopped starts c traced by the calling goroutine's thread (locked
// to it until the test ends: ptrace requests must come from the tracer
// thread) and returns its pid once it is stopped at its exec; it is
// killed and reaped when the test ends.
func startStopped(tb testing.TB, c *exec.Cmd) int {
	tb.Helper()
	runtime.LockOSThread()
	tb.Cleanup(runtime.UnlockOSThread)
	c.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	pid := c.Process.Pid
	tb.Cleanup(func() { unix.Kill(pid, unix.SIGKILL); c.Wait() })
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		tb.Fatalf("no exec stop: %v %v", err, ws)
	}
	return pid
}
