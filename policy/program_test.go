package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// programWorld is a workspace for program-location decisions.
func programWorld(t *testing.T, role string) (*Engine, string) {
	t.Helper()
	ws := t.TempDir()
	for _, d := range []string{"target/build", "target/.git/hooks", "agents/a1/tmp", "context"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	e, err := Load(LoadOptions{Role: role, Workspace: ws, NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	return e, ws
}

// TestProgramLocations: developers and testers run what they build and the
// toolchain's internals; investigators are not given that; programs the
// policy names (git, rm, curl, and in the supervisor every copy of a
// policed binary) are decided by name wherever they are.
func TestProgramLocations(t *testing.T) {
	type c struct {
		argv []string
		exe  string // resolved executable ("" = static check); "W" is replaced by the workspace
		want map[string]Decision
		rule string // winning rule id suffix for developer, if any
	}
	all := func(dev, tst, inv Decision) map[string]Decision {
		return map[string]Decision{"developer": dev, "tester": tst, "investigator": inv}
	}
	cases := []c{
		{[]string{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "-quiet", "x.c"}, "", all(Allow, Allow, Ask), "toolchain.cc1"},
		{[]string{"cc1plus", "-quiet", "x.cc"}, "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", all(Allow, Allow, Ask), ""},
		{[]string{"collect2", "-o", "a"}, "", all(Allow, Allow, Ask), "toolchain.collect2"},
		{[]string{"lto-wrapper", "x"}, "/usr/lib/gcc/x86_64-linux-gnu/12/lto-wrapper", all(Allow, Allow, Ask), ""},
		{[]string{"/usr/lib/gcc/x86_64-linux-gnu/12/lto1", "x"}, "", all(Allow, Allow, Ask), ""},
		{[]string{"/usr/local/go/pkg/tool/linux_amd64/compile", "-o", "x"}, "", all(Allow, Allow, Ask), "toolchain.go"},
		{[]string{"link", "-o", "a.out"}, "/usr/local/go/pkg/tool/linux_amd64/link", all(Allow, Allow, Ask), "toolchain.go"},
		{[]string{"x86_64-linux-gnu-gcc-12", "-c", "a.c"}, "", all(Allow, Ask, Ask), "toolchain.gnu-triple"},
		// /usr/bin/link (coreutils) is not the Go linker: decided by the default.
		{[]string{"link", "a", "b"}, "/usr/bin/link", all(Ask, Ask, Ask), ""},
		// what the developer built, by path (static) and by resolved file (supervisor)
		{[]string{"./build/app"}, "", all(Allow, Allow, Ask), "programs.target"},
		{[]string{"app", "--flag"}, "W/target/build/app", all(Allow, Allow, Ask), "programs.target"},
		{[]string{"./configure", "--prefix=/x"}, "", all(Allow, Allow, Ask), "programs.target"},
		{[]string{"bash", "build.sh"}, "", all(Allow, Allow, Ask), "programs.target"},
		{[]string{"sh", "-e", "W/target/.git/hooks/post-commit"}, "", all(Allow, Allow, Ask), "programs.target"},
		{[]string{"sh", ".git/hooks/post-commit"}, "", all(Allow, Allow, Ask), "programs.target"},
		{[]string{"env", "A=1", "./build/app"}, "", all(Allow, Allow, Ask), ""},
		{[]string{"pkg.test", "-test.v"}, "W/agents/a1/tmp/go-build1/b001/pkg.test", all(Allow, Allow, Ask), "programs.own-agent"},
		// inline code and scripts outside the workspace are not located
		{[]string{"bash", "-c", "./build/app; curl x"}, "", all(Ask, Ask, Ask), ""},
		{[]string{"sh", "/tmp/x.sh"}, "", all(Ask, Ask, Ask), ""},
		{[]string{"app"}, "/tmp/app", all(Ask, Ask, Ask), ""},
		{[]string{"app"}, "", all(Ask, Ask, Ask), ""},
		// an interpreter is located by its script, never by its own file
		{[]string{"perl", "-e", "exec 'git','push'"}, "W/target/build/perl", all(Ask, Ask, Ask), ""},
		{[]string{"python3.12", "-c", "print(1)"}, "W/target/build/python3.12", all(Ask, Ask, Ask), ""},
		// named programs are decided by name, wherever they are
		{[]string{"./git", "push", "origin", "main"}, "", all(Deny, Deny, Deny), "git.push"},
		{[]string{"./build/curl", "https://example.com"}, "", all(Ask, Ask, Ask), "curl"},
		{[]string{"rm", "-rf", "x"}, "W/target/build/rm", all(Ask, Ask, Deny), "rm"},
		// push plumbing is denied by every workspace role
		{[]string{"git", "send-pack", "../remote.git", "main"}, "", all(Deny, Deny, Deny), "git.send-pack"},
		{[]string{"git", "receive-pack", "../remote.git"}, "", all(Deny, Deny, Deny), "git.receive-pack"},
		{[]string{"git-receive-pack", "../remote.git"}, "", all(Deny, Deny, Deny), "git.receive-pack"},
		{[]string{"git", "http-push", "https://x/"}, "", all(Deny, Deny, Deny), "git.http-push"},
		{[]string{"git-upload-pack", "../remote.git"}, "", all(Ask, Ask, Ask), "git.upload-pack"},
		// housekeeping git commit starts by itself
		{[]string{"git", "maintenance", "run", "--auto", "--no-quiet"}, "", all(Allow, Allow, Allow), "git.maintenance-auto"},
		{[]string{"git", "gc", "--auto"}, "", all(Allow, Allow, Allow), "git.gc-auto"},
		{[]string{"git", "gc", "--auto", "--prune=now"}, "", all(Ask, Ask, Ask), ""},
	}
	for _, role := range []string{"developer", "tester", "investigator"} {
		e, ws := programWorld(t, role)
		cwd := filepath.Join(ws, "target")
		for _, tc := range cases {
			argv := append([]string(nil), tc.argv...)
			for i := range argv {
				argv[i] = strings.ReplaceAll(argv[i], "W/", ws+"/")
			}
			exe := strings.ReplaceAll(tc.exe, "W/", ws+"/")
			res := e.Decide(Query{Argv: argv, ExecContext: ExecContext{Cwd: cwd, Exe: exe}})
			if res.Decision != tc.want[role] {
				t.Errorf("%s: %q exe %q: got %s (%s), want %s", role, tc.argv, tc.exe, res.Decision, res.Reason, tc.want[role])
				continue
			}
			if role == "developer" && tc.rule != "" && (res.Rule == nil || res.Rule.ID != "developer/"+tc.rule) {
				t.Errorf("%s: %q: rule %v, want developer/%s (%s)", role, tc.argv, res.Rule, tc.rule, res.Reason)
			}
			if exe == "" {
				// Explain agrees with the decision (agentbox explain).
				if ex := e.Explain(Query{Argv: argv, ExecContext: ExecContext{Cwd: cwd}}); ex.Result.Decision != res.Decision {
					t.Errorf("%s: explain %q: %s, decide %s", role, tc.argv, ex.Result.Decision, res.Decision)
				}
				if got := e.Decide(Query{Argv: argv, ExecContext: ExecContext{Cwd: cwd}}); got.Decision != res.Decision {
					t.Errorf("%s: DecideExec %q: %s, DecideExecAt %s", role, tc.argv, got.Decision, res.Decision)
				}
			}
		}
	}
}

// TestProgramRuleExplained: explain names the program rule, its matcher and
// the file it matched.
func TestProgramRuleExplained(t *testing.T) {
	e, ws := programWorld(t, "developer")
	ex := e.Explain(Query{Argv: []string{"app"}, ExecContext: ExecContext{Cwd: filepath.Join(ws, "target"), Exe: filepath.Join(ws, "target/build/app")}})
	s := exFacts(ex)
	for _, want := range []string{"developer/programs.target", `program "target/**"`, "program file " + filepath.Join(ws, "target/build/app")} {
		if !strings.Contains(s, want) {
			t.Errorf("explanation lacks %q:\n%s", want, s)
		}
	}
	// Shell lines: only absolute program paths are located (a relative one
	// depends on the line's cd's).
	if r := e.Decide(Query{Shell: filepath.Join(ws, "target/build/app") + " -v", ExecContext: ExecContext{Cwd: ws}}); r.Decision != Allow {
		t.Errorf("absolute path in a shell line: %s (%s)", r.Decision, r.Reason)
	}
	if r := e.Decide(Query{Shell: "cd /tmp && ./app", ExecContext: ExecContext{Cwd: filepath.Join(ws, "target")}}); r.Decision == Allow {
		t.Errorf("relative path after cd in a shell line allowed: %s", r.Reason)
	}
	if r := e.Decide(Query{Action: "tool:exec:" + filepath.Join(ws, "target/build/app")}); r.Decision != Allow {
		t.Errorf("action with an absolute program path: %s (%s)", r.Decision, r.Reason)
	}
}

// TestProgramRules: program: in policy files, absolute and workspace
// patterns, load errors.
func TestProgramRules(t *testing.T) {
	ws := t.TempDir()
	pol := writePolicy(t, "p.yaml", `version: 1
roles:
  r:
    default: deny
    rules:
      - {id: tools, decision: allow, program: "/opt/tools/**"}
      - {id: bin, decision: ask, program: "target/bin/*"}
      - {id: scripts, decision: allow, program: "*.sh"}
      - {id: fetch, decision: ask, regex: "tool:exec:fetch .*"}
`)
	e, err := Load(LoadOptions{Role: "r", Workspace: ws, NoUserFile: true, Files: []string{pol}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		exe  string
		want Decision
	}{
		{[]string{"x"}, "/opt/tools/bin/x", Allow},
		{[]string{"x"}, "/opt/toolsx/x", Deny},
		{[]string{"x"}, ws + "/target/bin/x", Ask},
		{[]string{"x"}, ws + "/target/bin/sub/x", Ask}, // like path:, a pattern matching a directory covers what is in it
		{[]string{"x"}, ws + "/target/x", Deny},
		{[]string{"sh", "deploy/run.sh"}, "", Allow},
		{[]string{"sh", "/elsewhere/run.sh"}, "", Deny}, // workspace patterns match inside the workspace only
		{[]string{"x"}, "", Deny},
		{[]string{"fetch", "url"}, "/opt/tools/fetch", Ask}, // named by a regex: not located
	} {
		if got := e.Decide(Query{Argv: tc.argv, ExecContext: ExecContext{Cwd: filepath.Join(ws, "target"), Exe: tc.exe}}); got.Decision != tc.want {
			t.Errorf("%q exe %q: %s (%s), want %s", tc.argv, tc.exe, got.Decision, got.Reason, tc.want)
		}
	}
	for _, bad := range []struct{ rule, msg string }{
		{`{decision: allow, program: "/target/**"}`, "write workspace paths without it"},
		{`{decision: allow, program: ""}`, "empty"},
		{`{decision: allow, program: "a/**x/b"}`, "whole path segment"},
		{`{decision: allow, program: "x", tool: view}`, "program match only exec"},
	} {
		p := writePolicy(t, "bad.yaml", "version: 1\nroles:\n  r:\n    rules:\n      - "+bad.rule+"\n")
		_, err := Load(LoadOptions{Role: "r", NoUserFile: true, Files: []string{p}})
		if err == nil || !strings.Contains(err.Error(), bad.msg) || !strings.Contains(err.Error(), "bad.yaml:5") {
			t.Errorf("%s: error %v, want file:line and %q", bad.rule, err, bad.msg)
		}
	}
}

func TestScriptOperand(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"sh", "x.sh"}, "x.sh"},
		{[]string{"/bin/bash", "-eu", "-o", "pipefail", "x.sh", "a"}, "x.sh"},
		{[]string{"bash", "--norc", "--", "-x.sh"}, "-x.sh"},
		{[]string{"bash", "-c", "x.sh"}, ""},
		{[]string{"bash", "-ec", "x"}, ""},
		{[]string{"sh", "-s", "x"}, ""},
		{[]string{"sh", "-"}, ""},
		{[]string{"sh"}, ""},
		{[]string{"python3", "t.py"}, "t.py"},
		{[]string{"python3.12", "t.py"}, "t.py"},
		{[]string{"python3", "-c", "t.py"}, ""},
		{[]string{"node", "-e", "x"}, ""},
		{[]string{"cat", "x.sh"}, ""},
	} {
		if got := scriptOperand(tc.argv); got != tc.want {
			t.Errorf("scriptOperand(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func FuzzScriptOperand(f *testing.F) {
	f.Add("bash\x00-eu\x00-o\x00pipefail\x00x.sh")
	f.Add("sh\x00-c\x00x")
	f.Add("python3\x00t.py")
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		got := scriptOperand(argv)
		if got != "" {
			found := false
			for _, a := range argv[1:] {
				found = found || a == got
			}
			if !found {
				t.Fatalf("scriptOperand(%q) = %q, not one of its words", argv, got)
			}
		}
	})
}

func FuzzProgramGlob(f *testing.F) {
	f.Add("/usr/lib/gcc/**", "/usr/lib/gcc/x/cc1")
	f.Add("target/**", "target/build/app")
	f.Add("*.sh", "a/b.sh")
	f.Fuzz(func(t *testing.T, pat, p string) {
		g, err := compileProgramGlob(pat)
		if err != nil {
			return
		}
		_ = g.match(p, p)
		_ = g.match("/"+p, "")
	})
}

// TestShellLineLocations: a program of the project started from a shell
// line is located the way the shell finds it — a relative path against the
// line's directory and its cd's, a bare name through the caller's PATH
// lookup — and decided by its `program:` rule, as at exec time; a cd to an
// unknown place, a name not found, and programs the policy names are not
// located.
func TestShellLineLocations(t *testing.T) {
	ws := t.TempDir()
	e, err := Load(LoadOptions{Role: "developer", Workspace: ws, NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	proj := ws + "/target/proj"
	look := func(name string) string {
		switch name {
		case "mytool":
			return proj + "/node_modules/.bin/mytool"
		case "systool":
			return "/opt/other/bin/systool"
		case "rm":
			return proj + "/bin/rm" // a program the policy names: decided by name
		}
		return ""
	}
	for _, c := range []struct {
		line string
		want Decision
	}{
		{"./hello | grep -q hi", Allow},
		{"cd .. && proj/hello", Allow},
		{"cd sub; ../hello", Allow},
		{"bin/tool --x", Allow},
		{"mytool --fix", Allow},
		{"FOO=1 ./hello", Allow},
		{"cd $X && ./hello", Ask},
		{"systool", Ask},
		{"unknown-tool", Ask},
		{"rm -rf build", Ask},
		{"./hello; curl http://x", Ask},
	} {
		if got := e.Decide(Query{Shell: c.line, ExecContext: ExecContext{Cwd: proj, LookPath: look}}); got.Decision != c.want {
			t.Errorf("%q = %v (%s), want %v", c.line, got.Decision, got.Reason, c.want)
		}
	}
	// The same line as the argument of sh -c at exec time.
	if got := e.Decide(Query{Argv: []string{"sh", "-c", "mytool && ./hello | grep -q hi"}, ExecContext: ExecContext{Cwd: proj, Exe: "/bin/sh", LookPath: look}}); got.Decision != Allow {
		t.Errorf("sh -c at exec time = %v (%s)", got.Decision, got.Reason)
	}
}
