package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// hookWorkspace makes a workspace with the standard areas, a file in
// context/, a symlink from target/ to /etc and a policy file of our own.
func hookWorkspace(t *testing.T) (ws, policyFile, logFile string) {
	t.Helper()
	ws = t.TempDir()
	for _, d := range []string{"context", "target/src", "feedback", "agents/a1"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ws, "context", "spec.md"), []byte("spec"), 0o644)
	if err := os.Symlink("/etc", filepath.Join(ws, "target", "etclink")); err != nil {
		t.Fatal(err)
	}
	policyFile = filepath.Join(t.TempDir(), "hook-test.yaml")
	err := os.WriteFile(policyFile, []byte(`version: 1
rules:
  - {id: no-prs, decision: deny, regex: "tool:mcp__github__create_pull_request:.*", description: "agents do not open pull requests"}
  - {id: docs-site, decision: allow, regex: "tool:web_fetch:https://pkg\\.go\\.dev/.*"}
  - {id: python-docs, decision: allow, host: docs.python.org}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return ws, policyFile, filepath.Join(t.TempDir(), "audit.jsonl")
}

type hookAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

func TestHookClaudeCode(t *testing.T) {
	ws, pol, logf := hookWorkspace(t)
	// Real PreToolUse payloads, as Claude Code sends them (absolute paths).
	ev := func(tool, input string) string {
		return `{"session_id":"sess-1","transcript_path":"/tmp/t.jsonl","cwd":"` + ws + `/target","permission_mode":"default",` +
			`"hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"toolu_01"}`
	}
	tests := []struct {
		name       string
		stdin      string
		decision   string
		action     string // audited action
		reasonPart string
		code       int
	}{
		{"bash git push denied", ev("Bash", `{"command":"git push origin main","description":"Push"}`), "deny", "tool:bash:git push origin main", "git.push", 0},
		{"bash compound with push denied", ev("Bash", `{"command":"go test ./... && git push"}`), "deny", "tool:bash:go test ./... && git push", "git.push", 0},
		{"read context allowed", ev("Read", `{"file_path":"`+ws+`/context/spec.md"}`), "allow", "tool:view:context/spec.md", "", 0},
		{"write context denied", ev("Write", `{"file_path":"`+ws+`/context/spec.md","content":"x"}`), "deny", "tool:create_file:context/spec.md", "read-only", 0},
		{"write new file in target allowed", ev("Write", `{"file_path":"`+ws+`/target/src/new/main.go","content":"package main"}`), "allow", "tool:create_file:target/src/new/main.go", "", 0},
		{"relative path uses cwd", ev("Edit", `{"file_path":"src/main.go","old_string":"a","new_string":"b"}`), "allow", "tool:str_replace:target/src/main.go", "", 0},
		{"multiedit", ev("MultiEdit", `{"file_path":"`+ws+`/context/spec.md","edits":[{"old_string":"a","new_string":"b"}]}`), "deny", "tool:str_replace:context/spec.md", "", 0},
		{"read outside denied", ev("Read", `{"file_path":"/etc/shadow"}`), "deny", "tool:view:/etc/shadow", "outside the workspace", 0},
		{"read through symlink denied", ev("Read", `{"file_path":"`+ws+`/target/etclink/passwd"}`), "deny", "tool:view:" + ws + "/target/etclink/passwd", "really /etc/passwd", 0},
		{"dotdot refused", ev("Read", `{"file_path":"`+ws+`/target/../context/spec.md"}`), "deny", "tool:view:" + ws + "/target/../context/spec.md", "'..' components", 0},
		{"glob relative", ev("Glob", `{"pattern":"**/*.go"}`), "allow", "tool:view:target/**/*.go", "", 0},
		{"glob absolute pattern outside", ev("Glob", `{"pattern":"/etc/**/*.conf"}`), "deny", "tool:view:/etc/**/*.conf", "outside the workspace", 0},
		{"grep with path", ev("Grep", `{"pattern":"TODO","path":"`+ws+`/context"}`), "allow", "tool:view:context", "", 0},
		{"web fetch allowed by policy file", ev("WebFetch", `{"url":"https://pkg.go.dev/os","prompt":"summarise"}`), "allow", "tool:web_fetch:https://pkg.go.dev/os", "docs-site", 0},
		{"web fetch by host: allowed host", ev("WebFetch", `{"url":"https://docs.python.org/3/","prompt":"x"}`), "allow", "tool:net:docs.python.org:443", "", 0},
		{"web fetch by host: unlisted host", ev("WebFetch", `{"url":"http://evil.example:8080/x","prompt":"x"}`), "deny", "tool:net:evil.example:8080", "not in the network allowlist", 0},
		{"todo list", ev("TodoWrite", `{"todos":[{"content":"x","status":"pending"}]}`), "allow", `tool:TodoWrite:{"todos":[{"content":"x","status":"pending"}]}`, "", 0},
		{"write the project policy", ev("Write", `{"file_path":"`+ws+`/agentbox.yaml","content":"x"}`), "deny", "tool:create_file:agentbox.yaml", "project policy", 0},
		// outside a run nothing takes checkpoints: deleting work asks
		{"rm outside a run asks", ev("Bash", `{"command":"rm -rf src"}`), "ask", "tool:bash:rm -rf src", "developer/rm", 0},
		{"mcp tool denied by policy file", ev("mcp__github__create_pull_request", `{"title":"x", "body":"y"}`), "deny", `tool:mcp__github__create_pull_request:{"title":"x","body":"y"}`, "agents do not open pull requests", 0},
		// Malformed input: deny on stdout and exit 2, which Claude Code treats as a block.
		{"not json", "this is not json", "deny", "", "not a PreToolUse JSON object", exitHookBlock},
		{"empty", "", "deny", "", "empty input", exitHookBlock},
		{"no tool_name", `{"tool_input":{}}`, "deny", "", `missing "tool_name"`, exitHookBlock},
		{"tool_input not object", `{"tool_name":"Bash","tool_input":"ls"}`, "deny", "", "must be a JSON object", exitHookBlock},
		{"wrong event", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, "deny", "", "PreToolUse only", exitHookBlock},
		{"trailing data", `{"tool_name":"Bash","tool_input":{"command":"ls"}} {}`, "deny", "", "trailing data", exitHookBlock},
		{"bash without command", ev("Bash", `{}`), "deny", "", "tool_input.command is missing", exitHookBlock},
		{"read path not a string", ev("Read", `{"file_path":42}`), "deny", "", "not a string", exitHookBlock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := countEvents(t, logf)
			out, errOut, code := runCLI(t, tc.stdin, "hook", "claude-code", "--role", "developer", "--workspace", ws, "--policy", pol, "--audit", logf)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
			var a hookAnswer
			if err := json.Unmarshal([]byte(out), &a); err != nil {
				t.Fatalf("stdout is not the hook answer: %v\n%s", err, out)
			}
			h := a.HookSpecificOutput
			if h.HookEventName != "PreToolUse" || h.PermissionDecision != tc.decision || !strings.Contains(h.PermissionDecisionReason, tc.reasonPart) {
				t.Fatalf("answer %+v; want %s with reason containing %q", h, tc.decision, tc.reasonPart)
			}
			evs := readEvents(t, logf)
			if len(evs) != before+1 {
				t.Fatalf("%d new audit events, want 1", len(evs)-before)
			}
			e := evs[len(evs)-1]
			if e.Event != audit.EventTool || e.Decision != tc.decision || e.Action != tc.action || e.Role != "developer" || e.Agent != "claude-code" {
				t.Fatalf("audit event %+v; want decision %s action %q", e, tc.decision, tc.action)
			}
			if tc.code == 0 && (e.Run != "sess-1" || e.Detail["tool_use_id"] != "toolu_01" || e.Detail["hook"] != "claude-code") {
				t.Errorf("audit event lacks session/tool ids: %+v", e)
			}
		})
	}
	if _, err := audit.VerifyFile(logf); err != nil {
		t.Fatalf("hook's audit log does not verify: %v", err)
	}
}

