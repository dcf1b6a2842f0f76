package agentbox_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedImports is the layering of docs/architecture.md: what each package
// may import of this module (non-test files). Anything else — an upward
// import, or a new package not listed — fails, so the picture in the docs
// and the code cannot drift apart. Plan -> judge -> mechanism: the
// mechanism (internal/sandbox, internal/supervise, internal/cgroup,
// internal/identity, internal/egress) knows no approver and, but for the
// proxy's verdict type, no policy.
var allowedImports = map[string][]string{
	// floor 0: leaves
	"internal/programs":        {},
	"internal/procfs":          {},
	"internal/checkpoint":      {},
	"internal/layer":           {"internal/gitsum", "internal/fault"},
	"internal/capfield":        {},
	"internal/redact":          {},
	"internal/jsonstr":         {},
	"internal/fault":           {},
	"internal/fakemodel":       {},
	"internal/testkit":         {},
	"internal/sandbox/helper":  {},
	"internal/shellquote":      {},
	"internal/userconf":        {}, // the user's own settings file (~/.config/agentbox/config.yaml)
	"test/vm":                  {}, // the guest-kernel matrix (make test-vm): drives QEMU
	"test/vm/vmprobe":          {}, // the boundary probe run inside each guest
	"test/k8s":                 {}, // the real single-node cluster (make test-k8s)
	"test/k8s/fakeapi":         {"internal/fakemodel"},
	"internal/gitsum":          {}, // .git internals summarised for changes, diff, apply
	"internal/gitwire":         {}, // a git push checked on the wire: receive-pack commands, pack, refusal
	"approval":                 {"internal/procfs", "internal/shellquote", "internal/capfield"},
	"scripts/gostart":          {},
	"scripts/onestart":         {},
	"scripts/auditreplay":      {"audit"}, // the audit benchmark's log of real events
	"examples/approval-client": {"approval"},
	"examples/kubernetes":      {}, // tests only: the Job against the Kubernetes API types
	"cmd/agentbox-helper":      {"internal/sandbox/helper"},
	"internal/registry":        {"internal/procfs", "internal/jsonstr"},
	"audit":                    {"internal/redact", "internal/jsonstr", "internal/shellquote", "internal/capfield"},
	"internal/command":         {"internal/programs", "internal/shellquote"},
	"internal/cgroup":          {"internal/procfs"},
	"internal/identity":        {"internal/programs"},
	"internal/gitleft":         {"internal/command"},
	"internal/yamlfields":      {}, // strict reading of decoded YAML nodes (the loader and the formats)
	// the decision core (it reads no file: it compiles what a loader
	// describes), and what writes it
	"policy":          {"internal/command", "internal/programs", "internal/jsonstr"},
	"policy/remember": {"policy", "policy/load", "policy/formats", "internal/programs", "internal/redact"},
	// reading policy files: agentbox's own format, roles, agent profiles,
	// approvers, discovery, and the format readers' registry; it imports
	// the core, never a format or presentation, and the core never
	// imports it
	"policy/load": {"policy", "internal/command", "internal/programs", "internal/yamlfields"},
	// the foreign formats of their own packages: the core's types, and the
	// loader's registry they register with; neither imports them
	"internal/policyfmt/claude": {"policy", "policy/load", "internal/command", "internal/yamlfields"},
	"internal/policyfmt/codex":  {"policy", "policy/load", "internal/command"},
	// Chorus, Codelia and Forge: native-shaped rules, described as
	// policy.RuleSpec and compiled and matched by the core (policy.RuleSet)
	"internal/policyfmt/codelia": {"policy", "policy/load", "internal/policyfmt/spec", "internal/yamlfields"},
	"internal/policyfmt/forge":   {"policy", "policy/load", "internal/policyfmt/spec", "internal/yamlfields"},
	"internal/policyfmt/chorus":  {"policy", "policy/load", "internal/policyfmt/spec", "internal/yamlfields"},
	// what those three share: a file's errors and references, specs with
	// their compiled set
	"internal/policyfmt/spec": {"policy", "internal/yamlfields"},
	// lint of agentbox's own rules, over the core's exported view
	"internal/policylint": {"policy", "policy/load"},
	// the text of policy show and explain (the engine builds the data)
	"internal/policytext": {"policy"},
	// links the format readers into a program (its import is its effect)
	"policy/formats":     {"internal/policyfmt/chorus", "internal/policyfmt/claude", "internal/policyfmt/codelia", "internal/policyfmt/codex", "internal/policyfmt/forge"},
	"internal/mcpconfig": {"policy"}, // the MCP servers an agent profile's files start (agentbox agents)
	// the mechanism
	"internal/boundary":  {"policy"},
	"internal/supervise": {"internal/sandbox/helper", "internal/identity", "internal/fault", "internal/procfs"},
	"internal/sandbox":   {"internal/sandbox/helper", "internal/boundary", "internal/cgroup", "internal/fault", "internal/procfs"},
	"internal/egress":    {"policy", "audit", "internal/fault", "internal/procfs", "internal/gitwire", "internal/capfield"},
	// the judge: every question, one ask path
	"internal/judge": {"policy", "internal/command", "policy/remember", "approval", "audit", "internal/boundary",
		"internal/sandbox", "internal/supervise", "internal/identity", "internal/egress", "internal/procfs", "internal/redact", "internal/capfield"},
	// the plan: a run prepared once
	"internal/plan": {"policy", "policy/load", "policy/formats", "internal/policytext", "internal/command", "audit", "internal/boundary", "internal/judge", "internal/sandbox", "internal/identity", "internal/checkpoint", "internal/egress", "internal/layer", "internal/userconf", "internal/shellquote"},
	"audit/replay":  {"audit", "policy", "policy/load", "internal/plan", "internal/programs", "internal/boundary"},
	// the record beyond one machine: OTLP export, verification across hosts
	"audit/export": {"audit"},
	"audit/fleet":  {"audit"},
	// the exporter's own binary (agentbox links no OpenTelemetry code), and
	// the real collector its tests run
	"cmd/agentbox-export":    {"audit", "audit/export", "internal/userconf"},
	"internal/collectortest": {"audit/fleet"},
	// the approval inbox: every run's asks on one page
	"inbox": {"approval", "audit", "policy/remember"},
	// a finished run's record by its id: changes, diff, apply, undo
	"internal/review": {"audit", "policy", "internal/boundary", "internal/checkpoint", "internal/gitleft", "internal/gitsum", "internal/layer", "internal/shellquote"},
	// the run lifecycle and the CLI
	".": {"internal/gitleft", "internal/plan", "internal/judge", "internal/sandbox", "internal/supervise", "internal/identity", "internal/boundary",
		"internal/egress", "internal/registry", "policy", "policy/remember", "audit", "approval", "internal/checkpoint", "internal/redact", "internal/capfield", "internal/shellquote", "internal/layer", "internal/gitsum", "internal/review"},
	"cmd/agentbox":          {".", "internal/policylint", "internal/policytext", "internal/mcpconfig", "internal/gitleft", "internal/plan", "internal/judge", "internal/boundary", "policy", "policy/load", "internal/command", "audit", "audit/replay", "audit/fleet", "approval", "inbox", "internal/shellquote", "internal/cgroup", "internal/userconf", "internal/sandbox", "internal/gitsum", "internal/review"},
	"examples/orchestrator": {".", "approval", "audit"},
}

