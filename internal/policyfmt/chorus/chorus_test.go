package chorus

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/policy"
)

// root decodes doc's top mapping.
func root(t testing.TB, doc string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) == 0 {
		t.Fatalf("%q: %v", doc, err)
	}
	return n.Content[0]
}

// TestPreset: an agent.json naming a preset decides by the built-in
// role's patterns of that name; untrusted, only by its deny and ask
// patterns (a pattern's allow is dropped, unmatched stays denied).
func TestPreset(t *testing.T) {
	got, errs := reader{}.Read("agent.json", policy.LayerProject, nil, root(t, `{"name": "x", "permissions": "standard"}`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		rules  policy.FormatRules
		action string
		want   policy.Decision
	}{
		{got, "tool:view:README.md", policy.Allow},
		{got, "tool:bash:make", policy.Ask},
		{got.DenyAndAsk(), "tool:view:README.md", policy.Deny},
		{got.DenyAndAsk(), "tool:bash:make", policy.Ask},
	} {
		l := reader{}.Merge([]policy.FormatSource{{Path: "agent.json", Layer: policy.LayerProject, Rules: c.rules}})
		if v := l.Decide(policy.FormatQuery{Action: c.action, ToolCall: true}); v.Decision != c.want {
			t.Errorf("%s = %v (%s), want %v", c.action, v.Decision, v.Reason, c.want)
		}
	}
	if _, errs := (reader{}).Read("agent.json", policy.LayerProject, nil, root(t, `{"permissions": "lax"}`)); len(errs) != 1 || !strings.Contains(errs[0].Error(), `agent.json:1: permissions "lax": not a Chorus preset (open, standard, locked)`) {
		t.Errorf("unknown preset: %v", errs)
	}
}

// FuzzChorusProfile: any document either reads or is refused with errors
// naming the file, never a panic; every pattern read compiled, and its
// layer decides any action and line.
func FuzzChorusProfile(f *testing.F) {
	for _, s := range []string{
		`{"allow": ["tool:bash:ls.*", "tool:view:(?!secret).*"], "ask": ["tool:bash:.*"], "deny": ["tool:git:push.*"]}`,
		`{"name": "x", "permissions": {"allow": ["tool:view:.*"], "ask": ["tool:bash:.*"]}}`,
		`{"permissions": "locked", "version": 2}`,
		`{"allow": ["tool:bash:(", 3], "confirm": []}`,
		`{"version": 1, "ask": "tool:.*"}`,
	} {
		f.Add(s, "npm test && rm -rf /")
	}
	f.Fuzz(func(t *testing.T, doc, line string) {
		var n yaml.Node
		if yaml.Unmarshal([]byte(doc), &n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			return
		}
		r := n.Content[0]
		if !(reader{}).Detect("p.json", nil, r) {
			return
		}
		got, errs := reader{}.Read("p.json", policy.LayerFile, nil, r)
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "p.json:") {
				t.Fatalf("error without the file: %v", err)
			}
		}
		rs := got.(*rules)
		if rs.Set.Len() != len(rs.Specs) {
			t.Fatalf("%d specs, %d compiled", len(rs.Specs), rs.Set.Len())
		}
		rs.Lint()
		for _, fr := range []policy.FormatRules{got, rs.DenyAndAsk()} {
			l := reader{}.Merge([]policy.FormatSource{{Path: "p.json", Layer: policy.LayerFile, Rules: fr}})
			l.Decide(policy.FormatQuery{Line: line, ToolCall: true})
			l.Decide(policy.FormatQuery{Line: line, Argv: strings.Fields(line)})
			l.Decide(policy.FormatQuery{Action: "tool:view:" + line})
			l.Info()
		}
	})
}
