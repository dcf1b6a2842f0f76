//go:build linux

package helper

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	if probe := os.Getenv(cacheChildEnv + "_PROBE"); probe != "" {
		// Looked up by name (a cached miss would hide a later entry).
		if _, err := os.Stat(filepath.Join(c.Target, probe)); err == nil {
			fmt.Println("HAS", probe)
		} else {
			fmt.Println("LACKS", probe)
		}
	}
	if os.Getenv(cacheChildEnv+"_COPYUP") != "" {
		// A host entry changed: copied up through the work directory.
		f, err := os.OpenFile(filepath.Join(c.Target, "hostentry"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString("+")
			f.Close()
		}
		if err != nil {
			fmt.Println("ERR copy-up", err)
			return 1
		}
	}
	n := os.Getenv(cacheChildEnv + "_N")
	if err := os.WriteFile(filepath.Join(c.Target, "entry"+n), []byte(n), 0o600); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if wait := os.Getenv(cacheChildEnv + "_WAIT"); wait != "" {
		// Held mounted until the test says (another run meanwhile).
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(wait); err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Println("ERR not released")
				return 1
			}
		}
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
	// Each overlay made for its run, as where none can be parked
	// (TestCacheLayerParked has the parked ones).
	t.Setenv("AGENTBOX_CACHE_PARK", "off")
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

// TestCacheLayerParked: a root launcher parks a layer's overlay and hands
// each run a clone of it. The second run's overlay writes nothing (the
// work directory is the first's, its volatile mark left alone); a name a
// run looked up in vain and the host's cache gained since is seen by the
// next run (the parked overlay's cached lookups are dropped); two runs
// of one agent at once share the overlay, each copying a host entry up
// (two overlays on one work directory: the second mount's emptying of it
// broke the first's copy-up); a layer directory replaced by a symlink to
// the host's cache is refused, and one replaced by another directory
// gets an overlay of its own, the old one unmounted. The host's cache is
// never written.
func TestCacheLayerParked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: parking an overlay needs root (CAP_SYS_ADMIN in the host's mount namespace)")
	}
	dir := t.TempDir()
	park := filepath.Join(dir, "park")
	t.Setenv("AGENTBOX_CACHE_PARK", park)
	t.Cleanup(func() {
		names, _ := os.ReadDir(park)
		for _, e := range names {
			unix.Unmount(filepath.Join(park, e.Name()), unix.MNT_DETACH)
		}
		unix.Unmount(park, unix.MNT_DETACH)
	})
	host := filepath.Join(dir, "host")
	os.MkdirAll(host, 0o755)
	if err := os.WriteFile(filepath.Join(host, "hostentry"), []byte("h"), 0o600); err != nil {
		t.Fatal(err)
	}
	layer := CacheLayer{Name: "test", Lower: host, Target: filepath.Join(dir, "agent"),
		Upper: filepath.Join(dir, "layer", "upper"), Work: filepath.Join(dir, "layer", "work")}
	prepare := func(run string) *os.File {
		t.Helper()
		fd, err := PrepareCacheMount(layer)
		if err != nil {
			t.Fatalf("%s: PrepareCacheMount: %v", run, err)
		}
		f := os.NewFile(uintptr(fd), "overlay")
		t.Cleanup(func() { f.Close() })
		return f
	}
	child := func(f *os.File, n string, env ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), cacheChildEnv+"="+dir, cacheChildEnv+"_N="+n, cacheChildEnv+"_FD=3"), env...)
		cmd.ExtraFiles = []*os.File{f}
		return cmd
	}
	parked := func() (keys []string) {
		names, _ := os.ReadDir(park)
		for _, e := range names {
			if e.IsDir() {
				keys = append(keys, e.Name())
			}
		}
		return keys
	}
	workIno := func() uint64 {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(layer.Work, "work"), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}

	out, err := child(prepare("run 0"), "0", cacheChildEnv+"_PROBE=late").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "LACKS late") {
		t.Fatalf("run 0: %v\n%s", err, out)
	}
	keys := parked()
	if len(keys) != 1 {
		t.Fatalf("parked overlays after run 0: %v", keys)
	}
	ino := workIno()
	if err := os.WriteFile(filepath.Join(host, "late"), []byte("l"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = child(prepare("run 1"), "1", cacheChildEnv+"_PROBE=late").CombinedOutput()
	if err != nil {
		t.Fatalf("run 1: %v\n%s", err, out)
	}
	for _, w := range []string{"HAS late", "SEES entry0", "SEES entry1", "SEES hostentry"} {
		if !strings.Contains(string(out), w+"\n") {
			t.Errorf("run 1: no %q:\n%s", w, out)
		}
	}
	if workIno() != ino || !slices.Equal(parked(), keys) {
		t.Errorf("run 1 made an overlay: work directory %d (was %d), parked %v (was %v)", workIno(), ino, parked(), keys)
	}

	// Two runs of the agent at once, each copying the host's entry up.
	release := filepath.Join(dir, "release")
	a := child(prepare("run 2a"), "2a", cacheChildEnv+"_COPYUP=1", cacheChildEnv+"_WAIT="+release)
	b := child(prepare("run 2b"), "2b", cacheChildEnv+"_COPYUP=1", cacheChildEnv+"_WAIT="+release)
	var outA, outB strings.Builder
	a.Stdout, a.Stderr, b.Stdout, b.Stderr = &outA, &outA, &outB, &outB
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, ea := os.Lstat(filepath.Join(layer.Upper, "entry2a"))
		_, eb := os.Lstat(filepath.Join(layer.Upper, "entry2b"))
		if ea == nil && eb == nil {
			break
		}
		if time.Now().After(deadline) {
			break // the children say why
		}
	}
	os.WriteFile(release, nil, 0o600)
	errA, errB := a.Wait(), b.Wait()
	for i, r := range []struct {
		err error
		out string
	}{{errA, outA.String()}, {errB, outB.String()}} {
		if r.err != nil || !strings.Contains(r.out, "SEES entry2a\n") || !strings.Contains(r.out, "SEES entry2b\n") {
			t.Errorf("concurrent run %d: %v\n%s", i, r.err, r.out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(layer.Upper, "hostentry")); err != nil || string(b) != "h++" {
		t.Errorf("the concurrent runs' copy-ups: %q %v", b, err)
	}

	// The layer's upper replaced by a symlink to the host's cache: refused.
	os.Rename(layer.Upper, layer.Upper+".old")
	if err := os.Symlink(host, layer.Upper); err != nil {
		t.Fatal(err)
	}
	if fd, err := PrepareCacheMount(layer); err == nil {
		unix.Close(fd)
		t.Errorf("a symlink planted for the upper was followed")
	}
	// Replaced by another directory: a new overlay, the old one unparked.
	os.Remove(layer.Upper)
	os.Mkdir(layer.Upper, 0o700)
	out, err = child(prepare("run 3"), "3").CombinedOutput()
	if err != nil || strings.Contains(string(out), "SEES entry0") || !strings.Contains(string(out), "SEES entry3") {
		t.Errorf("run 3 on a new upper: %v\n%s", err, out)
	}
	if now := parked(); len(now) != 1 || now[0] == keys[0] {
		t.Errorf("parked after the upper was replaced: %v (was %v)", now, keys)
	}
	if names, err := os.ReadDir(host); err != nil || len(names) != 2 {
		t.Errorf("the host's cache was written: %v %v", names, err)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "hostentry")); string(b) != "h" {
		t.Errorf("the host's entry was written: %q", b)
	}
}
