package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy/load"

	"mvdan.cc/sh/v3/shell"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/review"
	"go.yaml.in/yaml/v3"
)

// TestDocsPolicyExamples: every YAML block of README.md and docs/policy.md
// that is a policy file (it has a version: or rules: key) loads without
// error, so an example a reader copies works.
func TestDocsPolicyExamples(t *testing.T) {
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for _, doc := range []string{"../../README.md", "../../docs/policy.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range block.FindAllStringSubmatch(string(data), -1) {
			text := m[1]
			if !regexp.MustCompile(`(?m)^(version|rules|roles):`).MatchString(text) || strings.Contains(text, "...") {
				continue // a fragment (a role's network block alone), or a schema with placeholders
			}
			p := filepath.Join(t.TempDir(), "example.yaml")
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := load.Files(p); err != nil {
				t.Errorf("%s, yaml block %d does not load: %v\n%s", doc, i+1, err, text)
			}
		}
	}
}

// TestDocsCheckLines: every `agentbox check` line in README.md that
// promises an exit status ("# exit N") gives it.
func TestDocsCheckLines(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^agentbox (check .*?)\s+# exit (\d)`)
	found := 0
	for _, m := range line.FindAllStringSubmatch(string(data), -1) {
		args, err := shell.Fields(m[1], nil)
		if err != nil {
			t.Fatalf("%q: %v", m[1], err)
		}
		want, _ := strconv.Atoi(m[2])
		args = append([]string{args[0], "--no-user-policy"}, args[1:]...)
		out, errOut, code := runCLI(t, "", args...)
		if code != want {
			t.Errorf("README promises exit %d for `agentbox %s`; got %d\n%s%s", want, m[1], code, out, errOut)
		}
		found++
	}
	if found == 0 {
		t.Fatal("no `agentbox check ... # exit N` line found in README.md")
	}
}

// TestHookSettingsInsideRun: the settings shipped for a Claude Code run
// under `agentbox run` are the plain ones plus --audit none (inside the
// sandbox the audit log is out of reach), with the same fail-closed
// suffix.
func TestHookSettingsInsideRun(t *testing.T) {
	plain, err1 := os.ReadFile("../../examples/claude-code/settings.json")
	inside, err2 := os.ReadFile("../../examples/claude-code/settings-inside-run.json")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	want := strings.Replace(string(plain), "--role developer", "--role developer --audit none", 1)
	if strings.TrimSpace(string(inside)) != strings.TrimSpace(want) {
		t.Errorf("settings-inside-run.json is not settings.json with --audit none:\n%s", inside)
	}
}

