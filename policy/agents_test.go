package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinAgentProfiles(t *testing.T) {
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range e.Agents() {
		names = append(names, a.Name)
		if a.Description == "" || len(a.Programs) == 0 || len(a.Hosts) == 0 || !strings.HasPrefix(a.Source, "builtin:agent:") {
			t.Errorf("profile %s incomplete: %+v", a.Name, a)
		}
	}
	if got := strings.Join(names, ","); got != "claude-code,codex,gemini" {
		t.Errorf("profiles %s", got)
	}
	cc := e.Agent("claude-code")
	if cc.SetEnv["IS_SANDBOX"] != "1" || !slices.Contains(cc.Env, "ANTHROPIC_API_KEY") || !slices.Contains(cc.BaseURLEnv, "ANTHROPIC_BASE_URL") {
		t.Errorf("claude-code: %+v", cc)
	}
}

// TestSelectAgent: a profile is chosen by the file the command resolves to
// (its npm package) or by the command's name; nothing else selects one.
func TestSelectAgent(t *testing.T) {
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv0, resolved, want, pkgDir string
	}{
		{"claude", "/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "claude-code", "/usr/lib/node_modules/@anthropic-ai/claude-code"},
		{"/usr/local/bin/claude", "/usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js", "claude-code", "/usr/local/lib/node_modules/@anthropic-ai/claude-code"},
		{"cc", "/home/u/.nvm/versions/node/v20/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "claude-code", "/home/u/.nvm/versions/node/v20/lib/node_modules/@anthropic-ai/claude-code"},
		{"claude", "/home/u/.local/share/claude/versions/2.1.0", "claude-code", ""},
		{"codex", "/usr/lib/node_modules/@openai/codex/bin/codex.js", "codex", "/usr/lib/node_modules/@openai/codex"},
		{"gemini", "", "gemini", ""},
		{"claudette", "/usr/bin/claudette", "", ""},
		{"bash", "/usr/bin/bash", "", ""},
		{"node", "/usr/lib/node_modules/@openai/codex-not/x.js", "", ""},
	}
	for _, c := range cases {
		a := e.SelectAgent(c.argv0, c.resolved)
		got := ""
		if a != nil {
			got = a.Name
		}
		if got != c.want {
			t.Errorf("SelectAgent(%q, %q) = %q, want %q", c.argv0, c.resolved, got, c.want)
			continue
		}
		if a != nil && a.PackageDir(c.resolved) != c.pkgDir {
			t.Errorf("PackageDir(%q) = %q, want %q", c.resolved, a.PackageDir(c.resolved), c.pkgDir)
		}
	}
}

// TestAgentProfileFile: a policy file adds a profile and replaces a
// built-in one by name; bad entries are errors naming file and line.
func TestAgentProfileFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "agents.yaml")
	os.WriteFile(good, []byte(`version: 1
agents:
  aider:
    description: aider
    programs: [aider]
    env: [OPENAI_API_KEY]
    hosts: [api.openai.com]
  codex:
    description: my codex
    programs: [codex]
    hosts: [gateway.example.com]
`), 0o600)
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{good}})
	if err != nil {
		t.Fatal(err)
	}
	if a := e.Agent("aider"); a == nil || !strings.HasPrefix(a.Source, good+":") {
		t.Fatalf("aider: %+v", a)
	}
	if a := e.Agent("codex"); a.Description != "my codex" || a.Hosts[0] != "gateway.example.com" {
		t.Errorf("codex not replaced: %+v", a)
	}
	if all, err := AgentProfiles(LoadOptions{NoUserFile: true, Files: []string{good}}); err != nil || len(all) != 4 {
		t.Errorf("AgentProfiles = %d, %v", len(all), err)
	}
	bad := []struct{ body, want string }{
		{"agents:\n  x:\n    views: [/etc/passwd]\n", "bad.yaml:3: agents.x.views: \"/etc/passwd\": want a clean path relative to HOME"},
		{"agents:\n  x:\n    views: [../up]\n", "want a clean path relative to HOME"},
		{"agents:\n  x:\n    install: [relative/dir]\n", "bad.yaml:3: agents.x.install: \"relative/dir\": want an absolute path or ~/PATH"},
		{"agents:\n  x:\n    env: [\"A-B\"]\n", "agents.x.env: \"A-B\": not a variable name"},
		{"agents:\n  x:\n    programs: [/usr/bin/x]\n", "a command name, not a path"},
		{"agents:\n  x:\n    hosts: [\"exa mple.com\"]\n", "bad.yaml:3: agents.x.hosts"},
		{"agents:\n  x:\n    colour: blue\n", "bad.yaml:3: unknown key \"colour\" in agent profile x"},
		{"agents:\n  \"bad name\": {}\n", "invalid agent profile name"},
		{"agents: [a]\n", "agents must be a mapping"},
	}
	for _, b := range bad {
		p := filepath.Join(dir, "bad.yaml")
		os.WriteFile(p, []byte(b.body), 0o600)
		_, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: error %v, want %q", b.body, err, b.want)
		}
	}
}

