package helper

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if Main() {
		return
	}
	if secret := os.Getenv(landlockChildEnv); secret != "" {
		os.Exit(landlockChild(secret))
	}
	if dir := os.Getenv(cacheChildEnv); dir != "" {
		os.Exit(cacheLayerChild(dir))
	}
	if mode := os.Getenv(roChildEnv); mode != "" {
		os.Exit(readOnlyChild(mode, os.Getenv(roChildEnv+"_KEEP"), os.Getenv(roChildEnv+"_OUTSIDE")))
	}
	os.Exit(m.Run())
}

// startHelper starts this test binary as the helper with data as its
// config and no descriptors, and returns its status line and exit code.
func startHelper(t *testing.T, data []byte) (string, int) {
	t.Helper()
	return startHelperFds(t, data, nil)
}

// startHelperFds starts this test binary as the helper as the launcher
// does, with its config on a stream socket and fds attached to the
// config's first byte, and returns its status line and exit code.
func startHelperFds(t *testing.T, data []byte, fds []int) (string, int) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfgW, cfgR := os.NewFile(uintptr(pair[0]), "config"), os.NewFile(uintptr(pair[1]), "config-helper")
	defer cfgW.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer goW.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stR.Close()
	cmd := &exec.Cmd{Path: os.Args[0], Args: []string{Argv0}, ExtraFiles: []*os.File{cfgR, goR, stW}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cfgR.Close()
	goR.Close()
	stW.Close()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(int(cfgW.Fd()), data, oob, nil, 0); err != nil {
		t.Fatal(err)
	}
	cfgW.Close()
	// Released at once: the status pipe then closes at the exec or the
	// helper's exit (a refusal comes before the helper reads it).
	_, _ = goW.Write([]byte{1})
	status, _ := io.ReadAll(stR)
	cmd.Wait()
	return strings.TrimSpace(string(status)), cmd.ProcessState.ExitCode()
}

// TestHelperRefusesUnnamedDescriptors: the descriptors that come with the
// config must be exactly the host cache overlays it names; any other
// count or numbering is refused with one line before anything is set up
// (the helper never holds a descriptor it does not expect).
func TestHelperRefusesUnnamedDescriptors(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	dn := int(devnull.Fd())
	layer := func(fd int) CacheLayer {
		return CacheLayer{Name: "test", Lower: "/nonexistent/lower", Upper: "/nonexistent/u", Work: "/nonexistent/w", Target: "/nonexistent/t", Fd: fd}
	}
	for _, tc := range []struct {
		name   string
		caches []CacheLayer
		fds    []int
		want   string
	}{
		{"one sent, none named", nil, []int{dn}, "config names 0 host cache overlays, 1 descriptors came with it"},
		{"one named, none sent", []CacheLayer{layer(1)}, nil, "config names 1 host cache overlays (layer test: descriptor 1), 0 descriptors came with it"},
		{"two sent, one named", []CacheLayer{layer(1)}, []int{dn, dn}, "config names 1 host cache overlays, 2 descriptors came with it"},
		{"one named twice", []CacheLayer{layer(1), layer(1)}, []int{dn, dn}, "(layer test: descriptor 1), 2 descriptors came with it"},
		{"too many sent", nil, slices.Repeat([]int{dn}, MaxCacheFds+1), fmt.Sprintf("more than %d descriptors came with the config", MaxCacheFds)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := (&Config{Argv: []string{"/bin/true"}, Dir: "/", ParentPid: os.Getpid(), Caches: tc.caches}).Encode(nil)
			status, code := startHelperFds(t, data, tc.fds)
			if code != ExitFailure || !strings.Contains(status, tc.want) {
				t.Errorf("exit %d, status %q; want %d and %q", code, status, ExitFailure, tc.want)
			}
		})
	}
	// The same config without descriptors runs.
	data := (&Config{Argv: []string{"/bin/true"}, Dir: "/", ParentPid: os.Getpid(), Rules: []Rule{{Path: "/", Access: unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR}}}).Encode(nil)
	if status, code := startHelperFds(t, data, nil); code != 0 || status != "" {
		t.Errorf("no descriptors: exit %d, status %q", code, status)
	}
}