// TestDocsCommandLines runs every `agentbox ...` line of README.md's sh
// blocks, as a newcomer would type it, against a scratch workspace and a
// HOME of its own: it must exit as the line promises ("# exit N", "#
// deny" and the like) or, promising nothing, succeed. A run line's
// workload (after --) is replaced by /bin/true: what is checked is
// agentbox's part (flags, role, policy, workspace); the agent CLIs' lines
// are exercised end to end in agents_test.go. Placeholders (ID, RUN, a
// rotated log's file names) are given real values.
func TestDocsCommandLines(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("../..")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll(filepath.Join(dir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	// the repository's examples, as README names them from its root
	if err := os.Symlink(filepath.Join(repo, "examples", "network"), filepath.Join(dir, "examples", "network")); err != nil {
		t.Fatal(err)
	}
	if _, err := agentbox.Init(filepath.Join(dir, "rotws")); err != nil {
		t.Fatal(err)
	}
	// a stricter policy for `audit replay --policy stricter.yaml`
	if err := os.WriteFile("stricter.yaml", []byte("version: 1\nrules:\n  - {id: no-true, decision: deny, command: \"true\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// a rotated set for `audit verify a.jsonl.1 a.jsonl`: a run's log,
	// rotated away (renamed), then the next run's
	for _, rotate := range []bool{true, false} {
		if _, errOut, code := runCLI(t, "", "run", "--role", "developer", "--workspace", filepath.Join(dir, "rotws"),
			"--approve", "none", "--audit", "a.jsonl", "--", "/bin/true"); code != 0 {
			t.Fatalf("a run for the rotated log: exit %d %s", code, errOut)
		}
		if rotate {
			if err := os.Rename("a.jsonl", "a.jsonl.1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```")
	cmdLine := regexp.MustCompile(`^(?:cd (\S+) && )?agentbox (.*)$`)
	promise := regexp.MustCompile(`exit (\d+)`)
	agentCLI := map[string]bool{"claude": true, "codex": true, "gemini": true}
	ran := 0
	for _, b := range block.FindAllStringSubmatch(string(data), -1) {
		for _, l := range strings.Split(b[1], "\n") {
			m := cmdLine.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			text, comment, _ := strings.Cut(m[2], " #")
			args, err := shell.Fields(text, nil)
			if err != nil {
				t.Errorf("README line %q: %v", l, err)
				continue
			}
			if args[0] == "inbox" {
				continue // a server that runs until stopped: TestInboxInBrowser starts it
			}
			want := 0 // promising nothing: success
			if args[0] == "check" || args[0] == "explain" {
				// the decision is the exit status: the line must say it
				p := promise.FindStringSubmatch(comment)
				if p == nil {
					t.Errorf("README line `%s` does not say its decision (# ..., exit N)", strings.TrimSpace(l))
					continue
				}
				want, _ = strconv.Atoi(p[1])
			}
			if args[0] == "run" {
				i := slices.Index(args, "--")
				if i < 0 || agentCLI[args[i+1]] {
					continue // an agent's line: agents_test.go
				}
				args = append(args[:i+1], "/bin/true")
			}
			args = slices.DeleteFunc(args, func(s string) bool { return s == "--open" }) // no browser here
			for i, a := range args {
				switch a {
				case "ID":
					args[i] = "no-such-run" // stop of a run that is not there: exit 1, named
					want = 1
				case "RUN":
					args[i] = "r1"
					if args[0] == "undo" {
						// the latest run with checkpoints in ./ws (the run lines above)
						store, err := review.CheckpointStore(filepath.Join(dir, "ws"), "")
						runs, _ := review.RecordedRuns(store)
						if err != nil || len(runs) == 0 {
							t.Fatalf("README line `%s`: no run with checkpoints in ./ws (%v)", strings.TrimSpace(l), err)
						}
						args[i] = runs[len(runs)-1].Run
					}
				}
				args[i] = strings.Replace(args[i], "./ws", filepath.Join(dir, "ws"), 1)
			}
			switch {
			case args[0] == "check" || args[0] == "explain":
				args = slices.Insert(args, 1, "--no-user-policy")
			case args[0] == "policy" && args[1] == "show":
				args = slices.Insert(args, 2, "--no-user-policy")
			}
			func() {
				if m[1] != "" {
					t.Chdir(filepath.Join(dir, m[1]))
					defer t.Chdir(dir)
				}
				out, errOut, code := runCLI(t, "", args...)
				if code != want {
					t.Errorf("README line `%s`: exit %d, want %d\n%s%s", strings.TrimSpace(l), code, want, out, errOut)
				}
			}()
			if args[0] == "init" {
				os.MkdirAll(filepath.Join(dir, "ws", "target", "proj"), 0o755)
			}
			ran++
		}
	}
	if ran < 25 {
		t.Errorf("%d README command lines run; want every one (25 or more)", ran)
	}
}

// TestDocsKubernetesJob: the agent container's arguments in
// examples/kubernetes/job.yaml are a valid `agentbox run` (the workload
// after -- replaced by /bin/true) against a workspace made as its init
// container makes it. (The Job in a real pod is issue 36's.)
func TestDocsKubernetesJob(t *testing.T) {
	data, err := os.ReadFile("../../examples/kubernetes/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string   `yaml:"name"`
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &job); err != nil {
		t.Fatalf("job.yaml: %v", err)
	}
	cs := job.Spec.Template.Spec.Containers
	if len(cs) == 0 || len(cs[0].Args) == 0 || cs[0].Args[0] != "run" {
		t.Fatalf("job.yaml: no agent container running `agentbox run`: %+v", cs)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(cs[0].Args)
	i := slices.Index(args, "--")
	if i < 0 {
		t.Fatalf("job.yaml args have no --: %q", args)
	}
	args = append(args[:i+1], "/bin/true")
	// The audit key comes from a Secret mounted in the pod: a key of the
	// test's own stands in for it.
	key := filepath.Join(t.TempDir(), "audit.key")
	if _, err := audit.LoadKey(key, true); err != nil {
		t.Fatal(err)
	}
	for j, a := range args {
		args[j] = strings.Replace(a, "=/ws", "="+ws, 1)
		if v, ok := strings.CutPrefix(a, "--audit-key="); ok && strings.HasPrefix(v, "/keys/") {
			args[j] = "--audit-key=" + key
		}
	}
	if _, errOut, code := runCLI(t, "", args...); code != 0 {
		t.Errorf("job.yaml's `agentbox %s`: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
}

// TestDocsNameRealTests: every test, fuzz target or benchmark the docs
// name as holding a claim (`TestX`, `FuzzX`, `BenchmarkX`, in README.md and
// docs/*.md) exists in the repository, so a claim cannot outlive its test.
func TestDocsNameRealTests(t *testing.T) {
	root := "../.."
	defined := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil {
				defined[fd.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	name := regexp.MustCompile(`\b((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*)(?:/[^\s` + "`" + `,)]*)?`)
	named := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllStringSubmatch(string(data), -1) {
			named++
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no _test.go file defines", filepath.Base(doc), m[1])
			}
		}
	}
	if named < 50 {
		t.Errorf("only %d test names found in the docs; the pattern is broken", named)
	}
}
