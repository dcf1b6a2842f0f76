package policy

import (
	"strings"
	"testing"
)

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
