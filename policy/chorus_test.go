package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// Counterparts of the Chorus permission engine's tests (test_engine.py), one Go
// test per Python test name (test_check_allow_matches_first ->
// TestChorus_check_allow_matches_first). The Discord ask-UI tests
// (test_ask_view_*) belong to the approval UI, which lives in approval.

func TestChorus_check_allow_matches_first(t *testing.T) {
	e := chorusProfile(t, []string{`tool:bash:ls.*`}, []string{`tool:bash:.*`})
	checkCases(t, e, []decCase{{"tool:bash:ls -la", Allow}})
}

func TestChorus_check_ask_matches_when_allow_does_not(t *testing.T) {
	e := chorusProfile(t, []string{`tool:bash:ls.*`}, []string{`tool:bash:.*`})
	checkCases(t, e, []decCase{{"tool:bash:make build", Ask}})
}

func TestChorus_check_deny_when_nothing_matches(t *testing.T) {
	e := chorusProfile(t, []string{`tool:bash:ls.*`}, []string{`tool:bash:.*`})
	checkCases(t, e, []decCase{{"tool:create_file:x", Deny}, {"tool:self_edit:model:x", Deny}})
	// Chorus's git tool action is its own string; the same push typed in
	// the bash tool is tool:bash:git push ... (Chorus's custom profile example).
	checkCases(t, e, []decCase{{"tool:git:push origin main", Deny}, {"tool:bash:git push origin main", Ask}})
	if r := e.Decide(Query{Shell: "git push origin main"}); r.Decision != Ask {
		t.Errorf("shell git push = %v", r.Decision)
	}
	if r := e.Decide(Query{Argv: []string{"git", "push", "origin", "main"}, ExecContext: ExecContext{Cwd: ""}}); r.Decision != Ask {
		t.Errorf("exec git push = %v (%s)", r.Decision, r.Reason)
	}
	e = chorusProfile(t, []string{`tool:view:.*`}, nil)
	checkCases(t, e, []decCase{{"tool:git:push origin main", Deny}})
}

// A Chorus profile file is decided as Chorus decides: the allow list is
// tried first, so a pattern in both lists allows.
func TestChorus_check_allow_takes_priority_over_ask_for_same_pattern(t *testing.T) {
	e := chorusProfile(t, []string{`tool:git:push.*`}, []string{`tool:git:push.*`})
	checkCases(t, e, []decCase{{"tool:git:push origin main", Allow}})
	e = chorusProfile(t, []string{`tool:bash:.*`}, []string{`tool:bash:ls.*`})
	checkCases(t, e, []decCase{{"tool:bash:ls -la", Allow}})
	if r := e.Decide(Query{Shell: "ls -la"}); r.Decision != Allow {
		t.Errorf("DecideShell(ls -la) = %v (%s)", r.Decision, r.Reason)
	}
	// The role's own rule (ask) is below the profile: the profile decides.
	e = engineWith(t, "bare", "version: 1\nroles:\n  bare:\n    default: ask\n    rules: [{decision: ask, command: rm}]\n", `{"allow": ["tool:bash:.*"], "ask": []}`)
	if r := e.Decide(Query{Shell: "rm -rf build"}); r.Decision != Allow {
		t.Errorf("rm -rf build under allow tool:bash:.* = %v (%s); Chorus decides the bash action alone", r.Decision, r.Reason)
	}
}

func TestChorus_check_empty_allow_and_ask_denies_everything(t *testing.T) {
	e := chorusProfile(t, nil, nil)
	checkCases(t, e, []decCase{{"tool:view:a", Deny}, {"tool:bash:ls", Deny}, {"tool:git:status", Deny}, {"tool:create_file:x", Deny}})
}

func TestChorus_check_full_action_string_format(t *testing.T) {
	// fullmatch: "tool:file:.*" must not match another tool that merely
	// starts with the same letters, and a bare word matches nothing.
	e := chorusProfile(t, []string{`tool:file:.*`, `view`}, nil)
	checkCases(t, e, []decCase{
		{"tool:file:create src/app.py", Allow},
		{"tool:file_evil:hack", Deny},
		{"tool:view:view", Deny},
	})
}

