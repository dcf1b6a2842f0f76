package policy

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// The built-in role templates: investigator, developer, documenter, tester
// (docs/policy.md).
func TestRoleTemplates(t *testing.T) {
	for _, c := range []struct {
		role string
		fs   FSGrants
	}{
		{"investigator", FSGrants{Context: AccessRead, Target: AccessRead, Feedback: AccessReadWrite, OwnAgent: AccessAll, OtherAgents: AccessRead}},
		{"developer", FSGrants{Context: AccessRead, Target: AccessAll, Feedback: AccessReadWrite, OwnAgent: AccessAll, OtherAgents: AccessRead,
			ReadOnly: []string{"target/**/.git/hooks", "target/**/.git/config"}}},
		{"documenter", FSGrants{Context: AccessRead, Target: AccessReadWrite, Feedback: AccessReadWrite, OwnAgent: AccessAll, OtherAgents: AccessRead,
			ReadOnly: []string{"target/**/.git/hooks", "target/**/.git/config"}}},
		{"tester", FSGrants{Context: AccessRead, Target: AccessReadExec, Feedback: AccessReadWrite, OwnAgent: AccessAll, OtherAgents: AccessRead}},
	} {
		ri := engineWith(t, c.role).Role()
		got, want := ri.FS, c.fs
		if got.Context != want.Context || got.Target != want.Target || got.Feedback != want.Feedback || got.OwnAgent != want.OwnAgent ||
			got.OtherAgents != want.OtherAgents || strings.Join(got.ReadOnly, ",") != strings.Join(want.ReadOnly, ",") {
			t.Errorf("%s FS = %+v, want %+v", c.role, got, want)
		}
		if ri.Description == "" || ri.Default != Ask {
			t.Errorf("%s: description %q default %s", c.role, ri.Description, ri.Default)
		}
		if len(ri.Network.TCPConnect)+len(ri.Network.TCPBind) != 0 {
			t.Errorf("%s: network %+v, want none", c.role, ri.Network)
		}
		if ri.Limits.Pids == 0 || ri.Limits.NoFile == 0 || ri.Limits.ApprovalWait != 120*time.Second {
			t.Errorf("%s: limits %+v", c.role, ri.Limits)
		}
		if !strings.Contains(strings.Join(ri.Env, " "), "TERM") {
			t.Errorf("%s: env %v lacks TERM", c.role, ri.Env)
		}
	}
	dev := engineWith(t, "developer").Role()
	if dev.Limits.Pids != 4096 || dev.Limits.NoFile != 4096 || dev.Limits.MaxFileSize != 1<<30 {
		t.Errorf("developer limits = %+v", dev.Limits)
	}
	if !dev.Git.CommitMessageRequired || len(dev.Deletions.Forbidden) == 0 || len(dev.Deletions.AutoApprove) == 0 {
		t.Errorf("developer git/deletions = %+v %+v", dev.Git, dev.Deletions)
	}
}

