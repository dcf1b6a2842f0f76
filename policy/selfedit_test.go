package policy

import "testing"

// TestPermissionFile: the files a policy layer is read from, at any depth,
// and nothing else.
func TestPermissionFile(t *testing.T) {
	for p, want := range map[string]bool{
		"agentbox.yaml": true, "target/p/agentbox.yaml": true, "/home/u/.config/agentbox/policy.yaml": true,
		"target/.claude/settings.json": true, "/home/u/.claude/settings.json": true, "x/.claude/settings.local.json": true,
		"target/.codex/rules/a.rules": true, "/home/u/.codex/policy/p.codexpolicy": true,
		"target/.codelia/config.json": true, "target/.src/forge/permissions.json": true, "/home/u/.config/forge/permissions.json": true,
		"target/settings.json": false, "target/my-agentbox.yaml": false, "target/.claude/notes.md": false,
		"target/.codex/rules/readme.md": false, "target/rules/a.rules": false,
	} {
		if got := permissionFile(p); got != want {
			t.Errorf("permissionFile(%q) = %v", p, got)
		}
	}
}
