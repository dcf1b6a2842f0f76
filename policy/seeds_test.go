package policy

import (
	"testing"
)

// Codelia permissions spec (docs/policy.md, "Seed formats") §10 examples and §6 command semantics.
func TestCodelia(t *testing.T) {
	bare := bareRole("ask")
	t.Run("10.1 all confirm", func(t *testing.T) {
		e := engineWith(t, "bare", bare, `{ "version": 1, "permissions": { "allow": [], "deny": [] } }`)
		checkCases(t, e, []decCase{{"tool:bash:ls", Ask}, {"tool:view:a", Ask}, {"tool:git:status", Ask}})
	})
	t.Run("10.2 allow only bash", func(t *testing.T) {
		e := engineWith(t, "bare", bare, `{
  "version": 1,
  "permissions": {
    "allow": [
      { "tool": "bash", "command": "rg" },
      { "tool": "bash", "command_glob": "git status*" }
    ]
  }
}`)
		checkCases(t, e, []decCase{
			{"tool:bash:rg -n foo", Allow},
			{"tool:bash:rg    -S bar", Allow}, // §6.1 whitespace normalized
			{"tool:bash:git status", Allow},
			{"tool:bash:git status --short", Allow},
			{"tool:git:status -s", Allow},
			{"tool:bash:git push origin main", Ask},
			{"tool:bash:rgx foo", Ask},        // command matches whole words only
			{"tool:bash:rg foo | wc -l", Ask}, // §6.4 every segment must be allowed
			{"tool:bash:rg foo && rg bar", Allow},
			{"tool:view:a", Ask},
		})
	})
	t.Run("10.3 deny priority", func(t *testing.T) {
		e := engineWith(t, "bare", bare, `{
  "version": 1,
  "permissions": {
    "allow": [ { "tool": "bash", "command": "rm" } ],
    "deny":  [ { "tool": "bash", "command": "rm" } ]
  }
}`)
		checkCases(t, e, []decCase{{"tool:bash:rm -rf x", Deny}, {"tool:exec:rm a", Deny}, {"tool:bash:ls && rm a", Deny}})
	})
	t.Run("10.4 skill_load by name", func(t *testing.T) {
		e := engineWith(t, "bare", bare, `{
  "version": 1,
  "permissions": {
    "allow": [{ "tool": "skill_load", "skill_name": "repo-review" }],
    "deny": [{ "tool": "skill_load", "skill_name": "dangerous-skill" }]
  }
}`)
		checkCases(t, e, []decCase{{"tool:skill_load:repo-review", Allow}, {"tool:skill_load:dangerous-skill", Deny}, {"tool:skill_load:other", Ask}})
	})
	t.Run("6.2 command prefix words", func(t *testing.T) {
		e := engineWith(t, "bare", bare, `{"version":1,"permissions":{"allow":[{"tool":"bash","command":"git"}],"deny":[{"tool":"bash","command":"git push"}]}}`)
		checkCases(t, e, []decCase{{"tool:bash:git status", Allow}, {"tool:git:log -1", Allow}, {"tool:bash:git push origin main", Deny}, {"tool:git:push", Deny}})
	})
	t.Run("whole tool", func(t *testing.T) {
		e := engineWith(t, "bare", bare, `{"version":1,"permissions":{"allow":[{"tool":"read"},{"tool":"grep"}]}}`)
		checkCases(t, e, []decCase{{"tool:view:src/a.go", Allow}, {"tool:grep:foo", Allow}, {"tool:create_file:a", Ask}})
	})
	t.Run("glob on full text only raises", func(t *testing.T) {
		// §6.4 lets a full-text command_glob allow a whole line; agentbox only
		// lets whole-line rules make a decision stricter, because "rg*" would
		// otherwise allow "rg x; rm -rf /".
		e := engineWith(t, "bare", bare, `{"version":1,"permissions":{"allow":[{"tool":"bash","command_glob":"rg*"}],"deny":[{"tool":"bash","command_glob":"*--force*"}]}}`)
		checkCases(t, e, []decCase{{"tool:bash:rg x; rm -rf /", Ask}, {"tool:bash:rg x", Allow}, {"tool:bash:ls && git push --force", Deny}})
	})
}

// Forge (docs/policy.md, "Seed formats") DEFAULT_RULES, loaded from a Forge permission file.
const forgeDefaults = `{
  "default": "ask",
  "rules": [
    {"pattern": "tool:read", "permission": "allow", "description": "Allow file reading"},
    {"pattern": "tool:glob", "permission": "allow", "description": "Allow file searching"},
    {"pattern": "tool:grep", "permission": "allow", "description": "Allow content searching"},
    {"pattern": "tool:write", "permission": "ask", "description": "Confirm file writing"},
    {"pattern": "tool:edit", "permission": "ask", "description": "Confirm file editing"},
    {"pattern": "tool:bash", "permission": "ask", "description": "Confirm shell commands"},
    {"pattern": "tool:bash,arg:command:*rm -rf*", "permission": "deny", "description": "Block recursive force delete"},
    {"pattern": "tool:bash,arg:command:*> /dev/*", "permission": "deny", "description": "Block writing to devices"},
    {"pattern": "tool:write,arg:file_path:/etc/*", "permission": "deny", "description": "Block writing to /etc"}
  ]
}`

func TestForgeDefaults(t *testing.T) {
	e := engineWith(t, "bare", bareRole("allow"), forgeDefaults)
	if e.Role().Default != Ask {
		t.Errorf("default = %s, want ask from the Forge file", e.Role().Default)
	}
	checkCases(t, e, []decCase{
		{"tool:view:src/a.py", Allow},
		{"tool:glob:**/*.py", Allow},
		{"tool:grep:TODO", Allow},
		{"tool:create_file:src/a.py", Ask},
		{"tool:str_replace:src/a.py", Ask},
		{"tool:bash:git status", Ask},
		{"tool:bash:rm -rf build", Deny},
		{"tool:exec:rm -rf /", Deny},
		{"tool:bash:echo x > /dev/sda", Deny},
		{"tool:create_file:/etc/passwd", Deny},
		{"tool:create_file:etc/passwd", Ask},
		{"tool:unknown_tool:x", Ask},
	})
	r := e.Decide("tool:bash:rm -rf build")
	if r.Rule == nil || r.Reason == "" || !contains(r.Reason, "Block recursive force delete") {
		t.Errorf("result does not explain itself: %+v", r)
	}
}

func TestForgePatterns(t *testing.T) {
	e := engineWith(t, "bare", bareRole("allow"), `{"rules": [
  {"pattern": "tool:*,arg:command:curl *", "permission": "deny"},
  {"pattern": "tool:^(read|view)$", "permission": "ask"},
  {"pattern": "category:write_operations", "permission": "ask"},
  {"pattern": "tool:bash,arg:command:^git (status|log)", "permission": "allow"},
  {"pattern": "tool:bash,arg:command:git *", "permission": "ask", "enabled": false}
]}`)
	checkCases(t, e, []decCase{
		{"tool:bash:curl http://x", Deny},
		{"tool:view:a", Ask},
		{"tool:create_file:a", Ask},
		{"tool:delete:a", Ask},
		{"tool:git:status", Allow},
		{"tool:git:log", Allow},
		{"tool:git:diff", Allow}, // disabled rule ignored; role default allow
		{"tool:git:push", Ask},   // the command parser files git push under write
	})
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
