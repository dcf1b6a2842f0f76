package remember

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

func TestSafe(t *testing.T) {
	for action, want := range map[string]string{
		"tool:exec:npm test -- --watch": "npm test",
		"tool:exec:ls -la":              "ls",
		"tool:git:status --short":       "git status",
		"tool:exec:/usr/bin/make all":   "make\x00", // make runs arbitrary recipes: never
		"tool:exec:bash -c ls":          "",
		"tool:exec:sh":                  "",
		"tool:exec:python3 x.py":        "",
		"tool:exec:node -e 1":           "",
		"tool:exec:env FOO=1 ls":        "",
		"tool:exec:sudo ls":             "",
		"tool:exec:xargs rm":            "",
		"tool:git:":                     "",
		"tool:git:-c core.pager=x log":  "",
		"tool:bash:ls && rm -rf /":      "",
		"tool:bash:ls -la":              "ls",
		"tool:view:a.go":                "",
		"not an action":                 "",
	} {
		got, ok := commandPrefix(action)
		if strings.HasSuffix(want, "\x00") {
			want = ""
		}
		if got != want || ok != (want != "") || safeToRemember(action) != ok {
			t.Errorf("commandPrefix(%q) = %q %v, want %q", action, got, ok, want)
		}
	}
}

func TestAppendProjectRule(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agentbox.yaml")
	// creates the file
	if err := appendProjectRule(p, policy.Allow, "npm  test", "remembered"); err != nil {
		t.Fatal(err)
	}
	// appends to an existing file, keeps comments and other content
	orig, _ := os.ReadFile(p)
	os.WriteFile(p, append([]byte("# my project\n"), orig...), 0o644)
	if err := appendProjectRule(p, policy.Deny, "curl", ""); err != nil {
		t.Fatal(err)
	}
	if err := appendProjectRule(p, policy.Deny, "curl", ""); err != nil { // idempotent
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "# my project") || strings.Count(string(data), "curl") != 1 {
		t.Fatalf("file:\n%s", data)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %o", fi.Mode().Perm())
	}
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	for action, want := range map[string]policy.Decision{"tool:exec:npm test": policy.Allow, "tool:exec:curl x": policy.Deny} {
		if r := e.Decide(policy.Query{Action: action}); r.Decision != want {
			t.Errorf("%s = %s, want %s", action, r.Decision, want)
		}
	}
	if r := e.Decide(policy.Query{Action: "tool:exec:curl x"}); r.Rule.Layer != policy.LayerProject {
		t.Errorf("layer = %s", r.Rule.Layer)
	}
	// refuses interpreters and >2 words
	if err := appendProjectRule(p, policy.Allow, "bash", ""); err == nil {
		t.Error("bash remembered")
	}
	if err := appendProjectRule(p, policy.Allow, "git push origin", ""); err == nil {
		t.Error("3 words remembered")
	}
	// Codelia JSON files stay Codelia JSON
	cj := filepath.Join(dir, "config.json")
	os.WriteFile(cj, []byte(`{"version": 1, "permissions": {"allow": [{"tool": "read"}]}}`), 0o600)
	if err := appendProjectRule(cj, policy.Allow, "git status", ""); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	data, _ = os.ReadFile(cj)
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON any more: %v\n%s", err, data)
	}
	bare := filepath.Join(t.TempDir(), "bare.yaml")
	os.WriteFile(bare, []byte("version: 1\nroles:\n  bare:\n    default: ask\n"), 0o600)
	e, err = load.Policy(policy.LoadOptions{Role: "bare", NoUserFile: true, Files: []string{bare, cj}})
	if err != nil {
		t.Fatal(err)
	}
	for action, want := range map[string]policy.Decision{"tool:git:status": policy.Allow, "tool:view:a": policy.Allow, "tool:exec:make": policy.Ask} {
		if r := e.Decide(policy.Query{Action: action}); r.Decision != want {
			t.Errorf("codelia file: %s = %s, want %s", action, r.Decision, want)
		}
	}
	// Chorus profiles are refused (regexes are hand-written)
	ch := filepath.Join(dir, "chorus.yaml")
	os.WriteFile(ch, []byte("allow: [x]\n"), 0o600)
	if err := appendProjectRule(ch, policy.Allow, "ls", ""); err == nil {
		t.Error("Chorus profile modified")
	}
	// group-writable files are refused
	os.Chmod(p, 0o664)
	if err := appendProjectRule(p, policy.Allow, "ls", ""); err == nil {
		t.Error("group-writable file modified")
	}
}

// TestRememberDeny: a "deny always" answer is saved as a deny rule for the
// command's prefix in the project file's own format (agentbox, Codelia,
// Forge), denies at once, and denies on the next load.
func TestRememberDeny(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, wantInFile string }{
		{"agentbox.yaml", "version: 1\nrules: []\n", "decision: deny"},
		{"config.json", `{"version": 1, "permissions": {"allow": [{"tool": "read"}]}}`, `"deny": [`},
		{"permissions.json", `{"default": "ask", "rules": [{"pattern": "tool:read", "permission": "allow"}]}`, `"pattern": "tool:bash,arg:command:curl*"`},
	} {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, []byte(c.content), 0o600)
		e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true})
		if err != nil {
			t.Fatal(err)
		}
		prefix, err := Deny(e, p, "tool:exec:curl -sS https://example.com", "test")
		if err != nil || prefix != "curl" {
			t.Fatalf("%s: RememberDeny = %q, %v", c.name, prefix, err)
		}
		if r := e.Decide(policy.Query{Action: "tool:exec:curl -sS https://example.com"}); r.Decision != policy.Deny {
			t.Errorf("%s: not denied in the session: %v", c.name, r.Decision)
		}
		data, _ := os.ReadFile(p)
		if !strings.Contains(string(data), c.wantInFile) {
			t.Errorf("%s: file lacks %q:\n%s", c.name, c.wantInFile, data)
		}
		fresh, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
		if err != nil {
			t.Fatalf("%s: reload: %v", c.name, err)
		}
		if r := fresh.Decide(policy.Query{Action: "tool:exec:curl https://other.example"}); r.Decision != policy.Deny {
			t.Errorf("%s: next load decides %v (%s)", c.name, r.Decision, r.Reason)
		}
	}
}

// TestAllow: a "remember" answer saves the shortest prefix that makes the
// next load allow the command, and nothing when no prefix would (the
// rule that still decides is named).
func TestAllow(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agentbox.yaml")
	os.WriteFile(p, []byte("version: 1\nrules: []\n"), 0o600)
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	prefix, err := Allow(e, p, "tool:exec:curl -sS https://example.com", "", "test")
	// curl alone would tie with the role's curl rule (ties ask): the
	// program with its first argument is the shortest that wins.
	if err != nil || prefix != "curl -sS" {
		t.Fatalf("Allow(curl) = %q, %v", prefix, err)
	}
	fresh, err := load.Policy(e.LoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r := fresh.Decide(policy.Query{Action: "tool:exec:curl -sS https://other.example"}); r.Decision != policy.Allow {
		t.Errorf("next load decides %v (%s)", r.Decision, r.Reason)
	}
	before, _ := os.ReadFile(p)
	if _, err := Allow(e, p, "tool:git:push origin main", "", "test"); err == nil {
		t.Error("a push was remembered over the role's deny")
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Errorf("file changed by a remember that could not take effect:\n%s", after)
	}
}
