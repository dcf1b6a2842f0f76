package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvRule: loader and runtime variables, from a shell line (check, the
// hook) and from a real environment (the exec supervisor), decided by one
// rule.
func TestEnvRule(t *testing.T) {
	ws := t.TempDir()
	for _, a := range []string{"context", "target", "feedback", "agents"} {
		os.Mkdir(filepath.Join(ws, a), 0o755)
	}
	eng, err := Load(LoadOptions{Role: "developer", Workspace: ws, NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	tgt := filepath.Join(ws, "target")
	for _, tc := range []struct {
		prog string
		env  []string
		cwd  string
		want Decision
		why  string
	}{
		{"git", []string{"LD_PRELOAD=" + tgt + "/x.so"}, "", Deny, "LD_PRELOAD points into target/"},
		{"git", []string{"LD_AUDIT=./a.so"}, tgt, Deny, "LD_AUDIT points into target/"},
		{"git", []string{"LD_AUDIT=./a.so"}, "", Deny, "cannot be told"},
		{"git", []string{"LD_LIBRARY_PATH=" + tgt + "/lib"}, "", Deny, "LD_LIBRARY_PATH"},
		{"git", []string{"LD_LIBRARY_PATH=/usr/lib:"}, tgt, Deny, "target/"}, // empty element: cwd
		{"git", []string{"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libfaketime.so.1"}, "", Ask, "changes what git loads"},
		{"git", []string{"GLIBC_TUNABLES=glibc.malloc.check=3"}, "", Deny, "cannot be told"},
		{"git", []string{"LD_PRELOAD=$"}, "", Deny, "cannot be told"},
		{"curl", []string{"GCONV_PATH=" + ws + "/agents/main/g"}, "", Deny, "agents/"},
		{"/usr/bin/rm", []string{"LD_PRELOAD=/tmp/x.so"}, "", Deny, "/tmp"},
		{"ssh", []string{"LD_PRELOAD=" + ws + "/context/x.so"}, "", Ask, "changes what ssh loads"}, // context/ is read-only
		{"./build/app", []string{"LD_LIBRARY_PATH=" + tgt + "/build"}, "", Allow, ""},              // inject_env
		{"./build/app", []string{"LD_PRELOAD=" + tgt + "/x.so"}, "", Ask, "inject_env"},
		{"python3", []string{"PYTHONPATH=src"}, tgt, Allow, ""},
		{"python3.12", []string{"PYTHONSTARTUP=" + tgt + "/s.py"}, "", Ask, "PYTHONSTARTUP"},
		{"make", []string{"PYTHONPATH=src"}, tgt, Allow, ""}, // not a python program
		{"node", []string{"NODE_OPTIONS=--require ./x.js"}, tgt, Ask, "NODE_OPTIONS"},
		{"git", []string{"PYTHONPATH=/x", "HOME=/h", "LD_BIND_NOW=1"}, "", Allow, ""},
		{"git", nil, "", Allow, ""},
	} {
		r := eng.DecideEnv(tc.prog, tc.env, tc.cwd)
		if r.Decision != tc.want || !strings.Contains(r.Reason, tc.why) {
			t.Errorf("DecideEnv(%s, %q, %q) = %s (%s); want %s containing %q", tc.prog, tc.env, tc.cwd, r.Decision, r.Reason, tc.want, tc.why)
		}
	}
	// The same rule through a shell line, as check and the hook see it.
	for _, tc := range []struct {
		line string
		want Decision
	}{
		{"LD_PRELOAD=" + tgt + "/x.so git status", Deny},
		{"export LD_AUDIT=" + tgt + "/a.so; git fetch origin", Deny},
		{"LD_LIBRARY_PATH=" + tgt + "/build " + tgt + "/build/app", Allow},
		{"env LD_PRELOAD=/tmp/evil.so git status", Deny},
		{"PYTHONPATH=src python3 -m pytest", Allow},
		{"git status", Allow},
	} {
		if r := eng.Decide(Query{Shell: tc.line, ExecContext: ExecContext{Cwd: tgt}}); r.Decision != tc.want {
			t.Errorf("%q = %s (%s); want %s", tc.line, r.Decision, r.Reason, tc.want)
		}
	}
	if _, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{writePolicy(t, "p.yaml", "version: 1\nroles:\n  x:\n    inject_env: [HOME]\n")}}); err == nil || !strings.Contains(err.Error(), `"HOME" is not a loader or runtime variable`) {
		t.Errorf("inject_env HOME accepted: %v", err)
	}
}
