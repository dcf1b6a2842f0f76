package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/policy"
)

// Host caches: what is already downloaded and built on the machine,
// offered to the sandbox so its first build is warm and works without
// network. Nothing the sandbox writes reaches them.
//
//   - Go modules: the host's module download cache
//     ($GOMODCACHE/cache/download) as a file:// GOPROXY ahead of the
//     caller's own; the go command copies modules from it into the
//     sandbox's module cache and checks each against go.sum (and the
//     checksum database for modules go.sum does not list).
//   - Build and package caches (layers): Go's build cache (GOCACHE),
//     npm's (~/.npm/_cacache), pip's (~/.cache/pip), cargo's registry
//     and git checkouts (~/.cargo/registry, ~/.cargo/git) and Maven's
//     repository (~/.m2/repository), each the lowest layer of an overlay
//     in the run's mount namespace where the tool looks for its cache in
//     the agent's area: the agent's own cache above it, the agent's layer
//     (W/agents/ID/cache/.hostlayers/NAME) on top, so what the run writes
//     lands in the agent's layer (and warms its next run) and never in
//     the host's directory (sandbox/helper/cachelayers.go). npm, pip and
//     cargo write into their caches while they read them; the layer takes
//     those writes. Where no mount namespace can be had (a regular user
//     without user namespaces) they are not offered, said in one line.

// HostCache is one host cache a run reads.
type HostCache struct {
	Tool string // "go" (modules), "go-build", "npm", "pip", "cargo-registry", "cargo-git", "maven"
	Dir  string // the host's directory (granted read-only for "go")
	Env  []string
	// Layer, when set, shows Dir copy-on-write at Layer.Target.
	Layer *sandbox.CacheLayer
}

// layerSpec is one build or package cache a run can layer.
type layerSpec struct {
	name   string
	atHost bool
	// host is the caller's cache directory ("" none); named: the caller
	// set where it is (a missing one is then news).
	host func(env func(string) string) (dir string, named bool)
	// target is where the tool finds its cache in the sandbox; env the
	// settings that make it look there.
	target func(cache, home string) string
	env    func(cache, home string, env func(string) string) []string
}

// homeJoin is HOME/rel ("" without an absolute HOME).
func homeJoin(env func(string) string, rel ...string) string {
	if h := env("HOME"); filepath.IsAbs(h) {
		return filepath.Join(append([]string{h}, rel...)...)
	}
	return ""
}

// xdgCache is the caller's XDG cache directory joined with rel.
func xdgCache(env func(string) string, rel string) string {
	if x := env("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, rel)
	}
	return homeJoin(env, ".cache", rel)
}

func cargoHome(env func(string) string) (string, bool) {
	if c := env("CARGO_HOME"); filepath.IsAbs(c) {
		return c, true
	}
	return homeJoin(env, ".cargo"), false
}

// goModCache is the caller's Go module cache.
func goModCache(env func(string) string) (string, bool) {
	if m := env("GOMODCACHE"); m != "" {
		return m, true
	}
	if gp := env("GOPATH"); gp != "" {
		return filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod"), true
	}
	return homeJoin(env, "go", "pkg", "mod"), false
}

