package plan

import (
	"os"
	"path/filepath"
	"strings"
)

// Toolchains installed per user (rustup, pyenv, nvm, sdkman, go install,
// pip --user) live under a home directory the sandbox cannot read, so their
// PATH entries were dropped and the commands fell back to the system's (or
// were not found). discoverToolchains finds them on the caller's PATH and
// returns the directories to grant read and execute for the run (when
// asked: WithToolchains), with the
// variables their launchers need. Only the toolchain itself is granted, not
// its caches or credentials (~/.cargo/credentials.toml, registries): the
// sandbox keeps its own caches in the agent's area, so nothing is shared
// writable between runs.
type toolchain struct {
	dirs []string // read+execute
	env  []string // NAME=value the launchers need
}

func discoverToolchains(pathEnv string, off bool) toolchain {
	var tc toolchain
	if off {
		return tc
	}
	add := func(dir string) {
		if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
			return // missing, or reached through a symlink: not granted
		}
		for _, d := range tc.dirs {
			if d == dir {
				return
			}
		}
		tc.dirs = append(tc.dirs, dir)
	}
	for _, e := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(e) {
			continue
		}
		e = filepath.Clean(e)
		parent, base := filepath.Split(e)
		parent = filepath.Clean(parent)
		switch {
		case strings.HasSuffix(e, "/.cargo/bin"):
			add(e)
			rustup := filepath.Join(filepath.Dir(parent), ".rustup")
			if _, err := os.Stat(rustup); err == nil {
				add(rustup)
				tc.env = append(tc.env, "RUSTUP_HOME="+rustup)
			}
		case strings.HasSuffix(e, "/.pyenv/shims") || strings.HasSuffix(e, "/.pyenv/bin"):
			add(parent)
			tc.env = append(tc.env, "PYENV_ROOT="+parent)
		case strings.Contains(e, "/.nvm/versions/node/") && base == "bin":
			add(parent)
		case strings.Contains(e, "/.sdkman/candidates/") && base == "bin":
			add(parent)
		case strings.HasSuffix(e, "/.local/bin") || strings.HasSuffix(e, "/go/bin"):
			add(e)
		case (strings.HasPrefix(e, "/opt/") || strings.HasPrefix(e, "/usr/local/")) && base == "bin" && parent != "/usr/local":
			add(parent) // /opt/gradle/bin -> /opt/gradle
		}
	}
	return tc
}
