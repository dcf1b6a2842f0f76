package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// PrivateFile writes content to a file of that name in a new temporary
// directory, readable and writable by its owner only (0600: the mode a
// policy file must not exceed), and returns its path.
func PrivateFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