func TestDeveloperRole(t *testing.T) {
	ws := t.TempDir()
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	// git: the developer role's permissions
	for _, sub := range []string{"status", "diff", "log", "show", "blame", "add", "commit", "stash", "branch", "checkout"} {
		checkCases(t, e, []decCase{{"tool:git:" + sub, Allow}})
	}
	checkCases(t, e, []decCase{
		{"tool:git:commit -m fix", Allow},
		{"tool:git:add -A", Allow},
		{"tool:git:push origin main", Deny},
		{"tool:git:push", Deny},
		{"tool:git:pull", Deny},
		{"tool:git:merge feature", Deny},
		{"tool:git:rebase -i HEAD~3", Deny},
		{"tool:git:reset --hard HEAD~1", Deny},
		{"tool:git:frobnicate", Ask}, // unknown subcommand (alias?): role default
		{"tool:exec:sudo ls", Deny},
		{"tool:exec:su root", Deny},
		{"tool:exec:ssh host", Deny},
		{"tool:exec:scp a host:b", Deny},
		{"tool:exec:rm -rf build", Ask}, // deletions ask
		{"tool:exec:rm a.txt", Ask},
		{"tool:delete:target/src/a.go", Allow}, // e.g. mv's source; rm itself asks
		{"tool:delete:src/a.go", Ask},          // relative to an unknown directory
		{"tool:delete:/etc/passwd", Ask},
		{"tool:delete:" + ws + "/target/a.tmp", Allow},
		{"tool:delete:" + ws + "/context/a", Deny},
		{"tool:delete:target/.git/config", Deny},
		{"tool:exec:curl https://example.com", Ask},
		{"tool:exec:chmod +x run.sh", Allow},
		{"tool:exec:chmod 777 run.sh", Ask},
		{"tool:exec:chmod -R o+w .", Ask},
		{"tool:exec:npm install -g left-pad", Deny},
		{"tool:self_edit:permissions:open", Ask}, // a role change: asked, then gated by the approvers' grants
		{"tool:self_edit:permissions:agentbox.yaml", Deny},
		{"tool:self_edit:system_prompt", Ask},
		// file tools
		{"tool:view:context/spec.md", Allow},
		{"tool:view:/etc/shadow", Ask}, // outside the workspace
		{"tool:view:../../etc/shadow", Ask},
		{"tool:create_file:target/src/main.go", Allow},
		{"tool:str_replace:target/src/main.go", Allow},
		{"tool:create_file:feedback/status.json", Allow},
		{"tool:create_file:context/spec.md", Deny},
		{"tool:create_file:target/.git/hooks/pre-commit", Deny},
		{"tool:create_file:target/sub/.git/config", Deny},
		{"tool:create_file:../escape", Ask},
	})
	// ordinary development work must be allowed
	for _, argv := range []string{
		"ls -la", "cat README.md", "grep -rn TODO src", "rg foo", "find . -name *.go", "sed -n 1,10p a.txt",
		"make", "make -j4 all", "go build ./...", "go test ./...", "go vet ./...", "gcc -O2 -o a a.c", "cc a.c",
		"npm test", "npm run build", "npm ci", "cargo build --release", "cargo test", "pytest -q", "python3 some_script.py",
		"node script.js", "mkdir -p out", "touch a", "cp a b", "mv a b", "echo hi", "printf %s x", "head -5 a", "tail -f log",
		"wc -l a", "sort a", "diff a b", "tar xzf a.tgz", "jq .x a.json", "pwd", "date", "which go",
		// git as developers and agents use it (issue 10): config reads and
		// plain sets, read-only and local subcommands, hardening options
		"git config user.name", "git config --get user.email", "git config --global user.name Dev",
		"git config core.autocrlf false", "git remote -v", "git remote", "git remote get-url origin",
		"git worktree list", "git worktree add ../wt", "git clean -n", "git clean -nd", "git clean --dry-run",
		"git fetch origin", "git ls-remote origin", "git clone https://example.com/r.git",
		"git -c core.hooksPath=/dev/null -c core.fsmonitor= ls-files", "git -c core.fsmonitor=false status",
		"git -c core.pager=cat log -n 1", "git -c credential.helper= fetch",
	} {
		if r := e.Decide(Query{Argv: strings.Fields(argv), ExecContext: ExecContext{Cwd: ws + "/target/src"}}); r.Decision != Allow {
			t.Errorf("DecideExec(%q) = %s: %s", argv, r.Decision, r.Reason)
		}
	}
	// what still asks: program-running config, deleting forms
	for _, argv := range []string{
		"git config core.pager less", "git config alias.x !sh", "git -c core.hooksPath=/tmp/h status",
		"git -c core.fsmonitor=./fsm status", "git -c core.pager=less log", "git clean -fd", "git clean -f -e -n",
		"git worktree remove ../wt", "git config --edit",
	} {
		if r := e.Decide(Query{Argv: strings.Fields(argv), ExecContext: ExecContext{Cwd: ws + "/target/src"}}); r.Decision != Ask {
			t.Errorf("DecideExec(%q) = %s, want ask: %s", argv, r.Decision, r.Reason)
		}
	}
	for _, line := range []string{"go build ./... && go test ./... | tee out.log", "echo done > ../feedback/status.txt", "cat a | sort | uniq -c > counts.txt"} {
		if r := e.Decide(Query{Shell: line, ExecContext: ExecContext{Cwd: ws + "/target"}}); r.Decision != Allow {
			t.Errorf("DecideShellIn(%q) = %s: %s", line, r.Decision, r.Reason)
		}
	}
	for line, want := range map[string]Decision{
		"echo x > /etc/cron.d/x":      Ask,
		"echo x > ../context/spec.md": Deny,
		"rm -rf ../.git":              Deny,
		"mv a.go b.go":                Allow,
		"rm a.go":                     Ask,
	} {
		if r := e.Decide(Query{Shell: line, ExecContext: ExecContext{Cwd: ws + "/target"}}); r.Decision != want {
			t.Errorf("DecideShellIn(%q) = %s, want %s: %s", line, r.Decision, want, r.Reason)
		}
	}
}

