package boundary

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootRel(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "target", "src"), 0o755)
	os.Symlink(outside, filepath.Join(ws, "target", "out"))
	os.Symlink(filepath.Join(ws, "target", "src"), filepath.Join(ws, "target", "in"))
	root, err := NewRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p, cwd, want, err string
	}{
		{"target/src/a.go", "", "target/src/a.go", ""},
		{"a.go", filepath.Join(ws, "target", "src"), "target/src/a.go", ""},
		{filepath.Join(ws, "target", "new", "f"), "", "target/new/f", ""},
		{"target/in/x", "", "target/src/x", ""},
		{"target/../context/x", "", "", "'..'"},
		{"target/out/secret", "", "", "outside the workspace"},
		{"/etc/passwd", "", "", "outside the workspace"},
		{"", "", "", "empty path"},
		{"a\x00b", "", "", "NUL"},
	} {
		got, err := root.Rel(tc.p, tc.cwd)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Rel(%q, %q) = %q, %v; want error containing %q", tc.p, tc.cwd, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Rel(%q, %q) = %q, %v; want %q", tc.p, tc.cwd, got, err, tc.want)
		}
	}
	if _, err := NewRoot(filepath.Join(ws, "missing")); err == nil {
		t.Error("NewRoot of a missing directory succeeded")
	}
}
