package claude_test

import (
	"os"
	"path/filepath"
	"testing"

	_ "github.com/agentbox/agentbox/internal/policyfmt/claude"
	"github.com/agentbox/agentbox/policy"
)

// TestUntrustedSettings: a discovered settings file the sandbox could have
// written keeps its deny and ask rules but never allows (the loader hands
// over DenyAndAsk, the engine drops the layer's allow verdicts); the same
// file trusted allows.
func TestUntrustedSettings(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	settings := `{"permissions": {"allow": ["Bash(npm publish:*)", "Read(./docs/**)"], "ask": ["Bash(npm pack:*)"], "deny": ["Bash(npm unpublish:*)"]}}`
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
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
