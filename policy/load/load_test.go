package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

func TestStrictLoadErrors(t *testing.T) {
	cases := []struct {
		name, content string
		want          []string // substrings, each must appear (":LINE:" included)
	}{
		{"unknown top key", "version: 1\nrulez: []\n", []string{":2:", `unknown key "rulez"`}},
		{"unknown rule key", "version: 1\nrules:\n  - decision: deny\n    comand: curl\n", []string{":4:", `unknown key "comand"`}},
		{"bad decision", "rules:\n  - {decision: maybe, command: ls}\n", []string{":2:", `invalid decision "maybe"`}},
		{"bad regex", "rules:\n  - {decision: deny, regex: \"tool:(\"}\n", []string{":2:", "invalid regex"}},
		{"bad glob", "rules:\n  - {decision: deny, glob: \"rm \\\\\"}\n", []string{":2:", "invalid glob"}},
		{"bad path glob", "rules:\n  - {decision: deny, path: \"src/[a\"}\n", []string{":2:", "invalid path glob"}},
		{"bad ** glob", "rules:\n  - {decision: deny, path: \"src/a**\"}\n", []string{":2:", "whole path segment"}},
		{"bad category", "rules:\n  - {decision: ask, category: dangerous}\n", []string{":2:", `unknown category "dangerous"`}},
		{"empty regex", "rules:\n  - {decision: allow,\n     regex: \"\"}\n", []string{":3:", `regex "": an empty pattern`}},
		{"empty glob", "rules:\n  - {decision: allow, glob: \"\"}\n", []string{":2:", `glob "": an empty pattern`}},
		{"empty host", "rules:\n  - {decision: allow, host: \"\"}\n", []string{":2:", `invalid host pattern "": empty`}},
		{"errors in line order", "rules:\n  - decision: deny\n    regex: \"tool:(\"\n    tool: [\"a b\"]\n    path: \"src/[a\"\n", []string{":3: invalid regex", ":4: invalid tool name", ":5: invalid path glob"}},
		{"3-word command", "rules:\n  - {decision: ask, command: git push origin}\n", []string{":2:", "1 or 2 words"}},
		{"no matcher", "rules:\n  - {decision: ask}\n", []string{":2:", "no matcher"}},
		{"no decision", "rules:\n  - {command: ls}\n", []string{":2:", "no decision"}},
		{"duplicate key", "rules:\n  - {decision: ask, command: ls, command: rm}\n", []string{":2:", "duplicate key"}},
		{"unknown extends", "roles:\n  r:\n    extends: developr\n", []string{":3:", `extends unknown role "developr"`}},
		{"extends cycle", "roles:\n  a:\n    extends: b\n  b:\n    extends: a\n", []string{"extends cycle"}},
		{"builtin redefined", "roles:\n  developer:\n    default: allow\n", []string{":2:", "already defined"}},
		{"bad access", "roles:\n  r:\n    extends: developer\n    filesystem: {target: write}\n", []string{":4:", `invalid access "write"`}},
		{"bad size", "roles:\n  r:\n    limits: {memory: lots}\n", []string{":3:", "limits.memory"}},
		{"bad duration", "roles:\n  r:\n    limits: {timeout: soon}\n", []string{":3:", "limits.timeout"}},
		{"bad port", "roles:\n  r:\n    network: {tcp_connect: [70000]}\n", []string{":3:", "port"}},
		{"bad role key", "roles:\n  r:\n    permisions: {}\n", []string{":3:", `unknown key "permisions"`}},
		{"yaml syntax", "rules: [\n", []string{"p.yaml:"}},
		{"undoable allow", "rules:\n  - {decision: allow, undoable: true, command: rm}\n", []string{":2:", "only an ask rule can be undoable"}},
		{"undoable not bool", "rules:\n  - {decision: ask, undoable: maybe, command: rm}\n", []string{":2:", "undoable must be true or false"}},
		{"checkpoints bad size", "roles:\n  r:\n    checkpoints: {max_size: huge}\n", []string{":3:", "checkpoints.max_size"}},
		{"checkpoints bad age", "roles:\n  r:\n    checkpoints: {max_age: forever}\n", []string{":3:", "checkpoints.max_age"}},
		{"checkpoints exclude path", "roles:\n  r:\n    checkpoints: {exclude: [build/out]}\n", []string{":3:", "not a directory name"}},
		{"checkpoints enabled", "roles:\n  r:\n    checkpoints: {enabled: sometimes}\n", []string{":3:", "checkpoints.enabled must be true or false"}},
		{"checkpoints unknown key", "roles:\n  r:\n    checkpoints: {budget: 1G}\n", []string{":3:", `unknown key "budget"`}},
		{"codelia unknown key", `{"version":1,"permissions":{"allow":[{"tool":"bash","cmd":"ls"}]}}`, []string{":1:", `unknown key "cmd"`}},
		{"codelia command on non-bash", `{"version":1,"permissions":{"allow":[{"tool":"read","command":"ls"}]}}`, []string{":1:", "only to tool bash"}},
		{"chorus unknown key", "allow: [a]\nask: [b]\nprofile: x\n", []string{":3:", `unknown key "profile"`}},
		{"chorus preset name", `{"permissions": "permissive"}`, []string{":1:", `permissions "permissive": not a Chorus preset (open, standard, locked)`}},
		{"forge bad part", `{"rules":[{"pattern":"tools:bash","permission":"deny"}]}`, []string{":1:", "must start with tool:"}},
		{"forge bad permission", `{"rules":[{"pattern":"tool:bash","permission":"never"}]}`, []string{":1:", "invalid decision"}},
		{"json tabs and lines", "{\n\t\"rules\": [\n\t\t{\"decision\": \"deny\", \"regex\": \"(\"}\n\t]\n}\n", []string{":3:", "invalid regex"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writePolicy(t, "p.yaml", c.content)
			_, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), p) && c.name != "extends cycle" {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	p := writePolicy(t, "many.yaml", `version: 1
rules:
  - {decision: deny, regex: "tool:("}
  - {decision: sometimes, command: ls}
  - {decision: ask, bogus: 1}
roles:
  r1:
    extends: nobody
  r2:
    limits: {pids: -1}
`)
	ok := writePolicy(t, "ok.yaml", "version: 1\nrules:\n  - {decision: deny, command: curl}\n")
	errs := validateFiles(p, ok)
	if len(errs) < 5 {
		t.Fatalf("got %d problems, want >= 5: %v", len(errs), errs)
	}
	for _, line := range []string{":3:", ":4:", ":5:", ":8:", ":10:"} {
		if !strings.Contains(policy.Errors(errs).Error(), line) {
			t.Errorf("no problem reported at %s: %v", line, errs)
		}
	}
	if errs := validateFiles(ok); errs != nil {
		t.Fatalf("valid file: %v", errs)
	}
}

func TestPolicyFilePermissions(t *testing.T) {
	p := writePolicy(t, "p.yaml", "version: 1\n")
	if err := os.Chmod(p, 0o664); err != nil {
		t.Fatal(err)
	}
	_, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
	if err == nil || !strings.Contains(err.Error(), "writable by group or others") || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("group-writable: err = %v", err)
	}
	os.Chmod(p, 0o646)
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}}); err == nil {
		t.Fatal("world-writable file accepted")
	}
	os.Chmod(p, 0o644)
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}}); err != nil {
		t.Fatalf("0644 file refused: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("reason: chown to another user needs root")
	}
	if err := os.Chown(p, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err = load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
	if err == nil || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Fatalf("foreign owner: err = %v", err)
	}
	// The project file is checked too.
	ws := t.TempDir()
	os.WriteFile(ws+"/agentbox.yaml", []byte("version: 1\n"), 0o666)
	os.Chmod(ws+"/agentbox.yaml", 0o666)
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: ws}); err == nil {
		t.Fatal("world-writable project file accepted")
	}
}

