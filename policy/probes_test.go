package policy

import "testing"

// TestAgentCLIProbes: what agent CLIs run at start on their own, harmless
// reads, is not asked about (headless, an ask is a refusal that fills the
// log): Gemini CLI's git hardening (empty core.hooksPath, sequence.editor,
// diff.external) and its system probes, pip's and Codex's lsb_release
// (a shell script, run through sh). A script of the same name elsewhere,
// or another program through sh, is still decided as before.
func TestAgentCLIProbes(t *testing.T) {
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		want Decision
	}{
		{"git -c core.hooksPath= -c sequence.editor= -c diff.external= rev-parse --show-toplevel", Allow},
		{"lspci", Allow}, {"xrandr --query", Allow}, {"clinfo", Allow}, {"lsb_release -a", Allow},
		{"sh /usr/bin/lsb_release -a", Allow},
		{"sh /tmp/lsb_release -a", Ask}, // outside the system dirs (in target/ it is the developer's own program)
		{"sh /usr/bin/rm -rf x", Ask},
		{"git -c core.hooksPath=./hooks status", Ask},
	} {
		if got := e.Decide(Query{Shell: c.line, ExecContext: ExecContext{Cwd: "/w/target"}}); got.Decision != c.want {
			t.Errorf("%q = %s (%s), want %s", c.line, got.Decision, got.Reason, c.want)
		}
	}
}
