package policy

import (
	"strings"
	"testing"
)

// TestReadOnlyCarveOutText: a read-only carve-out inside .git (the
// developer role's target/**/.git/hooks) is refused by the exec policy
// when the write is seen, and its reason does not claim Landlock holds it
// (it cannot while git may write the repository: a python3 script wrote
// .git/hooks/post-commit); a carve-out elsewhere still says Landlock
// enforces it.
func TestReadOnlyCarveOutText(t *testing.T) {
	e := layered(t, "developer", "", "")
	for _, shell := range []string{"echo x > .git/hooks/post-commit", "cp /tmp/x .git/hooks/post-commit", "sed -i s/a/b/ .git/hooks/pre-commit"} {
		r := e.Decide(Query{Shell: shell, ExecContext: ExecContext{Cwd: e.workspace + "/target"}}).DecidingPart()
		if r.Decision != Deny || r.Rule == nil || !strings.Contains(r.Rule.ID, "filesystem.readonly") {
			t.Errorf("%s: %s by %+v; want a deny by the read-only carve-out", shell, r.Decision, r.Rule)
			continue
		}
		if strings.Contains(r.Reason, "Landlock") && !strings.Contains(r.Reason, "Landlock cannot") {
			t.Errorf("%s: reason %q claims Landlock holds a carve-out inside .git", shell, r.Reason)
		}
		if !strings.Contains(r.Reason, "reported after the run") {
			t.Errorf("%s: reason %q does not say what holds it instead", shell, r.Reason)
		}
	}
	for g, want := range map[string]bool{"target/**/.git/hooks": true, "target/**/.git/config": true, "target/**/.git": false, "target/vendor/**": false, ".git/hooks/**": true} {
		if insideGitDir(g) != want {
			t.Errorf("insideGitDir(%q) = %v, want %v", g, !want, want)
		}
	}
}