func TestMissingFiles(t *testing.T) {
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{"/nonexistent/p.yaml"}}); err == nil {
		t.Fatal("missing --policy file accepted")
	}
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", UserFile: "/nonexistent/user.yaml"}); err == nil {
		t.Fatal("missing explicit user file accepted")
	}
	// a workspace without agentbox.yaml is fine
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if _, err := load.Policy(policy.LoadOptions{NoUserFile: true}); err == nil {
		t.Fatal("no role accepted")
	}
}

// TestForeignFormatErrors: bad Claude Code settings and Codex rule files
// are refused with the file, the line and what is wrong.
func TestForeignFormatErrors(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                []string
	}{
		{"claude bad rule", "settings.json", "{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls:*)\", \"bash ls\"]\n  }\n}\n", []string{"settings.json:3:", `"bash ls": want Tool or Tool(specifier)`}},
		{"claude bad key", "settings.json", "{\"permissions\": {\"allow\": [\"Read\"], \"permit\": []}}", []string{":1:", `unknown key "permit"`}},
		{"claude webfetch", "settings.json", "{\"permissions\": {\"deny\": [\"WebFetch(example.com)\"]}}", []string{"WebFetch takes domain:HOST"}},
		{"claude path dots", "settings.json", "{\"permissions\": {\"deny\": [\"Read(../x)\"]}}", []string{"'..' in a path rule"}},
		{"codex example fails", "a.rules", "prefix_rule(\n  pattern = [\"git\", \"push\"],\n  match = [\"git pull\"],\n)\n", []string{"a.rules:1: prefix_rule: match example \"git pull\" does not match pattern git push"}},
		{"codex not_match fails", "a.rules", "prefix_rule(pattern = [\"ls\"], not_match = [[\"ls\", \"-l\"]])\n", []string{"not_match example \"ls -l\" matches pattern ls"}},
		{"codex bad decision", "a.rules", "prefix_rule(pattern = [\"ls\"], decision = \"maybe\")\n", []string{"decision \"maybe\": want allow, prompt or forbidden"}},
		{"codex syntax", "a.rules", "prefix_rule(\n  pattern = [\"ls\"\n)\n", []string{"a.rules:3:1:", "expected ']'"}},
		{"codex unknown call", "a.rules", "allow_all()\n", []string{"a.rules:1: unknown function allow_all"}},
		{"codex unterminated", "a.rules", "prefix_rule(pattern = [\"ls])\n", []string{"unterminated string"}},
		{"codex empty pattern", "a.rules", "prefix_rule(pattern = [])\n", []string{"pattern must be a non-empty list"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writePolicy(t, c.file, c.content)
			_, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
			if err == nil {
				t.Fatalf("loaded; want %v", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestDiscovery: the other tools' files are found where they keep them;
// one the sandbox could have written only restricts (its allow rules are
// dropped, it sets no default); a file in agentbox's own format found
// there is refused.
func TestDiscovery(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	proj := filepath.Join(ws, "target", "proj")
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(make:*)"]}}`)
	write(filepath.Join(home, ".codex", "rules", "default.rules"), `prefix_rule(pattern = ["git", "reset"], decision = "forbidden")`)
	write(filepath.Join(home, ".codelia", "config.json"), `{"version": 1, "permissions": {"deny": [{"tool": "bash", "command": "shred"}]}}`)
	write(filepath.Join(home, ".config", "forge", "permissions.json"), `{"rules": [{"pattern": "tool:bash,arg:command:dd *", "permission": "deny"}]}`)
	write(filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(npm publish:*)"], "deny": ["Bash(npm unpublish:*)"]}}`)
	write(filepath.Join(proj, ".src", "forge", "permissions.json"), `{"default": "allow", "rules": [{"pattern": "tool:bash,arg:command:npm test*", "permission": "allow"}]}`)
	write(filepath.Join(ws, "agent.json"), `{"name": "x", "permissions": {"allow": ["tool:view:.*"], "ask": ["tool:bash:.*"]}}`)
	untrusted := func(p string) bool { return strings.HasPrefix(p, filepath.Join(ws, "target")+"/") }
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: false, UserFile: writePolicy(t, "user.yaml", "version: 1\n"),
		Workspace: ws, ProjectDir: proj, Discover: true, Home: home, Untrusted: untrusted})
	if err != nil {
		t.Fatal(err)
	}
	trusted, untr := e.Discovered()
	if len(trusted) != 5 || len(untr) != 2 {
		t.Fatalf("discovered %v, untrusted %v", trusted, untr)
	}
	for _, f := range e.Files() {
		if untrusted(f) {
			t.Errorf("an untrusted file is among the run's policy files: %s", f)
		}
	}
	checkCases(t, e, []decCase{
		{"tool:bash:git reset --hard", policy.Deny},     // Codex forbidden (and the role)
		{"tool:bash:shred x", policy.Deny},              // Codelia deny
		{"tool:bash:dd if=/dev/zero of=x", policy.Deny}, // Forge (user) deny
		{"tool:bash:npm unpublish x", policy.Deny},      // untrusted file: its deny counts
		{"tool:bash:npm publish", policy.Ask},           // ... its allow does not (Chorus agent.json asks for bash)
		{"tool:view:README.md", policy.Allow},           // Chorus agent.json at the workspace root (trusted)
	})
	// the Forge project file is untrusted: no default, no allow
	if r := e.Decide(policy.Query{Action: "tool:create_file:target/proj/x"}); r.Decision != policy.Deny {
		t.Errorf("create_file = %v (%s); Chorus agent.json denies unmatched tool calls", r.Decision, r.Reason)
	}
	write(filepath.Join(ws, ".claude", "settings.json"), "version: 1\nrules:\n  - {decision: allow, command: rm}\n")
	if _, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Workspace: ws, Discover: true, Home: home}); err == nil || !strings.Contains(err.Error(), "in agentbox's own format") {
		t.Errorf("native file in .claude: %v", err)
	}
}

// TestCheckpointsSection: a role's checkpoints section is read and
// inherited (a section that does not say enabled keeps the parent's);
// enabled: false keeps the undoable asks asking even where the caller
// decides as a run with checkpoints on; enabled: true turns them back on.
func TestCheckpointsSection(t *testing.T) {
	p := writePolicy(t, "p.yaml", "version: 1\nroles:\n  careful:\n    extends: developer\n    checkpoints: {enabled: false, max_size: 500M, max_age: 72h, exclude: [build], max_file_size: 1M}\n  strict:\n    extends: careful\n    checkpoints: {max_age: 72h}\n  again:\n    extends: careful\n    checkpoints: {enabled: true}\n")
	for _, role := range []string{"careful", "strict"} {
		e, err := load.Policy(policy.LoadOptions{Role: role, NoUserFile: true, Files: []string{p}, Checkpoints: true})
		if err != nil {
			t.Fatal(err)
		}
		c := e.Role().Checkpoints
		if !c.Off || c.MaxBytes != 500<<20 || c.MaxAge != 72*time.Hour || len(c.Exclude) != 1 || c.Exclude[0] != "build" || c.MaxFileSize != 1<<20 {
			t.Errorf("%s: checkpoints %+v", role, c)
		}
		if e.Checkpoints() {
			t.Errorf("%s: enabled: false, yet undoable asks allow", role)
		}
		if r := e.Decide(policy.Query{Argv: []string{"rm", "x"}}); r.Decision != policy.Ask {
			t.Errorf("%s: rm = %v, want ask (checkpoints off by the role)", role, r.Decision)
		}
	}
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "target"), 0o755)
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Checkpoints: true, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := load.Policy(policy.LoadOptions{Role: "again", NoUserFile: true, Files: []string{p}, Checkpoints: true}); err != nil || !a.Checkpoints() {
		t.Errorf("a role turning checkpoints back on (enabled: true): %v", err)
	}
	rm := policy.Query{Argv: []string{"rm", filepath.Join(ws, "target", "x")}}
	if r := e.Decide(rm); r.Decision != policy.Allow {
		t.Errorf("developer with checkpoints: rm in target/ = %v %s", r.Decision, r.Reason)
	}
	e.SetCheckpoints(false)
	if r := e.Decide(rm); r.Decision != policy.Ask {
		t.Errorf("developer without checkpoints: rm in target/ = %v %s", r.Decision, r.Reason)
	}
}
