//go:build linux

package sandbox

// Wires this file set's cgroup implementation into the launcher's hooks
// (launcher.go). Run names get the "agentbox-" prefix cleanupStaleCgroups
// looks for.
func init() {
	newCgroupFn = func(name string, memoryBytes int64, cpus float64, pids int64) (cgroupHandle, error) {
		return newCgroup("agentbox-"+name, cgroupLimits{MemoryBytes: memoryBytes, CPUs: cpus, Pids: pids})
	}
	cgroupsAvailableFn = CgroupsAvailable
	cleanupCgroupsFn = cleanupStaleCgroups
}

// Counts returns the OOM-kill and refused-fork counters (see Events) in
// the shape the launcher's cgroupHandle wants.
func (c *runCgroup) Counts() (oomKills, pidsMaxHits int) {
	ev := c.Events()
	return int(ev.OOMKills), int(ev.PidsMaxHits)
}

// usage is Usage in the shape the launcher's cgroupHandle wants.
func (c *runCgroup) usage() (peakMemory, cpuNanos, peakPids uint64) {
	u := c.Usage()
	return u.PeakMemory, u.CPUNanos, u.PeakPids
}
