package policy_test

// The formats in packages of their own register with the loader when
// imported (policy/formats); this brings them into the policy package's
// tests, so the corpus and format tests read Claude Code settings and
// Codex rules as a run does (internal/plan links them for every agentbox
// command).
import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/policy"
	_ "github.com/agentbox/agentbox/policy/formats"
	"github.com/agentbox/agentbox/policy/load"
)

// TestUntrustedForeignFormats: a discovered Claude Code settings file or
// Codex rules file the sandbox could have written keeps its deny and ask
// rules but never allows (the loader hands the format DenyAndAsk, the
// engine drops the layer's allow verdicts); the same files trusted allow.
func TestUntrustedForeignFormats(t *testing.T) {
	files := map[string]string{
		".claude/settings.json": `{"permissions": {"allow": ["Bash(npm publish:*)"], "ask": ["Bash(npm pack:*)"], "deny": ["Bash(npm unpublish:*)"]}}`,
		".codex/rules/default.rules": `prefix_rule(pattern = ["cargo", "publish"])
prefix_rule(pattern = ["cargo", "package"], decision = "prompt")
prefix_rule(pattern = ["cargo", "yank"], decision = "forbidden")
`,
	}
	ws, home := t.TempDir(), t.TempDir()
	for name, text := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const allowed = policy.Decision(-1)
	for _, c := range []struct {
		untrusted bool
		action    string
		want      policy.Decision
	}{
		{false, "tool:bash:npm publish", policy.Allow},
		{true, "tool:bash:npm publish", allowed},
		{false, "tool:bash:npm unpublish x", policy.Deny},
		{true, "tool:bash:npm unpublish x", policy.Deny},
		{true, "tool:bash:npm pack", policy.Ask},
		{false, "tool:bash:cargo publish", policy.Allow},
		{true, "tool:bash:cargo publish", allowed},
		{true, "tool:bash:cargo yank --version 1.0.0", policy.Deny},
		{true, "tool:bash:cargo package", policy.Ask},
	} {
		e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: ws, ProjectDir: ws, Discover: true, Home: home,
			Untrusted: func(string) bool { return c.untrusted }})
		if err != nil {
			t.Fatal(err)
		}
		r := e.Decide(policy.Query{Action: c.action})
		if c.want == allowed && r.Decision == policy.Allow || c.want != allowed && r.Decision != c.want {
			t.Errorf("untrusted=%v %s: %v (%s)", c.untrusted, c.action, r.Decision, r.Reason)
		}
	}
}
