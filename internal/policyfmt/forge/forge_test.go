package forge

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/policy"
)

// read parses doc as the Forge file name (errors joined).
func read(t testing.TB, name, doc string) (*rules, string) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) == 0 {
		t.Fatalf("%q: %v", doc, err)
	}
	if !(reader{}).Detect(name, nil, n.Content[0]) {
		t.Fatalf("%s: not detected as Forge's", doc)
	}
	got, errs := reader{}.Read(name, policy.LayerProject, nil, n.Content[0])
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return got.(*rules), strings.Join(msgs, "\n")
}

// TestLint: an allow or ask that a stricter rule at least as specific
// covers never decides (Forge takes the most specific rule, the most
// restrictive at equal specificity); a more specific allow does decide.
func TestLint(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      []string // one finding each
	}{
		{"allow under an equal deny", `{"rules": [{"pattern": "tool:bash,arg:command:rm *", "permission": "allow"}, {"pattern": "tool:bash,arg:command:rm *", "permission": "deny"}]}`,
			[]string{"f.json:1: rule f.json:1 can never decide: Forge rules rule f.json:1 ("}},
		{"more specific allow decides", `{"rules": [{"pattern": "tool:bash", "permission": "deny"}, {"pattern": "tool:bash,arg:command:git status", "permission": "allow"}]}`,
			nil},
		{"ask under a whole-tool deny of equal rank", "rules:\n  - {pattern: 'tool:write', permission: deny}\n  - {pattern: 'tool:write', permission: ask, id: w}\n",
			[]string{"f.json:3: rule w can never decide"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, errs := read(t, "f.json", c.doc)
			if errs != "" {
				t.Fatal(errs)
			}
			fs := rs.Lint()
			if len(fs) != len(c.want) {
				t.Fatalf("%d findings, want %d: %v", len(fs), len(c.want), fs)
			}
			for i, w := range c.want {
				if !strings.Contains(fs[i].String(), w) {
					t.Errorf("finding %q lacks %q", fs[i], w)
				}
			}
		})
	}
}

// TestReadErrors: bad rules are refused with the file, the line and the
// pattern; a native rule in a Forge file is refused, not decided by
// Forge's order.
func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"rules": [{"pattern": "tools:bash", "permission": "deny"}]}`, `f.json:1: pattern "tools:bash": part "tools:bash" must start with tool:, arg: or category:`},
		{`{"rules": [{"pattern": "tool:bash", "permission": "never"}]}`, `f.json:1: permission: invalid decision "never"`},
		{`{"rules": [{"pattern": "tool:^(ba", "permission": "deny"}]}`, `f.json:1: pattern "tool:^(ba":`},
		{`{"rules": [{"pattern": "category:cooking", "permission": "deny"}]}`, `pattern "category:cooking": unknown category "cooking"`},
		{`{"rules": [{"pattern": "tool:bash,arg:command", "permission": "deny"}]}`, `arg part must be arg:NAME:VALUE`},
		{`{"rules": [{"pattern": "tool:bash,arg:command:", "permission": "deny"}]}`, `arg part "arg:command:" has no value`},
		{"rules:\n  - {pattern: 'tool:bash', permission: deny}\n  - {decision: allow, command: ls}\n", `f.json:3: not a Forge rule`},
		{`{"rules": [{"permission": "deny"}], "roles": {}}`, `Forge rule has no pattern`},
		{`{"rules": [{"pattern": "tool:bash", "permission": "deny", "enabled": "yes"}]}`, `enabled must be true or false`},
	} {
		_, errs := read(t, "f.json", c.doc)
		if !strings.Contains(errs, c.want) {
			t.Errorf("%s: errors %q, want %q", c.doc, errs, c.want)
		}
	}
}

// FuzzForgeRules: any document either reads or is refused with errors
// naming the file, never a panic; every rule read compiled, and a merged
// layer decides any action and line.
func FuzzForgeRules(f *testing.F) {
	for _, s := range []string{
		`{"default": "ask", "rules": [{"pattern": "tool:bash,arg:command:*rm -rf*", "permission": "deny"}]}`,
		`{"rules": [{"pattern": "tool:^(read|view)$,arg:path:^src/", "permission": "allow", "description": "d", "id": "x"}]}`,
		`{"rules": [{"pattern": "tool:*_file, category:write_operations", "permission": "ask", "enabled": false}]}`,
		`{"rules": [{"pattern": "tool:sh*ll", "permission": "deny"}, {"pattern": "tool:bash,arg:command:a, b", "permission": "allow"}]}`,
		`{"version": 2, "default": "maybe", "rules": [{"pattern": "x", "permission": "deny"}, {"pattern": "tool:b c"}]}`,
	} {
		f.Add(s, "git push origin main | tee log")
	}
	f.Fuzz(func(t *testing.T, doc, line string) {
		var n yaml.Node
		if yaml.Unmarshal([]byte(doc), &n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			return
		}
		root := n.Content[0]
		if !(reader{}).Detect("f.json", nil, root) {
			return
		}
		got, errs := reader{}.Read("f.json", policy.LayerUser, nil, root)
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "f.json:") {
				t.Fatalf("error without the file: %v", err)
			}
		}
		rs := got.(*rules)
		if rs.Set.Len() != len(rs.Specs) {
			t.Fatalf("%d specs, %d compiled", len(rs.Specs), rs.Set.Len())
		}
		rs.Lint()
		l := reader{}.Merge([]policy.FormatSource{{Path: "f.json", Layer: policy.LayerUser, Rules: got}, {Path: "g.json", Layer: policy.LayerProject, Rules: rs.DenyAndAsk()}})
		l.Decide(policy.FormatQuery{Line: line, ToolCall: true})
		l.Decide(policy.FormatQuery{Line: line, Argv: strings.Fields(line)})
		l.Decide(policy.FormatQuery{Action: "tool:view:" + line})
		l.Info()
	})
}