func TestInvestigatorTesterDocumenter(t *testing.T) {
	inv := engineWith(t, "investigator")
	checkCases(t, inv, []decCase{
		{"tool:exec:ls", Allow}, {"tool:exec:rg foo", Allow}, {"tool:git:log -5", Allow}, {"tool:git:blame a.go", Allow},
		{"tool:git:commit -m x", Deny}, {"tool:git:add a", Deny}, {"tool:git:push", Deny},
		{"tool:create_file:target/a.go", Deny}, {"tool:create_file:feedback/report.md", Allow}, {"tool:view:target/a.go", Allow},
		{"tool:exec:make", Ask}, {"tool:exec:sudo id", Deny},
	})
	tst := engineWith(t, "tester")
	checkCases(t, tst, []decCase{
		{"tool:exec:go test ./...", Allow}, {"tool:exec:pytest -x", Allow}, {"tool:exec:python3 -m pytest tests", Allow},
		{"tool:exec:npm test", Allow}, {"tool:exec:npm run test:unit", Allow}, {"tool:exec:cargo test", Allow}, {"tool:exec:make test", Allow},
		{"tool:exec:make install", Ask}, {"tool:git:commit -m x", Deny}, {"tool:git:status", Allow},
		{"tool:create_file:target/a_test.go", Ask}, {"tool:create_file:feedback/results.json", Allow}, {"tool:exec:rm x", Ask},
	})
	doc := engineWith(t, "documenter")
	checkCases(t, doc, []decCase{
		{"tool:create_file:target/README.md", Allow}, {"tool:str_replace:target/docs/guide/intro.html", Allow},
		{"tool:create_file:target/NOTES.txt", Allow}, {"tool:str_replace:target/sub/CHANGES.md", Allow},
		{"tool:create_file:target/src/main.go", Ask}, {"tool:str_replace:target/Makefile", Ask},
		{"tool:exec:rm target/old.md", Ask}, {"tool:exec:mv a.md b.md", Ask}, {"tool:delete:target/old.md", Ask},
		{"tool:git:commit -m docs", Allow}, {"tool:git:push", Deny}, {"tool:create_file:target/.git/hooks/x.md", Deny},
	})
}

func TestBuiltinList(t *testing.T) {
	got := strings.Join(builtinRoleNames(), ",")
	if got != "developer,documenter,investigator,locked,open,standard,tester" {
		t.Fatalf("builtinRoleNames() = %s", got)
	}
	rs, err := Roles(LoadOptions{NoUserFile: true})
	if err != nil || len(rs) != 7 {
		t.Fatalf("Roles = %v, %v", rs, err)
	}
	for _, r := range rs {
		if r.Description == "" {
			t.Errorf("role %s has no description", r.Name)
		}
	}
}

