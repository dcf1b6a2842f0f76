package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/policytext"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// TestExplainAgreesWithDecide: for every line of the allowed and
// forbidden corpora, Explain gives the decision Decide gives, and no part
// it lists is stricter than that decision (`explain --shell 'bash -c "ls"'`
// printed ALLOW overall and "part 1 ... -> ask": the wrapper's own part
// was explained without the wrapper rule Decide applies).
func TestExplainAgreesWithDecide(t *testing.T) {
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: "/w"})
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

// TestExplainWhyAgreesWithDecide: over layered cases, the rule Explain
// marks as the winner is the one Decide names, and its "why" gives the
// step of the decision order that actually settled it (`explain` said
// "equally specific rules disagree; the stricter one wins" where the
// owner's allow had won over the role's ask).
func TestExplainWhyAgreesWithDecide(t *testing.T) {
	rules := func(rs ...string) string { return "version: 1\nrules:\n" + strings.Join(rs, "\n") + "\n" }
	for _, tc := range []struct {
		name                string
		user, project, file string
		action              string
		winner              string // the deciding rule's id
		why                 string // the start of its why
	}{
		{"the owner's allow over the role's ask", "", "", rules(`  - {id: f-curl, decision: allow, command: curl}`), "tool:exec:curl https://x",
			"f-curl", "equally specific, and an allow and an ask disagree: the owner's layer (user, project, --policy) wins over a role's, so f-curl (allow, layer file)"},
		{"the owner's ask over the role's allow", "", rules(`  - {id: p-make, decision: ask, command: make}`), "", "tool:exec:make all",
			"p-make", "equally specific, and an allow and an ask disagree: the owner's layer"},
		{"user ask against project allow: the stricter", rules(`  - {id: u-curl, decision: ask, command: curl}`), rules(`  - {id: p-curl, decision: allow, command: curl}`), "", "tool:exec:curl x",
			"u-curl", "equally specific rules disagree; the stricter one wins: u-curl (ask, layer user) over p-curl (allow, layer project)"},
		{"equal allows: the higher layer", rules(`  - {id: u-make, decision: allow, command: make}`), rules(`  - {id: p-make, decision: allow, command: make}`), rules(`  - {id: f-make, decision: allow, command: make}`), "tool:exec:make",
			"f-make", "equally specific and equally strict; the higher layer wins: f-make (allow, layer file)"},
		{"same layer: the later rule", "", "", rules(`  - {id: first, decision: ask, action: "tool:x:y"}`, `  - {id: second, decision: ask, action: "tool:x:y"}`), "tool:x:y",
			"second", "equally specific, equally strict, same layer; the later rule wins: second (ask, layer file) over first"},
		{"more specific allow over a broader ask", "", rules(`  - {id: p-local, decision: allow, command: curl localhost}`), "", "tool:exec:curl localhost",
			"p-local", "the most specific matching allow/ask rule wins: p-local (allow, layer project)"},
		{"a deny from the role over the owner's allow", "", rules(`  - {id: p-push, decision: allow, command: git push}`), "", "tool:git:push origin main",
			"", "a matching deny rule always wins, from any layer"},
		{"the only rule", "", "", rules(`  - {id: only, decision: allow, action: "tool:x:z"}`), "tool:x:z",
			"only", "the only matching allow/ask rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			o := policy.LoadOptions{Role: "developer", Workspace: ws, NoUserFile: tc.user == ""}
			write := func(p, body string) string {
				if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			if tc.user != "" {
				o.UserFile = write(filepath.Join(t.TempDir(), "user.yaml"), tc.user)
			}
			if tc.project != "" {
				write(filepath.Join(ws, "agentbox.yaml"), tc.project)
			}
			if tc.file != "" {
				o.Files = []string{write(filepath.Join(t.TempDir(), "file.yaml"), tc.file)}
			}
			e, err := load.Policy(o)
			if err != nil {
				t.Fatal(err)
			}
			q := policy.Query{Action: tc.action}
			d, ex := e.Decide(q), e.Explain(q)
			if d.Rule == nil || ex.Result.Decision != d.Decision || ex.Result.Rule == nil || ex.Result.Rule.ID != d.Rule.ID {
				t.Fatalf("Decide %s by %+v, Explain %s by %+v", d.Decision, d.Rule, ex.Result.Decision, ex.Result.Rule)
			}
			if tc.winner != "" && d.Rule.ID != tc.winner {
				t.Fatalf("Decide: %s by %s, want rule %s", d.Decision, d.Rule.ID, tc.winner)
			}
			if len(ex.Segments) != 1 {
				t.Fatalf("%d parts, want 1: %+v", len(ex.Segments), ex.Segments)
			}
			se := ex.Segments[0]
			if !strings.HasPrefix(se.Why, tc.why) {
				t.Errorf("why %q; want it to start %q", se.Why, tc.why)
			}
			if text := policytext.Explanation(ex); !strings.Contains(text, "  why: "+se.Why+"\n") {
				t.Errorf("the text does not print the why:\n%s", text)
			}
			// The narrative holds Decide's result: the winner is listed
			// first, and what the why claims is true of it and the
			// runner-up.
			w := se.Matches[0]
			if w.Ref.ID != d.Rule.ID {
				t.Errorf("first match %s, Decide's rule %s", w.Ref.ID, d.Rule.ID)
			}
			if d.Decision != policy.Deny && len(se.Matches) > 1 {
				ru := se.Matches[1]
				owner := func(l policy.Layer) bool {
					return l == policy.LayerUser || l == policy.LayerProject || l == policy.LayerFile
				}
				switch {
				case strings.Contains(se.Why, "the most specific") && w.Specificity <= ru.Specificity,
					strings.Contains(se.Why, "the stricter one wins") && (w.Specificity != ru.Specificity || w.Decision <= ru.Decision),
					strings.Contains(se.Why, "the owner's layer") && (w.Specificity != ru.Specificity || !owner(w.Ref.Layer) || owner(ru.Ref.Layer)),
					strings.Contains(se.Why, "the higher layer wins") && (w.Decision != ru.Decision || w.Ref.Layer <= ru.Ref.Layer):
					t.Errorf("why %q is not true of the winner %+v and the runner-up %+v", se.Why, w, ru)
				}
			}
		})
	}
}