func TestHookClaudeCodeSetupErrorsBlock(t *testing.T) {
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	ws, pol, logf := hookWorkspace(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nrules:\n  - {id: x, decision: maybe, regex: \"(\"}\n"), 0o600)
	in := `{"tool_name":"Bash","tool_input":{"command":"ls"}}`
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no role", []string{"--workspace", ws}, "--role is required"},
		{"no workspace and nowhere to look", []string{"--role", "developer"}, "no --workspace"},
		{"missing workspace", []string{"--role", "developer", "--workspace", filepath.Join(ws, "nope")}, "--workspace"},
		{"unknown role", []string{"--role", "no-such-role", "--workspace", ws}, "policy:"},
		{"bad policy file", []string{"--role", "developer", "--workspace", ws, "--policy", bad}, "bad.yaml:3"},
		{"audit to stdout", []string{"--role", "developer", "--workspace", ws, "--audit", "-"}, "stdout carries the hook's answer"},
		{"audit unwritable", []string{"--role", "developer", "--workspace", ws, "--audit", "/proc/agentbox-audit.jsonl"}, "--audit"},
	}
	_ = pol
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"hook", "claude-code"}, tc.args...)
			if !hookHasFlag(tc.args, "--audit") {
				args = append(args, "--audit", logf)
			}
			out, errOut, code := runCLI(t, in, args...)
			var a hookAnswer
			if code != exitHookBlock || json.Unmarshal([]byte(out), &a) != nil || a.HookSpecificOutput.PermissionDecision != "deny" {
				t.Fatalf("exit %d, stdout %q; want a deny and exit %d", code, out, exitHookBlock)
			}
			if !strings.Contains(errOut, tc.want) || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, tc.want) {
				t.Fatalf("stderr %q / reason %q lack %q", errOut, a.HookSpecificOutput.PermissionDecisionReason, tc.want)
			}
		})
	}
}