// Rule ids name the role, as in the README's example "developer/git.push".
func TestRuleIDs(t *testing.T) {
	r := engineWith(t, "developer").Decide(Query{Action: "tool:git:push origin main"})
	if r.Rule == nil || r.Rule.ID != "developer/git.push" || r.Rule.Layer != LayerRole || !strings.HasPrefix(r.Rule.Source, "builtin:") {
		t.Fatalf("rule = %+v", r.Rule)
	}
}

func TestExtends(t *testing.T) {
	e := engineWith(t, "reviewer", `version: 1
roles:
  reviewer:
    extends: developer
    description: reviews code
    default: deny
    filesystem: {target: ro, readonly: ["target/secret"]}
    network: {tcp_connect: [443]}
    limits: {memory: 2G, cpus: 1.5, pids: 512, max_file_size: 100M, nofile: 1024, timeout: 30m, approval_timeout: 2m}
    env: [GOPATH]
    git: {max_commits: 10, commit_message_required: true}
    deletions: {forbidden: [package.json]}
    rules:
      - {id: no-make, decision: deny, command: make}
      - {decision: allow, command: git push, description: "cannot beat the base deny"}
`)
	ri := e.Role()
	if ri.Name != "reviewer" || ri.Extends != "developer" || ri.Default != Deny || ri.Description != "reviews code" {
		t.Errorf("role = %+v", ri)
	}
	if ri.FS.Target != AccessRead || ri.FS.Context != AccessRead || ri.FS.Feedback != AccessReadWrite ||
		!strings.Contains(strings.Join(ri.FS.ReadOnly, " "), "target/secret") || !strings.Contains(strings.Join(ri.FS.ReadOnly, " "), ".git/hooks") {
		t.Errorf("fs = %+v", ri.FS)
	}
	l := ri.Limits
	if l.MemoryBytes != 2<<30 || l.CPUs != 1.5 || l.Pids != 512 || l.MaxFileSize != 100<<20 || l.NoFile != 1024 || l.Timeout != 30*time.Minute || l.ApprovalWait != 2*time.Minute {
		t.Errorf("limits = %+v", l)
	}
	if len(ri.Network.TCPConnect) != 1 || ri.Network.TCPConnect[0] != 443 || ri.Git.MaxCommits != 10 {
		t.Errorf("network/git = %+v %+v", ri.Network, ri.Git)
	}
	if !strings.Contains(strings.Join(ri.Env, " "), "GOPATH") || !strings.Contains(strings.Join(ri.Env, " "), "GOFLAGS") {
		t.Errorf("env = %v", ri.Env)
	}
	checkCases(t, e, []decCase{
		{"tool:exec:make", Deny}, {"tool:exec:ls", Allow}, {"tool:git:push origin x", Deny},
		{"tool:delete:target/package.json", Deny}, {"tool:exec:frobnicate", Deny},
	})
	if r := e.Decide(Query{Action: "tool:exec:make"}); r.Rule == nil || r.Rule.ID != "reviewer/no-make" {
		t.Errorf("rule = %+v", r.Rule)
	}
}

