package procfs

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in    string
		state byte
		start uint64
		err   bool
	}{
		{"42 (sh) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 1 2 3", 'S', 12345, false},
		{"42 (a b) c)) Z 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 99 1", 'Z', 99, false},
		{"42 (sh S 1", 0, 0, true},
		{"42 (sh) S 1 2", 0, 0, true},
		{"42 (sh) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 x 1", 0, 0, true},
	} {
		st, err := ParseStat(tc.in)
		if (err != nil) != tc.err || (!tc.err && (st.State != tc.state || st.StartTime != tc.start)) {
			t.Errorf("ParseStat(%q) = %+v, %v", tc.in, st, err)
		}
	}
	me, err := ReadStat(os.Getpid())
	if err != nil || me.StartTime == 0 || !Alive(os.Getpid(), me.StartTime) || Alive(os.Getpid(), me.StartTime+1) {
		t.Errorf("own stat %+v, %v", me, err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("42 (sh) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 1")
	f.Add(strings.Repeat(")", 30))
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseStat(s)
	})
}

// TestReadStatSelf: ReadStat (one read into a stack buffer) gives what
// parsing the whole file gives, for this process and its parent.
func TestReadStatSelf(t *testing.T) {
	for _, pid := range []int{os.Getpid(), os.Getppid()} {
		got, err := ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		want, err := ParseStat(string(b))
		if err != nil || got != want || got.StartTime == 0 {
			t.Errorf("pid %d: ReadStat %+v, parse of the file %+v (%v)", pid, got, want, err)
		}
	}
	if _, err := ReadStat(1 << 30); err == nil {
		t.Error("no error for a pid that does not exist")
	}
}

// TestPidfd: a child's parent read through its pidfd is this process,
// the pidfd is not readable while the child lives and is once it exited,
// as /proc says.
func TestPidfd(t *testing.T) {
	if err := PidfdUsable(); err != nil {
		t.Skipf("reason: pidfds cannot stand in for /proc here: %v", err)
	}
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	fd, err := OpenPidfd(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ppid, err := PidfdParent(fd)
	st, serr := ReadStat(c.Process.Pid)
	if err != nil || serr != nil || ppid != os.Getpid() || ppid != st.Ppid {
		t.Fatalf("parent %d (%v), /proc says %d (%v), want %d", ppid, err, st.Ppid, serr, os.Getpid())
	}
	if PidfdExited(fd) {
		t.Fatal("a live child's pidfd says it exited")
	}
	c.Process.Kill()
	c.Wait()
	if !PidfdExited(fd) {
		t.Fatal("a reaped child's pidfd says it lives")
	}
}