func TestLayering(t *testing.T) {
	const mod = "github.com/agentbox/agentbox"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, mod+"/...").Output()
	if err != nil {
		t.Skipf("reason: go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, ":")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		if rel == "" {
			rel = "."
		}
		allowed, ok := allowedImports[rel]
		if !ok {
			t.Errorf("package %s is not in the layering (arch_test.go, docs/architecture.md)", rel)
			continue
		}
		for _, imp := range strings.Fields(imps) {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			r := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
			if r == "" {
				r = "."
			}
			if !slices.Contains(allowed, r) {
				t.Errorf("%s imports %s: not allowed by the layering", rel, r)
			}
		}
	}
}

// TestOneJudgeOnePlan holds the two seams the layering cannot see: only the
// judge puts a request to an approver (one ask path for exec, network and
// tool calls), and only internal/plan builds policy.LoadOptions (run,
// check, hook and replay load the same layers; the loader's load.Files,
// the --policy files alone for validate and lint, is the one other).
func TestOneJudgeOnePlan(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				// The approval package implements approvers; the judge asks;
				// the run's counting decorator forwards the judge's question;
				// the inbox relays an ask a run's judge sent it to its
				// webhooks (inbox/webhook.go), an answer like the page's.
				if ok && sel.Sel.Name == "Approve" && dir != "approval" && dir != "internal/judge" && !(dir == "." && isForwarder(f, n)) &&
					!(path == "inbox/webhook.go") &&
					!strings.HasPrefix(dir, "examples") {
					t.Errorf("%s: calls Approve; only internal/judge asks an approver", fset.Position(n.Pos()))
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "LoadOptions" && dir != "internal/plan" && path != "policy/load/load.go" {
					t.Errorf("%s: builds policy.LoadOptions; use plan.Load", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isForwarder reports whether call sits in a method named Approve (a
// decorator passing the judge's request on).
func isForwarder(f *ast.File, call *ast.CallExpr) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "Approve" && fd.Pos() <= call.Pos() && call.End() <= fd.End() {
			return true
		}
	}
	return false
}

// longFuncs are the functions still over maxFuncLines, each to be split
// (issue 50); the list may only shrink: a function that got short, or a
// new long one, fails TestFunctionLength.
var longFuncs = map[string]bool{}

const maxFuncLines = 150

// TestFunctionLength: no function of the module's code (tests aside) is
// longer than maxFuncLines, but those longFuncs still names; and no
// comment cites documents outside the repository (the founders' seed
// documents and notes), which a reader of the code cannot open.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if txt := strings.ToLower(cg.Text()); strings.Contains(txt, "seed 0") || strings.Contains(txt, "shared/notes") || strings.Contains(txt, "shared/seeds") {
				t.Errorf("%s: a comment cites a document outside the repository", fset.Position(cg.Pos()))
			}
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := filepath.ToSlash(path) + ":" + fd.Name.Name
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line
			switch {
			case n > maxFuncLines && !longFuncs[key]:
				t.Errorf("%s: %d lines, over %d: split it by job", key, n, maxFuncLines)
			case n > maxFuncLines:
				seen[key] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range longFuncs {
		if !seen[k] {
			t.Errorf("%s is no longer over %d lines: take it off longFuncs", k, maxFuncLines)
		}
	}
}

// maxPublicNames bounds the public API: the top-level exported names of
// the packages a user of the module imports (publicPackage), counted as
// `go doc -short` lists them, one line each: a function, a type, or a
// const or var block (issue 50: ≤ 300, from 469). A new name means an old
// one goes, or moves under internal/.
const maxPublicNames = 300

// publicPackage reports whether dir (slash-separated, relative to the
// module root) holds a package users import: not under internal/ or
// cmd/, nor the test harnesses (test/), examples or scripts, which are
// commands or tests.
func publicPackage(dir string) bool {
	first, _, _ := strings.Cut(dir, "/")
	switch first {
	case "internal", "cmd", "test", "examples", "scripts", "testdata":
		return false
	}
	return !strings.HasPrefix(first, ".") || dir == "."
}

// TestPublicAPISize counts the exported names of every public package
// (non-test files of non-main packages) and fails over maxPublicNames,
// naming the count per package.
func TestPublicAPISize(t *testing.T) {
	fset := token.NewFileSet()
	perPkg := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || !publicPackage(filepath.ToSlash(path))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		perPkg[dir] += exportedNames(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	var counts []string
	for _, dir := range slices.Sorted(maps.Keys(perPkg)) {
		total += perPkg[dir]
		counts = append(counts, dir+" "+strconv.Itoa(perPkg[dir]))
	}
	if perPkg["."] == 0 || perPkg["audit"] == 0 {
		t.Fatalf("counted no names of the root or audit package: the walk is broken (%v)", counts)
	}
	if total > maxPublicNames {
		t.Errorf("%d exported names outside internal/ and cmd/, over %d (%s): unexport what no user needs, or move it under internal/",
			total, maxPublicNames, strings.Join(counts, ", "))
	}
}

// exportedNames counts f's top-level exported names as go doc -short
// lists them: each function (methods are their type's), each type, and
// each const or var declaration that declares an exported name (a block
// of related constants is one line there).
func exportedNames(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil && decl.Name.IsExported() {
				n++
			}
		case *ast.GenDecl:
			values := false
			for _, s := range decl.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n++
					}
				case *ast.ValueSpec:
					values = values || slices.ContainsFunc(s.Names, (*ast.Ident).IsExported)
				}
			}
			if values {
				n++
			}
		}
	}
	return n
}

