package plan

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPlainWalk: the one-openat2 answer is filepath.EvalSymlinks's for
// every kind of path, and is given alone (no walk) exactly when no symlink
// is on the way; UntrustedIn judges a missing path under a symlink as
// before (by its name: it does not resolve).
func TestPlainWalk(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(dir, "a", "file"), nil, 0o600)
	os.Symlink(other, filepath.Join(dir, "a", "link"))
	os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "a", "dangling"))
	for _, tc := range []struct {
		p               string
		exists, missing bool
	}{
		{dir + "/a/b", true, false},
		{dir + "/a/file", true, false},
		{dir + "/a/b/missing", false, true},
		{dir + "/a/missing/deeper", false, true},
		{dir + "/a/link", false, false},
		{dir + "/a/link/x", false, false},
		{dir + "/a/dangling", false, false},
		{dir + "/a/file/x", false, false},
		{dir + "/a//b", false, false},
		{"a/b", false, false},
	} {
		exists, missing := plainWalk(tc.p)
		if exists != tc.exists || missing != tc.missing {
			t.Errorf("plainWalk(%q) = %v, %v; want %v, %v", tc.p, exists, missing, tc.exists, tc.missing)
		}
		got, err := evalSymlinks(tc.p)
		want, werr := filepath.EvalSymlinks(tc.p)
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("evalSymlinks(%q) = %q, %v; filepath.EvalSymlinks says %q, %v", tc.p, got, err, want, werr)
		}
		if missing && werr == nil {
			t.Errorf("plainWalk(%q) says missing, filepath.EvalSymlinks resolves it to %q", tc.p, want)
		}
	}
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "target"), 0o755)
	os.MkdirAll(filepath.Join(ws, "context"), 0o755)
	os.WriteFile(filepath.Join(ws, "target", "agentbox.yaml"), nil, 0o600)
	os.Symlink(filepath.Join(ws, "target"), filepath.Join(ws, "context", "totarget"))
	untrusted := UntrustedIn(ws)
	for p, want := range map[string]bool{
		ws + "/target/agentbox.yaml":            true,
		ws + "/target/missing/agentbox.yaml":    true,
		ws + "/context/agentbox.yaml":           false,
		ws + "/context/totarget/agentbox.yaml":  true, // resolved into target/
		ws + "/context/totarget/missing/p.yaml": false,
	} {
		if got := untrusted(p); got != want {
			t.Errorf("UntrustedIn(%s)(%s) = %v, want %v", ws, p, got, want)
		}
	}
}
