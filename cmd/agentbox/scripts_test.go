package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
)

// TestScriptToolsDecidedAsChecked: a rule on a tool that is a script
// (deny npm publish) holds in a real run exactly when `agentbox check`
// says so. The kernel runs a #! file as its interpreter with the script's
// path in argv; the run decides the script (named by it, its own argv),
// through any #! depth, links, interpreters started by name with a script
// or module, and programs make starts. Each refused tool's side effect is
// looked for from outside the sandbox; the allowed ones still run.
func TestScriptToolsDecidedAsChecked(t *testing.T) {
	for _, p := range []string{"npm", "npx", "node", "python3", "make"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed: the script tools this test runs need it", p)
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("npm_config_cache", filepath.Join(home, ".npm"))
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	project := `version: 1
rules:
  - {id: no-publish, decision: deny, command: npm publish}
  - {id: no-npx-cowsay, decision: deny, command: npx cowsay}
  - {id: no-deploy, decision: deny, command: shtool deploy}
  - {id: no-pydeploy, decision: deny, command: pytool deploy}
  - {id: no-outer, decision: deny, command: outer deploy}
  - {id: no-pip-install, decision: deny, command: pip install}
  - {id: tools, decision: allow, command: shtool}
  - {id: pytools, decision: allow, command: pytool}
  - {id: outer, decision: allow, command: outer}
`
	if err := os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(ws, "target", "proj")
	write := func(p, body string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	// Each tool leaves NAME.marker in target/proj when it runs.
	write(filepath.Join(proj, "package.json"), `{"name":"p","version":"1.0.0",
"scripts":{"prepack":"touch published.marker","test":"touch tested.marker"}}`, 0o644)
	write(filepath.Join(proj, "shtool"), "#!/bin/sh\ntouch \"$1.marker\"\n", 0o755)
	write(filepath.Join(proj, "inner"), "#!/bin/sh -e\n# run as: /bin/sh -e inner OUTER ARG\ntouch \"outer-$2.marker\"\n", 0o755)
	write(filepath.Join(proj, "outer"), "#!"+filepath.Join(proj, "inner")+"\n", 0o755)
	write(filepath.Join(proj, "Makefile"), "pub:\n\tnpm publish --dry-run --offline\ntest:\n\tnpm test --offline\n", 0o644)
	tools := filepath.Join(t.TempDir(), "tools")
	pytool := filepath.Join(tools, "pytool")
	write(pytool, "#!/usr/bin/env python3\nimport sys, pathlib\npathlib.Path('py-' + sys.argv[1] + '.marker').touch()\n", 0o755)
	t.Chdir(proj)

	for _, tc := range []struct {
		name   string
		argv   []string
		check  []string // what check is asked (default: argv)
		marker string   // the side effect of running
		deny   bool
	}{
		{"npm publish", []string{"npm", "publish", "--dry-run", "--offline"}, nil, "published.marker", true},
		{"npm test", []string{"npm", "test", "--offline"}, nil, "tested.marker", false},
		{"npx", []string{"npx", "cowsay", "hi"}, nil, "", true},
		{"sh tool in target", []string{"./shtool", "deploy"}, nil, "deploy.marker", true},
		{"sh tool allowed", []string{"./shtool", "build"}, nil, "build.marker", false},
		{"sh tool by name", []string{"sh", "./shtool", "deploy"}, nil, "deploy.marker", true},
		{"env python3 tool on an --exec path", []string{pytool, "deploy"}, nil, "py-deploy.marker", true},
		{"env python3 tool allowed", []string{pytool, "build"}, nil, "py-build.marker", false},
		{"python3 -m pip install", []string{"python3", "-m", "pip", "install", "--no-index", "nothing-here"}, nil, "", true},
		{"two-level chain", []string{"./outer", "deploy"}, nil, "outer-deploy.marker", true},
		{"two-level chain allowed", []string{"./outer", "build"}, nil, "outer-build.marker", false},
		{"make recipe", []string{"make", "pub"}, []string{"npm", "publish", "--dry-run", "--offline"}, "published.marker", true},
		{"make recipe allowed", []string{"make", "test"}, []string{"npm", "test", "--offline"}, "tested.marker", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.marker != "" {
				os.Remove(filepath.Join(proj, tc.marker))
			}
			ask := tc.check
			if ask == nil {
				ask = tc.argv
			}
			_, _, code := runCLI(t, "", append([]string{"check", "--role", "developer", "--no-user-policy", "--"}, ask...)...)
			if checkDeny := code == exitCheckDeny; checkDeny != tc.deny {
				t.Fatalf("check %q: exit %d, want deny=%v", ask, code, tc.deny)
			}
			auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
			args := []string{"run", "--role", "developer", "--no-user-policy", "--approve", "none", "--checkpoints", "off",
				"--audit", auditFile, "--timeout", "60s", "--exec", tools, "--"}
			_, errOut, code := runCLI(t, "", append(args, tc.argv...)...)
			log, _ := os.ReadFile(auditFile)
			if tc.deny {
				if code == 0 {
					t.Errorf("run %q: exit 0, want refused\n%s", tc.argv, errOut)
				}
				if !strings.Contains(string(log), `"decision":"deny"`) {
					t.Errorf("run %q: no deny in the audit log\n%s", tc.argv, log)
				}
			} else if code != 0 {
				t.Errorf("run %q: exit %d, want 0\n%s\n%s", tc.argv, code, errOut, log)
			}
			if tc.marker != "" {
				_, err := os.Stat(filepath.Join(proj, tc.marker))
				if ran := err == nil; ran == tc.deny {
					t.Errorf("run %q: %s present=%v (denied=%v)", tc.argv, tc.marker, ran, tc.deny)
				}
			}
		})
	}
}
