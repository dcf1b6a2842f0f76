package agentbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// everydayTree is a small real project: C with make, Go, Python, Node with
// an npm script calling a tool in node_modules/.bin, a shell script.
var everydayTree = map[string]string{
	"c/hello.c":                     "#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n",
	"c/util.c":                      "int add(int a, int b){return a+b;}\n",
	"c/Makefile":                    "CC ?= cc\nall: hello\nhello: hello.c\n\t$(CC) -O2 -o hello hello.c\ntest: hello\n\t./hello | grep -q hi\nclean:\n\trm -f *.o\n",
	"go/go.mod":                     "module example.com/p\n\ngo 1.21\n",
	"go/main.go":                    "package main\n\nimport \"fmt\"\n\nfunc Add(a, b int) int { return a + b }\n\nfunc main() { fmt.Println(Add(1, 2)) }\n",
	"go/main_test.go":               "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
	"py/app.py":                     "def add(a, b):\n    return a + b\n\nif __name__ == '__main__':\n    print(add(1, 2))\n",
	"py/test_app.py":                "import unittest\nfrom app import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n",
	"node/package.json":             `{"name":"p","version":"1.0.0","scripts":{"build":"node build.js","test":"node test.js","lint":"mytool --check"}}` + "\n",
	"node/build.js":                 "require('fs').mkdirSync('dist',{recursive:true}); require('fs').writeFileSync('dist/out.txt','built\\n');\n",
	"node/test.js":                  "if (require('fs').readFileSync('dist/out.txt','utf8') !== 'built\\n') process.exit(1);\n",
	"node/node_modules/.bin/mytool": "#!/bin/sh\necho linted \"$@\"\n",
	"run.sh":                        "#!/bin/sh\necho ran\n",
	"notes.txt":                     "hi there\nTODO: more\n",
}

// everydayLines are ordinary development command lines, each with the
// directory (under target/proj) it runs in. Every one must run to exit 0
// under the developer role with no approver, and `check --shell` must allow
// it.
var everydayLines = []struct{ dir, line string }{
	// C with make
	{"c", "make"},
	{"c", "make test"},
	{"c", "./hello"},
	{"c", "./hello | grep -q hi"},
	{"c", "cc -Wall -c util.c -o util.o"},
	{"c", "gcc -O2 -o hello2 hello.c && ./hello2 > out.txt"},
	{"c", "cat out.txt"},
	{"c", "make clean"},
	{"c", "ls -la"},
	{"c", "nm hello | head -3"},
	// Go
	{"go", "go build ./..."},
	{"go", "go test ./..."},
	{"go", "go vet ./..."},
	{"go", "gofmt -l ."},
	{"go", "go run ."},
	{"go", "go env GOPATH"},
	{"go", "go list ./..."},
	// Python
	{"py", "python3 app.py"},
	{"py", "python3 -m unittest -q test_app"},
	{"py", "python3 -m py_compile app.py"},
	{"py", "python3 -m venv .venv"},
	{"py", ".venv/bin/pip --version"},
	{"py", ".venv/bin/python app.py"},
	{"py", "rm -rf __pycache__"},
	// Node
	{"node", "npm run build"},
	{"node", "npm test"},
	{"node", "npm run lint"},
	{"node", "node build.js"},
	{"node", "node_modules/.bin/mytool x"},
	// shell and text tools
	{".", "chmod +x run.sh"},
	{".", "./run.sh"},
	{".", "sh run.sh"},
	{".", "bash -c 'echo hi'"},
	{".", "echo hello >> notes.txt"},
	{".", "grep -rn TODO ."},
	{".", "find . -name '*.c'"},
	{".", "sed -i 's/hi/hey/' notes.txt"},
	{".", "sort notes.txt | uniq -c"},
	{".", "wc -l notes.txt"},
	{".", "head -n 2 notes.txt && tail -n 1 notes.txt"},
	{".", "tar czf out.tgz c && tar tzf out.tgz"},
	{".", "mkdir -p build/sub && touch build/sub/x"},
	{".", "cp notes.txt build/ && mv build/notes.txt build/n.txt"},
	{".", "diff -q build/n.txt build/n.txt"},
	{".", "which make"},
	{".", "env | grep -q HOME"},
	{".", "date +%Y"},
	{".", "xargs echo < notes.txt"},
	{".", "cut -d' ' -f1 notes.txt | tr a-z A-Z"},
	{".", "rm -f c/util.o"},
	// git from init to branch, stash and commit
	{".", "git init -q -b main repo"},
	{"repo", "git config --global user.email dev@example.com"},
	{"repo", "git config --global user.name Dev"},
	{"repo", "git config user.name"},
	{"repo", "echo a > a.txt && git add a.txt"},
	{"repo", "git commit -q -m first"},
	{"repo", "git status --short"},
	{"repo", "git log --oneline"},
	{"repo", "git branch feature"},
	{"repo", "git switch -q feature"},
	{"repo", "echo b >> a.txt && git diff --stat"},
	{"repo", "git stash -q"},
	{"repo", "git stash list"},
	{"repo", "git stash pop -q"},
	{"repo", "git commit -qam second"},
	{"repo", "git switch -q main"},
	{"repo", "git branch -a"},
	{"repo", "git remote -v"},
	{"repo", "git worktree list"},
	{"repo", "git clean -n"},
	{"repo", "git -c core.hooksPath=/dev/null -c core.fsmonitor= ls-files"},
	{"repo", "git tag v1"},
	{"repo", "git show --stat HEAD"},
}

