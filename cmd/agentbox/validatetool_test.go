package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyValidateUnknownTool: `tool: delte` (a rule that can never
// match) is a warning naming the file, line and the nearest tool; with
// --strict validate fails on it.
func TestPolicyValidateUnknownTool(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(p, []byte("version: 1\nrules:\n  - {decision: deny, tool: delte, path: \"src/**\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := p + `:3: rule p.yaml:3 can never decide: tool "delte" names no action agentbox decides, so no action matches it (did you mean "delete"?)`
	out, errOut, code := runCLI(t, "", "policy", "validate", p)
	if code != 0 || !strings.Contains(errOut, "warning: "+want) || !strings.Contains(out, "ok: "+p) {
		t.Errorf("validate: exit %d %q %q; want ok with the warning %q", code, out, errOut, want)
	}
	_, errOut, code = runCLI(t, "", "policy", "validate", "--strict", p)
	if code != exitBadInput || !strings.Contains(errOut, want) || !strings.Contains(errOut, "1 rule(s) can never decide") {
		t.Errorf("validate --strict: exit %d %q; want 1 with %q", code, errOut, want)
	}
}
