package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
)

// corpusModule is one line of testdata/corpus/modules.txt.
type corpusModule struct {
	path, version string
	quick         bool
	what          string
}

func corpusModules(t *testing.T) []corpusModule {
	t.Helper()
	b, err := os.ReadFile("testdata/corpus/modules.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusModule
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, corpusModule{path: f[0], version: f[1], quick: f[2] == "quick", what: strings.Join(f[3:], " ")})
	}
	return out
}

// corpusRefusals reads testdata/corpus/refusals.txt: MODULE KIND KEY
// REASON..., KIND "test" (a test that passes bare and fails inside) or
// "action" (a refused action, matched as a prefix).
func corpusRefusals(t *testing.T) map[string][][2]string {
	t.Helper()
	b, err := os.ReadFile("testdata/corpus/refusals.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]string{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || strings.HasPrefix(l, "#") {
			continue
		}
		out[f[0]] = append(out[f[0]], [2]string{f[1], f[2]})
	}
	return out
}

// goTestResults parses `go test -json` output: package/test -> last action.
func goTestResults(out string) map[string]string {
	res := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct{ Action, Package, Test string }
		if json.Unmarshal(line, &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			res[ev.Package+"/"+ev.Test] = ev.Action
		}
	}
	return res
}

var undoID = regexp.MustCompile(`agentbox undo ([0-9a-f]{12})`)