func TestChorus_preset_open_allows_everything(t *testing.T) {
	e := engineWith(t, "open")
	checkCases(t, e, []decCase{{"tool:view:a", Allow}, {"tool:create_file:a", Allow}, {"tool:git:push origin main", Allow}, {"tool:self_edit:permissions:open", Allow}, {"tool:web_fetch:https://x", Allow}})
}

func TestChorus_preset_open_allows_bash_rm(t *testing.T) {
	checkCases(t, engineWith(t, "open"), []decCase{{"tool:bash:rm -rf node_modules", Allow}})
}

func TestChorus_preset_standard_allows_file_create(t *testing.T) {
	checkCases(t, engineWith(t, "standard"), []decCase{{"tool:create_file:src/main.py", Allow}, {"tool:file:create /src/app.py", Allow}})
}

func TestChorus_preset_standard_allows_file_view(t *testing.T) {
	checkCases(t, engineWith(t, "standard"), []decCase{{"tool:view:README.md", Allow}, {"tool:file:view README.md", Allow}})
}

func TestChorus_preset_standard_asks_bash(t *testing.T) {
	checkCases(t, engineWith(t, "standard"), []decCase{{"tool:bash:pip install requests", Ask}, {"tool:bash:ls", Ask}, {"tool:exec:ls -la", Ask}})
}

func TestChorus_preset_standard_asks_git_push(t *testing.T) {
	checkCases(t, engineWith(t, "standard"), []decCase{{"tool:git:push origin main", Ask}, {"tool:git:merge_request main", Ask}})
}

func TestChorus_preset_standard_allows_git_commit(t *testing.T) {
	checkCases(t, engineWith(t, "standard"), []decCase{{"tool:git:commit", Allow}, {"tool:git:branch feature/x", Allow}, {"tool:git:init", Allow}})
}

// Chorus's standard preset as shipped lists no self_edit pattern, so it
// denies; Chorus's own documentation of the preset asks for every self-edit.
// As docs/policy.md says: a self-edit of the system prompt is never automatic,
// it needs a human.
func TestChorus_preset_standard_denies_self_edit_system_prompt(t *testing.T) {
	e := engineWith(t, "standard")
	checkCases(t, e, []decCase{{"tool:self_edit:system_prompt", Ask}, {"tool:self_edit:permissions:open", Ask}})
	if r := e.Decide(Query{Action: "tool:self_edit:system_prompt"}); r.Decision == Allow {
		t.Fatal("self-edit must never be automatic")
	}
}

func TestChorus_preset_locked_allows_file_view(t *testing.T) {
	checkCases(t, engineWith(t, "locked"), []decCase{{"tool:view:src/a.go", Allow}, {"tool:file:view src/a.go", Allow}})
}

func TestChorus_preset_locked_denies_file_create(t *testing.T) {
	checkCases(t, engineWith(t, "locked"), []decCase{{"tool:create_file:a", Deny}, {"tool:str_replace:a", Deny}})
}

func TestChorus_preset_locked_denies_bash(t *testing.T) {
	checkCases(t, engineWith(t, "locked"), []decCase{{"tool:bash:ls", Deny}, {"tool:exec:cat x", Deny}})
}

func TestChorus_preset_locked_denies_git_push(t *testing.T) {
	checkCases(t, engineWith(t, "locked"), []decCase{{"tool:git:push origin main", Deny}})
}

func TestChorus_get_preset_returns_correct_profile(t *testing.T) {
	for _, name := range []string{"open", "standard", "locked"} {
		e := engineWith(t, name)
		if got := e.Role().Name; got != name {
			t.Errorf("role %s: Name = %q", name, got)
		}
		if e.Role().Default != Deny {
			t.Errorf("preset %s: default %s, want deny (Chorus: unmatched = deny)", name, e.Role().Default)
		}
	}
	ef := engineWith(t, "locked").Effective()
	var allows []string
	for _, r := range ef.Rules {
		allows = append(allows, r.Matcher)
	}
	if !strings.Contains(strings.Join(allows, " "), `regex "tool:view:.*"`) {
		t.Errorf("locked rules = %v, want tool:view:.*", allows)
	}
}

func TestChorus_get_preset_raises_on_unknown_name(t *testing.T) {
	_, err := Load(LoadOptions{Role: "superuser", NoUserFile: true})
	if err == nil || !strings.Contains(err.Error(), `unknown role "superuser"`) || !strings.Contains(err.Error(), "standard") {
		t.Fatalf("err = %v, want unknown role listing the known ones", err)
	}
}

