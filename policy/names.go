package policy

import (
	"fmt"
	"strings"
)

// Names the policy language gives decisions and tools, and the check of
// a brokered secret: shared by the engine, the loader (policy/load) and
// the foreign formats.

// ParseDecision parses "allow", "ask" or "deny" (case-insensitive). Codelia's
// "confirm" is accepted as ask.
func ParseDecision(s string) (Decision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "allow":
		return Allow, nil
	case "ask", "confirm":
		return Ask, nil
	case "deny":
		return Deny, nil
	}
	return 0, fmt.Errorf("invalid decision %q: want allow, ask or deny", s)
}

// ---- agentbox native format ----

var commandTools = []string{ToolExec, ToolGit, ToolBash}
var pathTools = []string{ToolView, ToolCreateFile, ToolStrReplace, ToolDelete}

// mapToolName maps seed tool names onto agentbox action tools. "bash" (and
// Forge/Codelia "shell") means every command action: exec, git and bash.
func mapToolName(t string) []string {
	switch t {
	case "bash", "shell", "command", "commands":
		return commandTools
	case "read":
		return []string{ToolView}
	case "write":
		return []string{ToolCreateFile}
	case "edit":
		return []string{ToolStrReplace}
	case "files", "file", "path":
		return pathTools
	}
	return []string{t}
}

// ---- Chorus lists inside roles ----

// ---- roles ----

// CheckSecretGrant checks a brokered secret: a variable name and at least
// one host pattern, none of which may match every host (the real value
// would go anywhere) or a whole top-level domain.
func CheckSecretGrant(sg SecretGrant) error {
	if err := envVarName(sg.Name); err != nil {
		return fmt.Errorf("secret %q: %v", sg.Name, err)
	}
	if len(sg.Hosts) == 0 {
		return fmt.Errorf("secret %s: name the hosts its value is for", sg.Name)
	}
	for _, h := range sg.Hosts {
		hp, err := compileHostPattern(h)
		if err != nil {
			return fmt.Errorf("secret %s: %v", sg.Name, err)
		}
		if hp.any || hp.suffix != "" && !strings.Contains(hp.suffix[1:], ".") {
			return fmt.Errorf("secret %s: host pattern %q matches every host (or a whole top-level domain): name the hosts its value is for", sg.Name, h)
		}
	}
	return nil
}