func TestHookClaudeCodeAuditNone(t *testing.T) {
	ws, _, _ := hookWorkspace(t)
	out, errOut, code := runCLI(t, `{"tool_name":"Bash","tool_input":{"command":"git push"}}`,
		"hook", "claude-code", "--role", "developer", "--workspace", ws, "--audit", "none")
	var a hookAnswer
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	if _, err := os.Stat("none"); err == nil {
		t.Fatal(`--audit none created a file named "none"`)
	}
}

func TestClaudeCodeSettingsExample(t *testing.T) {
	raw, err := os.ReadFile("../../examples/claude-code/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("settings.json: %v", err)
	}
	pre := s.Hooks["PreToolUse"]
	if len(pre) == 0 || len(pre[0].Hooks) == 0 || pre[0].Hooks[0].Type != "command" ||
		!strings.Contains(pre[0].Hooks[0].Command, "agentbox hook claude-code --role") {
		t.Fatalf("settings.json does not wire agentbox as a PreToolUse hook: %+v", s)
	}
}

func hookHasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f {
			return true
		}
	}
	return false
}

func readEvents(t *testing.T, path string) []audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []audit.Event
	if err := audit.Read(f, audit.Filter{}, func(e audit.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return evs
}

func countEvents(t *testing.T, path string) int {
	if _, err := os.Stat(path); err != nil {
		return 0
	}
	return len(readEvents(t, path))
}

// FuzzClaudeHookInput feeds arbitrary stdin to the hook's parser and tool
// mapping: never a panic, and every mapped path action stays inside the
// workspace.
func FuzzClaudeHookInput(f *testing.F) {
	ws := f.TempDir()
	os.MkdirAll(filepath.Join(ws, "target"), 0o755)
	os.Symlink("/etc", filepath.Join(ws, "target", "out"))
	eng, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		f.Skipf("reason: developer role does not load: %v", err)
	}
	w, err := boundary.NewRoot(ws)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"tool_name":"Bash","tool_input":{"command":"git push origin main"}}`,
		`{"tool_name":"Read","cwd":"` + ws + `","tool_input":{"file_path":"target/out/passwd"}}`,
		`{"tool_name":"Glob","tool_input":{"pattern":"/etc/*","path":"x"}}`,
		`{"tool_name":"Grep","tool_input":{"pattern":"x","path":"` + ws + `/target"}}`,
		`{"tool_name":"Write","tool_input":{"file_path":"` + ws + `/target/a","content":""}}`,
		`{"tool_name":"WebFetch","tool_input":{"url":"http://x"}}`,
		`{"tool_name":"X","tool_input":{"a":[1,2,{"b":null}]}}`,
		`{"tool_name":"Bash","tool_input":{"command":42}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := parseClaudeHookInput(raw)
		if err != nil {
			return
		}
		action, res, err := judge.DecideTool(eng, w, judge.ToolCall{Name: in.ToolName, Input: in.ToolInput, Cwd: in.Cwd})
		if err != nil {
			return
		}
		if tool, detail, ok := strings.Cut(strings.TrimPrefix(action, "tool:"), ":"); ok && res.Decision != policy.Deny &&
			(tool == "view" || tool == "create_file" || tool == "str_replace") {
			if strings.HasPrefix(detail, "/") || detail == ".." || strings.HasPrefix(detail, "../") {
				t.Fatalf("path action %q escapes the workspace", action)
			}
		}
	})
}

