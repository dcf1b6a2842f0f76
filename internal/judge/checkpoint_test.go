package judge

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/supervise"
)

// TestCommandUnitsByStartTime: without pidfds (events read from
// /proc/PID/stat carry a start time instead), a program finds its
// command among its ancestors by pid and start time, a shell's child is a
// command of its own, and a recorded process that is gone is not found
// again under its pid.
func TestCommandUnitsByStartTime(t *testing.T) {
	// b: a shell that starts c (sleep) and prints its pid
	b := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out, err := b.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { b.Process.Kill(); b.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	cpid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Command("kill", strconv.Itoa(cpid)).Run()
	event := func(pid int) *supervise.ExecEvent {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		return &supervise.ExecEvent{Pid: pid, Tgid: pid, Ppid: st.Ppid, Start: st.StartTime}
	}
	j := New(Config{})
	defer j.Close()
	evB, evC := event(b.Process.Pid), event(cpid)
	if _, isNew := j.commandOf(evB); !isNew {
		t.Fatal("the run's first program is not a command")
	}
	j.noteCommand(evB, "make", "cp1") // not a shell: its children share cp1
	if id, isNew := j.commandOf(evC); isNew || id != "cp1" {
		t.Errorf("child of a command: %q new=%v, want cp1 shared", id, isNew)
	}
	j.noteCommand(evB, "sh", "cp2") // b recorded again, as a shell
	if _, isNew := j.commandOf(evC); !isNew {
		t.Error("a shell's child is not a command of its own")
	}
	if n := j.unitPidfds; n != 0 {
		t.Errorf("%d pidfds held for events without one", n)
	}
	// b gone: a program naming it as parent finds no command
	j.noteCommand(evB, "make", "cp3")
	b.Process.Kill()
	b.Wait()
	if _, isNew := j.commandOf(&supervise.ExecEvent{Pid: cpid, Ppid: b.Process.Pid}); !isNew {
		t.Error("a command whose process is gone was found under its pid")
	}
}
