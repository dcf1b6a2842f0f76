package helper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

const landlockChildEnv = "AGENTBOX_TEST_LANDLOCK_CHILD"

// landlockChild restricts its locked thread as the helper does, with
// other threads of the runtime alive, prints the other threads'
// no_new_privs, and execs a shell that tries to read secret (outside
// every rule) and prints its own no_new_privs.
func landlockChild(secret string) int {
	runtime.LockOSThread()
	for range 4 {
		go func() {
			runtime.LockOSThread() // each on a thread of its own, parked
			select {}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		tasks, _ := os.ReadDir("/proc/self/task")
		if len(tasks) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("ERR the runtime started no other threads")
			return 1
		}
		time.Sleep(time.Millisecond)
	}
	rx := uint64(llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir)
	cfg := &Config{Rules: []Rule{
		{Path: "/usr", Access: rx}, {Path: "/bin", Access: rx, Optional: true},
		{Path: "/lib", Access: rx, Optional: true}, {Path: "/lib64", Access: rx, Optional: true},
		{Path: "/etc", Access: rx}, {Path: "/proc", Access: rx},
	}}
	if err := applyLandlock(cfg); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	self := syscall.Gettid()
	tasks, _ := os.ReadDir("/proc/self/task")
	var others []string
	for _, t := range tasks {
		if t.Name() == fmt.Sprint(self) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "status"))
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "NoNewPrivs:"); ok {
				others = append(others, strings.TrimSpace(v))
			}
		}
	}
	fmt.Printf("others %s\n", strings.Join(others, " "))
	os.Stdout.Sync()
	script := `cat "$1" && echo READ; grep NoNewPrivs /proc/self/status`
	err := syscall.Exec("/bin/sh", []string{"sh", "-c", script, "sh", secret}, os.Environ())
	fmt.Println("ERR exec:", err)
	return 1
}

// TestLandlockExecThread: the helper restricts the thread that execs,
// without the runtime's all-threads syscall (which stops the world and
// waits for every thread to be scheduled: milliseconds per launch on a
// loaded machine), and the program it execs is confined: a file outside
// every rule cannot be read, and no_new_privs is set.
func TestLandlockExecThread(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("reason: the kernel has no Landlock")
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), landlockChildEnv+"="+secret)
	out, _ := cmd.CombinedOutput()
	got := string(out)
	if strings.Contains(got, "ERR") || strings.Contains(got, "READ") || strings.Contains(got, "s3cret") {
		t.Fatalf("the exec'd program read outside its rules or the child failed:\n%s", got)
	}
	if !strings.Contains(got, "Permission denied") || !strings.Contains(got, "NoNewPrivs:\t1") {
		t.Errorf("want the read refused and no_new_privs set in the exec'd program:\n%s", got)
	}
	i := strings.Index(got, "others ")
	if i < 0 {
		t.Fatalf("no report of the other threads:\n%s", got)
	}
	others, _, _ := strings.Cut(got[i+len("others "):], "\n")
	if f := strings.Fields(others); len(f) < 4 || strings.Contains(others, "1") {
		t.Errorf("the other threads' no_new_privs %q: want 0 on each (the restriction on the exec'ing thread alone)", others)
	}
}