// TestHelperRefusesOtherFormat: a helper binary of another build says so
// on the status pipe (which the launcher prints) and runs nothing.
func TestHelperRefusesOtherFormat(t *testing.T) {
	data := (&Config{Argv: []string{"/bin/true"}, ParentPid: os.Getpid()}).Encode(nil)
	data[3] = FormatVersion + 1
	status, code := startHelper(t, data)
	if code != ExitFailure || !strings.Contains(status, "from another agentbox build") || !strings.Contains(status, fmt.Sprintf("format %d, this helper reads %d", FormatVersion+1, FormatVersion)) {
		t.Errorf("exit %d, status %q", code, status)
	}
	status, code = startHelper(t, []byte(`{"Argv":["/bin/true"]}`))
	if code != ExitFailure || !strings.Contains(status, "bad magic") {
		t.Errorf("JSON config: exit %d, status %q", code, status)
	}
}

const roChildEnv = "AGENTBOX_TEST_RO_CHILD"

// readOnlyChild makes the outside read-only with one strategy, then prints
// every mount's read-only state and options, and whether a file can be
// created in keep, in outside and in the mounts below keep: keep/rw (a
// writable tmpfs) and keep/ro (a read-only one), mounted first in a mount
// namespace of the child's own.
func readOnlyChild(mode, keep, outside string) int {
	runtime.LockOSThread()
	remountEach = mode == "each"
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	for _, sub := range []struct {
		name  string
		flags uintptr
	}{{"rw", unix.MS_NOSUID}, {"ro", unix.MS_NOSUID | unix.MS_RDONLY}} {
		d := filepath.Join(keep, sub.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", sub.flags, "size=64k"); err != nil {
			fmt.Println("ERR", err)
			return 1
		}
	}
	if _, err := readOnlyOutside([]string{keep}, nil, nil, false); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	mounts, err := readMountInfo()
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	// A mount hidden under another at the same path is out of reach;
	// the one on top (listed last) is what a path names.
	top := map[string]mountPoint{}
	var order []string
	for _, m := range mounts {
		if _, seen := top[m.path]; !seen {
			order = append(order, m.path)
		}
		top[m.path] = m
	}
	for _, p := range order {
		fmt.Printf("mount %s ro=%v flags=%#x\n", p, top[p].ro, top[p].flags)
	}
	for _, d := range []string{keep, outside, filepath.Join(keep, "rw"), filepath.Join(keep, "ro")} {
		err := os.WriteFile(filepath.Join(d, "probe"), nil, 0o600)
		fmt.Printf("write %s: %v\n", d, err)
	}
	return 0
}

// TestReadOnlyOutsideStrategies: mount_setattr on the whole tree at once
// (with copies of the writable area's mounts) and the mount-by-mount
// remount leave the same mounts read-only with the same options, and both
// refuse writes outside the writable area while it stays writable, and
// keep a mount below it as it was: writable or read-only.
func TestReadOnlyOutsideStrategies(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: a mount namespace needs root (CAP_SYS_ADMIN)")
	}
	base := t.TempDir()
	keep, outside := filepath.Join(base, "keep"), filepath.Join(base, "outside")
	for _, d := range []string{keep, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]string{}
	for _, mode := range []string{"once", "each"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), roChildEnv+"="+mode, roChildEnv+"_KEEP="+keep, roChildEnv+"_OUTSIDE="+outside)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, b)
		}
		out[mode] = string(b)
		if !strings.Contains(out[mode], "write "+keep+": <nil>") {
			t.Errorf("%s: the writable area is not writable:\n%s", mode, b)
		}
		if !strings.Contains(out[mode], "write "+outside+": open "+filepath.Join(outside, "probe")+": read-only file system") {
			t.Errorf("%s: writing outside was not refused with EROFS:\n%s", mode, b)
		}
		if !strings.Contains(out[mode], "write "+filepath.Join(keep, "rw")+": <nil>") {
			t.Errorf("%s: a writable mount below the writable area is not writable:\n%s", mode, b)
		}
		if !strings.Contains(out[mode], "write "+filepath.Join(keep, "ro")+": open "+filepath.Join(keep, "ro", "probe")+": read-only file system") {
			t.Errorf("%s: a read-only mount below the writable area became writable:\n%s", mode, b)
		}
	}
	if out["once"] != out["each"] {
		t.Errorf("the two strategies differ:\nmount_setattr:\n%s\nremount each:\n%s", out["once"], out["each"])
	}
}
