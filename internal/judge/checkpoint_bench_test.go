//go:build linux

package judge

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/supervise"
	"golang.org/x/sys/unix"
)

// TestMain lets this test binary serve as the checkpoint change journal
// (BenchmarkExecDecideCheckpoints starts it as a run's end does).
func TestMain(m *testing.M) {
	checkpoint.MaybeRunJournal() // exits when started as the journal
	os.Exit(m.Run())
}

// benchRecorder adapts a checkpoint.Recorder as the root package does.
type benchRecorder struct{ rec *checkpoint.Recorder }

func (c benchRecorder) Before() (string, error) { return c.rec.Before() }
func (c benchRecorder) Clean() bool             { return c.rec.Clean() }
func (c benchRecorder) Link(id string, seq uint64, pid int, argv []string) error {
	return c.rec.Link(checkpoint.IndexEntry{Kind: checkpoint.IndexCommand, Checkpoint: id, Seq: seq, Pid: pid, Argv: argv})
}

// startJournal records one run over areas, whose end starts the store's
// journal (this test binary), waits until it answers and stops it when
// the benchmark ends.
func startJournal(b *testing.B, cfg checkpoint.RecorderConfig) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cfg.Journal, cfg.JournalExe, cfg.Run = true, exe, "r0"
	rec, err := checkpoint.StartRecorder(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := rec.Finish(); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("unix", filepath.Join(cfg.Dir, "journal.sock"))
		if err == nil {
			raw, _ := c.(*net.UnixConn).SyscallConn()
			var cred *unix.Ucred
			raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
			c.Close()
			if err != nil {
				b.Fatal(err)
			}
			pid := int(cred.Pid)
			b.Cleanup(func() { stopProcess(b, pid) })
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("no journal answers 20s after the first run's end: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopProcess kills pid (the journal this benchmark started) and waits
// until it is gone.
func stopProcess(b *testing.B, pid int) {
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := procfs.ReadStat(pid)
		if err != nil || st.State == 'Z' {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Errorf("journal %d still there 10s after SIGKILL", pid)
}

// absentPid is a pid no process has: an exec event of it is recorded by
// no unit, so each one is a new command of its parent, the shell.
func absentPid(b *testing.B) int {
	max := 1 << 22
	if s, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(s))); err == nil {
			max = n
		}
	}
	for pid := max - 1; pid > max-100; pid-- {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return pid
		}
	}
	b.Skip("no free pid near pid_max for a fake program")
	return 0
}

// BenchmarkExecDecideCheckpoints is BenchmarkExecPolicyDecide's "true"
// with checkpoints on, as inside `agentbox run`: a recorder whose store's
// change journal answers, and each program a new command of the shell
// that started it (a shell's loop of /bin/true). "unchanged": nothing
// changes between the programs, which are then decided on the tracer
// thread (DecideFast) without a question to the journal; "changed": a
// file is written before each, so each asks the journal and is decided
// off it (Decide). fast/op is the share DecideFast decided.
func BenchmarkExecDecideCheckpoints(b *testing.B) {
	ws := b.TempDir()
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.go", i)), []byte("package p\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg := checkpoint.RecorderConfig{Dir: filepath.Join(b.TempDir(), "store"), Areas: []checkpoint.Area{{Name: "target", Dir: ws}}}
	startJournal(b, cfg)
	cfg.Run, cfg.Journal = "r1", true
	rec, err := checkpoint.StartRecorder(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	w, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	pol := New(Config{Engine: testEngine(b, "developer"), Audit: w, Checkpoints: benchRecorder{rec}})
	defer pol.Close()
	self, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	// the shell: this process (alive for the table's check)
	sh := &supervise.ExecEvent{Pid: os.Getpid(), Ppid: os.Getppid(), Start: self.StartTime, Program: "sh", Exe: "/bin/sh", Argv: []string{"sh", "-c", "for i in $(seq 2000); do /bin/true; done"}, Env: []string{"PATH=/usr/bin"}, Cwd: ws}
	if v := pol.Decide(sh); !v.Allow {
		b.Fatalf("sh denied: %s", v.Message)
	}
	ev := &supervise.ExecEvent{Pid: absentPid(b), Ppid: os.Getpid(), Program: "true", Exe: "/usr/bin/true", Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin"}, Cwd: ws}
	decide := func(b *testing.B) bool {
		v, fast := pol.DecideFast(ev)
		if !fast {
			v = pol.Decide(ev)
		}
		if !v.Allow {
			b.Fatalf("/bin/true denied: %s", v.Message)
		}
		return fast
	}
	decide(b) // the shell's first command: the start checkpoint, no question
	for _, c := range []struct {
		name   string
		change bool
	}{{"unchanged", false}, {"changed", true}} {
		b.Run(c.name, func(b *testing.B) {
			fast := 0
			for i := 0; i < b.N; i++ {
				if c.change {
					b.StopTimer()
					if err := os.WriteFile(filepath.Join(ws, "f00.go"), []byte("package p // "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if decide(b) {
					fast++
				}
			}
			b.ReportMetric(float64(fast)/float64(b.N), "fast/op")
		})
	}
}
