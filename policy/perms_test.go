package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyFileRefusalsSayTheFix: each ownership or mode refusal of a
// policy file names the command that makes it acceptable.
func TestPolicyFileRefusalsSayTheFix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: giving a file to another uid needs root")
	}
	dir := t.TempDir()
	cases := []struct {
		name  string
		setup func(path string) error
		want  string
	}{
		{"writable by others", func(p string) error { return os.Chmod(p, 0o666) }, "run: chmod go-w "},
		{"owned by a user (sudo agentbox run)", func(p string) error { return os.Chown(p, 12345, 12345) }, "run: sudo chown root "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte("rules: []\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.setup(path); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckFilePerms(path, fi)
			if err == nil || !strings.Contains(err.Error(), c.want+path) {
				t.Fatalf("refusal %v lacks %q", err, c.want+path)
			}
		})
	}
}
