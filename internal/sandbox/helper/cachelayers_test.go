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
	if run := os.Getenv(cacheChildEnv + "_RUN"); run != "" {
		c.Work = RunWork(c.Work, run) // as the launcher gives it
	}
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
	if gate := os.Getenv(cacheChildEnv + "_GATE"); gate != "" {
		// Mounted: said, then on once the test says (every run mounted).
		os.WriteFile(gate+"."+os.Getenv(cacheChildEnv+"_N"), nil, 0o600)
		if !waitFile(gate) {
			fmt.Println("ERR not released")
			return 1
		}
	}
	if probe := os.Getenv(cacheChildEnv + "_PROBE"); probe != "" {
		// Looked up by name (a cached miss would hide a later entry).
		if _, err := os.Stat(filepath.Join(c.Target, probe)); err == nil {
			fmt.Println("HAS", probe)
		} else {
			fmt.Println("LACKS", probe)
		}
	}
	if up := os.Getenv(cacheChildEnv + "_COPYUP"); up != "" {
		// A host entry changed: copied up through the work directory.
		f, err := os.OpenFile(filepath.Join(c.Target, up), os.O_WRONLY|os.O_APPEND, 0)
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
	if wait := os.Getenv(cacheChildEnv + "_WAIT"); wait != "" && !waitFile(wait) {
		// Held mounted until the test says (another run meanwhile).
		fmt.Println("ERR not released")
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

// waitFile polls for the file at p, which the test makes, for 20 s.
func waitFile(p string) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// bothThere polls for the files at ps, for 20 s (a child that fails
// says why).
func bothThere(ps ...string) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n := 0
		for _, p := range ps {
			if _, err := os.Lstat(p); err == nil {
				n++
			}
		}
		if n == len(ps) {
			return
		}
	}
}

