package boundary

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindWorkspaceNested: a workspace the agent could have made — inside
// target/, feedback/ or agents/ of another — is never found as the
// workspace (its agentbox.yaml would be trusted as the owner's); one the
// owner put in context/ (read-only to the agent) or one standing alone is.
func TestFindWorkspaceNested(t *testing.T) {
	d, _ := filepath.EvalSymlinks(t.TempDir())
	outer := filepath.Join(d, "outer")
	if _, err := Init(outer); err != nil {
		t.Fatal(err)
	}
	for _, area := range []string{"target", "feedback", "agents/main/home", "context"} {
		inner := filepath.Join(outer, area, "proj")
		for _, a := range Areas {
			if err := os.MkdirAll(filepath.Join(inner, a, "src"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		got, err := FindWorkspace(filepath.Join(inner, "target", "src"))
		var ue *UntrustedWorkspaceError
		if area == "context" {
			if err != nil || got != inner {
				t.Errorf("workspace in context/: %q, %v; want %s", got, err, inner)
			}
			continue
		}
		top, _, _ := strings.Cut(area, "/")
		if !errors.As(err, &ue) || ue.Dir != inner || ue.Outer != outer || ue.Area != top || got != "" {
			t.Errorf("workspace in %s/: %q, %v; want an UntrustedWorkspaceError naming %s", area, got, err, outer)
		}
	}
	// From the outer workspace's own project: the outer one.
	if got, err := FindWorkspace(filepath.Join(outer, "target")); err != nil || got != outer {
		t.Errorf("outer: %q, %v", got, err)
	}
	// Through a symlink into the nested one: still refused.
	link := filepath.Join(d, "link")
	os.Symlink(filepath.Join(outer, "target", "proj"), link)
	if _, err := FindWorkspace(link); err == nil {
		t.Error("nested workspace reached through a symlink was trusted")
	}
}
