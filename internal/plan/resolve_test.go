package plan

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestEvalSymlinks: evalSymlinks (boundary.PlainPath's one walk, else
// filepath.EvalSymlinks) answers as filepath.EvalSymlinks does, and
// UntrustedIn judges a path through a symlink by where it resolves, a
// missing path under a symlink by its name (it does not resolve).
func TestEvalSymlinks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "target"), 0o755)
	os.MkdirAll(filepath.Join(ws, "context"), 0o755)
	os.WriteFile(filepath.Join(ws, "target", "agentbox.yaml"), nil, 0o600)
	os.Symlink(filepath.Join(ws, "target"), filepath.Join(ws, "context", "totarget"))
	os.Symlink(filepath.Join(dir, "gone"), filepath.Join(ws, "dangling"))
	for _, p := range []string{ws + "/target", ws + "/target/missing", ws + "/target/missing/deeper", ws + "/context/totarget",
		ws + "/context/totarget/agentbox.yaml", ws + "/dangling", ws + "//target", "ws/target"} {
		got, err := evalSymlinks(p)
		want, werr := filepath.EvalSymlinks(p)
		if got != want || (err == nil) != (werr == nil) || errors.Is(err, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) {
			t.Errorf("evalSymlinks(%q) = %q, %v; filepath.EvalSymlinks says %q, %v", p, got, err, want, werr)
		}
	}
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
