package mcpconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// engineWith loads role with files (policy text) as --policy layers.
func engineWith(t *testing.T, role string, files ...string) *policy.Engine {
	t.Helper()
	var paths []string
	for i, c := range files {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("p%d.yaml", i))
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	e, err := load.Policy(policy.LoadOptions{Role: role, NoUserFile: true, Files: paths})
	if err != nil {
		t.Fatalf("Load(%s): %v", role, err)
	}
	return e
}

// TestMCPServers: the built-in profiles of Claude Code, Codex and Gemini
// CLI find the MCP servers of their configuration files (the project's
// .mcp.json, ~/.claude.json's top level and its entry for the project,
// ~/.codex/config.toml's [mcp_servers.*], ~/.gemini/settings.json), and
// each stdio server gets a program_rights proposal that loads as it is.
func TestMCPServers(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proj, ".mcp.json"), `{"mcpServers": {"github": {"command": "/usr/local/bin/github-mcp-server", "args": ["stdio"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "x"}}}}`)
	write(filepath.Join(home, ".claude.json"), `{"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example.com/mcp"}},
 "projects": {"`+proj+`": {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem@1.0", "/tmp"]}}}, "/other": {"mcpServers": {"no": {"command": "x"}}}}}`)
	write(filepath.Join(home, ".codex", "config.toml"), `model = "o4"
[mcp_servers.docs]
command = "python3"
args = ["/opt/mcp/docs_server.py", '--stdio']
env = { "DOCS_API_KEY" = "k", MODE = "ro" }

[mcp_servers."sentry"]
command = "sentry-mcp"
[mcp_servers.sentry.env]
SENTRY_AUTH_TOKEN = "t"
[profiles.x]
command = "not-a-server"
`)
	write(filepath.Join(home, ".gemini", "settings.json"), `{"theme": "x", "mcpServers": {"db": {"command": "db-mcp", "env": {"DB_PASSWORD": "p"}}}}`)
	e := engineWith(t, "developer")
	want := map[string][]string{
		"claude-code": {"github /usr/local/bin/github-mcp-server [GITHUB_PERSONAL_ACCESS_TOKEN]", "remote  []", "fs npx []"},
		"codex":       {"docs python3 [DOCS_API_KEY MODE]", "sentry sentry-mcp [SENTRY_AUTH_TOKEN]"},
		"gemini":      {"db db-mcp [DB_PASSWORD]"},
	}
	var proposals strings.Builder
	for agent, w := range want {
		servers, errs := Servers(e.Agent(agent), home, proj)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", agent, errs)
		}
		var got []string
		for _, s := range servers {
			got = append(got, s.Name+" "+s.Command+" ["+strings.Join(s.Env, " ")+"]")
			proposals.WriteString(s.Propose())
		}
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("%s: %q, want %q", agent, got, w)
		}
	}
	p := proposals.String()
	for _, w := range []string{"  github-mcp-server:", "  server-filesystem:", "  docs_server.py:", "# secrets: [DOCS_API_KEY]", "  db-mcp:"} {
		if !strings.Contains(p, w) {
			t.Errorf("proposals lack %q:\n%s", w, p)
		}
	}
	// The proposals load as an agent profile's program_rights.
	engineWith(t, "developer", "agents:\n  x:\n    programs: [x]\n    program_rights:\n"+indent(p, "    "))
}

func indent(s, by string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(by + l)
		}
	}
	return b.String()
}

// TestParseMCPTomlErrors: a malformed line of an mcp_servers table is an
// error naming the line.
func TestParseMCPTomlErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[mcp_servers.a]\ncommand = x\n", "line 2: command"},
		{"[mcp_servers.a]\nargs = [\"a\", b]\n", "line 2: args"},
		{"[mcp_servers.a]\n\nenv = 3\n", "line 3: env"},
		{"[mcp_servers.a b]\n", "line 1: bad key"},
		{"[mcp_servers.a]\njust words\n", "line 2: want KEY = VALUE"},
	} {
		if _, err := ParseTOML([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzParseTOML: no input makes the Codex config reader panic, and
// every server it returns proposes a block that loads.
func FuzzParseTOML(f *testing.F) {
	for _, s := range []string{
		"[mcp_servers.docs]\ncommand = \"python3\"\nargs = [\"a.py\", 'b']\nenv = { K = \"v\", \"Q\" = 'w' }\n",
		"[mcp_servers.\"x.y\"]\ncommand = 'c'\n[mcp_servers.x.y.env]\nA_TOKEN = \"t\"\n",
		"[[mcp_servers.a]]\n", "[mcp_servers.]\n", "command = \"x\"\n", "[mcp_servers.a]\nargs = [\"\\\"\", \",\"]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		servers, err := ParseTOML([]byte(s))
		if err != nil {
			return
		}
		for _, sv := range servers {
			sv.Config = "config.toml"
			p := sv.Propose()
			if p == "" || strings.HasPrefix(p, "  #") {
				continue // nothing proposed, said in a comment
			}
			if _, err := load.Parse("p.yaml", []byte("agents:\n  x:\n    programs: [x]\n    program_rights:\n"+indent(p, "    ")), policy.LayerProject); err != nil {
				t.Fatalf("proposal for %+v does not load: %v\n%s", sv, err, p)
			}
		}
	})
}