// layerSpecs are the caches layered, in launch-line order. A spec with
// atHost shows the cache at the host's own path (sandbox.CacheLayer's
// Access).
var layerSpecs = []layerSpec{
	{name: "go-build",
		host: func(env func(string) string) (string, bool) {
			if g := env("GOCACHE"); g != "" {
				if g == "off" || !filepath.IsAbs(g) {
					return "", false
				}
				return g, true
			}
			return xdgCache(env, "go-build"), false
		},
		// GOCACHE already points there (sandbox/env.go).
		target: func(cache, _ string) string { return filepath.Join(cache, "go-build") },
		env:    func(string, string, func(string) string) []string { return nil }},
	// Go's module cache at the host's own path: the build cache keys a
	// module's compiled packages by their directory, so the host's
	// compiled dependencies are reused only there.
	{name: "go-mod", atHost: true,
		host: func(env func(string) string) (string, bool) {
			m, named := goModCache(env)
			if !filepath.IsAbs(m) {
				return "", false
			}
			return m, named
		},
		env: func(string, string, func(string) string) []string { return nil }},
	{name: "npm",
		host: func(env func(string) string) (string, bool) {
			for _, k := range []string{"npm_config_cache", "NPM_CONFIG_CACHE"} {
				if c := env(k); filepath.IsAbs(c) {
					return filepath.Join(c, "_cacache"), true
				}
			}
			return homeJoin(env, ".npm", "_cacache"), false
		},
		target: func(cache, _ string) string { return filepath.Join(cache, "npm", "_cacache") },
		env: func(cache, _ string, _ func(string) string) []string {
			return []string{"npm_config_cache=" + filepath.Join(cache, "npm")}
		}},
	{name: "pip",
		host: func(env func(string) string) (string, bool) {
			if c := env("PIP_CACHE_DIR"); filepath.IsAbs(c) {
				return c, true
			}
			return xdgCache(env, "pip"), false
		},
		target: func(cache, _ string) string { return filepath.Join(cache, "pip") },
		env: func(cache, _ string, _ func(string) string) []string {
			return []string{"PIP_CACHE_DIR=" + filepath.Join(cache, "pip")}
		}},
	{name: "cargo-registry",
		host: func(env func(string) string) (string, bool) {
			c, named := cargoHome(env)
			return joinIf(c, "registry"), named
		},
		target: func(_, home string) string { return filepath.Join(home, ".cargo", "registry") },
		env: func(_, home string, _ func(string) string) []string {
			return []string{"CARGO_HOME=" + filepath.Join(home, ".cargo")}
		}},
	{name: "cargo-git",
		host: func(env func(string) string) (string, bool) {
			c, named := cargoHome(env)
			return joinIf(c, "git"), named
		},
		target: func(_, home string) string { return filepath.Join(home, ".cargo", "git") },
		env: func(_, home string, _ func(string) string) []string {
			return []string{"CARGO_HOME=" + filepath.Join(home, ".cargo")}
		}},
	{name: "maven",
		host:   func(env func(string) string) (string, bool) { return homeJoin(env, ".m2", "repository"), false },
		target: func(_, home string) string { return filepath.Join(home, ".m2", "repository") },
		// Java's user.home is the passwd entry's, not HOME: name the
		// repository (after the caller's own options).
		env: func(_, home string, env func(string) string) []string {
			return []string{"MAVEN_OPTS=" + strings.TrimSpace(env("MAVEN_OPTS")+" -Dmaven.repo.local="+filepath.Join(home, ".m2", "repository"))}
		}},
}

func joinIf(dir, rel string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, rel)
}

// planHostCaches works out the host caches of the run when the role (or
// --host-caches) offers them: the module proxy and the layers (placed by
// placeCacheLayers once the agent's area is known). With them off it
// notes a cold agent build cache the host's would warm.
func (p *Plan) planHostCaches(in Input, role *policy.RoleInfo, wsReal string) error {
	on := role.HostCaches
	if in.HostCaches != nil {
		on = *in.HostCaches
	}
	if !on {
		p.coldHint = true
		return nil
	}
	writable := resolvedDirs(append([]string{wsReal}, append(absPaths(in.GrantWrite), role.FS.ExtraWrite...)...))
	caches, notes, err := hostCachesWith(p.CallerEnv, writable, p.host.probe)
	if err != nil {
		return &OptionError{Option: "host-caches", Err: err}
	}
	for _, c := range caches {
		role.FS.RunRead = append(role.FS.RunRead, c.Dir)
		p.ExtraEnv = append(p.ExtraEnv, c.Env...)
	}
	layers, lnotes, err := hostLayersWith(p.CallerEnv, writable, p.host.probe)
	if err != nil {
		return &OptionError{Option: "host-caches", Err: err}
	}
	notes = append(notes, lnotes...)
	if len(layers) > 0 {
		if why := layersUnavailable(wsReal); why != "" {
			var names []string
			for _, l := range layers {
				names = append(names, l.Tool)
			}
			notes = append(notes, "host caches ("+strings.Join(names, " ")+") not layered: "+why+"; builds start from this agent's own caches")
			layers = nil
		}
	}
	p.HostCaches, p.CacheNotes = append(caches, layers...), notes
	return nil
}