// TestRealProjectCorpus: real projects' own test suites, each run bare and
// under `agentbox run --role developer --approve none` in the same test:
// every test that passes bare passes inside, unless testdata/corpus/
// refusals.txt lists it with its reason; every action the run refused is
// listed there too. The table only shrinks: a new refusal fails the test.
// The modules come from the host's module cache (.ci/run downloads them);
// nothing here uses the network. Projects in other languages
// (projects.txt) come prepared by scripts/corpus-fetch.sh. `make test`
// runs the quick ones; AGENTBOX_CORPUS=full all (CI does; a suite whose
// tests depend on timing is listed as flaky, see docs/corpus.md).
func TestRealProjectCorpus(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	testkit.NeedProg(t, "go")
	w := newAgentWorld(t)
	full := os.Getenv("AGENTBOX_CORPUS") == "full"
	refusals := corpusRefusals(t)
	// The caller's module cache (the world's HOME is a new one): bare, the
	// go command reads it; inside, the sandbox gets it read-only.
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("reason: go env GOMODCACHE: %v", err)
	}
	// The caller's build cache too, as a user's own go test finds it (the
	// world's HOME would start a cold one: the standard library rebuilt
	// before the first suite); inside, the run layers it copy-on-write
	// like any host cache, so nothing the sandbox builds reaches it.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Skipf("reason: go env GOCACHE: %v", err)
	}
	base := w.env("GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOMODCACHE="+strings.TrimSpace(string(modcache)),
		"GOCACHE="+strings.TrimSpace(string(gocache)))
	ran := 0
	var report []string
	// judge compares one suite's results bare and inside against the
	// refusals table and adds its row to the report.
	judge := func(name, version, what string, bare, inside map[string]string, bareOut, inOut string, bareT, inT time.Duration) {
		used := map[int]bool{}
		listed := func(kind, key string) bool {
			for i, r := range refusals[name] {
				pfx, wild := strings.CutSuffix(r[1], "*")
				k := r[0]
				if k == "flaky" {
					k = "test" // a timing-dependent test: listed, never required to fail
				}
				if k == kind && (r[1] == key || (kind == "action" || wild) && strings.HasPrefix(key, pfx)) {
					used[i] = true
					return true
				}
			}
			return false
		}
		passed, failedInside := 0, 0
		for test, res := range bare {
			if res != "pass" {
				continue
			}
			passed++
			if inside[test] != "pass" {
				failedInside++
				if os.Getenv("AGENTBOX_CORPUS_DUMP") != "" {
					t.Logf("FAILED-INSIDE %s %s", name, test)
				}
				if !listed("test", test) {
					t.Errorf("%s: %s passes bare and is %q inside, and refusals.txt does not list it", name, test, inside[test])
				}
			}
		}
		if passed == 0 {
			t.Errorf("%s: no test passed bare:\n%s", name, clipResult(bareOut))
		}
		// Every refusal of the run is listed.
		refused := 0
		if id := undoID.FindStringSubmatch(inOut); id != nil {
			evs, _ := w.events(t)
			for _, e := range evs {
				if e.Run != id[1] || e.Decision == "" || e.Decision == audit.DecisionAllow {
					continue
				}
				refused++
				if !listed("action", e.Action) {
					t.Errorf("%s: the run refused %s (%s: %s), and refusals.txt does not list it", name, e.Action, e.Decision, e.Reason)
				}
			}
		} else {
			t.Errorf("%s: no run id in the output:\n%s", name, clipResult(inOut))
		}
		// The table only shrinks: an entry nothing matched is stale.
		for i, r := range refusals[name] {
			if !used[i] && r[0] != "flaky" {
				t.Errorf("%s: refusals.txt lists %s %s, which no longer happens: remove it", name, r[0], r[1])
			}
		}
		report = append(report, fmt.Sprintf("| %s %s | %s | %d | %d | %d | %.1f s | %.1f s |", name, version, what, passed, failedInside, refused,
			bareT.Seconds(), inT.Seconds()))
	}
	for _, m := range corpusModules(t) {
		if !m.quick && !full {
			continue
		}
		if only := os.Getenv("AGENTBOX_CORPUS_ONLY"); only != "" && !strings.Contains(m.path, only) {
			continue
		}
		out, err := exec.Command("go", "mod", "download", "-json", m.path+"@"+m.version).Output()
		var dl struct{ Dir, Error string }
		if err != nil || json.Unmarshal(out, &dl) != nil || dl.Dir == "" {
			t.Logf("%s@%s: not in the module cache (go mod download fills it; .ci/run does): skipped", m.path, m.version)
			continue
		}
		name := strings.NewReplacer("/", "_", "@", "_").Replace(m.path)
		dir := filepath.Join(w.ws, "target", name)
		if out, err := exec.Command("cp", "-r", dl.Dir, dir).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", m.path, err, out)
		}
		exec.Command("chmod", "-R", "u+w", dir).Run()
		goTest := func(argv ...string) (string, time.Duration) { return timedRun(dir, base, argv...) }
		bareOut, bareT := goTest("go", "test", "-json", "-count=1", "./...")
		inOut, inT := goTest(filepath.Join(w.bin, "agentbox"), "run", "--role", "developer", "--approve", "none", "--workspace", w.ws,
			"--", "go", "test", "-json", "-count=1", "./...")
		ran++
		judge(m.path, m.version, m.what, goTestResults(bareOut), goTestResults(inOut), bareOut, inOut, bareT, inT)
	}
	ran += corpusProjects(t, &w, base, full, judge)
	if ran == 0 {
		t.Skip("reason: no corpus module is in the module cache (go mod download, as .ci/run does)")
	}
	sort.Strings(report)
	t.Logf("| module | exercises | tests passing bare | of those failing inside (listed) | refusals (listed) | bare | inside |\n|---|---|---|---|---|---|---|\n%s", strings.Join(report, "\n"))
}

// corpusProject is one line of testdata/corpus/projects.txt: a project
// in another language, prepared by scripts/corpus-fetch.sh (.ci/run runs
// it) into the corpus cache.
type corpusProject struct {
	kind, name, version string
	quick               bool
	what                string
}

// corpusCache is where scripts/corpus-fetch.sh prepares the projects.
func corpusCache() string {
	if d := os.Getenv("AGENTBOX_CORPUS_CACHE"); filepath.IsAbs(d) {
		return d
	}
	return "/var/cache/agentbox-corpus"
}