// TestCacheLayerVolatile: a host cache's layer the helper mounts is
// mounted volatile (its unmount at the run's end does not sync the whole
// file system the layer is on, which the launcher waited for), the mark
// the kernel leaves for a volatile layer does not refuse the next run's
// mount on the same work directory, each run sees what the earlier ones
// wrote, and the host's cache gets none of it. Two runs of the agent at
// once, each on a work directory of its own (RunWork), each copy a host
// entry up (on one work directory, the second mount's emptying of it
// broke the first's copy-ups), and their work directories are removed
// after them (TakeRunWork), with one an ended run left.
func TestCacheLayerVolatile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: mounting an overlay in a mount namespace needs root (CAP_SYS_ADMIN)")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "host"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"hostentry", "hostrun-a", "hostrun-b"} {
		if err := os.WriteFile(filepath.Join(dir, "host", n), []byte("h"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range [][]string{
		{"entry0", "hostentry"},
		{"entry0", "entry1", "hostentry"},
		{"entry0", "entry1", "entry2", "hostentry"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), cacheChildEnv+"="+dir, fmt.Sprintf("%s_N=%d", cacheChildEnv, i))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, b)
		}
		out := string(b)
		if !strings.Contains(out, "MOUNT ") || !strings.Contains(out, "volatile") {
			t.Errorf("run %d: the layer is not mounted volatile:\n%s", i, out)
		}
		for _, w := range want {
			if !strings.Contains(out, "SEES "+w+"\n") {
				t.Errorf("run %d: %s not seen through the layer:\n%s", i, w, out)
			}
		}
	}

	// Two runs at once, each on its own work directory.
	gate, release := filepath.Join(dir, "gate"), filepath.Join(dir, "release")
	work := filepath.Join(dir, "layer", "work")
	// A run that ended without removing its work directory left this
	// one (overlayfs's own directory in it mode 0).
	stale := filepath.Join(work+".runs", "ended", "work")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(stale, 0)
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	var releases []func() error
	for _, run := range []string{"run-a", "run-b"} {
		rel, err := TakeRunWork(work, run)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, rel)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), cacheChildEnv+"="+dir, cacheChildEnv+"_N="+run, cacheChildEnv+"_RUN="+run,
			cacheChildEnv+"_COPYUP=host"+run, cacheChildEnv+"_GATE="+gate, cacheChildEnv+"_WAIT="+release)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	bothThere(gate+".run-a", gate+".run-b") // both mounted
	os.WriteFile(gate, nil, 0o600)
	bothThere(filepath.Join(dir, "layer", "upper", "entryrun-a"), filepath.Join(dir, "layer", "upper", "entryrun-b"))
	os.WriteFile(release, nil, 0o600)
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil || !strings.Contains(outs[i].String(), "SEES entryrun-a\n") || !strings.Contains(outs[i].String(), "SEES entryrun-b\n") {
			t.Errorf("concurrent run %d: %v\n%s", i, err, outs[i])
		}
	}
	for _, run := range []string{"run-a", "run-b"} {
		if b, err := os.ReadFile(filepath.Join(dir, "layer", "upper", "host"+run)); err != nil || string(b) != "h+" {
			t.Errorf("%s's copy-up: %q %v", run, b, err)
		}
	}
	for i, rel := range releases {
		if err := rel(); err != nil {
			t.Errorf("run %d's work directory: %v", i, err)
		}
	}
	if names, err := os.ReadDir(work + ".runs"); err != nil || len(names) != 0 {
		t.Errorf("the runs' work directories are left: %v %v", names, err)
	}

	host, err := os.ReadDir(filepath.Join(dir, "host"))
	if err != nil || len(host) != 3 {
		t.Errorf("the host's cache was written: %v %v", host, err)
	}
	for _, e := range host {
		if b, _ := os.ReadFile(filepath.Join(dir, "host", e.Name())); string(b) != "h" {
			t.Errorf("the host's %s was written: %q", e.Name(), b)
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "layer", "upper", "entry2"), &st); err != nil {
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
	gate, release := filepath.Join(dir, "gate"), filepath.Join(dir, "release")
	a := child(prepare("run 2a"), "2a", cacheChildEnv+"_COPYUP=hostentry", cacheChildEnv+"_GATE="+gate, cacheChildEnv+"_WAIT="+release)
	b := child(prepare("run 2b"), "2b", cacheChildEnv+"_COPYUP=hostentry", cacheChildEnv+"_GATE="+gate, cacheChildEnv+"_WAIT="+release)
	var outA, outB strings.Builder
	a.Stdout, a.Stderr, b.Stdout, b.Stderr = &outA, &outA, &outB, &outB
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	bothThere(gate+".2a", gate+".2b") // both mounted
	os.WriteFile(gate, nil, 0o600)
	bothThere(filepath.Join(layer.Upper, "entry2a"), filepath.Join(layer.Upper, "entry2b"))
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

	// A test binary's clean-up: the overlays of deleted layers go, a
	// live layer's stays.
	live := parked()
	other := "0123456789abcdef-0123456789abcdef"
	plantOther := func() {
		os.Mkdir(filepath.Join(park, other), 0o700)
		os.WriteFile(filepath.Join(park, other+".layer"), []byte("1 2 "+dir+"-other/upper\n"), 0o600)
	}
	plantOther()
	if n, err := UnparkGone(); err != nil || n != 1 {
		t.Errorf("UnparkGone() = %d, %v; want 1 unparked", n, err)
	}
	if now := parked(); !slices.Equal(now, live) {
		t.Errorf("parked after UnparkGone: %v, want the live %v", now, live)
	}

	// A test's clean-up: its own parked overlays go, another's stay.
	plantOther()
	if n, err := UnparkUnder(dir); err != nil || n != 1 {
		t.Errorf("UnparkUnder(%s) = %d, %v; want 1 unparked", dir, n, err)
	}
	if now := parked(); !slices.Equal(now, []string{other}) {
		t.Errorf("parked after UnparkUnder: %v, want only another's %s", now, other)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), " "+park+"/") {
		t.Errorf("an overlay is still mounted under %s:\n%s", park, mi)
	}
}
