package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
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
	for _, line := range lines {
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
	}
}
