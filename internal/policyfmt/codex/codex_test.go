package codex_test

import (
	"os"
	"path/filepath"
	"testing"

	_ "github.com/agentbox/agentbox/internal/policyfmt/codex"
	"github.com/agentbox/agentbox/policy"
)

// TestUntrustedRules: a discovered rules file the sandbox could have
// written keeps its forbidden and prompt rules but never allows; the same
// file trusted allows.
func TestUntrustedRules(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".codex", "rules"), 0o700); err != nil {
		t.Fatal(err)
	}
	rules := `prefix_rule(pattern = ["npm", "publish"])
prefix_rule(pattern = ["npm", "pack"], decision = "prompt")
prefix_rule(pattern = ["npm", "unpublish"], decision = "forbidden")
`
	if err := os.WriteFile(filepath.Join(ws, ".codex", "rules", "default.rules"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		untrusted bool
		action    string
		allowed   bool
		want      policy.Decision // when not allowed
	}{
		{false, "tool:bash:npm publish", true, 0},
		{true, "tool:bash:npm publish", false, 0},
		{false, "tool:bash:npm unpublish x", false, policy.Deny},
		{true, "tool:bash:npm unpublish x", false, policy.Deny},
		{true, "tool:bash:npm pack", false, policy.Ask},
	} {
		e, err := policy.Load(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: ws, ProjectDir: ws, Discover: true, Home: home,
			Untrusted: func(string) bool { return c.untrusted }})
		if err != nil {
			t.Fatal(err)
		}
		r := e.Decide(policy.Query{Action: c.action})
		if got := r.Decision == policy.Allow; got != c.allowed || !c.allowed && c.want != 0 && r.Decision != c.want {
			t.Errorf("untrusted=%v %s: %v (%s)", c.untrusted, c.action, r.Decision, r.Reason)
		}
	}
}
