package agentbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDiscoverToolchains: per-user toolchain directories on PATH are found
// (the toolchain, never its caches or credentials), with the variables
// their launchers need; symlinked or missing entries are skipped; nothing
// when off.
func TestDiscoverToolchains(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".cargo/bin", ".rustup/toolchains", ".pyenv/shims", ".pyenv/bin", ".nvm/versions/node/v20.1.0/bin", ".local/bin", "go/bin"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(home, ".local/bin"), filepath.Join(home, "linkbin"))
	path := strings.Join([]string{
		filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".pyenv/shims"), filepath.Join(home, ".pyenv/bin"),
		filepath.Join(home, ".nvm/versions/node/v20.1.0/bin"), filepath.Join(home, ".local/bin"), filepath.Join(home, "go/bin"),
		filepath.Join(home, "linkbin"), filepath.Join(home, "missing/bin"), "/usr/bin", "relative/bin",
	}, ":")
	tc := discoverToolchains(path, false)
	want := []string{
		filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".rustup"), filepath.Join(home, ".pyenv"),
		filepath.Join(home, ".nvm/versions/node/v20.1.0"), filepath.Join(home, ".local/bin"), filepath.Join(home, "go/bin"),
	}
	if !slices.Equal(tc.dirs, want) {
		t.Errorf("dirs:\n got %v\nwant %v", tc.dirs, want)
	}
	if !slices.Contains(tc.env, "PYENV_ROOT="+filepath.Join(home, ".pyenv")) || !slices.Contains(tc.env, "RUSTUP_HOME="+filepath.Join(home, ".rustup")) {
		t.Errorf("env %v", tc.env)
	}
	for _, d := range tc.dirs {
		if strings.HasSuffix(d, "/.cargo") {
			t.Errorf("granted all of ~/.cargo (credentials, registry): %s", d)
		}
	}
	if off := discoverToolchains(path, true); len(off.dirs)+len(off.env) != 0 {
		t.Errorf("discovery off still found %+v", off)
	}
}
