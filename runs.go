package agentbox

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/registry"
)

// RunInfo describes a run in progress, from the run registry.
type RunInfo = registry.Entry

// ErrNoSuchRun is returned by StopRun for a run that is not in progress.
var ErrNoSuchRun = registry.ErrNotFound

// List returns the runs in progress registered in dir ("" for the default
// per-user registry), oldest first. Entries of launchers that died are
// dropped.
func List(dir string) ([]RunInfo, error) {
	if dir == "" {
		dir = registry.DefaultDir()
	}
	return registry.List(dir)
}

// StopRun ends run id, whichever process launched it: SIGTERM to the
// command's process group, SIGKILL after grace, then it waits (bounded) for
// the launcher to clean up — kill and reap every descendant, write the exit
// event, remove the registry entry.
func StopRun(dir, id string, grace time.Duration) error {
	if dir == "" {
		dir = registry.DefaultDir()
	}
	e, err := registry.Get(dir, id)
	if err != nil {
		return err
	}
	if e.Pid == 0 || !registry.Alive(e.Pid, e.PidStart) {
		// The command is gone; the launcher is finishing.
		return waitGone(dir, id, 10*time.Second)
	}
	_ = signalGroup(e.Pid, syscall.SIGTERM)
	if waitGone(dir, id, grace) == nil {
		return nil
	}
	if registry.Alive(e.Pid, e.PidStart) {
		_ = signalGroup(e.Pid, syscall.SIGKILL)
	}
	return waitGone(dir, id, 10*time.Second)
}

// waitGone polls the registry until run id's entry is gone or d passes.
// The entry is removed by the launcher when everything of the run is gone;
// there is no event to wait on across processes, so this polls at 20 ms.
func waitGone(dir, id string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		_, err := registry.Get(dir, id)
		if errors.Is(err, registry.ErrNotFound) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s still running after %v", id, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
