package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/fakemodel"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/supervise"
)

// The real agent CLIs under agentbox, driven by a scripted fake model API
// on loopback (internal/fakemodel). .ci/run installs them from npm; the
// tests skip, saying so, when a CLI is not installed.

// Keys shaped like real ones, so a leak into the audit log would be caught
// by the redaction rules and by the plain search below alike.
const (
	fakeAnthropicKey = "sk-ant-api03-agentboxTEST0123456789abcdefghijklmnopqrstuvwxyz"
	fakeOpenAIKey    = "sk-proj-agentboxTEST0123456789abcdefghijklmnopqrstuvwxyz"
	fakeGeminiKey    = "AIzaSyAgentboxTEST0123456789abcdefghij"
)

// agentWorld is a workspace with a git project under target/, a bare
// remote outside it, a HOME and state directory of the caller's own, and
// a bin directory where `agentbox` is this test binary.
type agentWorld struct {
	dir, ws, proj, remote, home, state, bin string
}

func newAgentWorld(t *testing.T) agentWorld {
	t.Helper()
	needRunSandbox(t)
	d := t.TempDir()
	w := agentWorld{dir: d, ws: filepath.Join(d, "ws"), remote: filepath.Join(d, "remote.git"),
		home: filepath.Join(d, "home"), state: filepath.Join(d, "state"), bin: filepath.Join(d, "bin")}
	w.proj = filepath.Join(w.ws, "target", "proj")
	if _, err := boundary.Init(w.ws); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w.proj, w.home, w.state, w.bin} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shim := "#!/bin/sh\nAGENTBOX_TEST_MAIN=1 exec " + self + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(w.bin, "agentbox"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(d, "init", "-q", "--bare", w.remote)
	git(w.proj, "init", "-q", "-b", "main")
	git(w.proj, "config", "user.email", "dev@example.invalid")
	git(w.proj, "config", "user.name", "Dev")
	if err := os.WriteFile(filepath.Join(w.proj, "README.md"), []byte("# proj\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(w.proj, "add", "README.md")
	git(w.proj, "commit", "-q", "-m", "initial")
	git(w.proj, "remote", "add", "origin", w.remote)
	return w
}

// needRunSandbox skips when the kernel cannot give the boundary, the exec
// supervisor or a network namespace.
func needRunSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.CheckLandlock(false); err != nil {
		t.Skipf("reason: %v", err)
	}
	if err := supervise.PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
}

// needLongSuite skips a long suite unless its variable is set: `make
// test` stays quick, `make test-all` and .ci/run set them (README,
// "Development").
func needLongSuite(t *testing.T, env, what string) {
	t.Helper()
	if os.Getenv(env) != "1" {
		t.Skipf("reason: %s run in make test-all (%s=1), not in make test", what, env)
	}
}

// needCLI returns the agent CLI's path or skips, saying how to get it.
// The real agent CLIs take tens of seconds each: they run with
// AGENTBOX_AGENTS=1 (make test-all, .ci/run).
func needCLI(t *testing.T, name, pkg string) string {
	t.Helper()
	needLongSuite(t, "AGENTBOX_AGENTS", "the real agent CLIs")
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("reason: %s is not installed (npm install -g %s; .ci/run installs it)", name, pkg)
	}
	return p
}

// env is the caller's environment for an agent: the world's HOME and
// state, this binary as agentbox first on PATH, and extra.
func (w agentWorld) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME" || k == "XDG_STATE_HOME" || k == "XDG_CONFIG_HOME" || k == "PATH" || k == "IS_SANDBOX":
		case strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "CLAUDE") || strings.HasPrefix(k, "CODEX") ||
			strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_"):
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+w.home, "XDG_STATE_HOME="+w.state, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"),
		"PATH="+w.bin+":"+os.Getenv("PATH"))
	return append(env, extra...)
}

func (w agentWorld) auditLog() string { return filepath.Join(w.state, "agentbox", "audit.jsonl") }

// events reads the audit log and checks its chain.
func (w agentWorld) events(t *testing.T) ([]audit.Event, []byte) {
	t.Helper()
	raw, err := os.ReadFile(w.auditLog())
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var evs []audit.Event
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e audit.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		evs = append(evs, e)
	}
	return evs, raw
}

// agentScript is what the fake model makes the agent do (tool names and
// argument shapes per CLI) and what the test checks afterwards.
type agentStep struct {
	step fakemodel.Step
	// want are substrings of the tool result the agent got back for the
	// step; wantNot must not appear.
	want, wantNot []string
}

