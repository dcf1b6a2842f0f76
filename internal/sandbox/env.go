package sandbox

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// defaultPath is the sandbox PATH when the launcher has none.
const defaultPath = helper.DefaultPath

// envAllow is the environment every run keeps from the launcher: locale,
// terminal and search path. Everything else (tokens, cloud credentials,
// SSH_AUTH_SOCK, proxies, LD_*) is dropped unless the role passes it
// through by name.
var envAllow = []string{"PATH", "TERM", "LANG", "LANGUAGE", "LC_*", "TZ", "COLORTERM", "NO_COLOR"}

// envNever may not be passed through even by a role: they hand the sandbox
// an outside capability (an ssh agent) or let it rewrite every program it
// runs (preloads), or are agentbox's own markers.
var envNever = []string{"SSH_AUTH_SOCK", "LD_PRELOAD", "LD_AUDIT", "AGENTBOX_*"}

// buildEnv returns the scrubbed environment of a run: the allowlist and the
// role's pass-through names (globs like "NPM_*" allowed) taken from outer,
// then HOME, TMPDIR, XDG_* and Go's caches pointing inside the agent's own
// area, and AGENTBOX_* markers describing the run. Later entries win.
func buildEnv(outer []string, passThrough []string, plan *boundary.Plan, role string, tcpNetwork, proxy bool) []string {
	keep := func(k string) bool {
		for _, n := range envNever {
			if globName(n, k) {
				return false
			}
		}
		for _, n := range envAllow {
			if globName(n, k) {
				return true
			}
		}
		for _, n := range passThrough {
			if globName(n, k) {
				return true
			}
		}
		return false
	}
	seen := map[string]int{}
	var env []string
	for _, kv := range outer {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !keep(k) {
			continue
		}
		if i, dup := seen[k]; dup {
			env[i] = kv
			continue
		}
		seen[k] = len(env)
		env = append(env, kv)
	}
	set := func(k, v string) {
		if i, ok := seen[k]; ok {
			env[i] = k + "=" + v
			return
		}
		seen[k] = len(env)
		env = append(env, k+"="+v)
	}
	if i, ok := seen["PATH"]; ok {
		env[i] = "PATH=" + sandboxPath(strings.TrimPrefix(env[i], "PATH="), plan)
	} else {
		set("PATH", defaultPath)
	}
	set("HOME", plan.Home)
	set("TMPDIR", plan.Tmp)
	set("XDG_CACHE_HOME", plan.Cache)
	set("XDG_CONFIG_HOME", filepath.Join(plan.Home, ".config"))
	set("XDG_DATA_HOME", filepath.Join(plan.Home, ".local/share"))
	set("XDG_STATE_HOME", filepath.Join(plan.Home, ".local/state"))
	set("GOCACHE", filepath.Join(plan.Cache, "go-build"))
	set("GOPATH", filepath.Join(plan.OwnAgent, "go"))
	set("GOTOOLCHAIN", "local") // never download a toolchain
	if _, ok := seen["GODEBUG"]; !ok {
		// Go programs preempt goroutines with SIGURG; under the exec
		// supervisor every signal is a ptrace stop (docs/architecture.md, "Invariants"). A role that
		// passes GODEBUG through keeps the caller's value instead.
		set("GODEBUG", "asyncpreemptoff=1")
	}
	if tcpNetwork {
		// UDP stays refused; let glibc's resolver use TCP (needs tcp:53).
		set("RES_OPTIONS", "use-vc")
	}
	if proxy {
		// Every tool that honours the usual variables (curl, git, pip,
		// go, Python, Node's undici with NODE_USE_ENV_PROXY) goes through
		// the egress proxy; npm reads its own names. Names are resolved by
		// the proxy: the sandbox needs no DNS. Loopback inside the
		// sandbox's namespace stays direct (a dev server and its tests).
		u := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
			"npm_config_proxy", "npm_config_https_proxy", "NODE_USE_ENV_PROXY"} {
			if k == "NODE_USE_ENV_PROXY" {
				set(k, "1")
				continue
			}
			set(k, u)
		}
		set("NO_PROXY", "localhost,127.0.0.1,::1")
		set("no_proxy", "localhost,127.0.0.1,::1")
	}
	set("AGENTBOX", "1")
	set("AGENTBOX_AGENT", plan.AgentID)
	set("AGENTBOX_ROLE", role)
	set("AGENTBOX_WORKSPACE", plan.Workspace)
	return env
}

// sandboxPath keeps the entries of the launcher's PATH that the sandbox can
// execute from, in order, so commands resolve to programs that can run
// (e.g. /usr/bin/python3 rather than a pyenv shim under an unreachable
// home directory). Relative entries ("", ".") are dropped: they would make
// the current directory a search path. An empty result falls back to
// defaultPath.
func sandboxPath(outer string, plan *boundary.Plan) string {
	var keep []string
	for _, dir := range filepath.SplitList(outer) {
		if !filepath.IsAbs(dir) || slices.Contains(keep, dir) {
			continue
		}
		if ok, _ := plan.Executable(dir); ok {
			keep = append(keep, dir)
		}
	}
	if len(keep) == 0 {
		return defaultPath
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// globName matches an environment variable name against a pattern that is
// either exact or ends in "*" (prefix match).
func globName(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// envNames lists the variable names of env, sorted (for audit records).
func envNames(env []string) []string {
	var names []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// EnvValue returns NAME's value in env ("NAME=value" entries; the last one
// wins, as for a process), or "".
func EnvValue(env []string, name string) string { return helper.EnvValue(env, name) }
