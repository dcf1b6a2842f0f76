package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

func TestCheckExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("rules:\n  - {decision: deny, regex: \"(\"}\n"), 0o600)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"check", "--role", "developer", "--no-user-policy", "--", "ls", "-la"}, 0},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--", "curl", "https://x"}, 3},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--", "git", "push", "origin", "main"}, 4},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--shell", "npm test && git push"}, 4},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--action", "tool:git:status"}, 0},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--action", "git status"}, 1},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--policy", bad, "--", "ls"}, 1},
		{[]string{"check", "--role", "nobody", "--no-user-policy", "--", "ls"}, 1},
		{[]string{"check", "--role", "developer", "--no-user-policy"}, 2},
		{[]string{"check", "--role", "developer", "--no-user-policy", "--shell", "ls", "--action", "tool:view:a"}, 2},
		{[]string{"check", "--no-user-policy", "--", "ls"}, 2},
		{[]string{"check", "--role", "developer", "--bogus-flag", "--", "ls"}, 2},
	} {
		_, stderr, code := runCLI(t, "", c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, c.code, stderr)
		}
	}
	_, stderr, _ := runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--policy", bad, "--", "ls")
	if !strings.Contains(stderr, bad+":2:") {
		t.Errorf("policy error does not name file:line: %q", stderr)
	}
}