func runScript(t *testing.T, srv *fakemodel.Server, steps []agentStep) {
	t.Helper()
	got := srv.ToolResults()
	for i, r := range got {
		t.Logf("result %d: %s", i, clipResult(r))
	}
	for i, s := range steps {
		if s.step.Tool == "" {
			continue
		}
		if i >= len(got) {
			t.Errorf("step %d (%s %v): the agent sent no result back (got %d results)", i, s.step.Tool, s.step.Input, len(got))
			continue
		}
		for _, w := range s.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("step %d (%s %v): result %q lacks %q", i, s.step.Tool, s.step.Input, clipResult(got[i]), w)
			}
		}
		for _, w := range s.wantNot {
			if strings.Contains(got[i], w) {
				t.Errorf("step %d (%s %v): result %q has %q", i, s.step.Tool, s.step.Input, clipResult(got[i]), w)
			}
		}
	}
}

func clipResult(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// agentRun is one scripted agent session: the fake model API serving the
// steps, the command run from the project directory with the world's
// environment plus env, and its combined output. setup runs once the
// server is up (it knows its URL).
type agentRun struct {
	steps []agentStep
	argv  []string
	env   func(url string) []string
	setup func(url string)
}

func (w agentWorld) session(t *testing.T, r agentRun) (*fakemodel.Server, string) {
	t.Helper()
	return w.sessionWith(t, r, fakemodel.Options{})
}

// sessionWith is session with the fake API's options (TLS, the keys it
// accepts) and extra variables for the caller's environment.
func (w agentWorld) sessionWith(t *testing.T, r agentRun, opts fakemodel.Options, extraEnv ...string) (*fakemodel.Server, string) {
	t.Helper()
	srv, err := fakemodel.StartWith("127.0.0.1:0", scriptOf(r.steps), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if r.setup != nil {
		r.setup(srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Dir = w.proj
	cmd.Env = w.env(append(r.env(srv.URL), extraEnv...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", r.argv, err, out)
	}
	return srv, string(out)
}

func scriptOf(steps []agentStep) []fakemodel.Step {
	var out []fakemodel.Step
	for _, s := range steps {
		out = append(out, s.step)
	}
	return out
}

func bash(cmd string) fakemodel.Step {
	return fakemodel.Step{Tool: "Bash", Input: map[string]any{"command": cmd, "description": "run " + cmd}}
}

// checkEffects checks, from outside, what the scripted agent did: the
// allowed steps happened, the push and the context/ write did not.
func (w agentWorld) checkEffects(t *testing.T, wantCommit bool) {
	t.Helper()
	if wantCommit {
		out, err := exec.Command("git", "-C", w.proj, "log", "--format=%s").Output()
		if err != nil || !strings.Contains(string(out), "add hello") {
			t.Errorf("the agent's commit is not in the project: %q %v", out, err)
		}
	}
	if out, _ := exec.Command("git", "-C", w.remote, "for-each-ref").Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("the push reached the remote: %s", out)
	}
	for _, f := range []string{"context/from-write.txt", "context/from-bash.txt"} {
		if _, err := os.Lstat(filepath.Join(w.ws, f)); err == nil {
			t.Errorf("the agent wrote %s", f)
		}
	}
}

// checkAllowed: the audit log has an allow decision whose action starts
// with each prefix (the call was decided, not skipped).
func (w agentWorld) checkAllowed(t *testing.T, prefixes ...string) {
	t.Helper()
	evs, _ := w.events(t)
	for _, p := range prefixes {
		found := false
		for _, e := range evs {
			if e.Decision == audit.DecisionAllow && strings.HasPrefix(e.Action, p) {
				found = true
			}
		}
		if !found {
			t.Errorf("no allow of %q in the audit log", p)
		}
	}
}

// checkAudit: the denials are logged and no key is.
func (w agentWorld) checkAudit(t *testing.T, wantDenied ...string) {
	t.Helper()
	evs, raw := w.events(t)
	for _, key := range []string{fakeAnthropicKey, fakeOpenAIKey, fakeGeminiKey, "agentboxTEST0123456789"} {
		if strings.Contains(string(raw), key) {
			t.Errorf("the audit log holds an API key (%s...)", key[:12])
		}
	}
	for _, want := range wantDenied {
		found := false
		for _, e := range evs {
			if e.Decision != "" && e.Decision != audit.DecisionAllow && mentions(e, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no denial of %q in the audit log", want)
		}
	}
}

// TestClaudeCodeUnderRun: `agentbox run --role developer -- claude -p ...`
// started from the project directory, with the API settings only in the
// caller's environment and no other flag, works through a session of
// tool calls: git status, write a file, run it, commit; the push, a write
// into context/, reading /etc/shadow and curl elsewhere are refused with
// text that says so.
func TestClaudeCodeUnderRun(t *testing.T) {
	claude := needCLI(t, "claude", "@anthropic-ai/claude-code")
	w := newAgentWorld(t)
	hello := filepath.Join(w.proj, "hello.sh")
	steps := []agentStep{
		{step: bash("git status"), want: []string{"On branch main"}},
		{step: fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": hello, "content": "echo hello from the agent\n"}}},
		{step: bash("sh hello.sh"), want: []string{"hello from the agent"}},
		{step: bash("git add hello.sh && git commit -q -m 'add hello' && git log --oneline -1"), want: []string{"add hello"}},
		{step: bash("git push origin main"), want: []string{"agentbox: denied: git push origin main (rule developer/git.push", "Instead:"}},
		{step: fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.ws, "context", "from-write.txt"), "content": "x\n"}}},
		{step: bash("echo x > " + filepath.Join(w.ws, "context", "from-bash.txt")), want: []string{"agentbox: denied: writing " + filepath.Join(w.ws, "context", "from-bash.txt"), "context/ is read-only"}},
		{step: bash("cat /etc/shadow"), want: []string{"Permission denied"}, wantNot: []string{"root:"}},
		{step: bash("curl -sS http://elsewhere.invalid/"), want: []string{"agentbox: denied: curl", "needs approval, no approver"}},
		{step: fakemodel.Step{Text: "All done."}},
	}
	srv, out := w.session(t, agentRun{steps: steps,
		argv: []string{filepath.Join(w.bin, "agentbox"), "run", "--role", "developer", "--", claude, "-p", "do the scripted work", "--dangerously-skip-permissions"},
		env: func(url string) []string {
			return []string{"ANTHROPIC_API_KEY=" + fakeAnthropicKey, "ANTHROPIC_BASE_URL=" + url}
		}})
	if !strings.Contains(out, "All done.") {
		t.Errorf("no final answer in the output:\n%s", out)
	}
	if !strings.Contains(out, "agent profile claude-code (command claude)") || !strings.Contains(out, "network through the egress proxy: 127.0.0.1:") {
		t.Errorf("launch line does not name the profile and the API host:\n%s", out)
	}
	runScript(t, srv, steps)
	// The guide reached the model: the profile writes it where Claude Code
	// reads the user's instructions (~/.claude/CLAUDE.md).
	if !srv.Saw("You are running inside agentbox") {
		t.Error("the agentbox guide is not in what Claude Code sent the model")
	}
	if b, err := os.ReadFile(hello); err != nil || !strings.Contains(string(b), "hello from the agent") {
		t.Errorf("hello.sh was not written: %q %v", b, err)
	}
	w.checkEffects(t, true)
	w.checkAudit(t, "git push", "context/from-bash.txt", "curl")
	w.checkAllowed(t, "tool:exec:claude -p", "tool:git:status", "tool:git:commit")
	checkRealKey(t, srv, fakeAnthropicKey)
}

// TestClaudeCodeHook: Claude Code outside a sandbox with the shipped
// examples/claude-code/settings.json in the project (no --workspace: the
// hook finds the workspace above $CLAUDE_PROJECT_DIR) is stopped by the
// hook where the policy says so, and lets the rest through.
func TestClaudeCodeHook(t *testing.T) {
	needCLI(t, "claude", "@anthropic-ai/claude-code")
	w := newAgentWorld(t)
	settings, err := os.ReadFile("../../examples/claude-code/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.proj, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.proj, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []agentStep{
		{step: bash("git status"), want: []string{"On branch main"}},
		{step: fakemodel.Step{Tool: "TaskCreate", Input: map[string]any{"subject": "Write notes", "description": "write notes.txt", "activeForm": "Writing notes"}}, wantNot: []string{"agentbox", "error"}},
		{step: fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.proj, "notes.txt"), "content": "notes\n"}}, wantNot: []string{"agentbox"}},
		{step: bash("git push origin main"), want: []string{"agentbox: deny git push origin main (rule developer/git.push: agents never push", "Instead:"}},
		{step: fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.ws, "context", "from-write.txt"), "content": "x\n"}}, want: []string{"context/ is read-only"}},
		{step: fakemodel.Step{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, "agentbox.yaml")}}, want: []string{"version: 1"}},
		{step: fakemodel.Step{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.ws, "agentbox.yaml"), "content": "version: 1\n"}}, want: []string{"agentbox: deny writing agentbox.yaml (rule developer/files.project-policy"}},
		{step: fakemodel.Step{Text: "Hook session done."}},
	}
	srv, out := w.session(t, agentRun{steps: steps, argv: []string{"claude", "-p", "do the scripted work"},
		env: func(url string) []string {
			return []string{"ANTHROPIC_API_KEY=" + fakeAnthropicKey, "ANTHROPIC_BASE_URL=" + url, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		}})
	if !strings.Contains(out, "Hook session done.") {
		t.Errorf("no final answer:\n%s", out)
	}
	runScript(t, srv, steps)
	if _, err := os.Stat(filepath.Join(w.proj, "notes.txt")); err != nil {
		t.Errorf("the allowed Write did not happen: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.ws, "agentbox.yaml")); string(b) == "version: 1\n" {
		t.Errorf("the agent rewrote the project policy")
	}
	w.checkEffects(t, false)
	w.checkAudit(t, "git push", "context/from-write.txt")
	w.checkAllowed(t, "tool:bash:git status", "tool:TaskCreate:", "tool:create_file:target/proj/notes.txt")
}

// TestCodexUnderRun: Codex CLI with its provider in the caller's
// ~/.codex/config.toml (a loopback base URL) runs under `agentbox run
// --role developer` from the project directory: its shell tool's git
// status works, the push is refused with text that says so.
func TestCodexUnderRun(t *testing.T) {
	needCLI(t, "codex", "@openai/codex")
	w := newAgentWorld(t)
	exe := func(cmd string) fakemodel.Step {
		return fakemodel.Step{Tool: "exec_command", Input: map[string]any{"cmd": cmd}}
	}
	steps := []agentStep{
		{step: exe("git status"), want: []string{"On branch main"}},
		{step: exe("printf 'echo hello from the agent\\n' > hello.sh && sh hello.sh"), want: []string{"hello from the agent"}},
		{step: exe("git add hello.sh && git commit -q -m 'add hello' && git log --oneline -1"), want: []string{"add hello"}},
		{step: exe("git push origin main"), want: []string{"agentbox: denied: git push origin main (rule developer/git.push"}},
		{step: exe("echo x > " + filepath.Join(w.ws, "context", "from-bash.txt")), want: []string{"context/ is read-only"}},
		{step: fakemodel.Step{Text: "Codex done."}},
	}
	srv, out := w.session(t, agentRun{steps: steps,
		argv: []string{filepath.Join(w.bin, "agentbox"), "run", "--role", "developer", "--",
			"codex", "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "do the scripted work"},
		env: func(string) []string { return []string{"OPENAI_API_KEY=" + fakeOpenAIKey} },
		setup: func(url string) {
			// the provider in the caller's ~/.codex/config.toml, as a
			// Codex user has it (its base_url is the API the profile allows)
			cfg := "model = \"gpt-test\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + url +
				"/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n"
			if err := os.MkdirAll(filepath.Join(w.home, ".codex"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(w.home, ".codex", "config.toml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
		}})
	if !strings.Contains(out, "Codex done.") || !strings.Contains(out, "agent profile codex") {
		t.Errorf("output lacks the final answer or the profile:\n%s", out)
	}
	runScript(t, srv, steps)
	checkRealKey(t, srv, fakeOpenAIKey)
	if !srv.Saw("You are running inside agentbox") {
		t.Error("the agentbox guide is not in what Codex sent the model (~/.codex/AGENTS.md)")
	}
	w.checkEffects(t, true)
	w.checkAudit(t, "git push", "context/from-bash.txt")
	// Known, and in README ("Codex CLI"): its update check and feature
	// flags go to hosts the profile does not grant once a provider's
	// base_url replaces them. Its start-up shell snapshot is not refused.
	w.checkOnlyRefused(t, "git push", "context/from-bash.txt",
		"tool:net:github.com:", "tool:net:api.github.com:", "tool:net:chatgpt.com:", "tool:net:ab.chatgpt.com:")
	w.checkAllowed(t, "tool:exec:bash -lc $'if [ -z \"${BASH_ENV-}\"")
}

// TestGeminiUnderRun: `agentbox run --role developer -- gemini -p ... --yolo`
// with the API key and base URL only in the caller's environment and the
// caller's ~/.gemini/settings.json (API-key auth), against the fake Gemini
// API: the agent's shell tool runs git status, writes and runs a script,
// commits; the push and a write into context/ are refused with text that
// says so. Gemini CLI's own git hardening (empty core.hooksPath and the
// like) and start-up probes are not refused.
func TestGeminiUnderRun(t *testing.T) {
	needCLI(t, "gemini", "@google/gemini-cli")
	w := newAgentWorld(t)
	sh := func(cmd string) fakemodel.Step {
		return fakemodel.Step{Tool: "run_shell_command", Input: map[string]any{"command": cmd, "description": "run " + cmd}}
	}
	steps := []agentStep{
		{step: sh("git status"), want: []string{"On branch main"}},
		{step: sh("printf 'echo hello from the agent\\n' > hello.sh && sh hello.sh"), want: []string{"hello from the agent"}},
		{step: sh("git add hello.sh && git commit -q -m 'add hello' && git log --oneline -1"), want: []string{"add hello"}},
		{step: sh("git push origin main"), want: []string{"agentbox: denied: git push origin main (rule developer/git.push"}},
		{step: sh("echo x > " + filepath.Join(w.ws, "context", "from-bash.txt")), want: []string{"context/ is read-only"}},
		{step: fakemodel.Step{Text: "Gemini done."}},
	}
	srv, out := w.session(t, agentRun{steps: steps,
		argv: []string{filepath.Join(w.bin, "agentbox"), "run", "--role", "developer", "--",
			"gemini", "-p", "do the scripted work", "--yolo"},
		env: func(url string) []string {
			return []string{"GEMINI_API_KEY=" + fakeGeminiKey, "GOOGLE_GEMINI_BASE_URL=" + url}
		},
		setup: func(string) {
			// API-key auth, as a Gemini CLI user has it configured
			if err := os.MkdirAll(filepath.Join(w.home, ".gemini"), 0o700); err != nil {
				t.Fatal(err)
			}
			// (usage statistics off: their host is not the API, and the
			// proxy refuses it; README, "Gemini CLI")
			settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`
			if err := os.WriteFile(filepath.Join(w.home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
		}})
	if !strings.Contains(out, "Gemini done.") || !strings.Contains(out, "agent profile gemini") {
		t.Errorf("output lacks the final answer or the profile:\n%s", out)
	}
	runScript(t, srv, steps)
	checkRealKey(t, srv, fakeGeminiKey)
	w.checkEffects(t, true)
	w.checkAudit(t, "git push", "context/from-bash.txt")
	w.checkOnlyRefused(t, "git push", "context/from-bash.txt")
}

// mentions reports whether e's action, or the part of a wrapped line that
// was decided (Detail["decided"]: a long line is capped in Action), holds
// s; git's actions count in both spellings (tool:git:push, git push).
// checkRealKey: the key is brokered (the agent had a placeholder) and the
// fake API got the real one on every request that carried a key.
func checkRealKey(t *testing.T, srv *fakemodel.Server, key string) {
	t.Helper()
	real := 0
	for _, c := range srv.Credentials() {
		switch {
		case c == key:
			real++
		case c != "":
			t.Errorf("a model request carried %q, not the real key", c)
		}
	}
	if real == 0 {
		t.Error("no model request carried the real key")
	}
}

func mentions(e audit.Event, s string) bool {
	decided := strings.ReplaceAll(e.Detail["decided"], "tool:git:", "git ")
	return strings.Contains(e.Action, s) || strings.Contains(decided, s)
}

// checkOnlyRefused fails on any refusal in the run's audit log whose action
// names none of wanted: the agent CLI's own start-up (probes, snapshots,
// telemetry it was told to skip) must not fill the log with false refusals.
func (w agentWorld) checkOnlyRefused(t *testing.T, wanted ...string) {
	t.Helper()
	evs, _ := w.events(t)
	for _, e := range evs {
		if !audit.Refused(e.Decision) || slices.ContainsFunc(wanted, func(s string) bool { return mentions(e, s) }) {
			continue
		}
		t.Errorf("a refusal the session did not ask for: %s %.300s (%s; decided %s)", e.Decision, e.Action, e.Reason, e.Detail["decided"])
	}
}