func TestChorus_specific_allow_overrides_broad_ask(t *testing.T) {
	e := chorusProfile(t, []string{`tool:bash:npm test`, `tool:bash:npm run .*`}, []string{`tool:bash:.*`})
	checkCases(t, e, []decCase{{"tool:bash:npm test", Allow}, {"tool:bash:npm run lint", Allow}, {"tool:bash:npm publish", Ask}})
}

func TestChorus_regex_special_chars_in_action_handled(t *testing.T) {
	e := chorusProfile(t, []string{`tool:create_file:src/config\.json`, `tool:view:.*`}, nil)
	checkCases(t, e, []decCase{
		{"tool:create_file:src/config.json", Allow},
		{"tool:create_file:src/configXjson", Deny},
		{"tool:view:a+b(c)[d]*.txt", Allow},
		{"tool:view:$(rm -rf /)", Allow}, // a path is data, not a command
	})
}

func TestChorus_multiline_action_string_not_matched_across_lines(t *testing.T) {
	e := chorusProfile(t, []string{`tool:view:README\.md`, `tool:bash:ls.*`}, nil)
	checkCases(t, e, []decCase{
		{"tool:view:README.md\nsecret", Deny},
		{"tool:bash:ls\nrm -rf /", Deny},
	})
}

func TestChorus_action_string_with_colons_in_detail(t *testing.T) {
	tool, detail, err := ParseAction("tool:self_edit:docs:README.md")
	if err != nil || tool != "self_edit" || detail != "docs:README.md" {
		t.Fatalf("ParseAction = %q %q %v", tool, detail, err)
	}
	e := chorusProfile(t, []string{`tool:self_edit:docs:.*`}, nil)
	checkCases(t, e, []decCase{{"tool:self_edit:docs:README.md", Allow}, {"tool:self_edit:model:claude", Deny}})
}

func TestChorus_empty_detail_string(t *testing.T) {
	if got := FormatAction("bash", ""); got != "tool:bash:" {
		t.Fatalf("FormatAction = %q", got)
	}
	checkCases(t, engineWith(t, "standard"), []decCase{{"tool:bash:", Ask}, {"tool:view:", Allow}})
	checkCases(t, engineWith(t, "locked"), []decCase{{"tool:bash:", Deny}})
}

func TestChorus_format_action_produces_correct_string(t *testing.T) {
	for _, c := range []struct{ tool, detail, want string }{
		{"bash", "pip install requests", "tool:bash:pip install requests"},
		{"git", "push origin main", "tool:git:push origin main"},
		{"self_edit", "system_prompt", "tool:self_edit:system_prompt"},
	} {
		if got := FormatAction(c.tool, c.detail); got != c.want {
			t.Errorf("FormatAction(%q,%q) = %q", c.tool, c.detail, got)
		}
		tool, detail, err := ParseAction(c.want)
		if err != nil || tool != c.tool || detail != c.detail {
			t.Errorf("ParseAction(%q) = %q %q %v", c.want, tool, detail, err)
		}
	}
}

func TestChorus_invalid_regex_raises_at_construction(t *testing.T) {
	p := writePolicy(t, "bad.json", "{\n  \"allow\": [\"tool:view:.*\"],\n  \"ask\": [\"tool:(bash\"]\n}\n")
	_, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
	if err == nil || !strings.Contains(err.Error(), p+":3:") || !strings.Contains(err.Error(), "invalid regex") {
		t.Fatalf("err = %v, want invalid regex at %s:3", err, p)
	}
}