func TestCheckJSON(t *testing.T) {
	out, _, code := runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--json", "--shell", "ls && git push origin main")
	if code != 4 {
		t.Fatalf("exit %d", code)
	}
	var r struct {
		Decision string `json:"decision"`
		Action   string `json:"action"`
		Rule     struct {
			ID     string `json:"id"`
			Layer  string `json:"layer"`
			Source string `json:"source"`
		} `json:"rule"`
		Reason   string `json:"reason"`
		Segments []struct {
			Decision string `json:"decision"`
			Action   string `json:"action"`
		} `json:"segments"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Decision != "deny" || r.Action != "tool:bash:ls && git push origin main" || r.Rule.ID != "developer/git.push" ||
		r.Rule.Layer != "role" || r.Rule.Source == "" || r.Reason == "" || len(r.Segments) != 2 ||
		r.Segments[0].Decision != "allow" || r.Segments[1].Action != "tool:git:push origin main" {
		t.Fatalf("json = %s", out)
	}
	out, _, _ = runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--json", "--", "frobnicate")
	if !strings.Contains(out, `"rule":null`) || !strings.Contains(out, `"decision":"ask"`) {
		t.Fatalf("default decision json = %s", out)
	}
}

func TestCheckStdin(t *testing.T) {
	in := "tool:exec:ls\ntool:git:push origin main\r\nnot-an-action\n\ntool:bash:npm test | tee out.log\ntool:view:a.md"
	out, stderr, code := runCLI(t, in, "check", "--role", "developer", "--no-user-policy", "--stdin")
	if code != 1 || !strings.Contains(stderr, "2 line(s)") {
		t.Errorf("exit %d stderr %q, want 1 for the invalid and empty lines", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d lines: %s", len(lines), out)
	}
	want := []string{"allow", "deny", "", "", "", "allow"}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if want[i] != "" && m["decision"] != want[i] {
			t.Errorf("line %d = %v, want %s", i, m["decision"], want[i])
		}
	}
	if !strings.Contains(lines[2], `"error"`) || !strings.Contains(lines[3], `"error"`) {
		t.Errorf("invalid/empty lines: %s / %s", lines[2], lines[3])
	}
	out, _, code = runCLI(t, "tool:exec:ls\n", "check", "--role", "developer", "--no-user-policy", "--stdin")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d out %q", code, out)
	}
}

func TestExplainShowValidateRoles(t *testing.T) {
	out, _, code := runCLI(t, "", "explain", "--role", "developer", "--no-user-policy", "--checkpoints", "off", "--shell", "make && rm -rf build")
	if code != 3 || !strings.Contains(out, "part 2: tool:exec:rm -rf build -> ask") || !strings.Contains(out, "developer/rm") || !strings.Contains(out, "why:") {
		t.Errorf("explain (exit %d):\n%s", code, out)
	}
	out, _, code = runCLI(t, "", "explain", "--role", "developer", "--no-user-policy", "--json", "--", "git", "push")
	var ex map[string]any
	if code != 4 || json.Unmarshal([]byte(out), &ex) != nil || ex["segments"] == nil {
		t.Errorf("explain --json (exit %d): %s", code, out)
	}
	out, _, code = runCLI(t, "", "policy", "show", "--role", "developer", "--no-user-policy")
	for _, want := range []string{"role developer", "filesystem (Landlock)", "target rwx", "target/**/.git/hooks", "network: none", "pids 4096", "developer/git.push", "builtin:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("policy show lacks %q (exit %d)", want, code)
		}
	}
	out, _, code = runCLI(t, "", "policy", "show", "--role", "tester", "--no-user-policy", "--json")
	var ef policy.Effective
	if code != 0 || json.Unmarshal([]byte(out), &ef) != nil || ef.Role.Name != "tester" || len(ef.Rules) < 20 {
		t.Errorf("policy show --json (exit %d): %.300s", code, out)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("version: 1\nrules:\n  - {decision: deny, command: curl}\n"), 0o600)
	os.WriteFile(bad, []byte("version: 1\nrules:\n  - {decision: nope, command: curl}\n  - {decision: deny, regex: \"(\"}\n"), 0o600)
	out, _, code = runCLI(t, "", "policy", "validate", good)
	if code != 0 || !strings.Contains(out, "ok: "+good) {
		t.Errorf("validate good: exit %d %q", code, out)
	}
	_, stderr, code := runCLI(t, "", "policy", "validate", good, bad)
	if code != 1 || !strings.Contains(stderr, bad+":3:") || !strings.Contains(stderr, bad+":4:") {
		t.Errorf("validate bad: exit %d %q", code, stderr)
	}
	shadow := filepath.Join(dir, "profile.json")
	os.WriteFile(shadow, []byte(`{"allow": ["tool:bash:.*"], "ask": ["tool:bash:ls.*"]}`), 0o600)
	out, stderr, code = runCLI(t, "", "policy", "validate", shadow)
	if code != 0 || !strings.Contains(out, "ok: "+shadow) || !strings.Contains(stderr, "warning: "+shadow+":1: rule profile.json:1 can never decide: Chorus tries allow pattern \"tool:bash:.*\" first") {
		t.Errorf("validate shadowed: exit %d %q %q", code, out, stderr)
	}
	if _, stderr, code := runCLI(t, "", "policy", "validate", "--strict", shadow); code != 1 || !strings.Contains(stderr, "1 rule(s) can never decide") {
		t.Errorf("validate --strict shadowed: exit %d %q", code, stderr)
	}
	if _, _, code := runCLI(t, "", "policy", "validate"); code != 2 {
		t.Errorf("validate without files: exit %d", code)
	}
	custom := filepath.Join(dir, "roles.yaml")
	os.WriteFile(custom, []byte("version: 1\nroles:\n  reviewer:\n    extends: investigator\n    description: reviews\n"), 0o600)
	out, _, code = runCLI(t, "", "roles", "--no-user-policy", "--policy", custom)
	for _, want := range []string{"developer", "documenter", "investigator", "tester", "open", "standard", "locked", "reviewer", "extends investigator"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("roles lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if strings.Contains(out, "_base") {
		t.Errorf("roles lists internal roles:\n%s", out)
	}
}

// TestCheckBinary builds agentbox and runs it as a user would. Under make
// test it runs the binary `make build` just made (AGENTBOX_TEST_BINDIR):
// the same sources, one link fewer.
func TestCheckBinary(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	bin := filepath.Join(os.Getenv("AGENTBOX_TEST_BINDIR"), "agentbox")
	if os.Getenv("AGENTBOX_TEST_BINDIR") == "" {
		gobin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("reason: go toolchain not in PATH, cannot build the binary")
		}
		bin = filepath.Join(t.TempDir(), "agentbox")
		build := exec.Command(gobin, "build", "-o", bin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	} else if _, err := os.Stat(bin); err != nil {
		t.Fatalf("AGENTBOX_TEST_BINDIR: %v (make build makes it)", err)
	}
	run := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	out, _, code := run("", "check", "--role", "developer", "--no-user-policy", "--", "git", "push", "origin", "main")
	if code != 4 || !strings.Contains(out, "deny") || !strings.Contains(out, "developer/git.push") {
		t.Errorf("exit %d out %q", code, out)
	}
	if _, _, code := run("", "check", "--role", "developer", "--no-user-policy", "--", "go", "test", "./..."); code != 0 {
		t.Errorf("go test: exit %d", code)
	}
	if _, _, code := run("", "check", "--role", "developer", "--no-user-policy", "--shell", "eval \"$X\""); code != 3 {
		t.Errorf("eval: exit %d", code)
	}
	_, stderr, code := run("", "check")
	if code != 2 || !strings.Contains(stderr, "role") {
		t.Errorf("usage: exit %d %q", code, stderr)
	}
	out, _, _ = run("", "check", "--help")
	for _, want := range []string{"--stdin", "--shell", "--action", "Exit status: 0 allow, 3 ask, 4 deny"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	var in strings.Builder
	for i := 0; i < 20000; i++ {
		in.WriteString("tool:exec:ls -la\ntool:git:push origin main\n")
	}
	out, _, code = run(in.String(), "check", "--role", "developer", "--no-user-policy", "--stdin")
	if code != 0 || strings.Count(out, "\n") != 40000 {
		t.Errorf("stdin: exit %d, %d lines", code, strings.Count(out, "\n"))
	}
}

// BenchmarkCheckStream measures `check --stdin` throughput end to end
// (reading lines, deciding, writing JSON). Goal: >= 300k decisions/s on one
// core (run with -cpu 1).
func BenchmarkCheckStream(b *testing.B) {
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		b.Fatal(err)
	}
	actions := []string{"tool:exec:ls -la", "tool:exec:go test ./...", "tool:git:status", "tool:git:push origin main",
		"tool:exec:rm -rf build", "tool:view:target/a.go", "tool:create_file:target/a.go", "tool:exec:curl https://x"}
	var in bytes.Buffer
	for i := 0; i < b.N; i++ {
		in.WriteString(actions[i%len(actions)])
		in.WriteByte('\n')
	}
	b.ResetTimer()
	if _, err := checkStream(e, &in, io.Discard); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// TestCheckDirectory: relative paths are decided where agentbox run would
// start the command (W/target when the caller is outside the workspace),
// or in --cwd.
func TestCheckDirectory(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	out, _, code := runCLI(t, "", "check", "--role", "developer", "--workspace", ws, "--no-user-policy", "--", "rm", "x.o")
	if code != exitCheckAllow || !strings.Contains(out, filepath.Join(real, "target", "x.o")) {
		t.Errorf("rm x.o from outside the workspace: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "", "check", "--role", "developer", "--workspace", ws, "--no-user-policy", "--cwd", filepath.Join(ws, "context"), "--", "touch", "x")
	if code != exitCheckDeny || !strings.Contains(out, "context/ is read-only") {
		t.Errorf("touch x in context/: exit %d\n%s", code, out)
	}
}

// TestCheckFindsWorkspace: without --workspace, check decides in the
// workspace the current directory is in, as agentbox run finds it: the
// project's agentbox.yaml counts and relative paths are taken here.
func TestCheckFindsWorkspace(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	rule := "version: 1\nrules:\n  - {decision: deny, command: curl, description: no curl in this project}\n"
	if err := os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(ws, "target", "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	out, _, code := runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--", "curl", "https://example.com")
	if code != exitCheckDeny || !strings.Contains(out, "no curl in this project") {
		t.Errorf("curl from inside the workspace: exit %d, want the project's deny\n%s", code, out)
	}
	out, _, code = runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--", "touch", "x")
	if code != exitCheckAllow {
		t.Errorf("touch x in target/proj: exit %d, want allow as in run\n%s", code, out)
	}
}

// TestCheckInsideRun: inside a run, the sandbox's environment names the
// role and the workspace, so the `agentbox check -- CMD` the guide tells
// the agent to use works without flags and decides as the run does.
func TestCheckInsideRun(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTBOX_ROLE", "developer")
	t.Setenv("AGENTBOX_WORKSPACE", ws)
	t.Chdir(filepath.Join(ws, "target"))
	out, errOut, code := runCLI(t, "", "check", "--no-user-policy", "--", "touch", "x")
	if code != exitCheckAllow || !strings.Contains(out, "allow") {
		t.Errorf("check inside a run: exit %d %q %q", code, out, errOut)
	}
	out, _, code = runCLI(t, "", "check", "--no-user-policy", "--", "git", "push", "origin", "main")
	if code != exitCheckDeny {
		t.Errorf("git push inside a run: exit %d %q", code, out)
	}
}
