//go:build linux

package cgroup

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// onMain runs functions on the process's main thread (the thread group
// leader), which init locks to the main goroutine and TestMain serves.
var onMain = make(chan func())

func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	done := make(chan int)
	go func() { done <- m.Run() }()
	for {
		select {
		case f := <-onMain:
			f()
		case code := <-done:
			os.Exit(code)
		}
	}
}

// runOnMain calls f on the main thread and waits for it.
func runOnMain(f func()) {
	ok := make(chan struct{})
	onMain <- func() { f(); close(ok) }
	<-ok
}

// TestLayoutWhileLeaderInRunCgroup holds that a run's cgroups are created
// under the launcher's own cgroups even while the launcher's main thread
// is inside another run's cgroups, as it is on cgroup v1 for the moment
// it forks a run's helper there (spawnHelper). /proc/self/cgroup shows the
// main thread's cgroups: reading it then put the new run's cgroup inside
// the other run's, whose kill and removal at its end killed the new run
// (the TestEmbedConcurrentRuns failure in CI).
func TestLayoutWhileLeaderInRunCgroup(t *testing.T) {
	needCgroups(t)
	before, err := detectCgroupLayout()
	if err != nil {
		t.Fatal(err)
	}
	if before.v2 {
		t.Skip("reason: on cgroup v2 the launcher starts helpers with CLONE_INTO_CGROUP; no thread moves")
	}
	c, err := New(testCgroupName(t), Limits{Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	tasks := c.ThreadTasks()
	if len(tasks) == 0 {
		t.Skip("reason: this launcher thread is not in the cgroups run cgroups are made under; runs move processes instead")
	}
	write := func(files []string) error {
		for _, f := range files {
			if err := os.WriteFile(f, []byte("0"), 0); err != nil {
				return err
			}
		}
		return nil
	}
	var parents []string
	for _, f := range tasks {
		parents = append(parents, filepath.Join(filepath.Dir(filepath.Dir(f)), "tasks"))
	}
	var moveErr error
	runOnMain(func() {
		if unix.Gettid() != os.Getpid() {
			moveErr = os.ErrInvalid
			return
		}
		moveErr = write(tasks)
	})
	if moveErr != nil {
		t.Fatalf("moving the main thread into %v: %v", tasks, moveErr)
	}
	defer runOnMain(func() {
		if err := write(parents); err != nil {
			t.Errorf("moving the main thread back: %v", err)
		}
	})
	during, err := detectCgroupLayout()
	if err != nil {
		t.Fatal(err)
	}
	for ctrl, p := range before.parents {
		if during.parents[ctrl] != p {
			t.Errorf("with the main thread in a run's cgroup, runs of %s go under %s; want %s", ctrl, during.parents[ctrl], p)
		}
	}
}
