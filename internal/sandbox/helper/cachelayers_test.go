//go:build linux

package helper

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const cacheChildEnv = "AGENTBOX_TEST_CACHE_CHILD"

// cacheLayerChild mounts the cache layer laid out under dir in a mount
// namespace of its own, writes one file through it, and prints the
// layer's mountinfo options; the namespace (and the mount) goes when the
// process exits.
func cacheLayerChild(dir string) int {
	runtime.LockOSThread()
	if err := privateMountNS(); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	c := CacheLayer{Name: "test", Lower: filepath.Join(dir, "host"), Target: filepath.Join(dir, "agent"),
		Upper: filepath.Join(dir, "layer", "upper"), Work: filepath.Join(dir, "layer", "work")}
	mount := func() error { return mountCache(c, false) }
	if fd := os.Getenv(cacheChildEnv + "_FD"); fd != "" {
		// The launcher's overlay, made ahead, moved into place.
		c.Fd, _ = strconv.Atoi(fd)
		mount = func() error { return attachCache(c) }
	}
	if err := mount(); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	n := os.Getenv(cacheChildEnv + "_N")
	if err := os.WriteFile(filepath.Join(c.Target, "entry"+n), []byte(n), 0o600); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == c.Target {
			fmt.Println("MOUNT", sc.Text())
		}
	}
	names, _ := os.ReadDir(c.Target)
	for _, e := range names {
		fmt.Println("SEES", e.Name())
	}
	return 0
}

// TestCacheLayerVolatile: a host cache's layer is mounted volatile (its
// unmount at the run's end does not sync the whole file system the layer
// is on, which the launcher waited for), the mark the kernel leaves for
// a volatile layer does not refuse the next run's mount, an overlay the
// launcher made ahead (PrepareCacheMount) is moved into place the same,
// each run sees what the earlier ones wrote, and the host's cache gets
// none of it.
func TestCacheLayerVolatile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: mounting an overlay in a mount namespace needs root (CAP_SYS_ADMIN)")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "host"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "host", "hostentry"), []byte("h"), 0o600); err != nil {
		t.Fatal(err)
	}
	layer := CacheLayer{Name: "test", Lower: filepath.Join(dir, "host"), Target: filepath.Join(dir, "agent"),
		Upper: filepath.Join(dir, "layer", "upper"), Work: filepath.Join(dir, "layer", "work")}
	for i, tc := range []struct {
		ahead bool // the overlay made ahead (PrepareCacheMount), moved into place
		want  []string
	}{
		{want: []string{"entry0", "hostentry"}},
		{want: []string{"entry0", "entry1", "hostentry"}},
		{ahead: true, want: []string{"entry0", "entry1", "entry2", "hostentry"}},
		{ahead: true, want: []string{"entry0", "entry1", "entry2", "entry3", "hostentry"}},
		{want: []string{"entry0", "entry1", "entry2", "entry3", "entry4", "hostentry"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), cacheChildEnv+"="+dir, fmt.Sprintf("%s_N=%d", cacheChildEnv, i))
		if tc.ahead {
			fd, err := PrepareCacheMount(layer)
			if err != nil {
				t.Fatalf("run %d: PrepareCacheMount: %v", i, err)
			}
			f := os.NewFile(uintptr(fd), "overlay")
			cmd.ExtraFiles = []*os.File{f}
			cmd.Env = append(cmd.Env, cacheChildEnv+"_FD=3")
			defer f.Close()
		}
		b, err := cmd.CombinedOutput()
		if tc.ahead {
			// The mark the made-ahead mount left is cleared after it,
			// off the launch's path.
			mark := filepath.Join(dir, "layer", "work", "work", "incompat", "volatile")
			for deadline := time.Now().Add(5 * time.Second); ; {
				if _, err := os.Lstat(mark); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("run %d: the volatile mark %s is still there", i, mark)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, b)
		}
		out := string(b)
		if !strings.Contains(out, "MOUNT ") || !strings.Contains(out, "volatile") {
			t.Errorf("run %d: the layer is not mounted volatile:\n%s", i, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, "SEES "+w+"\n") {
				t.Errorf("run %d: %s not seen through the layer:\n%s", i, w, out)
			}
		}
	}
	host, err := os.ReadDir(filepath.Join(dir, "host"))
	if err != nil || len(host) != 1 {
		t.Errorf("the host's cache was written: %v %v", host, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "layer", "upper", "entry4"), &st); err != nil {
		t.Errorf("the last run's entry is not in the agent's layer: %v", err)
	}
}
