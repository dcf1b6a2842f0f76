package sandbox

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// CacheLayer is one host build or package cache shown to the command
// copy-on-write: an overlay in the run's mount namespace with the host's
// cache as its lowest layer, the agent's own cache directory (Target,
// where the tool looks) above it and the agent's layer (Upper) on top, so
// the first build is warm and nothing the run writes reaches the host's
// cache (helper/cachelayers.go). A regular user's run gets a user
// namespace for it, as for a review run's overlay.
type CacheLayer = helper.CacheLayer

// MountNamespaceAvailable says whether a run here can have a mount
// namespace of its own for overlays: root with CAP_SYS_ADMIN, or a
// regular user where unprivileged user namespaces can be made (nil), or
// why not.
func MountNamespaceAvailable() error {
	if HasCapSysAdmin() {
		return nil
	}
	return UserNSAvailable()
}

// CacheMounts are host cache overlays being made ahead of a run's helper
// (PrepareCacheMounts), handed to it with its configuration, after its
// fork (Config.CacheMounts).
type CacheMounts struct {
	layers []CacheLayer
	done   chan struct{}
	fds    []int // per layer; -1: left to the helper

	mu    sync.Mutex
	taken bool
}

// PrepareCacheMounts starts getting each layer's overlay as a detached
// mount (helper.PrepareCacheMount: a clone of the overlay parked for the
// layer between runs, parked on its first run), one goroutine per layer,
// while the run is still being set up; nil when there are none or the
// launcher cannot (not root: a regular user's helper mounts them in its
// user namespace). Creating an overlay writes to the layer's file system,
// which on a busy disk waits for its journal; a clone writes nothing. A
// layer without one is mounted by the helper, on a work directory of the
// run's own (helper.TakeRunWork).
func PrepareCacheMounts(layers []CacheLayer) *CacheMounts {
	if len(layers) == 0 || os.Geteuid() != 0 || !HasCapSysAdmin() {
		return nil
	}
	m := &CacheMounts{layers: layers, done: make(chan struct{}), fds: make([]int, len(layers))}
	var wg sync.WaitGroup
	for i, c := range layers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fd, err := prepareCacheMount(c)
			if err != nil {
				fd = -1
			}
			m.fds[i] = fd
		}()
	}
	go func() {
		wg.Wait()
		close(m.done)
	}()
	return m
}

// prepareCacheMount makes one layer's overlay ahead (a variable: a test
// holds it to see the helper start meanwhile).
var prepareCacheMount = helper.PrepareCacheMount

// take waits for the overlays and hands their descriptors to the caller
// (-1: none), the first time only.
func (m *CacheMounts) take() []int {
	if m == nil {
		return nil
	}
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.taken {
		return nil
	}
	m.taken = true
	return m.fds
}

// Close closes the overlays no helper took (a run that failed before its
// helper started).
func (m *CacheMounts) Close() {
	for _, fd := range m.take() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// cacheFiles hands the overlays made ahead for caches to a helper: their
// descriptors as files, sent with its configuration in this order, and
// each layer's Fd set to its place among them (from 1,
// helper.Config.takeCacheFds). A layer without one (or not among those
// made ahead) keeps Fd 0: the helper mounts it. It waits for overlays
// still being made.
func (m *CacheMounts) cacheFiles(caches []CacheLayer) []*os.File {
	fds := m.take()
	var files []*os.File
	for i, fd := range fds {
		if fd < 0 {
			continue
		}
		f := os.NewFile(uintptr(fd), "agentbox-cache-overlay")
		matched := false
		for j := range caches {
			if caches[j].Fd == 0 && caches[j].Target == m.layers[i].Target && caches[j].Upper == m.layers[i].Upper {
				caches[j].Fd = 1 + len(files)
				matched = true
				break
			}
		}
		if !matched {
			f.Close()
			continue
		}
		files = append(files, f)
	}
	return files
}
