package policylint

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testkit"
	_ "github.com/agentbox/agentbox/policy/formats" // the foreign formats' files and their lint
)

// writePolicy writes content to a private (0600) file in a temp dir.
var writePolicy = testkit.PrivateFile

// TestLint: rules that can never decide are reported with their file and
// line and the rule that wins over them; rules that do decide are not.
func TestLint(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                []string // substrings, one finding each
	}{
		{"native allow under a deny", "p.yaml", "version: 1\nrules:\n  - {decision: deny, command: git}\n  - {decision: allow, command: git push}\n  - {decision: allow, glob: \"git log*\"}\n  - {decision: allow, command: make}\n",
			[]string{"p.yaml:4: rule p.yaml:4 can never decide: every action it matches is denied by p.yaml:3", "p.yaml:5: rule p.yaml:5"}},
		{"native duplicate", "p.yaml", "version: 1\nrules:\n  - {decision: allow, command: make}\n  - {decision: ask, command: make}\n",
			[]string{"p.yaml:3: rule p.yaml:3 can never decide: p.yaml:4 (command \"make\")"}},
		{"native regex prefix", "p.yaml", "version: 1\nrules:\n  - {decision: deny, regex: \"tool:git:push.*\"}\n  - {decision: allow, regex: \"tool:git:push origin dev\"}\n  - {decision: allow, regex: \"tool:git:pull.*\"}\n",
			[]string{"p.yaml:4:"}},
		{"chorus ask after allow", "p.json", `{"allow": ["tool:bash:.*"], "ask": ["tool:bash:ls.*", "tool:git:push.*"]}`,
			[]string{`Chorus tries allow pattern "tool:bash:.*" first`}},
		{"codelia allow under deny", "c.json", `{"version": 1, "permissions": {"allow": [{"tool": "bash", "command": "rm"}], "deny": [{"tool": "bash", "command": "rm"}]}}`,
			[]string{"Codelia permissions rule c.json:1"}},
		{"claude allow under deny", "settings.json", `{"permissions": {"allow": ["Bash(git push origin:*)", "Bash(make:*)"], "deny": ["Bash(git push:*)"]}}`,
			[]string{`Claude Code rule "Bash(git push:*)" (deny)`}},
		// A tool: name no action carries: the rule never matches
		// (validate --strict fails on it), with the nearest known name.
		{"unknown tool", "p.yaml", "version: 1\nrules:\n  - {decision: deny, tool: delte, path: \"src/**\"}\n  - {decision: allow, tool: [view, wirte], path: \"docs/**\"}\n  - decision: ask\n    tool: frobnicate\n",
			[]string{`p.yaml:3: rule p.yaml:3 can never decide: tool "delte" names no action agentbox decides, so no action matches it (did you mean "delete"?)`,
				`p.yaml:4: rule p.yaml:4 in part never matches: tool "wirte" names no action agentbox decides, so no action matches it (did you mean "write"?)`,
				`p.yaml:5: rule p.yaml:5 can never decide: tool "frobnicate" names no action agentbox decides, so no action matches it (its tools: exec, git, bash,`}},
		{"claude tool names the hook maps, and case", "p.yaml", "version: 1\nrules:\n  - {decision: allow, tool: Read}\n  - {decision: allow, tool: Delete}\n",
			[]string{`p.yaml:3: rule p.yaml:3 can never decide: tool "Read" is Claude Code's name: the hook decides its calls as tool:view actions, so no action matches it (did you mean "view"?)`,
				`p.yaml:4: rule p.yaml:4 can never decide: tool "Delete": tool names are case-sensitive and no action names this one (did you mean "delete"?)`}},
		// Tools agentbox knows, aliases, other agents' tools and an
		// agent's own tool names (passed on as written) are fine.
		{"known and agent tools", "p.yaml", "version: 1\nrules:\n  - {decision: allow, tool: [view, files, overwrite, net, http, web_fetch, skill_load, glob_search]}\n  - {decision: ask, tool: [TodoWrite, mcp__github__create_issue, self_edit]}\n",
			nil},
		{"unknown tool in a role", "p.yaml", "version: 1\nroles:\n  r:\n    rules:\n      - {decision: allow, tool: veiw}\n",
			[]string{`p.yaml:5: rule r/p.yaml:5 can never decide: tool "veiw" names no action agentbox decides, so no action matches it (did you mean "view"?)`}},
		{"codex allow under forbidden", "a.rules", "prefix_rule(pattern = [\"git\"], decision = \"forbidden\")\nprefix_rule(pattern = [\"git\", \"status\"])\nprefix_rule(pattern = [\"ls\"])\n",
			[]string{"a.rules:2: rule a.rules:2 can never decide: prefix_rule git (forbidden)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writePolicy(t, c.file, c.content)
			fs, errs := Lint(p)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if len(fs) != len(c.want) {
				t.Errorf("%d findings, want %d: %v", len(fs), len(c.want), fs)
			}
			for i, w := range c.want {
				if i < len(fs) && !strings.Contains(fs[i].String(), w) {
					t.Errorf("finding %q lacks %q", fs[i], w)
				}
			}
		})
	}
	// errors still come first
	p := writePolicy(t, "bad.rules", "prefix_rule(pattern = [\"ls\"], match = [\"cat\"])\n")
	if _, errs := Lint(p); len(errs) != 1 || !strings.Contains(errs[0].Error(), "match example") {
		t.Errorf("errs = %v", errs)
	}
}

// TestLintRole: against a role, an allow its deny covers can never take
// effect and is named; one the owner's layer now wins over the role's ask
// (rm) takes effect and is not.
func TestLintRole(t *testing.T) {
	p := writePolicy(t, "p.yaml", "version: 1\nrules:\n  - {decision: allow, command: git push}\n  - {decision: allow, command: rm}\n")
	fs, errs := LintRole("developer", p)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "developer/git.push") || !strings.HasSuffix(fs[0].Source, ":3") {
		t.Errorf("findings %v; want the git push allow, shadowed by developer/git.push", fs)
	}
	if _, errs := LintRole("no-such-role", p); len(errs) == 0 {
		t.Error("an unknown role was accepted")
	}
}

// TestEditDistance: the distance "did you mean" ranks known tool names by.
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"delte", "delete", 1}, {"wirte", "write", 1}, {"veiw", "view", 1},
		{"view", "view", 0}, {"", "exec", 4}, {"git", "bash", 4}, {"create_fiel", "create_file", 1},
	} {
		if got, back := editDistance(c.a, c.b), editDistance(c.b, c.a); got != c.want || back != c.want {
			t.Errorf("editDistance(%q, %q) = %d (reversed %d), want %d", c.a, c.b, got, back, c.want)
		}
	}
}
