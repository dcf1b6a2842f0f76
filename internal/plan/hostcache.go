package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// Host package caches: what is already downloaded on the machine, offered
// to the sandbox read-only so builds and test suites work without
// network. Writes still go to the sandbox's own caches.
//
//   - Go: the host's module download cache ($GOMODCACHE/cache/download)
//     as a file:// GOPROXY ahead of the caller's own; the go command
//     copies modules from it into the sandbox's module cache and checks
//     each against go.sum (and the checksum database for modules go.sum
//     does not list).
//
// npm, pip and cargo are not offered: each writes into its cache while it
// reads it (npm's index, pip's http cache, cargo's package-cache lock), so
// a read-only cache fails them, and a writable shared one would let one
// run poison the next.

// HostCache is one host cache a run reads.
type HostCache struct {
	Tool string // "go"
	Dir  string // granted read-only
	Env  []string
}

// hostCaches works out the caches of the caller's environment; notes are
// one-line reasons a cache is not offered (missing, unreadable, reached
// through a symlink). A cache inside the workspace or any area the run
// may write (writable: the workspace first, then --rw and extra_write
// grants) is an error: the agent would write what a later run reads as
// the host's.
func hostCaches(callerEnv []string, writable []string) (caches []HostCache, notes []string, err error) {
	env := func(k string) string { return sandbox.EnvValue(callerEnv, k) }
	mod := env("GOMODCACHE")
	// named: the caller set where the cache is; a default path that does
	// not exist (no Go here) is no news.
	named := mod != "" || env("GOPATH") != ""
	if mod == "" {
		gopath := env("GOPATH")
		if gopath == "" {
			if home := env("HOME"); home != "" {
				gopath = filepath.Join(home, "go")
			}
		} else {
			gopath = filepath.SplitList(gopath)[0]
		}
		if gopath != "" {
			mod = filepath.Join(gopath, "pkg", "mod")
		}
	}
	if mod == "" || !filepath.IsAbs(mod) {
		return nil, nil, nil
	}
	dl := filepath.Join(filepath.Clean(mod), "cache", "download")
	real, rerr := filepath.EvalSymlinks(dl)
	switch {
	case rerr != nil:
		if named {
			notes = append(notes, "host Go module cache "+dl+" not found: Go modules come from the network, if the role reaches it")
		}
		return nil, notes, nil
	case real != dl:
		notes = append(notes, "host Go module cache "+dl+" is reached through a symlink (to "+real+"): not offered")
		return nil, notes, nil
	case inAny(real, writable) != "":
		where := "the workspace"
		if w := inAny(real, writable); w != writable[0] {
			where = "the writable grant " + w
		}
		return nil, nil, fmt.Errorf("host Go module cache %s is inside %s: the agent could write what later runs read as the host's (move GOMODCACHE out, or --host-caches off)", dl, where)
	case unix.Access(dl, unix.R_OK|unix.X_OK) != nil:
		notes = append(notes, "host Go module cache "+dl+" is not readable: not offered")
		return nil, notes, nil
	}
	if st, err := os.Stat(dl); err != nil || !st.IsDir() {
		notes = append(notes, "host Go module cache "+dl+" is not a directory: not offered")
		return nil, notes, nil
	}
	proxy := env("GOPROXY")
	if proxy == "" {
		proxy = "https://proxy.golang.org,direct"
	}
	caches = append(caches, HostCache{Tool: "go", Dir: dl, Env: []string{"GOPROXY=file://" + dl + "," + proxy}})
	return caches, notes, nil
}

// inAny returns the first of dirs that p is in or below ("" none).
func inAny(p string, dirs []string) string {
	for _, d := range dirs {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		if d != "" && (p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")) {
			return d
		}
	}
	return ""
}
