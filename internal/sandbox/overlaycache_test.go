//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// TestCacheClonesAfterSpawn: the helper is forked while the host caches'
// overlays are still being made (they follow its configuration), and the
// run still gets the overlay made ahead. The clone is held until a helper
// of this process exists; a launcher that waits for the clones before the
// fork never starts one, and the hold gives up at its deadline.
func TestCacheClonesAfterSpawn(t *testing.T) {
	if os.Geteuid() != 0 || !HasCapSysAdmin() {
		t.Skip("reason: overlays made ahead need root (CAP_SYS_ADMIN in the host's mount namespace)")
	}
	w := newTestWS(t)
	park := filepath.Join(t.TempDir(), "park")
	t.Setenv("AGENTBOX_CACHE_PARK", park)
	t.Cleanup(func() {
		names, _ := os.ReadDir(park)
		for _, e := range names {
			_ = unix.Unmount(filepath.Join(park, e.Name()), unix.MNT_DETACH)
		}
		_ = unix.Unmount(park, unix.MNT_DETACH)
	})
	host := filepath.Join(w.Out, "hostcache")
	must(t, os.MkdirAll(host, 0o755))
	write(t, filepath.Join(host, "entry"), "from the host\n", 0o644)
	agent := filepath.Join(w.W, "agents", "a1")
	layer := CacheLayer{Name: "test", Lower: host, Target: filepath.Join(agent, "cache", "test"),
		Upper: filepath.Join(agent, "layers", "test", "upper"), Work: filepath.Join(agent, "layers", "test", "work")}

	var held, sawHelper atomic.Bool
	real := prepareCacheMount
	prepareCacheMount = func(c CacheLayer) (int, error) {
		held.Store(true)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if helperChildOf(os.Getpid()) {
				sawHelper.Store(true)
				break
			}
		}
		return real(c)
	}
	t.Cleanup(func() { prepareCacheMount = real })

	r := w.sh(runOpts{caches: []CacheLayer{layer}}, "cat "+layer.Target+"/entry && echo agent > "+layer.Target+"/new")
	if r.err != nil || r.code != 0 {
		t.Fatalf("run: code %d, err %v\n%s", r.code, r.err, r.out)
	}
	if !held.Load() {
		t.Fatal("no overlay was made ahead")
	}
	if !sawHelper.Load() {
		t.Error("the helper was not started while the host cache's overlay was being made")
	}
	if !strings.Contains(r.out, "from the host") || strings.Contains(r.out, "not layered") {
		t.Errorf("the host's cache entry not seen through the layer:\n%s", r.out)
	}
	if _, err := os.Stat(filepath.Join(host, "new")); err == nil {
		t.Error("the run's write reached the host's cache")
	}
	if b, err := os.ReadFile(filepath.Join(layer.Upper, "new")); err != nil || string(b) != "agent\n" {
		t.Errorf("the run's write is not in its layer: %q, %v", b, err)
	}
}

// helperChildOf says whether a child of pid runs as the sandbox helper.
func helperChildOf(pid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if string(bytes.TrimRight(cmd, "\x00")) == helper.Argv0 {
			return true
		}
	}
	return false
}
