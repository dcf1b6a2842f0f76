package claude

import (
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// FuzzClaudeRule: a rule string parses or is refused; parsing never
// panics, and a Bash prefix rule matches its own prefix.
func FuzzClaudeRule(f *testing.F) {
	for _, s := range []string{"Bash(npm run test:*)", "Read(./secrets/**)", "WebFetch(domain:example.com)", "Edit(//etc/**)", "Bash(git * main)", "mcp__github", "Bash(:*)", "Read(../x)", "X(", "Bash()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range []policy.Decision{policy.Allow, policy.Deny} {
			r, err := parseRule(s, d, "/proj")
			if err != nil || r == nil {
				continue
			}
			if r.prefix != "" && !r.matchCommand(r.prefix) {
				t.Fatalf("%q does not match its own prefix %q", s, r.prefix)
			}
		}
	})
}