// TestAllowSources: the agent's own snapshot directory may be sourced;
// another file, a file in a subdirectory and a dynamic name still ask.
func TestAllowSources(t *testing.T) {
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	if e, err = e.WithGrants(Grants{Sources: []PathGrant{{Source: "test", Dirs: []string{"/ws/agents/main/home/.claude/shell-snapshots"}}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		line string
		want Decision
	}{
		{"source /ws/agents/main/home/.claude/shell-snapshots/snapshot-bash-1-a.sh 2>/dev/null || true && eval 'git status' < /dev/null", Allow},
		{". /ws/agents/main/home/.claude/shell-snapshots/snapshot-bash-1-a.sh", Allow},
		{"source /ws/agents/main/home/.bashrc", Ask},
		{"source /ws/agents/main/home/.claude/shell-snapshots/sub/x.sh", Ask},
		{"source /ws/agents/main/home/.claude/shell-snapshots/../../x.sh", Ask},
		{"source $F", Ask},
		{"source /ws/agents/main/home/.claude/shell-snapshots/s.sh && eval 'git push'", Deny},
		{"eval \"$(cat x)\"", Ask},
	}
	for _, c := range cases {
		if got := e.Decide(Query{Shell: c.line}); got.Decision != c.want {
			t.Errorf("%q: %v (%s), want %v", c.line, got.Decision, got.Reason, c.want)
		}
	}
}

// TestAllowSourceFiles: a file of the agent's HOME its shell tool sources
// at start-up (Codex: ~/.bashrc) may be sourced by its path and as
// "$HOME/.bashrc", ${HOME} or ~/; another file, another variable, a
// longer path or a bare `allow source` rule do not lift the ask.
func TestAllowSourceFiles(t *testing.T) {
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{"testdata/allow-source.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	g := Grants{SourceFiles: []SourceFileGrant{{Source: "test", Home: "/ws/agents/main/home", Rel: []string{".bashrc"}}}}
	if e, err = e.WithGrants(g); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		want Decision
	}{
		{`. "$HOME/.bashrc"`, Allow},
		{`source $HOME/.bashrc`, Allow},
		{`. "${HOME}/.bashrc"`, Allow},
		{`. ~/.bashrc`, Allow},
		{`. /ws/agents/main/home/.bashrc`, Allow},
		{"if [ -r \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\necho ok", Allow},
		{`. "$HOME/.profile"`, Ask},
		{`. "$X/.bashrc"`, Ask},
		{`. "$HOME/.bashrc.d/x"`, Ask},
		{`. "$HOME/../.bashrc"`, Ask},
		{`. "$HOME/.bashrc" && git push`, Deny},
	} {
		if got := e.Decide(Query{Shell: c.line}); got.Decision != c.want {
			t.Errorf("%q: %v (%s), want %v", c.line, got.Decision, got.Reason, c.want)
		}
	}
	if got := bare.Decide(Query{Shell: `. "$X"`}); got.Decision != Ask {
		t.Errorf("a bare allow of source lifted a dynamic source: %v (%s)", got.Decision, got.Reason)
	}
}