// layersUnavailable says why this run cannot have the layers' mount
// namespace ("" it can).
func layersUnavailable(wsReal string) string {
	if err := sandbox.MountNamespaceAvailable(); err != nil {
		return "no mount namespace of the run's own here (" + err.Error() + ")"
	}
	if os.Geteuid() == 0 {
		// A root-owned cache under a command run as the workspace's
		// owner (sandbox.runAsFor): the owner could not write the merged
		// view's directories.
		var st unix.Stat_t
		if unix.Stat(wsReal, &st) == nil && st.Uid != 0 {
			return fmt.Sprintf("the command runs as the workspace's owner (uid %d), who cannot write in root's caches", st.Uid)
		}
	}
	return ""
}

// placeCacheLayers puts each layer in the agent's area, once the boundary
// is resolved: the target where the tool looks, the agent's layer beside
// it, and the tool's settings (added to ExtraEnv and passed through).
// With the layers off it notes a cold build cache the host's would warm.
func (p *Plan) placeCacheLayers(role *policy.RoleInfo) {
	b := p.Boundary
	env := func(k string) string { return sandbox.EnvValue(p.CallerEnv, k) }
	if p.coldHint {
		p.coldNote(env)
		return
	}
	seen := map[string]bool{}
	for _, c := range p.HostCaches {
		if c.Layer == nil {
			continue
		}
		var spec layerSpec
		for _, s := range layerSpecs {
			if s.name == c.Tool {
				spec = s
			}
		}
		layers := filepath.Join(b.Cache, ".hostlayers", c.Tool)
		c.Layer.Upper, c.Layer.Work = filepath.Join(layers, "upper"), filepath.Join(layers, "work")
		kvs := []string(nil)
		if spec.atHost {
			// Writable in the merged view as the agent's own area is.
			for _, r := range b.Rules {
				if r.Path == b.OwnAgent {
					c.Layer.Access = uint64(r.Rights)
				}
			}
			c.Layer.Target = c.Dir
			if c.Layer.Access == 0 {
				c.Layer.Target = "" // no rule to copy: not layered
				continue
			}
			kvs = []string{"GOMODCACHE=" + c.Dir}
		} else {
			c.Layer.Target = spec.target(b.Cache, b.Home)
			kvs = spec.env(b.Cache, b.Home, env)
		}
		for _, kv := range kvs {
			if seen[kv] {
				continue
			}
			seen[kv] = true
			p.ExtraEnv = append(p.ExtraEnv, kv)
			name, _, _ := strings.Cut(kv, "=")
			role.Env = append(role.Env, name)
		}
	}
}

// coldNote adds the one line that says a first Go build will be slow for
// a reason the user can fix: host caches off, the host has a build
// cache, this agent has none yet, and target/ holds a Go module.
func (p *Plan) coldNote(env func(string) string) {
	host, _ := layerSpecs[0].host(env)
	if host == "" {
		return
	}
	if st, err := os.Stat(host); err != nil || !st.IsDir() {
		return
	}
	if _, err := os.Stat(filepath.Join(p.Boundary.Cache, "go-build")); err == nil {
		return
	}
	mods, _ := filepath.Glob(filepath.Join(p.Boundary.Target, "go.mod"))
	if len(mods) == 0 {
		mods, _ = filepath.Glob(filepath.Join(p.Boundary.Target, "*", "go.mod"))
	}
	if len(mods) == 0 {
		return
	}
	p.CacheNotes = append(p.CacheNotes, "first build in this agent's cache is cold; --host-caches would start it from the host's ("+host+")")
}

