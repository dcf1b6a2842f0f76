package policy

import (
	"path/filepath"
	"strings"
)

// Discovered lists the policy files discovery found and loaded, with
// whether each was loaded untrusted (deny and ask rules only).
func (e *Engine) Discovered() (trusted, untrusted []string) {
	return e.discovered, e.untrusted
}

// permissionFiles are the paths, by their last components, that agentbox
// or an agent CLI reads permissions from when found in a project, the
// workspace or HOME (the files discovery loads, and agentbox's own).
var permissionFiles = []string{
	"agentbox.yaml", "agentbox/policy.yaml",
	".claude/settings.json", ".claude/settings.local.json",
	".codelia/config.json", ".src/forge/permissions.json", "forge/permissions.json",
}

// permissionFile reports whether path (absolute, or relative to the
// workspace) names a file a policy layer is read from: agentbox's project
// or user policy, Claude Code settings, Codex rules and policies, Codelia
// and Forge permission files. A write to one is the agent changing its
// own permissions.
func permissionFile(path string) bool {
	p := "/" + strings.TrimPrefix(filepath.ToSlash(path), "/")
	for _, f := range permissionFiles {
		if strings.HasSuffix(p, "/"+f) {
			return true
		}
	}
	dir, base := filepath.Split(p)
	return strings.HasSuffix(dir, "/.codex/rules/") && strings.HasSuffix(base, ".rules") ||
		strings.HasSuffix(dir, "/.codex/policy/") && strings.HasSuffix(base, ".codexpolicy")
}
