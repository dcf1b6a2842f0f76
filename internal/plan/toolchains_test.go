package plan

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

// TestAgentBaseURLs: base URLs from the environment and from an agent's
// TOML config give the host:port allowed (loopback ones are forwarded).
func TestAgentBaseURLs(t *testing.T) {
	for _, c := range []struct {
		url, host string
		port      int
		bad       bool
	}{
		{"http://127.0.0.1:4000/v1", "127.0.0.1", 4000, false},
		{"https://gateway.example.com", "gateway.example.com", 443, false},
		{"http://LocalHost", "localhost", 80, false},
		{"https://[::1]:8443/x", "::1", 8443, false},
		{"ftp://x", "", 0, true},
		{"127.0.0.1:4000", "", 0, true},
		{"http://:80", "", 0, true},
		{"http://h:99999", "", 0, true},
	} {
		host, port, _, err := baseURLHostPort(c.url)
		if (err != nil) != c.bad || !c.bad && (host != c.host || port != c.port) {
			t.Errorf("baseURLHostPort(%q) = %q %d %v", c.url, host, port, err)
		}
	}
	for _, h := range []string{"127.0.0.1", "127.3.0.1", "localhost", "::1"} {
		if !isLoopback(h) {
			t.Errorf("%s is loopback", h)
		}
	}
	if isLoopback("10.0.0.1") || isLoopback("localhost.example.com") {
		t.Error("not loopback")
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("model = \"x\"\n# base_url = \"http://commented.example\"\n[model_providers.a]\nbase_url = \"http://127.0.0.1:9/v1\"\n[model_providers.b]\n  base_url='https://b.example.com/v1'\n"), 0o600)
	if got := strings.Join(configBaseURLs(cfg), " "); got != "http://127.0.0.1:9/v1 https://b.example.com/v1" {
		t.Errorf("configBaseURLs = %q", got)
	}
	if got := configBaseURLs(filepath.Join(t.TempDir(), "missing")); got != nil {
		t.Errorf("missing file: %v", got)
	}
}