// TestBuiltinRefusalsExplained: every ask and deny rule of the developer
// and tester roles says why in a description the user reads in the denial.
func TestBuiltinRefusalsExplained(t *testing.T) {
	for _, role := range []string{"developer", "tester"} {
		e, err := Load(LoadOptions{Role: role, NoUserFile: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range e.rules {
			if r.dec != Allow && r.ref.Layer == LayerRole && strings.TrimSpace(r.desc) == "" {
				t.Errorf("%s: %s rule %s (%s) has no description", role, r.dec, r.ref.ID, r.text)
			}
		}
	}
}

// TestEnsurepipBootstrap: the fixed code `python3 -m venv` runs through
// ensurepip is allowed for developers; the same shape with code in its
// lists still asks (inline code floor).
func TestEnsurepipBootstrap(t *testing.T) {
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	code := func(path string) string {
		return "\nimport runpy\nimport sys\nsys.path = [" + path + "] + sys.path\nsys.argv[1:] = ['install', '--no-cache-dir', '--no-index', '--find-links', '/w/tmp', '--upgrade', 'setuptools', 'pip']\nrunpy.run_module(\"pip\", run_name=\"__main__\", alter_sys=True)\n"
	}
	argv := func(c string) []string { return []string{"python3", "-W", "ignore::DeprecationWarning", "-c", c} }
	if r := e.Decide(Query{Argv: argv(code("'/w/tmp/pip-23.0.1-py3-none-any.whl', '/w/tmp/setuptools-66.1.1-py3-none-any.whl'")), ExecContext: ExecContext{Cwd: "/w"}}); r.Decision != Allow {
		t.Errorf("ensurepip bootstrap = %v: %s", r.Decision, r.Reason)
	}
	for _, bad := range []string{"__import__('os').system('id')", "'/w/x.whl', open('/etc/passwd').read()", "'a\\'b'"} {
		if r := e.Decide(Query{Argv: argv(code(bad)), ExecContext: ExecContext{Cwd: "/w"}}); r.Decision == Allow {
			t.Errorf("bootstrap with %s allowed: %s", bad, r.Reason)
		}
	}
}

var updateRoles = flag.Bool("update-roles", false, "rewrite roles_gen.go from roles.yaml (go generate ./policy)")

// genRolesSource prints roles, agents and order as roles_gen.go.
func genRolesSource(roles []*roleDef, agents []*AgentProfile, order int) ([]byte, error) {
	g := newGoLit()
	var rb, ab strings.Builder
	if err := g.lit(&rb, reflect.ValueOf(roles), "roles"); err != nil {
		return nil, err
	}
	if err := g.lit(&ab, reflect.ValueOf(agents), "agents"); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by TestBuiltinGenerated (go generate ./policy) from roles.yaml; DO NOT EDIT.\n\npackage policy\n\n")
	if len(g.imports) > 0 {
		paths := make([]string, 0, len(g.imports))
		for p := range g.imports {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		b.WriteString("import (\n")
		for _, p := range paths {
			fmt.Fprintf(&b, "\t%q\n", p)
		}
		b.WriteString(")\n\n")
	}
	fmt.Fprintf(&b, "// genOrder is the rule counter after the built-in roles.\nconst genOrder = %d\n\n", order)
	b.WriteString("// genRoles are the roles of roles.yaml as the parser reads them.\nvar genRoles = " + rb.String() + "\n\n")
	b.WriteString("// genAgents are the agent profiles of roles.yaml.\nvar genAgents = " + ab.String() + "\n")
	if len(g.decls) > 0 {
		b.WriteString("\n// Values the roles point at.\nvar (\n")
		for _, d := range g.decls {
			b.WriteString("\t" + d + "\n")
		}
		b.WriteString(")\n")
	}
	return format.Source(b.Bytes())
}

// TestBuiltinGenerated: roles_gen.go holds exactly what the parser reads
// from roles.yaml (go generate ./policy rewrites it), and the generated
// values print back as the same source, so the compiler read the literals
// as the values they were printed from.
func TestBuiltinGenerated(t *testing.T) {
	roles, agents, order, err := parseBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	want, err := genRolesSource(roles, agents, order)
	if err != nil {
		t.Fatal(err)
	}
	if *updateRoles {
		if err := os.WriteFile("roles_gen.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile("roles_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatal("roles_gen.go differs from roles.yaml: run go generate ./policy")
	}
	if genRoles == nil {
		t.Fatal("roles_gen.go is the stub: run go generate ./policy")
	}
	back, err := genRolesSource(genRoles, genAgents, genOrder)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, want) {
		t.Fatal("the generated values do not print as roles_gen.go")
	}
}

// TestBuiltinPatternsCompile: the built-in roles' regexes are compiled at
// first use (lazyFullRegex), so every one is compiled here.
func TestBuiltinPatternsCompile(t *testing.T) {
	roles, _, err := builtinRoles()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, rd := range roles {
		for _, r := range rd.rules {
			for _, re := range []*fullRegex{actRe(r.act), r.toolRe, r.detRe} {
				if re == nil {
					continue
				}
				n++
				if err := re.compileNow(); err != nil {
					t.Errorf("role %s rule %s: %q: %v", name, r.ref.ID, re.src, err)
				}
			}
			if r.act != nil && r.act.detRe != nil {
				if err := r.act.detRe.compileNow(); err != nil {
					t.Errorf("role %s rule %s: view %q: %v", name, r.ref.ID, r.act.detRe.src, err)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d patterns", n)
	}
}

func actRe(a *actMatch) *fullRegex {
	if a == nil {
		return nil
	}
	return a.re
}

// TestBuiltinRolesResolve: every built-in role's extends chain resolves
// and merges (launches resolve only the role they use, so a broken chain
// in roles.yaml must fail here).
func TestBuiltinRolesResolve(t *testing.T) {
	roles, _, err := builtinRoles()
	if err != nil {
		t.Fatal(err)
	}
	for name := range roles {
		if _, err := resolveRole(roles, name); err != nil {
			t.Errorf("built-in role %s: %v", name, err)
		}
	}
	if len(roles) < 5 {
		t.Errorf("only %d built-in roles", len(roles))
	}
}

// TestInheritedRulesFinished: a rule a role inherits from a hidden role
// (_base) is renamed without being finished again (mergeRole): it must
// be what finishing it would make — the text, specificity and reason
// (which names the new id, as fmt's "%s by %s (%s): %s" would) — for
// every rule of every built-in role.
func TestInheritedRulesFinished(t *testing.T) {
	roles, _, err := builtinRoles()
	if err != nil {
		t.Fatal(err)
	}
	renamed := 0
	for name := range roles {
		rd, err := resolveRole(roles, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rd.rules {
			cp := *r
			cp.finish()
			verb := map[Decision]string{Allow: "allowed", Ask: "needs approval", Deny: "denied"}[r.dec]
			reason := fmt.Sprintf("%s by %s (%s)", verb, r.ref.ID, cp.text)
			if r.desc != "" {
				reason += ": " + r.desc
			}
			if r.text != cp.text || r.spec != cp.spec || r.reason != cp.reason || r.reason != reason || r.ref != cp.ref {
				t.Errorf("role %s rule %s: text %q spec %d reason %q; finished: %q %d %q (want reason %q)",
					name, r.ref.ID, r.text, r.spec, r.reason, cp.text, cp.spec, cp.reason, reason)
			}
			if !strings.HasPrefix(r.ref.ID, name+"/") {
				continue
			}
			renamed++
		}
	}
	if renamed == 0 {
		t.Error("no rule of any built-in role names its role")
	}
}

// TestRolesDescribeDeletions: what `agentbox roles` says of deletions is
// decided by the role's rules, with checkpoints on and off, not written
// by hand (the developer role's "deletions need approval" was untrue
// while a run takes checkpoints).
func TestRolesDescribeDeletions(t *testing.T) {
	rs, err := Roles(LoadOptions{NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"developer":    "deletions allowed while the run takes checkpoints",
		"tester":       "deletions need approval",
		"investigator": "deletions refused",
	}
	for _, r := range rs {
		if w, ok := want[r.Name]; ok {
			if !strings.Contains(r.Description, w) || strings.Count(r.Description, "deletion") != 1 {
				t.Errorf("%s: %q, want it to say %q once", r.Name, r.Description, w)
			}
			delete(want, r.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("roles missing: %v", want)
	}
}