// projectCommands are how each kind builds and runs its own tests, and
// how its results are read.
var projectCommands = map[string]struct {
	argv    []string
	results func(string) map[string]string
}{
	// a Debian source package: its upstream's configure, make, make check
	// (automake's test harness prints PASS:/FAIL: lines)
	"debian": {[]string{"/bin/sh", "-c", "./configure -q >/dev/null && make -s >/dev/null && make check"}, automakeResults},
	// an npm package whose tarball carries its tests, run by tape (TAP)
	"npm": {[]string{"node_modules/.bin/tape", "test/**/*.js"}, tapResults},
}

var (
	automakeLine = regexp.MustCompile(`(?m)^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR): (\S+)`)
	tapLine      = regexp.MustCompile(`(?m)^(ok|not ok) (\d+) ?(.*)$`)
)

func automakeResults(out string) map[string]string {
	res := map[string]string{}
	for _, m := range automakeLine.FindAllStringSubmatch(out, -1) {
		res[m[2]] = map[string]string{"PASS": "pass", "XFAIL": "pass", "SKIP": "skip"}[m[1]]
		if res[m[2]] == "" {
			res[m[2]] = "fail"
		}
	}
	return res
}

func tapResults(out string) map[string]string {
	res := map[string]string{}
	for _, m := range tapLine.FindAllStringSubmatch(out, -1) {
		r := "pass"
		if m[1] == "not ok" {
			r = "fail"
		}
		res[m[2]+" "+strings.TrimSpace(m[3])] = r
	}
	return res
}

// corpusProjects runs the prepared non-Go projects bare (in a copy outside
// the workspace) and inside (a copy in target/), judging each with judge;
// it returns how many ran.
func corpusProjects(t *testing.T, w *agentWorld, env []string, full bool,
	judge func(name, version, what string, bare, inside map[string]string, bareOut, inOut string, bareT, inT time.Duration)) int {
	b, err := os.ReadFile("testdata/corpus/projects.txt")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || strings.HasPrefix(l, "#") {
			continue
		}
		p := corpusProject{kind: f[0], name: f[1], version: f[2], quick: f[3] == "quick", what: strings.Join(f[4:], " ")}
		if !p.quick && !full {
			continue
		}
		if only := os.Getenv("AGENTBOX_CORPUS_ONLY"); only != "" && !strings.Contains(p.name, only) {
			continue
		}
		how, ok := projectCommands[p.kind]
		if !ok {
			t.Fatalf("projects.txt: unknown kind %q", p.kind)
		}
		src := filepath.Join(corpusCache(), p.name+"-"+p.version)
		if _, err := os.Stat(src); err != nil {
			t.Logf("%s %s: not prepared in %s (scripts/corpus-fetch.sh does; .ci/run runs it): skipped", p.name, p.version, corpusCache())
			continue
		}
		run := func(dir string, argv ...string) (string, time.Duration) {
			// cp -a keeps the timestamps make compares
			if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
				t.Fatalf("copy %s: %v %s", p.name, err, out)
			}
			return timedRun(dir, env, argv...)
		}
		bareOut, bareT := run(filepath.Join(t.TempDir(), p.name), how.argv...)
		inOut, inT := run(filepath.Join(w.ws, "target", p.name), append([]string{filepath.Join(w.bin, "agentbox"), "run", "--role", "developer",
			"--approve", "none", "--workspace", w.ws, "--"}, how.argv...)...)
		ran++
		judge(p.name, p.version, p.what, how.results(bareOut), how.results(inOut), bareOut, inOut, bareT, inT)
	}
	return ran
}

// timedRun runs argv in dir with env, for at most 8 minutes, and returns
// its output and how long it took (a corpus project's build or tests,
// bare or in a run).
func timedRun(dir string, env []string, argv ...string) (string, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	t0 := time.Now()
	out, _ := cmd.CombinedOutput()
	return string(out), time.Since(t0)
}
