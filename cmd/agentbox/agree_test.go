package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
)

// corpusLines collects the string literals of the named variables (string
// slices, or struct slices whose field "line" holds the text) from a Go
// test file: the corpora other packages' tests keep, read as data.
func corpusLines(t *testing.T, file string, vars ...string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, v := range vars {
		want[v] = true
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, sp := range g.Specs {
			vs, ok := sp.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || !want[vs.Names[0].Name] || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.CompositeLit)
			if !ok {
				continue
			}
			for _, el := range lit.Elts {
				switch el := el.(type) {
				case *ast.BasicLit:
					if s, err := strconv.Unquote(el.Value); err == nil {
						out = append(out, s)
					}
				case *ast.CompositeLit: // {dir, line}: the last string
					if n := len(el.Elts); n > 0 {
						if bl, ok := el.Elts[n-1].(*ast.BasicLit); ok {
							if s, err := strconv.Unquote(bl.Value); err == nil {
								out = append(out, s)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestOneAnswerEverywhere decides every line of the everyday corpus and the
// policy package's allowed and forbidden corpora (well over 200) three
// ways, as a user meets them — `check --shell` from inside the workspace,
// the Claude Code hook with the call's cwd, `explain --shell` — and
// requires the same decision from each.
func TestOneAnswerEverywhere(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // no user policy or other tools' files of the machine's user
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	lines := corpusLines(t, "../../everyday_test.go", "everydayLines")
	lines = append(lines, corpusLines(t, "../../policy/corpus_test.go", "allowedShell", "forbiddenShell")...)
	cwd := filepath.Join(ws, "target", "proj")
	os.MkdirAll(cwd, 0o755)
	t.Chdir(cwd)
	if len(lines) < 200 {
		t.Fatalf("%d corpus lines; want at least 200", len(lines))
	}
	exitName := map[int]string{exitCheckAllow: "allow", exitCheckAsk: "ask", exitCheckDeny: "deny"}
	var sample []string // lines a real run decides too
	for i, line := range lines {
		_, _, code := runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--shell", line)
		check := exitName[code]
		_, _, code = runCLI(t, "", "explain", "--role", "developer", "--no-user-policy", "--shell", line)
		explain := exitName[code]
		in, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "cwd": cwd, "tool_name": "Bash", "tool_input": map[string]string{"command": line}})
		out, errOut, hcode := runCLI(t, string(in), "hook", "claude-code", "--role", "developer", "--audit", "none")
		var a hookAnswer
		if hcode != 0 || json.Unmarshal([]byte(out), &a) != nil {
			t.Errorf("hook %q: exit %d %s %s", line, hcode, out, errOut)
			continue
		}
		hook := a.HookSpecificOutput.PermissionDecision
		if check == "" || check != explain || check != hook {
			t.Errorf("%q: check %s, explain %s, hook %s", line, check, explain, hook)
		}
		// Every 8th refused line: it never runs, so a real run of it is
		// safe in any workspace and quick.
		if check != "allow" && i%8 == 0 {
			sample = append(sample, line)
		}
	}
	// A real run decides the same: the supervisor's decision on the shell
	// the agent started (bash -c LINE is decided as LINE), read back from
	// the audit log. Allowed lines are represented by harmless reads.
	sample = append(sample, "ls -la", "cat /etc/hostname | wc -c", "git status || true")
	if len(sample) < 15 {
		t.Fatalf("run sample has %d lines; want at least 15", len(sample))
	}
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, line := range sample {
		_, _, code := runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--shell", line)
		want := exitName[code]
		before := countLines(t, auditFile)
		_, errOut, _ := runCLI(t, "", "run", "--role", "developer", "--no-user-policy", "--approve", "none",
			"--audit", auditFile, "--timeout", "30s", "--", "/bin/bash", "-c", line)
		got := firstExecDecision(t, auditFile, before)
		switch {
		case strings.HasPrefix(got, "ask"):
			got = "ask"
		}
		if got != want {
			t.Errorf("run %q: first exec decided %q; check says %s (%s)", line, got, want, errOut)
		}
	}
	// Tools that are scripts, started directly: the kernel runs their
	// interpreter (env node /usr/bin/npm ...), and the run decides the
	// script as check does (TestScriptToolsDecidedAsChecked has the rules
	// and side effects).
	for _, argv := range [][]string{
		{"npm", "publish", "--dry-run", "--offline"},
		{"npm", "--version"},
		{"python3", "-m", "pip", "--version"},
		{"yarn", "publish"},
		{"npx", "--offline", "cowsay"},
	} {
		if _, err := exec.LookPath(argv[0]); err != nil {
			t.Logf("%s not installed: its script line is not run", argv[0])
			continue
		}
		_, _, code := runCLI(t, "", append([]string{"check", "--role", "developer", "--no-user-policy", "--"}, argv...)...)
		want := exitName[code]
		before := countLines(t, auditFile)
		_, errOut, _ := runCLI(t, "", append([]string{"run", "--role", "developer", "--no-user-policy", "--approve", "none",
			"--audit", auditFile, "--timeout", "30s", "--"}, argv...)...)
		got := firstExecDecision(t, auditFile, before)
		if strings.HasPrefix(got, "ask") {
			got = "ask"
		}
		if got != want {
			t.Errorf("run %q: first exec decided %q; check says %s (%s)", argv, got, want, errOut)
		}
	}
}

func countLines(t *testing.T, file string) int {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// firstExecDecision is the decision of the first exec event after line skip
// of the audit log.
func firstExecDecision(t *testing.T, file string, skip int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range bytes.Split(b, []byte("\n")) {
		var e struct{ Event, Decision string }
		if i < skip || json.Unmarshal(l, &e) != nil || e.Event != "exec" {
			continue
		}
		return e.Decision
	}
	return "(no exec event)"
}