// TestHookSettingsFailClosed: the command of examples/claude-code/settings.json
// blocks the call (exit 2, a reason on stderr) when agentbox cannot run at
// all — not found on PATH, or not executable — instead of the 126/127
// Claude Code treats as a non-blocking error.
func TestHookSettingsFailClosed(t *testing.T) {
	data, err := os.ReadFile("../../examples/claude-code/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Hooks []struct{ Command string }
			}
		}
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	command := s.Hooks.PreToolUse[0].Hooks[0].Command
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentbox"), []byte("not a program"), 0o644) // present, not executable
	for name, path := range map[string]string{"not found": t.TempDir(), "not executable": dir} {
		cmd := exec.Command("/bin/sh", "-c", command)
		cmd.Env = []string{"PATH=" + path, "CLAUDE_PROJECT_DIR=" + t.TempDir()}
		cmd.Stdin = strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"git push"}}`)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "blocked") {
			t.Errorf("%s: %v, stderr %q; want exit 2 and a reason", name, err, stderr.String())
		}
	}
}

// TestHookFindsWorkspace: without --workspace the hook finds the workspace
// above the project Claude Code runs in ($CLAUDE_PROJECT_DIR, else the
// call's cwd), so a write to the project is decided against the right
// areas; with no workspace above, it blocks with one line.
func TestHookFindsWorkspace(t *testing.T) {
	ws, pol, logf := hookWorkspace(t)
	proj := filepath.Join(ws, "target", "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	in := `{"session_id":"s","cwd":"` + proj + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + proj + `/main.go","content":"x"}}`
	out, errOut, code := runCLI(t, in, "hook", "claude-code", "--role", "developer", "--policy", pol, "--audit", logf)
	var a hookAnswer
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a.HookSpecificOutput.PermissionDecision != "allow" {
		t.Errorf("write in the project without --workspace: exit %d %s %s", code, out, errOut)
	}
	evs := readEvents(t, logf)
	if e := evs[len(evs)-1]; e.Action != "tool:create_file:target/proj/main.go" {
		t.Errorf("action %q, want it relative to the found workspace", e.Action)
	}
	t.Setenv("CLAUDE_PROJECT_DIR", t.TempDir())
	_, errOut, code = runCLI(t, in, "hook", "claude-code", "--role", "developer", "--policy", pol, "--audit", logf)
	if code != exitHookBlock || !strings.Contains(errOut, "no agentbox workspace") || !strings.Contains(errOut, "--workspace") {
		t.Errorf("no workspace above: exit %d %q", code, errOut)
	}
}

// TestHookDecidesInCallCwd: a Bash line is decided in the call's cwd, as
// the exec supervisor decides it in a run and check decides it with --cwd:
// relative paths in target/ are the agent's own work, not "no rule
// matched" (asks, which headless Claude Code takes as a refusal).
func TestHookDecidesInCallCwd(t *testing.T) {
	ws, _, _ := hookWorkspace(t)
	t.Setenv("AGENTBOX_CHECKPOINTS", "on") // as inside a run (sed -i overwrites: undoable)
	cwd := filepath.Join(ws, "target", "src")
	os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("a\n"), 0o644)
	for _, line := range []string{"touch x", "echo hi > out.txt", "cp a.txt b.txt", "sed -i s/a/b/ a.txt", "mkdir -p build && echo ok > build/log"} {
		raw, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "cwd": cwd, "tool_name": "Bash",
			"tool_input": map[string]string{"command": line}})
		out, errs, code := runCLI(t, string(raw), "hook", "claude-code", "--role", "developer", "--workspace", ws, "--audit", "none")
		var a hookAnswer
		if code != 0 || json.Unmarshal([]byte(out), &a) != nil {
			t.Fatalf("%s: exit %d %s %s", line, code, out, errs)
		}
		if got := a.HookSpecificOutput.PermissionDecision; got != "allow" {
			t.Errorf("hook %q in %s: %s (%s), want allow", line, cwd, got, a.HookSpecificOutput.PermissionDecisionReason)
		}
		_, _, ccode := runCLI(t, "", "check", "--role", "developer", "--workspace", ws, "--no-user-policy", "--cwd", cwd, "--shell", line)
		if ccode != exitCheckAllow {
			t.Errorf("check %q --cwd %s: exit %d; the hook and check disagree", line, cwd, ccode)
		}
	}
}

// TestHookSelfEditDenied: through its own Write/Edit tools (or a shell
// redirect) the agent cannot rewrite a file its permissions are read
// from — Claude Code's settings, agentbox.yaml, Codex rules — anywhere in
// the workspace; such a write is the built-in self-edit, denied. An
// ordinary file next to it is still the agent's to write.
func TestHookSelfEditDenied(t *testing.T) {
	ws, _, _ := hookWorkspace(t)
	proj := filepath.Join(ws, "target", "src")
	for _, c := range []struct {
		tool, input, want string
	}{
		{"Write", `{"file_path":"` + proj + `/.claude/settings.json","content":"{}"}`, "deny"},
		{"Edit", `{"file_path":"` + proj + `/.claude/settings.local.json","old_string":"a","new_string":"b"}`, "deny"},
		{"Write", `{"file_path":"` + proj + `/agentbox.yaml","content":"version: 1"}`, "deny"},
		{"Write", `{"file_path":"` + proj + `/.codex/rules/allow.rules","content":""}`, "deny"},
		{"Bash", `{"command":"echo '{}' > .claude/settings.json"}`, "deny"},
		{"Write", `{"file_path":"` + proj + `/settings.json","content":"{}"}`, "allow"},
	} {
		in := `{"hook_event_name":"PreToolUse","cwd":"` + proj + `","tool_name":"` + c.tool + `","tool_input":` + c.input + `}`
		out, errOut, code := runCLI(t, in, "hook", "claude-code", "--role", "developer", "--workspace", ws, "--audit", "none")
		var a hookAnswer
		if code != 0 || json.Unmarshal([]byte(out), &a) != nil {
			t.Fatalf("%s %s: exit %d %s %s", c.tool, c.input, code, out, errOut)
		}
		if got := a.HookSpecificOutput.PermissionDecision; got != c.want {
			t.Errorf("%s %s: %s (%s), want %s", c.tool, c.input, got, a.HookSpecificOutput.PermissionDecisionReason, c.want)
		}
	}
}

// TestHookCheckpointsFromRun: the hook decides as the run it is called
// in: inside a run that takes checkpoints ($AGENTBOX_CHECKPOINTS=on, set
// by agentbox run) deleting work in target/ is allowed; outside any run,
// or in one without them, it asks.
func TestHookCheckpointsFromRun(t *testing.T) {
	ws, pol, logf := hookWorkspace(t)
	in := `{"cwd":"` + ws + `/target","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf src"}}`
	for _, c := range []struct{ env, want string }{{"", `"ask"`}, {"off", `"ask"`}, {"on", `"allow"`}} {
		t.Setenv("AGENTBOX_CHECKPOINTS", c.env)
		if c.env == "" {
			os.Unsetenv("AGENTBOX_CHECKPOINTS")
		}
		out, errOut, code := runCLI(t, in, "hook", "claude-code", "--role", "developer", "--workspace", ws, "--policy", pol, "--audit", logf)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("AGENTBOX_CHECKPOINTS=%q: exit %d %s %s; want %s", c.env, code, out, errOut, c.want)
		}
	}
}