func TestChorus_profile_compiles_patterns_once(t *testing.T) {
	// A Chorus file's patterns are compiled by the core (RuleSet.Add:
	// compileFullRegex checks them at load, compiles at first use), once.
	var rs RuleSet
	for _, p := range []string{`tool:view:src/.*\.go`, `tool:create_file:docs/.*`, `tool:.*`} {
		if err := rs.Add(RuleSpec{Decision: Allow, Regex: p}); err != nil {
			t.Fatal(err)
		}
	}
	if !rs.MatchAction(0, "tool:view:src/main.go") {
		t.Fatal("want a match")
	}
	view := rs.sub.rules[0]
	var re0 = view.act.re.re
	if re0 == nil {
		t.Fatal("the pattern was not compiled by its first use")
	}
	e := chorusProfile(t, []string{`tool:view:src/.*\.go`, `tool:create_file:docs/.*`}, []string{`tool:.*`})
	if e.Decide(Query{Action: "tool:view:src/main.go"}).Decision != Allow {
		t.Fatal("want allow")
	}
	allocs := testing.AllocsPerRun(200, func() {
		if e.Decide(Query{Action: "tool:view:src/main.go"}).Decision != Allow {
			t.Fatal("want allow")
		}
		rs.MatchAction(0, "tool:view:src/main.go")
	})
	// Compiling a regex allocates dozens of times; deciding allocates only
	// the list of matching rules and the action string.
	if allocs > 3 && !raceEnabled {
		t.Errorf("Decide allocated %v times per call; patterns must be compiled once", allocs)
	}
	if view.act.re.re != re0 {
		t.Error("compiled regex changed between checks")
	}
}

func TestChorus_profile_serialization_to_dict(t *testing.T) {
	e := chorusProfile(t, []string{`tool:view:.*`}, []string{`tool:bash:.*`})
	data, err := json.Marshal(e.Effective())
	if err != nil {
		t.Fatal(err)
	}
	var back Effective
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range back.Formats[0].Rules {
		got[r.Matcher] = r.Decision
	}
	if got[`regex "tool:view:.*"`] != "allow" || got[`regex "tool:bash:.*"`] != "ask" || back.Formats[0].Default != "deny" || back.Formats[0].Format != "chorus" {
		t.Fatalf("round trip = %+v", back)
	}
}

func TestChorus_profile_deserialization_from_dict(t *testing.T) {
	// A bare Chorus profile file, and Chorus' agent.json {"permissions": {...}}.
	for _, content := range []string{
		`{"allow": ["tool:view:.*", "tool:create_file:docs/.*"], "ask": ["tool:bash:.*"]}`,
		`{"permissions": {"allow": ["tool:view:.*", "tool:create_file:docs/.*"], "ask": ["tool:bash:.*"]}}`,
	} {
		e := engineWith(t, "locked", content)
		checkCases(t, e, []decCase{
			{"tool:view:a", Allow}, {"tool:create_file:docs/x.md", Allow},
			{"tool:create_file:src/x.go", Deny}, {"tool:bash:ls", Ask}, {"tool:self_edit:model:x", Deny},
		})
	}
}

// Chorus' documented lookahead patterns load on RE2 and mean what they say.
func TestChorus_negative_lookahead(t *testing.T) {
	e := chorusProfile(t, []string{`tool:git:(?!push).*`, `tool:git:push origin (?!main).*`}, []string{`tool:git:push.*`})
	checkCases(t, e, []decCase{
		{"tool:git:commit", Allow},
		{"tool:git:status", Allow},
		{"tool:git:push origin main", Ask},
		{"tool:git:push origin feature/auth", Allow},
		{"tool:git:pushx", Ask},
	})
	for _, bad := range []string{`tool:(?=x).*`, `tool:(?<!x).*`, `tool:(a(?!b)).*`, `(?!a)(?!b)x`} {
		if _, err := compileFullRegex(bad); err == nil {
			t.Errorf("compileFullRegex(%q) = nil error, want unsupported lookaround", bad)
		}
	}
}

// Views of an action (a command seen as tool:bash:...) are matched with the
// pattern minus its literal head; alternations keep their meaning.
func TestViewMatching(t *testing.T) {
	e := chorusRole(t, []string{`tool:bash:x.*|tool:bash:y.*`, `tool:bash:git st[a]tus.*`, `tool:exec:git log.*`}, []string{`tool:bash:(cat|head) .*`})
	checkCases(t, e, []decCase{
		{"tool:exec:x1", Allow}, {"tool:exec:y1", Allow}, {"tool:exec:z1", Deny},
		{"tool:git:status -s", Allow}, {"tool:git:log", Allow}, {"tool:git:diff", Deny},
		{"tool:exec:cat a", Ask}, {"tool:exec:head a", Ask}, {"tool:exec:tail a", Deny},
	})
}
