package policy_test

import (
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// TestExplainAgreesWithDecide: for every line of the allowed and
// forbidden corpora, Explain gives the decision Decide gives, and no part
// it lists is stricter than that decision (`explain --shell 'bash -c "ls"'`
// printed ALLOW overall and "part 1 ... -> ask": the wrapper's own part
// was explained without the wrapper rule Decide applies).
func TestExplainAgreesWithDecide(t *testing.T) {
	e, err := policy.Load(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	lines := append(append([]string{`bash -c "ls"`, `sh -c 'git status && ls'`, `env FOO=1 ls`, `timeout 5 make test`, `rm build/x.o`, `rm -f a.tmp b.o`}, allowedShell...), forbiddenShell...)
	for _, line := range lines {
		q := policy.Query{Shell: line, ExecContext: policy.ExecContext{Cwd: "/w/target"}}
		d, ex := e.Decide(q), e.Explain(q)
		if ex.Result.Decision != d.Decision {
			t.Errorf("%q: Explain %s, Decide %s", line, ex.Result.Decision, d.Decision)
		}
		for i, s := range ex.Segments {
			if s.Result.Decision > ex.Result.Decision {
				t.Errorf("%q: part %d (%s) -> %s, stricter than the whole %s", line, i+1, s.Result.Action, s.Result.Decision, ex.Result.Decision)
			}
		}
	}
}
