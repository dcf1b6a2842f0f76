package policy

import "testing"

// TestScriptDecidedAsScript: a program start whose file is a #! script is
// decided as the script, named by it (what `check` and a shell line
// name), and as what the kernel runs (ExecContext.Interp), whose items
// count only where a rule names them; the stricter wins. An interpreter
// started by name with a script or module is decided as that script too,
// where a rule names it.
func TestScriptDecidedAsScript(t *testing.T) {
	project := `version: 1
rules:
  - {id: no-publish, decision: deny, command: npm publish}
  - {id: no-pip-install, decision: deny, command: pip install}
  - {id: no-deploy, decision: deny, command: shtool deploy}
  - {id: no-curl, decision: deny, command: curl}
  - {id: npm, decision: allow, command: npm}
  - {id: tools, decision: allow, command: shtool}
  - {id: env, decision: allow, command: env}
  - {id: node, decision: allow, command: node}
  - {id: py, decision: allow, command: python3}
  - {id: sh, decision: allow, command: sh}
  - {id: mytool, decision: allow, command: mytool}
`
	e := engineWith(t, "bare", bareRole("ask"), project)
	npm := ExecContext{Cwd: "/w", Exe: "/usr/bin/npm", Interp: []string{"/usr/bin/env", "node"}}
	for _, tc := range []struct {
		name string
		argv []string
		c    ExecContext
		want Decision
	}{
		{"npm publish, as the kernel runs it", []string{"/usr/bin/npm", "publish"}, npm, Deny},
		{"npm test, as the kernel runs it", []string{"/usr/bin/npm", "test"}, npm, Allow},
		{"env runs node on npm", []string{"/usr/bin/env", "node", "/usr/bin/npm", "publish"}, ExecContext{Cwd: "/w"}, Deny},
		{"node runs npm", []string{"node", "/usr/bin/npm", "publish"}, ExecContext{Cwd: "/w"}, Deny},
		{"node runs npm test", []string{"node", "/usr/bin/npm", "test"}, ExecContext{Cwd: "/w"}, Allow},
		{"node runs a script no rule names", []string{"node", "./build.js"}, ExecContext{Cwd: "/w"}, Allow},
		{"python3 -m pip install", []string{"python3", "-m", "pip", "install", "x"}, ExecContext{Cwd: "/w"}, Deny},
		{"python3 -mpip install", []string{"python3", "-mpip", "install", "x"}, ExecContext{Cwd: "/w"}, Deny},
		{"python3 -m venv", []string{"python3", "-m", "venv", "v"}, ExecContext{Cwd: "/w"}, Allow},
		{"sh tool deploy", []string{"sh", "./shtool", "deploy"}, ExecContext{Cwd: "/w"}, Deny},
		{"tool deploy by #!", []string{"./shtool", "deploy"}, ExecContext{Cwd: "/w", Exe: "/w/shtool", Interp: []string{"/bin/sh"}}, Deny},
		{"tool build by #!", []string{"./shtool", "build"}, ExecContext{Cwd: "/w", Exe: "/w/shtool", Interp: []string{"/bin/sh"}}, Allow},
		{"a link named otherwise", []string{"./pub", "publish"}, ExecContext{Cwd: "/w", Exe: "/w/pub", Interp: []string{"/usr/bin/env", "node"},
			Aliases: []string{"/usr/bin/npm", "/usr/lib/node_modules/npm/bin/npm-cli.js"}}, Deny},
		{"#! curl -K is curl", []string{"./mytool", "x"}, ExecContext{Cwd: "/w", Exe: "/w/mytool", Interp: []string{"/usr/bin/curl", "-K"}}, Deny},
		{"#! interpreter no rule names passes", []string{"./mytool", "x"}, ExecContext{Cwd: "/w", Exe: "/w/mytool", Interp: []string{"/opt/bin/runner"}}, Allow},
		{"two levels", []string{"./shtool", "deploy"}, ExecContext{Cwd: "/w", Exe: "/w/shtool", Interp: []string{"/bin/sh", "-e", "/w/inner", "-x"}}, Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.Decide(Query{Argv: tc.argv, ExecContext: tc.c})
			if res.Decision != tc.want {
				t.Errorf("%q: %s (%s), want %s", tc.argv, res.Decision, res.Reason, tc.want)
			}
			if ex := e.Explain(Query{Argv: tc.argv, ExecContext: tc.c}); ex.Result.Decision != res.Decision {
				t.Errorf("explain says %s", ex.Result.Decision)
			}
		})
	}
}