// cacheLayers are the layers the sandbox mounts.
func (p *Plan) cacheLayers() []sandbox.CacheLayer {
	var out []sandbox.CacheLayer
	for _, c := range p.HostCaches {
		if c.Layer != nil && c.Layer.Target != "" {
			out = append(out, *c.Layer)
		}
	}
	return out
}

// hostLayers finds the caller's build and package caches (layerSpecs);
// notes say why one found is not offered. One inside a writable area is
// an error, as for the module cache. writable is resolved (resolvedDirs).
func hostLayers(callerEnv []string, writable []string) (layers []HostCache, notes []string, err error) {
	return hostLayersWith(callerEnv, writable, probeDir)
}

// hostLayersWith is hostLayers with each cache directory probed by probe.
func hostLayersWith(callerEnv []string, writable []string, probe func(string) dirProbe) (layers []HostCache, notes []string, err error) {
	env := func(k string) string { return sandbox.EnvValue(callerEnv, k) }
	for _, s := range layerSpecs {
		dir, named := s.host(env)
		if dir == "" {
			continue
		}
		dir = filepath.Clean(dir)
		ok, note, err := usableCache("host "+s.name+" cache", probe(dir), dir, named, writable)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
			continue
		}
		if !ok {
			continue // not there and not named: no news
		}
		if strings.ContainsAny(dir, ",:\\") {
			notes = append(notes, "host "+s.name+" cache "+dir+" holds ',', ':' or '\\', which overlayfs options cannot carry: not offered")
			continue
		}
		layers = append(layers, HostCache{Tool: s.name, Dir: dir, Layer: &sandbox.CacheLayer{Name: s.name, Lower: dir}})
	}
	return layers, notes, nil
}

// usableCache checks a host cache directory: ok when it can be offered;
// one reached through a symlink, unreadable or not a directory is noted
// and not offered (a missing one only when named: else neither ok nor a
// note, and not stat'ed again); one inside a writable area is an error.
func usableCache(what string, pr dirProbe, dir string, named bool, writable []string) (ok bool, note string, err error) {
	real, rerr := pr.real, pr.err
	switch {
	case rerr != nil:
		if named {
			return false, what + " " + dir + " not found: not offered", nil
		}
		return false, "", nil
	case real != dir:
		return false, what + " " + dir + " is reached through a symlink (to " + real + "): not offered", nil
	case inAny(real, writable) != "":
		where := "the workspace"
		if w := inAny(real, writable); w != writable[0] {
			where = "the writable grant " + w
		}
		return false, "", fmt.Errorf("%s %s is inside %s: the agent could write what later runs read as the host's (move it out, or --no-host-caches)", what, dir, where)
	case pr.access != nil:
		return false, what + " " + dir + " is not readable: not offered", nil
	}
	if !pr.isDir {
		return false, what + " " + dir + " is not a directory: not offered", nil
	}
	return true, "", nil
}

// dirProbe is what the host cache checks learn of a directory: its
// resolution (evalSymlinks), whether it is readable and searchable by
// the caller (access(2)) and a directory (stat(2)).
type dirProbe struct {
	real   string
	err    error // evalSymlinks's: then nothing else was asked
	access error
	isDir  bool
}

// probeDir probes dir.
func probeDir(dir string) dirProbe {
	real, err := evalSymlinks(dir)
	if err != nil {
		return dirProbe{err: err}
	}
	pr := dirProbe{real: real, access: unix.Access(dir, unix.R_OK|unix.X_OK)}
	st, serr := os.Stat(dir)
	pr.isDir = serr == nil && st.IsDir()
	return pr
}

