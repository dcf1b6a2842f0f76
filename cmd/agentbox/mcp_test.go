package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// TestAgentsProposeMCP: `agentbox agents` lists, after the profiles, a
// program_rights block for each MCP server Claude Code's project file
// starts, and says a remote one is the agent's own connection.
func TestAgentsProposeMCP(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(`{"mcpServers": {
  "github": {"command": "/usr/local/bin/github-mcp-server", "args": ["stdio"], "env": {"GITHUB_TOKEN": "x"}},
  "docs": {"type": "http", "url": "https://docs.example.com/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	profiles, err := policy.AgentProfiles(policy.LoadOptions{NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	proposeMCP(&out, profiles, home, proj)
	for _, want := range []string{"# MCP servers of claude-code", "program_rights:\n", "\n  github-mcp-server:", "mode: only",
		"# secrets: [GITHUB_TOKEN]", `MCP server "docs"`, "remote (https://docs.example.com/mcp)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
