//go:build linux

package judge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

func testEngine(t testing.TB, role string, files ...string) *policy.Engine {
	t.Helper()
	eng, err := load.Policy(policy.LoadOptions{Role: role, NoUserFile: true, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// gitRepo makes a repository with the given extra config lines.
func gitRepo(t testing.TB, config string) string {
	t.Helper()
	needProg(t, "git")
	d := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("git", "init", "-q", d).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if config != "" {
		f, _ := os.OpenFile(filepath.Join(d, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(config)
		f.Close()
	}
	return d
}

func readAudit(t testing.TB, path string) []audit.Event {
	t.Helper()
	evs, err := audit.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func gitEv(dir string, env []string, argv ...string) *supervise.ExecEvent {
	return &supervise.ExecEvent{Pid: 4242, Tgid: 4242, Ppid: 1, Exe: "/usr/bin/git", Program: "git", Argv: argv, Env: append([]string{"HOME=" + dir}, env...), Cwd: dir}
}

func TestExecPolicyGit(t *testing.T) {
	repo := gitRepo(t, "[alias]\n\tp = push\n\tbang = !git push origin\n\tq = p\n\tloop1 = loop2\n\tloop2 = loop1\n\tst = status\n")
	logf := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pol := New(Config{Engine: testEngine(t, "developer"), Audit: w, Workspace: filepath.Dir(repo), AgentID: "a1", RunID: "r1"})
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[alias]\n\thp = push\n"), 0o644)
	cases := []struct {
		name  string
		env   []string
		argv  []string
		allow bool
		msg   string
	}{
		{"plain push", nil, []string{"git", "push", "origin", "main"}, false, "agentbox: denied: git push origin main (rule developer/git.push: agents never push; the workspace owner does) Instead: commit your work"},
		{"global options", nil, []string{"git", "-C", repo, "-c", "x.y=z", "--git-dir=.git", "push"}, false, "developer/git.push"},
		{"renamed argv0", nil, []string{"x", "push"}, false, "developer/git.push"},
		{"dashed git-push", nil, []string{"/usr/lib/git-core/git-push", "origin"}, false, "developer/git.push"},
		{"receive-pack dashed", nil, []string{"git-receive-pack", "remote.git"}, false, ""},
		{"-c alias", nil, []string{"git", "-c", "alias.p2=push", "p2"}, false, "developer/git.push"},
		{"repo alias", nil, []string{"git", "p", "origin"}, false, "developer/git.push"},
		{"repo ! alias", nil, []string{"git", "bang"}, false, "developer/git.push"},
		{"chained alias", nil, []string{"git", "q"}, false, "developer/git.push"},
		{"alias loop", nil, []string{"git", "loop1"}, false, "nests deeper"},
		{"global alias via HOME", []string{"HOME=" + home}, []string{"git", "hp"}, false, "developer/git.push"},
		{"GIT_CONFIG_COUNT alias", []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=alias.e", "GIT_CONFIG_VALUE_0=push"}, []string{"git", "e"}, false, "developer/git.push"},
		{"GIT_CONFIG_PARAMETERS alias", []string{"GIT_CONFIG_PARAMETERS='alias.e'='push'"}, []string{"git", "e"}, false, "developer/git.push"},
		{"status", nil, []string{"git", "status"}, true, ""},
		{"status alias", nil, []string{"git", "st"}, true, ""},
		{"harmless pager", []string{"GIT_PAGER=cat", "GIT_EXEC_PATH=/usr/lib/git-core"}, []string{"git", "status"}, true, ""},
		{"ssh command env", []string{"GIT_SSH_COMMAND=sh -c evil"}, []string{"git", "status"}, false, "environment makes git run programs"},
		{"commit -m", nil, []string{"git", "commit", "-m", "msg"}, true, ""},
		{"commit -am", nil, []string{"git", "commit", "-am", "msg"}, true, ""},
		{"commit --mess=", nil, []string{"git", "commit", "--mess=x"}, true, ""},
		{"commit amend no-edit", nil, []string{"git", "commit", "--amend", "--no-edit"}, true, ""},
		{"commit no message", nil, []string{"git", "commit"}, false, "commit message required"},
		{"commit empty message", nil, []string{"git", "commit", "-m", ""}, false, "commit message required"},
		{"commit -a only", nil, []string{"git", "commit", "-a"}, false, "commit message required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := c.env
			ev := gitEv(repo, nil, c.argv...)
			ev.Env = append(ev.Env, env...)
			v := pol.Decide(ev)
			if v.Allow != c.allow {
				t.Fatalf("allow=%v, want %v (message %q)", v.Allow, c.allow, v.Message)
			}
			if !c.allow && !strings.Contains(v.Message, c.msg) {
				t.Fatalf("message %q lacks %q", v.Message, c.msg)
			}
			if !c.allow && (!strings.HasPrefix(v.Message, "agentbox: denied: ") || strings.Contains(v.Message, "\n")) {
				t.Fatalf("message %q is not one deny line", v.Message)
			}
		})
	}
	// events are written synchronously
	evs := readAudit(t, logf)
	if len(evs) != len(cases) {
		t.Fatalf("%d audit events for %d decisions", len(evs), len(cases))
	}
	for _, e := range evs {
		if e.Event != audit.EventGit || e.Agent != "a1" || e.Run != "r1" || e.Pid != 4242 || e.Cwd != repo || e.Decision == "" {
			t.Fatalf("audit event %+v", e)
		}
	}
	if evs[0].Decision != audit.DecisionDeny || evs[0].Rule != "developer/git.push" || evs[0].Layer == "" {
		t.Fatalf("push event %+v", evs[0])
	}
}

func TestExecPolicyProgramsAndLimits(t *testing.T) {
	eng := testEngine(t, "developer")
	role := eng.Role()
	role.Git.MaxCommits = 2
	pol := New(Config{Engine: eng, Role: role})
	dir := gitRepo(t, "")
	commit := func() supervise.Verdict { return pol.Decide(gitEv(dir, nil, "git", "commit", "-m", "x")) }
	v1, v2 := commit(), commit()
	if !v1.Allow || !v2.Allow || v1.OnExit == nil {
		t.Fatal("first two commits not allowed")
	}
	if v := commit(); v.Allow || !strings.Contains(v.Message, "max commits") {
		t.Fatalf("third commit: %+v", v)
	}
	v2.OnExit(syscall.WaitStatus(1 << 8)) // the second commit failed: its slot is free again
	if v := commit(); !v.Allow {
		t.Fatalf("commit after a failed one: %+v", v)
	}
	// An alias to commit is checked but counted by the child exec only.
	other := []struct {
		ev    *supervise.ExecEvent
		allow bool
		msg   string
	}{
		{&supervise.ExecEvent{Program: identity.LoaderName, Exe: "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", Argv: []string{"/lib64/ld-linux-x86-64.so.2", "/tmp/x", "push"}, Cwd: dir}, false, "dynamic loader"},
		{&supervise.ExecEvent{Program: "busybox", Exe: "/bin/busybox", Argv: []string{"busybox", "rm", "-rf", "x"}, Cwd: dir}, false, "rm -rf x"},
		{&supervise.ExecEvent{Program: "true", Exe: "/usr/bin/true", Argv: []string{"true"}, Cwd: dir}, true, ""},
		{&supervise.ExecEvent{Program: "rm", Exe: "/tmp/x", Argv: []string{"x", "-rf", "."}, Cwd: dir}, false, "agentbox: denied: rm -rf ."},
	}
	for _, o := range other {
		v := pol.Decide(o.ev)
		if v.Allow != o.allow || !strings.Contains(v.Message, o.msg) {
			t.Errorf("%v: %+v", o.ev.Argv, v)
		}
	}
}

// fakeApprover answers with a fixed answer, or waits for the deadline.
type fakeApprover struct {
	answer approval.Answer
	calls  atomic.Int32
	last   approval.Request
}

func (f *fakeApprover) Approve(ctx context.Context, req approval.Request) (approval.Response, error) {
	f.calls.Add(1)
	f.last = req
	if f.answer == 0 {
		<-ctx.Done()
		return approval.Response{}, fmt.Errorf("test: %w", approval.ErrTimeout)
	}
	return approval.Response{Answer: f.answer, Approver: "test uid=0"}, nil
}

func TestExecPolicyApprovals(t *testing.T) {
	dir := t.TempDir()
	logf := filepath.Join(dir, "audit.jsonl")
	w, err := audit.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ask := &supervise.ExecEvent{Pid: 7, Program: "rm", Exe: "/usr/bin/rm", Argv: []string{"rm", "x"}, Cwd: dir}
	cases := []struct {
		answer   approval.Answer
		nilAppr  bool
		allow    bool
		decision string
	}{
		{approval.AllowOnce, false, true, audit.DecisionAskApproved},
		{approval.DenyOnce, false, false, audit.DecisionAskDenied},
		{0, false, false, audit.DecisionAskTimeout},
		{0, true, false, audit.DecisionAskUnavailable},
	}
	for _, c := range cases {
		f := &fakeApprover{answer: c.answer}
		cfg := Config{Engine: testEngine(t, "developer"), Audit: w, ApprovalTimeout: 100 * time.Millisecond, Workspace: dir}
		if !c.nilAppr {
			cfg.Approver = f
		}
		pol := New(cfg)
		v := pol.Decide(ask)
		// events are written synchronously
		if v.Allow != c.allow {
			t.Errorf("answer %v: allow=%v", c.answer, v.Allow)
		}
		evs := readAudit(t, logf)
		last := evs[len(evs)-1]
		if last.Decision != c.decision {
			t.Errorf("answer %v: audit decision %q, want %q", c.answer, last.Decision, c.decision)
		}
		if c.decision == audit.DecisionAskApproved && last.Approver != "test uid=0" {
			t.Errorf("approver not audited: %+v", last)
		}
		if !c.nilAppr && (f.last.Action != "tool:exec:rm x" || f.last.Pid != 7 || f.last.Rule == "") {
			t.Errorf("request %+v", f.last)
		}
	}
	// "always" becomes a session rule: the second identical exec is not asked.
	f := &fakeApprover{answer: approval.AllowAlways}
	pol := New(Config{Engine: testEngine(t, "developer"), Approver: f})
	if !pol.Decide(ask).Allow || !pol.Decide(ask).Allow || f.calls.Load() != 1 {
		t.Fatalf("allow_always: calls %d", f.calls.Load())
	}
	f = &fakeApprover{answer: approval.DenyAlways}
	pol = New(Config{Engine: testEngine(t, "developer"), Approver: f})
	if pol.Decide(ask).Allow || pol.Decide(ask).Allow || f.calls.Load() != 1 {
		t.Fatalf("deny_always: calls %d", f.calls.Load())
	}
	// "remember_deny" denies, and saves a deny rule for the command.
	saved := filepath.Join(dir, "deny.yaml")
	f = &fakeApprover{answer: approval.RememberDeny}
	pol = New(Config{Engine: testEngine(t, "developer"), Approver: f, ProjectPolicy: saved})
	curl := &supervise.ExecEvent{Pid: 9, Program: "curl", Exe: "/usr/bin/curl", Argv: []string{"curl", "-sS", "https://example.com"}, Cwd: dir}
	if pol.Decide(curl).Allow || pol.Decide(curl).Allow || f.calls.Load() != 1 {
		t.Fatalf("remember_deny: calls %d", f.calls.Load())
	}
	if b, _ := os.ReadFile(saved); !strings.Contains(string(b), "decision: deny") || !strings.Contains(string(b), "command: curl") {
		t.Fatalf("deny not saved: %s", b)
	}
	if r := testEngine(t, "developer", saved).Decide(policy.Query{Action: "tool:exec:curl other"}); r.Decision != policy.Deny {
		t.Errorf("after remember_deny, curl = %v", r.Decision)
	}
	// "remember" persists a safe prefix, never a shell.
	proj := filepath.Join(dir, "agentbox.yaml")
	f = &fakeApprover{answer: approval.Remember}
	pol = New(Config{Engine: testEngine(t, "developer"), Approver: f, ProjectPolicy: proj})
	if !pol.Decide(&supervise.ExecEvent{Program: "bash", Exe: "/bin/bash", Argv: []string{"bash", "x.sh"}, Cwd: dir}).Allow {
		t.Fatal("remember answer on bash did not allow once")
	}
	if b, _ := os.ReadFile(proj); strings.Contains(string(b), "bash") {
		t.Fatalf("bash remembered: %s", b)
	}
	// `rm x` outside any workspace: its deletion part still asks whatever
	// prefix is saved, so nothing is saved (and the audit note says why).
	if !pol.Decide(ask).Allow {
		t.Fatal("remember answer did not allow")
	}
	if b, _ := os.ReadFile(proj); strings.Contains(string(b), "rm") {
		t.Fatalf("rm remembered although it would still ask: %s", b)
	}
	// chmod: a one-word rule would tie with the role's ask rule (ties go to
	// ask), so "chmod 600" is saved, and a fresh engine allows it.
	chmod := &supervise.ExecEvent{Pid: 8, Program: "chmod", Exe: "/usr/bin/chmod", Argv: []string{"chmod", "600", "key.pem"}, Cwd: dir}
	if !pol.Decide(chmod).Allow {
		t.Fatal("remember answer on chmod did not allow")
	}
	b, err := os.ReadFile(proj)
	if err != nil || !strings.Contains(string(b), "command: chmod 600") {
		t.Fatalf("chmod 600 not remembered: %s %v", b, err)
	}
	fresh := testEngine(t, "developer", proj)
	if r := fresh.Decide(policy.Query{Action: "tool:exec:chmod 600 other.pem"}); r.Decision != policy.Allow {
		t.Errorf("after remember, chmod 600 = %v (%s)", r.Decision, r.Reason)
	}
	if r := fresh.Decide(policy.Query{Action: "tool:exec:chmod 777 other.sh"}); r.Decision == policy.Allow {
		t.Errorf("remember of chmod 600 allowed chmod 777: %s", r.Reason)
	}
}

// BenchmarkExecPolicyDecide is the policy side of one exec (engine,
// identity argv, audit enqueue) without the kernel side.
func BenchmarkExecPolicyDecide(b *testing.B) {
	d := b.TempDir()
	w, err := audit.Open(filepath.Join(d, "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	pol := New(Config{Engine: testEngine(b, "developer"), Audit: w})
	defer pol.Close()
	ev := &supervise.ExecEvent{Pid: 1, Program: "true", Exe: "/usr/bin/true", Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin"}, Cwd: d}
	gev := gitEv(d, nil, "git", "status", "--short")
	b.Run("true", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := pol.DecideFast(ev); !ok {
				b.Fatal("not decided")
			}
		}
	})
	b.Run("git status", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			pol.DecideFast(gev)
		}
	})
}

// TestExecPolicyDeletions: programs that delete are decided with their
// deletion items (the role's deletion and commit rules, docs/policy.md): none of them is allowed without approval for
// the developer role, and deleting .git is forbidden outright.
func TestExecPolicyDeletions(t *testing.T) {
	repo := gitRepo(t, "")
	os.WriteFile(filepath.Join(repo, "a"), nil, 0o644)
	os.WriteFile(filepath.Join(repo, "b"), nil, 0o644)
	pol := New(Config{Engine: testEngine(t, "developer"), Workspace: filepath.Dir(repo)})
	cases := []struct {
		prog string
		argv []string
		want string // "deny" (rule) or "ask" (ask_unavailable without an approver)
	}{
		{"rm", []string{"rm", "a"}, "needs approval"},
		{"rm", []string{"rm", "-rf", ".git"}, "rule"},
		{"git", []string{"git", "rm", "a"}, "needs approval"},
		{"git", []string{"git", "clean", "-fdx"}, "needs approval"},
		{"find", []string{"find", ".", "-name", "a", "-delete"}, "needs approval"},
		{"mv", []string{"mv", "a", "b"}, "needs approval"},
	}
	for _, c := range cases {
		ev := &supervise.ExecEvent{Pid: 1, Program: c.prog, Exe: "/usr/bin/" + c.prog, Argv: c.argv, Cwd: repo, Env: []string{"HOME=" + repo}}
		v := pol.Decide(ev)
		if v.Allow || !strings.Contains(v.Message, c.want) {
			t.Errorf("%q: allow=%v message %q, want %q", c.argv, v.Allow, v.Message, c.want)
		}
	}
}

// TestExecPolicyWorkspacePrograms: the supervisor lets a developer run what
// it built in target/ (decided by the file's location, developer/
// programs.target) but a copy of a policed binary put there is identified
// by its content and decided as that program.
func TestExecPolicyWorkspacePrograms(t *testing.T) {
	needProg(t, "git")
	ws := t.TempDir()
	target := filepath.Join(ws, "target")
	os.MkdirAll(filepath.Join(target, "build"), 0o755)
	eng, err := load.Policy(policy.LoadOptions{Role: "developer", Workspace: ws, NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{Engine: eng, Workspace: ws})
	defer p.Close()
	trueBin := testkit.LookProg(t, "true")
	testkit.CopyFile(t, trueBin, filepath.Join(target, "build", "app"))
	testkit.CopyFile(t, testkit.LookProg(t, "git"), filepath.Join(target, "build", "tool"))
	cases := []struct {
		file  string
		argv  []string
		allow bool
		rule  string
	}{
		{"build/app", []string{"./build/app", "-v"}, true, "developer/programs.target"},
		{"build/tool", []string{"./build/tool", "status"}, true, "developer/git.status"},
		{"build/tool", []string{"./build/tool", "push", "origin", "main"}, false, "developer/git.push"},
		{"build/tool", []string{"./build/tool", "send-pack", "../r.git", "main"}, false, "developer/git.send-pack"},
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		testkit.CopyFile(t, curl, filepath.Join(target, "build", "fetch"))
		cases = append(cases, struct {
			file  string
			argv  []string
			allow bool
			rule  string
		}{"build/fetch", []string{"./build/fetch", "https://example.com"}, false, "developer/curl"})
	}
	for _, c := range cases {
		exe := filepath.Join(target, c.file)
		id, err := identity.DefaultIdentifier().IdentifyFile(exe, c.argv)
		if err != nil {
			t.Fatal(err)
		}
		if c.file != "build/app" && !id.Known {
			t.Fatalf("copy %s not identified as a policed program: %+v", c.file, id)
		}
		ev := &supervise.ExecEvent{Pid: 1, Exe: exe, Program: id.Name, Argv: c.argv, Cwd: target}
		d := p.decide(ev)
		v := p.Decide(ev)
		if v.Allow != c.allow || d.res.Rule == nil || d.res.Rule.ID != c.rule {
			t.Errorf("%q (%s, identity %s): allow %v rule %v (%s); want allow %v rule %s", c.argv, c.file, id.Name, v.Allow, d.res.Rule, d.res.Reason, c.allow, c.rule)
		}
	}
}

// needProg skips the test when a program it runs is not installed.
func needProg(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("reason: %s not installed", n)
		}
	}
}

// TestApprovalRequestShowsWhatRuns: an ask for a program started with a
// loader variable carries the relevant environment, the resolved
// executable, how it was identified and the cwd to the approver, and the
// audit event records what the decision was made on.
func TestApprovalRequestShowsWhatRuns(t *testing.T) {
	d := t.TempDir()
	logf := filepath.Join(d, "audit.jsonl")
	w, err := audit.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	var got approval.Request
	appr := approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
		got = req
		return approval.Response{Answer: approval.DenyOnce, Approver: "test"}, nil
	})
	p := New(Config{Engine: testEngine(t, "developer"), Audit: w, Approver: appr})
	ev := gitEv(d, []string{"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libfaketime.so.1", "GIT_DIR=.git", "TERM=xterm"}, "git", "fetch", "origin")
	ev.Via = "content"
	v := p.Decide(ev)
	p.Close()
	w.Close()
	if v.Allow {
		t.Fatal("allowed")
	}
	if strings.Join(got.Env, " ") != "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libfaketime.so.1 GIT_DIR=.git" {
		t.Errorf("request env %q; want the loader and git variables only", got.Env)
	}
	if got.Program != "/usr/bin/git" || !strings.Contains(got.Identified, "same content") || got.Cwd != d {
		t.Errorf("request program %q identified %q cwd %q", got.Program, got.Identified, got.Cwd)
	}
	if !strings.Contains(got.Reason, "LD_PRELOAD") {
		t.Errorf("request reason %q does not name LD_PRELOAD", got.Reason)
	}
	evs := readAudit(t, logf)
	if len(evs) != 1 || !strings.Contains(evs[0].Detail["env"], "LD_PRELOAD=") || evs[0].Detail["identified_by"] != "content" {
		t.Errorf("audit %+v; want env and identification recorded", evs)
	}
}

// TestDenyLineForAgents: the refusal an agent reads names the part of a
// shell line that was decided (not the wrapper), the rule with its
// description, what to do instead, and for an ask with no approver which
// command needed approval.
func TestDenyLineForAgents(t *testing.T) {
	eng, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "source /home/a/.snap.sh 2>/dev/null || true && eval 'git status && git reset --hard HEAD~1' < /dev/null && pwd -P >| /tmp/cwd"
	cases := []struct {
		name    string
		argv    []string
		audit   string
		want    []string
		wantNot []string
	}{
		{"rule in a wrapper", []string{"bash", "-c", wrapper}, audit.DecisionDeny,
			[]string{"agentbox: denied: git reset --hard HEAD~1 (rule developer/git.reset: could lose work)", " in: bash -c ", "Instead: git restore FILE"},
			[]string{"(needs approval"}},
		{"ask without approver", []string{"bash", "-c", "ls && frobnicate --x"}, audit.DecisionAskUnavailable,
			[]string{"agentbox: denied: frobnicate --x (needs approval, no approver: no rule matched"},
			[]string{"Instead:"}},
		{"plain", []string{"git", "push"}, audit.DecisionDeny,
			[]string{"agentbox: denied: git push (rule developer/git.push: agents never push"},
			[]string{" in: "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := eng.Decide(policy.Query{Argv: c.argv, ExecContext: policy.ExecContext{Cwd: ""}})
			line := denyLine(decision{argv: c.argv, res: res}, c.audit, res.Reason)
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q lacks %q", line, w)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(line, w) {
					t.Errorf("%q has %q", line, w)
				}
			}
			if strings.Contains(line, "\n") {
				t.Errorf("%q is not one line", line)
			}
		})
	}
}