// hostAhead is what the host gives a run that does not depend on the
// policy, learnt on Build's other goroutine while the policy loads: the
// caller's git identity, the probes of every cache directory the
// caller's environment names and the command's file (resolveCommand,
// for the agent profile's choice; commandDone when asked).
type hostAhead struct {
	gitIdentity []string
	probes      map[string]dirProbe
	command     string
	commandDone bool
}

// learnHostAhead learns what pathGrants, planHostCaches and
// selectProfile ask of the caller's environment and the run's input.
func learnHostAhead(callerEnv []string, in Input) *hostAhead {
	a := &hostAhead{gitIdentity: hostGitIdentity(callerEnv), probes: make(map[string]dirProbe, len(layerSpecs)+1)}
	if in.AgentProfile != AgentProfileNone && len(in.Argv) > 0 {
		a.command, a.commandDone = resolveCommand(in.Argv[0], sandbox.EnvValue(callerEnv, "PATH"), in.Dir), true
	}
	env := func(k string) string { return sandbox.EnvValue(callerEnv, k) }
	if dl, _ := goModDownloadDir(env); dl != "" {
		a.probes[dl] = probeDir(dl)
	}
	for _, s := range layerSpecs {
		if dir, _ := s.host(env); dir != "" {
			dir = filepath.Clean(dir)
			a.probes[dir] = probeDir(dir)
		}
	}
	return a
}

// probe is probeDir, answered from what was learnt ahead (a nil
// hostAhead, or a directory not probed: now).
func (a *hostAhead) probe(dir string) dirProbe {
	if a != nil {
		if pr, ok := a.probes[dir]; ok {
			return pr
		}
	}
	return probeDir(dir)
}

// hostCaches works out the caches of the caller's environment; notes are
// one-line reasons a cache is not offered (missing, unreadable, reached
// through a symlink). A cache inside the workspace or any area the run
// may write (writable: the workspace first, then --rw and extra_write
// grants) is an error: the agent would write what a later run reads as
// the host's.
func hostCaches(callerEnv []string, writable []string) (caches []HostCache, notes []string, err error) {
	return hostCachesWith(callerEnv, writable, probeDir)
}

// hostCachesWith is hostCaches with the cache directory probed by probe.
func hostCachesWith(callerEnv []string, writable []string, probe func(string) dirProbe) (caches []HostCache, notes []string, err error) {
	env := func(k string) string { return sandbox.EnvValue(callerEnv, k) }
	dl, named := goModDownloadDir(env)
	if dl == "" {
		return nil, nil, nil
	}
	pr := probe(dl)
	real, rerr := pr.real, pr.err
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
	case pr.access != nil:
		notes = append(notes, "host Go module cache "+dl+" is not readable: not offered")
		return nil, notes, nil
	}
	if !pr.isDir {
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

// goModDownloadDir is the Go module cache's download directory of the
// caller's environment ("" none); named: the caller set where the cache
// is (GOMODCACHE or GOPATH), so a missing one is news.
func goModDownloadDir(env func(string) string) (dl string, named bool) {
	mod := env("GOMODCACHE")
	// A default path that does not exist (no Go here) is no news.
	named = mod != "" || env("GOPATH") != ""
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
		return "", false
	}
	return filepath.Join(filepath.Clean(mod), "cache", "download"), named
}

// resolvedDirs returns dirs with their symlinks resolved (one that cannot
// be resolved as it is), for inAny: resolved once for every cache checked
// against them, not once per cache.
func resolvedDirs(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		if r, err := evalSymlinks(d); err == nil {
			d = r
		}
		out[i] = d
	}
	return out
}

// inAny returns the first of dirs (resolved: resolvedDirs) that p is in
// or below ("" none).
func inAny(p string, dirs []string) string {
	for _, d := range dirs {
		if d != "" && (p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")) {
			return d
		}
	}
	return ""
}
