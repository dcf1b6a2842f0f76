package codex

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// FuzzCodexRules: any input either loads or is refused with an error
// naming the file; a loaded rule matches its own pattern.
func FuzzCodexRules(f *testing.F) {
	for _, s := range []string{
		"prefix_rule(pattern = [\"git\", [\"push\", \"fetch\"]], decision = \"prompt\", match = [[\"git\", \"push\"]], not_match = [\"git status\"])\n",
		"# c\nprefix_rule(pattern=['ls'])\nhost_executable(name = \"git\", paths = [\"/usr/bin/git\"])\n",
		"prefix_rule(", "prefix_rule(pattern = [[[[", "prefix_rule(pattern = [\"a\\\"b\"], justification = \"x\\n\")", "x = 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, errs := reader{}.Read("f.rules", policy.LayerFile, []byte(s), nil)
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "f.rules:") {
				t.Fatalf("error without the file: %v", err)
			}
		}
		for _, r := range got.(rules) {
			argv := make([]string, len(r.pattern))
			for i, alts := range r.pattern {
				argv[i] = alts[0]
			}
			if !r.match(argv) {
				t.Fatalf("rule %s does not match its own pattern", r.text)
			}
		}
	})
}
