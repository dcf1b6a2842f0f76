package codelia

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/policy"
)

// FuzzCodeliaConfig: any document either reads or is refused with errors
// naming the file and a line, never a panic; every rule read compiles,
// and a merged layer decides any action and line without panicking.
func FuzzCodeliaConfig(f *testing.F) {
	for _, s := range []string{
		`{"version": 1, "permissions": {"allow": [{"tool": "read"}, {"tool": "bash", "command": "git status"}], "deny": [{"tool": "bash", "command_glob": "rm -rf *"}]}}`,
		`{"version": 1, "permissions": {"allow": [{"tool": "skill_load", "skill_name": "x"}], "confirm": [{"tool": "bash", "command": "npm"}]}}`,
		`{"version": 2, "permissions": {"allow": [{"tool": "bash", "cmd": "ls"}]}}`,
		`{"permissions": {"allow": [{"tool": "read", "command": "ls"}], "deny": null}}`,
		`{"permissions": {"allow": [{"tool": "bash", "command": "a b c"}, {"tool": "bash", "command_glob": "[x"}]}}`,
		`{"permissions": {"deny": "x", "allow": [{"tool": "ba:sh"}, {}]}}`,
		"permissions:\n  allow:\n    - tool: bash\n      command_glob: '  '\n",
	} {
		f.Add(s, "rg foo | wc -l && git status")
	}
	f.Fuzz(func(t *testing.T, doc, line string) {
		var n yaml.Node
		if yaml.Unmarshal([]byte(doc), &n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			return
		}
		root := n.Content[0]
		if !(reader{}).Detect("c.json", nil, root) {
			return
		}
		got, errs := reader{}.Read("c.json", policy.LayerProject, nil, root)
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "c.json:") {
				t.Fatalf("error without the file: %v", err)
			}
		}
		rs := got.(*rules)
		if rs.Set.Len() != len(rs.Specs) {
			t.Fatalf("%d specs, %d compiled", len(rs.Specs), rs.Set.Len())
		}
		rs.Lint()
		l := reader{}.Merge([]policy.FormatSource{{Path: "c.json", Layer: policy.LayerProject, Rules: got}, {Path: "d.json", Layer: policy.LayerProject, Rules: rs.DenyAndAsk()}})
		l.Decide(policy.FormatQuery{Line: line, ToolCall: true})
		l.Decide(policy.FormatQuery{Action: "tool:view:" + line})
		l.Info()
	})
}

// FuzzCodeliaSegments: splitting never panics, never invents text, and a
// line without operators is one segment.
func FuzzCodeliaSegments(f *testing.F) {
	for _, s := range []string{"rg foo | wc -l", "a && b || c; d", "rg x > out.txt", "echo 'a|b' \"c;d\"", "a 2>> err |& b", "x\\|y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs := segments(s)
		total := 0
		for _, g := range segs {
			total += len(g)
		}
		if total > len(s) {
			t.Fatalf("segments %q longer than %q", segs, s)
		}
		if !strings.ContainsAny(s, "|&;<>'\"\\") && strings.TrimSpace(s) != "" && (len(segs) != 1 || segs[0] != strings.TrimSpace(s)) {
			t.Fatalf("%q split into %q", s, segs)
		}
	})
}