// TestEverydayDevelopment runs every line of everydayLines for real, in
// order, each in its own `agentbox run --role developer --approve none`
// (sh -c LINE in its directory), and asks the policy engine the way
// `agentbox check --shell` does: every line must exit 0 and be allowed.
func TestEverydayDevelopment(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	needSandbox(t)
	for _, p := range []string{"make", "cc", "gcc", "nm", "go", "python3", "node", "npm", "git", "tar"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("reason: %s not installed", p)
		}
	}
	w := newWorld(t)
	// No extra policy: the built-in developer role as shipped.
	if err := os.WriteFile(w.policy, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(w.ws, "target", "proj")
	for name, body := range everydayTree {
		p := filepath.Join(proj, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(name, ".bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	eng, err := load.Policy(policy.LoadOptions{Role: "developer", Workspace: w.ws, NoUserFile: true, Files: []string{w.policy}})
	if err != nil {
		t.Fatal(err)
	}
	// The Go build cache and module cache live in the agent's own area;
	// give go the toolchain's GOROOT via PATH as a user would.
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	for _, l := range everydayLines {
		dir := filepath.Join(proj, l.dir)
		if r := eng.Decide(policy.Query{Shell: l.line, ExecContext: policy.ExecContext{Cwd: dir, LookPath: judge.LookPath(os.Getenv("PATH"), dir)}}); r.Decision != policy.Allow {
			t.Errorf("check --shell %q (in %s) = %v: %s", l.line, l.dir, r.Decision, r.Reason)
		}
		out, _ := os.CreateTemp(t.TempDir(), "out")
		r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", l.line}, w.opts(
			agentbox.WithDir(dir), agentbox.WithApprove("none"), agentbox.WithAudit(w.audit),
			agentbox.WithStdio(nil, out, out), agentbox.WithEnv(env))...)
		if err != nil {
			t.Fatalf("%q: %v", l.line, err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatalf("%q: %v", l.line, err)
		}
		res, err := r.Wait()
		b, _ := os.ReadFile(out.Name())
		out.Close()
		if err != nil || res.ExitCode != 0 {
			t.Errorf("run %q (in %s): exit %d %v\n%s", l.line, l.dir, res.ExitCode, err, b)
		}
	}
	// ...and what the role keeps refusing still does not run, also when it
	// looks like what git stash runs itself. Deleting asks only without
	// checkpoints (with them, undo puts it back: TestUndoAfterRun).
	for _, l := range []struct{ dir, line string }{
		{"repo", "git reset --hard -q --no-recurse-submodules"},
		{"repo", "git push origin main"},
		{".", "rm -f notes.txt"},
		{".", "chmod 777 run.sh"},
		{"c", "rm -f hello *.o"},
	} {
		dir := filepath.Join(proj, l.dir)
		r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", l.line}, w.opts(
			agentbox.WithDir(dir), agentbox.WithApprove("none"), agentbox.WithAudit(w.audit), agentbox.WithEnv(env), agentbox.WithoutCheckpoints())...)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if res, _ := r.Wait(); res.ExitCode != agentbox.ExitDenied {
			t.Errorf("%q ran (exit %d); the developer role must refuse it", l.line, res.ExitCode)
		}
	}
	if len(everydayLines) < 60 {
		t.Errorf("only %d lines; the suite promises at least 60", len(everydayLines))
	}
}