// maxRootFiles bounds the module root's Go files (tests aside): the
// root package is the run's lifecycle (doc, options, run, runs, ...);
// anything else has a package of its own.
const maxRootFiles = 8

func TestRootFiles(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	if len(files) == 0 {
		t.Fatal("no Go files at the module root: run the test from it")
	}
	if len(files) > maxRootFiles {
		t.Errorf("%d Go files at the module root, over %d: %s", len(files), maxRootFiles, strings.Join(files, " "))
	}
}

// TestPackageDocs: every package of the module has a doc comment that
// says what it owns ("Package NAME owns ..." or, for a program, "Command
// NAME ..."), in any of its files (a test harness's is in its tests).
// Modules of their own inside this one (test/otelcol) are theirs.
func TestPackageDocs(t *testing.T) {
	fset := token.NewFileSet()
	docs := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if _, ok := docs[dir]; !ok {
			docs[dir] = ""
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			docs[dir] = f.Doc.Text()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := docs["internal/review"]; !ok {
		t.Fatal("internal/review not walked: run the test from the module root")
	}
	for _, dir := range slices.Sorted(maps.Keys(docs)) {
		words := strings.Fields(docs[dir])
		if len(words) < 4 || words[0] != "Package" && words[0] != "Command" {
			t.Errorf("package %s has no doc comment saying what it owns (a doc.go: \"Package NAME owns ...\"): %q", dir, docs[dir])
		}
	}
}
