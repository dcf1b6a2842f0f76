package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// TestTransparentWrappers checks that a wrapper no rule names (nice, timeout,
// nohup, stdbuf) neither falls to the role default nor hides what it runs,
// while a rule that names the wrapper still decides it.
func TestTransparentWrappers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	src := `version: 1
roles:
  builder:
    default: ask
    rules:
      - {id: make, decision: allow, command: make}
      - {id: no-stdbuf, decision: deny, command: stdbuf}
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	eng, err := load.Policy(policy.LoadOptions{Role: "builder", Files: []string{file}, NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want policy.Decision
	}{
		{[]string{"make"}, policy.Allow},
		{[]string{"nice", "-n", "5", "make"}, policy.Allow},
		{[]string{"timeout", "10", "make", "-j2"}, policy.Allow},
		{[]string{"nohup", "make"}, policy.Allow},
		{[]string{"nice", "curl", "x"}, policy.Ask},      // inner command unmatched: role default
		{[]string{"stdbuf", "-oL", "make"}, policy.Deny}, // a rule names the wrapper
	} {
		if got := eng.Decide(policy.Query{Argv: tc.argv, ExecContext: policy.ExecContext{Cwd: dir}}).Decision; got != tc.want {
			t.Errorf("%q: got %v, want %v", tc.argv, got, tc.want)
		}
	}
}
