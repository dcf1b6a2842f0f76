package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSafeToRemember(t *testing.T) {
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
		got, ok := RememberPrefix(action)
		if strings.HasSuffix(want, "\x00") {
			want = ""
		}
		if got != want || ok != (want != "") || SafeToRemember(action) != ok {
			t.Errorf("RememberPrefix(%q) = %q %v, want %q", action, got, ok, want)
		}
	}
}

func TestAppendProjectRule(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agentbox.yaml")
	// creates the file
	if err := AppendProjectRule(p, Allow, "npm  test", "remembered"); err != nil {
		t.Fatal(err)
	}
	// appends to an existing file, keeps comments and other content
	orig, _ := os.ReadFile(p)
	os.WriteFile(p, append([]byte("# my project\n"), orig...), 0o644)
	if err := AppendProjectRule(p, Deny, "curl", ""); err != nil {
		t.Fatal(err)
	}
	if err := AppendProjectRule(p, Deny, "curl", ""); err != nil { // idempotent
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
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, e, []decCase{{"tool:exec:npm test", Allow}, {"tool:exec:curl x", Deny}})
	if r := e.Decide(Query{Action: "tool:exec:curl x"}); r.Rule.Layer != LayerProject {
		t.Errorf("layer = %s", r.Rule.Layer)
	}
	// refuses interpreters and >2 words
	if err := AppendProjectRule(p, Allow, "bash", ""); err == nil {
		t.Error("bash remembered")
	}
	if err := AppendProjectRule(p, Allow, "git push origin", ""); err == nil {
		t.Error("3 words remembered")
	}
	// Codelia JSON files stay Codelia JSON
	cj := filepath.Join(dir, "config.json")
	os.WriteFile(cj, []byte(`{"version": 1, "permissions": {"allow": [{"tool": "read"}]}}`), 0o600)
	if err := AppendProjectRule(cj, Allow, "git status", ""); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	data, _ = os.ReadFile(cj)
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON any more: %v\n%s", err, data)
	}
	e = engineWith(t, "bare", bareRole("ask"), string(data))
	checkCases(t, e, []decCase{{"tool:git:status", Allow}, {"tool:view:a", Allow}, {"tool:exec:make", Ask}})
	// Chorus profiles are refused (regexes are hand-written)
	ch := filepath.Join(dir, "chorus.yaml")
	os.WriteFile(ch, []byte("allow: [x]\n"), 0o600)
	if err := AppendProjectRule(ch, Allow, "ls", ""); err == nil {
		t.Error("Chorus profile modified")
	}
	// group-writable files are refused
	os.Chmod(p, 0o664)
	if err := AppendProjectRule(p, Allow, "ls", ""); err == nil {
		t.Error("group-writable file modified")
	}
}

func TestExplainAndJSON(t *testing.T) {
	e := engineWith(t, "developer", rules(`  - {id: my-make, decision: ask, command: make install}`))
	ex := e.Explain(Query{Action: "tool:bash:make install && git push origin main"})
	if ex.Result.Decision != Deny || len(ex.Segments) < 2 {
		t.Fatalf("explanation = %+v", ex)
	}
	s := ex.String()
	for _, want := range []string{"DENY", "developer/git.push", "my-make", "developer/make", "most specific", "a matching deny rule always wins"} {
		if !strings.Contains(s, want) {
			t.Errorf("explanation lacks %q:\n%s", want, s)
		}
	}
	r := e.Decide(Query{Action: "tool:bash:ls && git push origin main"})
	var got struct {
		Decision string `json:"decision"`
		Action   string `json:"action"`
		Rule     *struct {
			ID, Layer, Source string
		} `json:"rule"`
		Reason   string            `json:"reason"`
		Segments []json.RawMessage `json:"segments"`
	}
	data, _ := json.Marshal(r)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if got.Decision != "deny" || got.Action != "tool:bash:ls && git push origin main" || got.Rule == nil || got.Rule.ID != "developer/git.push" ||
		got.Rule.Layer != "role" || got.Rule.Source == "" || got.Reason == "" || len(got.Segments) != 2 {
		t.Fatalf("json = %s", data)
	}
	// default decisions have "rule": null; odd bytes stay valid JSON
	r = e.Decide(Query{Action: "tool:exec:frob \x01\"\\\xff\u2028"})
	data = r.AppendJSON(nil)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m["rule"] != nil {
		t.Fatalf("%v: %s", err, data)
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
		e := engineWith(t, "developer")
		prefix, err := e.RememberDeny(p, "tool:exec:curl -sS https://example.com", "test")
		if err != nil || prefix != "curl" {
			t.Fatalf("%s: RememberDeny = %q, %v", c.name, prefix, err)
		}
		if r := e.Decide(Query{Action: "tool:exec:curl -sS https://example.com"}); r.Decision != Deny {
			t.Errorf("%s: not denied in the session: %v", c.name, r.Decision)
		}
		data, _ := os.ReadFile(p)
		if !strings.Contains(string(data), c.wantInFile) {
			t.Errorf("%s: file lacks %q:\n%s", c.name, c.wantInFile, data)
		}
		fresh, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
		if err != nil {
			t.Fatalf("%s: reload: %v", c.name, err)
		}
		if r := fresh.Decide(Query{Action: "tool:exec:curl https://other.example"}); r.Decision != Deny {
			t.Errorf("%s: next load decides %v (%s)", c.name, r.Decision, r.Reason)
		}
	}
}

// TestSessionRuleRemoval: "always" answers are listed and can be removed
// during the session (Forge FR-5.4); the action is then decided afresh.
func TestSessionRuleRemoval(t *testing.T) {
	e := engineWith(t, "developer")
	e.Session().Add(Allow, "tool:exec:curl x")
	e.Session().Add(Deny, "tool:exec:make deploy")
	rs := e.Session().Rules()
	if len(rs) != 2 {
		t.Fatalf("SessionRules = %v", rs)
	}
	if e.Decide(Query{Action: "tool:exec:curl x"}).Decision != Allow {
		t.Fatal("answer not applied")
	}
	var id string
	for _, r := range rs {
		if r.Decision == "allow" {
			id = r.ID
		}
	}
	if err := e.Session().Remove(id); err != nil {
		t.Fatal(err)
	}
	if r := e.Decide(Query{Action: "tool:exec:curl x"}); r.Decision != Ask {
		t.Errorf("after removal: %v (%s)", r.Decision, r.Reason)
	}
	if len(e.Session().Rules()) != 1 || e.Decide(Query{Action: "tool:exec:make deploy"}).Decision != Deny {
		t.Error("the other answer went too")
	}
	if err := e.Session().Remove(id); err == nil || !strings.Contains(err.Error(), "no session rule") {
		t.Errorf("second removal: %v", err)
	}
}
