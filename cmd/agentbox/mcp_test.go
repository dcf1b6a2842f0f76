package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fakemodel"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// mcpServerEnv makes this test binary an MCP server on stdio (init, before
// TestMain): its one tool, fetch, GETs a URL with the bearer token in
// $MCP_TOKEN (inside a run: its placeholder) and answers with the
// status and body.
const mcpServerEnv = "AGENTBOX_TEST_MCP"

func init() {
	if os.Getenv(mcpServerEnv) == "1" {
		serveMCP(os.Stdin, os.Stdout)
		os.Exit(0)
	}
}

// serveMCP answers MCP's JSON-RPC lines: initialize, tools/list,
// tools/call of fetch.
func serveMCP(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					URL string `json:"url"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || len(msg.ID) == 0 {
			continue // a notification
		}
		var result any
		switch msg.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": msg.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "agentbox-test-mcp", "version": "1"}}
		case "tools/list":
			// Said in the working directory, for a test to wait on.
			os.WriteFile(filepath.Base(os.Args[0])+".listed", nil, 0o644)
			result = map[string]any{"tools": []any{map[string]any{"name": "fetch", "description": "GET a URL with the server's token",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}, "required": []string{"url"}}}}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": mcpFetch(msg.Params.Arguments.URL)}}}
		default:
			enc.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "no method " + msg.Method}})
			continue
		}
		enc.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}
}

func mcpFetch(u string) string {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return "fetch error: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv("MCP_TOKEN"))
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	resp, err := c.Do(req)
	if err != nil {
		return "fetch error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("fetch status %d: %s", resp.StatusCode, b)
}

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
	l, err := load.Read(policy.LoadOptions{NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	profiles, err := l.Agents()
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

// TestClaudeCodeMCPServerRights: the real Claude Code CLI under agentbox
// run, against the fake model API, starts two MCP servers of this test's
// own (this binary on stdio). mcp-granted holds a loopback host and a
// secret of its own (programs:, the only grant of that port: the run's
// rules do not name it, and the port is forwarded into the sandbox for
// the program's sake): its fetch reaches the host with the real value in
// place of the placeholder. The agent's own shell curl to that host with
// the placeholder is refused at the connection. mcp-walled (mode only, no
// host) reaches nothing. Each refusal is audited with the program.
func TestClaudeCodeMCPServerRights(t *testing.T) {
	claude := needCLI(t, "claude", "@anthropic-ai/claude-code")
	w := newAgentWorld(t)
	const realToken = "mcp-real-token-5d2c"
	api := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+realToken {
			io.WriteString(rw, "token-accepted")
			return
		}
		io.WriteString(rw, "token-refused")
	}))
	defer api.Close()
	_, port, _ := net.SplitHostPort(api.Listener.Addr().String())
	url := "http://127.0.0.1:" + port + "/data"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(w.ws, "target", "mcpbin")
	os.MkdirAll(bin, 0o755)
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"mcp-granted", "mcp-walled"} {
		if err := os.WriteFile(filepath.Join(bin, n), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(w.dir, "mcp-policy.yaml")
	if err := os.WriteFile(pol, []byte(`version: 1
rules:
  - {decision: allow, command: mcp-granted}
  - {decision: allow, command: mcp-walled}
  - {decision: allow, command: "curl -s"}
roles:
  mcptest:
    extends: developer
    programs:
      mcp-granted: {hosts: ["127.0.0.1:`+port+`"], secrets: [MCP_TOKEN]}
      mcp-walled: {mode: only}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpConfig := filepath.Join(w.proj, "mcp.json")
	cfg := map[string]any{"mcpServers": map[string]any{
		"granted": map[string]any{"command": filepath.Join(bin, "mcp-granted"), "env": map[string]string{mcpServerEnv: "1"}},
		"walled":  map[string]any{"command": filepath.Join(bin, "mcp-walled"), "env": map[string]string{mcpServerEnv: "1"}},
	}}
	cb, _ := json.Marshal(cfg)
	if err := os.WriteFile(mcpConfig, cb, 0o644); err != nil {
		t.Fatal(err)
	}
	// Claude Code may send its first request before its MCP servers are
	// connected: the first step waits (bounded) until both listed their
	// tools.
	wait := `for i in $(seq 200); do [ -e mcp-granted.listed ] && [ -e mcp-walled.listed ] && echo both-listed && break; sleep 0.1; done`
	steps := []agentStep{
		{step: bash(wait), want: []string{"both-listed"}},
		{step: fakemodel.Step{Tool: "mcp__granted__fetch", Input: map[string]any{"url": url}}, want: []string{"fetch status 200: token-accepted"}},
		{step: fakemodel.Step{Tool: "mcp__walled__fetch", Input: map[string]any{"url": url}}, want: []string{"fetch error"}, wantNot: []string{"token-"}},
		{step: bash(`curl -s -H "Authorization: Bearer $MCP_TOKEN" ` + url + `; echo "curl exit $?"`), want: []string{"curl exit"}, wantNot: []string{"token-", "curl exit 0"}},
		{step: fakemodel.Step{Text: "All done."}},
	}
	srv, out := w.sessionWith(t, agentRun{steps: steps,
		argv: []string{filepath.Join(w.bin, "agentbox"), "run", "--role", "mcptest", "--policy", pol, "--",
			claude, "-p", "use the tools", "--dangerously-skip-permissions", "--mcp-config", mcpConfig, "--strict-mcp-config"},
		env: func(u string) []string {
			return []string{"ANTHROPIC_API_KEY=" + fakeAnthropicKey, "ANTHROPIC_BASE_URL=" + u}
		}}, fakemodel.Options{}, "MCP_TOKEN="+realToken)
	if !strings.Contains(out, "All done.") {
		t.Errorf("no final answer in the output:\n%s", out)
	}
	runScript(t, srv, steps)
	evs, raw := w.events(t)
	if strings.Contains(string(raw), realToken) {
		t.Error("the audit log holds the MCP server's real token")
	}
	var granted, walled, shell bool
	for _, e := range evs {
		if e.Event != audit.EventNet || e.Detail["port"] != port {
			continue
		}
		switch {
		case e.Decision == audit.DecisionAllow && e.Detail["program"] == "mcp-granted":
			granted = true
		case e.Decision == audit.DecisionDeny && e.Detail["program"] == "mcp-walled" && e.Rule == "programs/mcp-walled":
			walled = true
		case e.Decision == audit.DecisionDeny && e.Detail["program"] == "curl" && e.Rule == "programs/mcp-granted":
			shell = true
		}
	}
	if !granted || !walled || !shell {
		t.Errorf("audit: granted allowed %v, walled refused %v, shell's curl refused %v", granted, walled, shell)
	}
}
