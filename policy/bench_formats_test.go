package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// BenchmarkDecideFormats: a shell line and a file read decided with a
// project's Claude Code settings and Codex rules as format layers (the
// registered readers' Decide behind policy.Format).
func BenchmarkDecideFormats(b *testing.B) {
	ws, home := b.TempDir(), b.TempDir()
	for name, text := range map[string]string{
		".claude/settings.json": `{"permissions": {"allow": ["Bash(npm run test:*)", "Bash(git status)", "Read(./src/**)"], "deny": ["Bash(rm -rf:*)", "Read(./secrets/**)"]}}`,
		".codex/rules/default.rules": `prefix_rule(pattern = ["git", ["push", "fetch"]], decision = "prompt")
prefix_rule(pattern = ["npm", "run"])
`,
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: ws, ProjectDir: ws, Discover: true, Home: home})
	if err != nil {
		b.Fatal(err)
	}
	qs := []policy.Query{
		{Action: "tool:bash:npm run test -- --watch=false && git status"},
		{Action: "tool:view:" + filepath.Join(ws, "src/main.go")},
	}
	if r := e.Decide(qs[0]); r.Decision != policy.Allow {
		b.Fatalf("%s: %v (%s)", qs[0].Action, r.Decision, r.Reason)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Decide(qs[i&1])
	}
}
