package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/shell"

	"github.com/agentbox/agentbox/policy"
)

// TestDocsPolicyExamples: every YAML block of README.md and docs/policy.md
// that is a policy file (it has a version: or rules: key) loads without
// error, so an example a reader copies works.
func TestDocsPolicyExamples(t *testing.T) {
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for _, doc := range []string{"../../README.md", "../../docs/policy.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range block.FindAllStringSubmatch(string(data), -1) {
			text := m[1]
			if !regexp.MustCompile(`(?m)^(version|rules|roles):`).MatchString(text) || strings.Contains(text, "...") {
				continue // a fragment (a role's network block alone), or a schema with placeholders
			}
			p := filepath.Join(t.TempDir(), "example.yaml")
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if errs := policy.ValidateFiles(p); len(errs) > 0 {
				t.Errorf("%s, yaml block %d does not load: %v\n%s", doc, i+1, errs, text)
			}
		}
	}
}

// TestDocsCheckLines: every `agentbox check` line in README.md that
// promises an exit status ("# exit N") gives it.
func TestDocsCheckLines(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^agentbox (check .*?)\s+# exit (\d)`)
	found := 0
	for _, m := range line.FindAllStringSubmatch(string(data), -1) {
		args, err := shell.Fields(m[1], nil)
		if err != nil {
			t.Fatalf("%q: %v", m[1], err)
		}
		want, _ := strconv.Atoi(m[2])
		args = append([]string{args[0], "--no-user-policy"}, args[1:]...)
		out, errOut, code := runCLI(t, "", args...)
		if code != want {
			t.Errorf("README promises exit %d for `agentbox %s`; got %d\n%s%s", want, m[1], code, out, errOut)
		}
		found++
	}
	if found == 0 {
		t.Fatal("no `agentbox check ... # exit N` line found in README.md")
	}
}

// TestHookSettingsInsideRun: the settings shipped for a Claude Code run
// under `agentbox run` are the plain ones plus --audit none (inside the
// sandbox the audit log is out of reach), with the same fail-closed
// suffix.
func TestHookSettingsInsideRun(t *testing.T) {
	plain, err1 := os.ReadFile("../../examples/claude-code/settings.json")
	inside, err2 := os.ReadFile("../../examples/claude-code/settings-inside-run.json")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	want := strings.Replace(string(plain), "--role developer", "--role developer --audit none", 1)
	if strings.TrimSpace(string(inside)) != strings.TrimSpace(want) {
		t.Errorf("settings-inside-run.json is not settings.json with --audit none:\n%s", inside)
	}
}
