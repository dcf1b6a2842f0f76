package agentbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/internal/testkit"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if agentbox.MaybeRunHelper() {
		return
	}
	cleanup := testkit.TempStateHome()
	// no journal process outlives a test's temporary workspace (the
	// journal has its own tests in internal/checkpoint)
	os.Setenv("AGENTBOX_CHECKPOINT_JOURNAL", "off")
	code := m.Run()
	cleanup()
	// the cache overlays a root run parked for this binary's deleted
	// workspaces (no other's: a live layer's stays)
	_, _ = helper.UnparkGone()
	os.Exit(code)
}

// needSandbox skips when the kernel cannot give the boundary or the exec
// supervisor.
func needSandbox(t testing.TB) {
	t.Helper()
	if err := sandbox.CheckLandlock(false); err != nil {
		t.Skipf("reason: %v", err)
	}
	if err := supervise.PtraceAvailable(); err != nil {
		t.Skipf("reason: %v", err)
	}
}

// world is a workspace, a policy file outside it that asks before `touch`,
// a shared audit log and a private run registry.
type world struct {
	ws, policy, audit, registry string
}

func newWorld(t *testing.T) world {
	t.Helper()
	d := t.TempDir()
	w := world{ws: filepath.Join(d, "ws"), policy: filepath.Join(d, "policy.yaml"),
		audit: filepath.Join(d, "log", "audit.jsonl"), registry: filepath.Join(d, "runs")}
	if _, err := boundary.Init(w.ws); err != nil {
		t.Fatal(err)
	}
	pol := "version: 1\nrules:\n  - {decision: ask, command: touch, description: touching needs a human}\n"
	if err := os.WriteFile(w.policy, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w world) opts(extra ...agentbox.Option) []agentbox.Option {
	return append([]agentbox.Option{
		agentbox.WithPolicyFiles(w.policy), agentbox.WithoutUserPolicy(),
		agentbox.WithRegistry(w.registry), agentbox.WithKillGrace(time.Second),
	}, extra...)
}

// TestEmbedConcurrentRuns: three runs started concurrently through the Go
// API share one audit writer; one approval is answered allow and one deny
// through approval.Func; the third run is listed in the registry while it
// runs and ended with Stop; the shared audit chain verifies.
func TestEmbedConcurrentRuns(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	if err := os.MkdirAll(filepath.Dir(w.audit), 0o700); err != nil {
		t.Fatal(err)
	}
	aw, err := audit.Open(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	appr := approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
		mu.Lock()
		asked = append(asked, req.Agent+":"+strings.Join(req.Argv, " "))
		mu.Unlock()
		if slices.Contains(req.Argv, "yes.txt") {
			return approval.Response{Answer: approval.AllowOnce, Approver: "test"}, nil
		}
		return approval.Response{Answer: approval.DenyOnce, Approver: "test"}, nil
	})
	var events sync.Map // agent -> []string of event kinds
	onEvent := func(e audit.Event) {
		v, _ := events.LoadOrStore(e.Agent, &[]string{})
		mu.Lock()
		*v.(*[]string) = append(*v.(*[]string), e.Event+":"+e.Decision)
		mu.Unlock()
	}
	ready := filepath.Join(w.ws, "target", "sleeper-ready")
	cmds := map[string][]string{
		"allowed": {"touch", "yes.txt"},
		"denied":  {"touch", "no.txt"},
		"sleeper": {"sh", "-c", ": > sleeper-ready; exec sleep 300"},
	}
	runs := map[string]*agentbox.Run{}
	outs := map[string]string{}
	for _, agent := range []string{"allowed", "denied", "sleeper"} {
		out, err := os.CreateTemp(t.TempDir(), agent)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		r, err := agentbox.New(w.ws, "developer", cmds[agent], w.opts(
			agentbox.WithAgent(agent), agentbox.WithAuditWriter(aw), agentbox.WithApprover(appr),
			agentbox.WithEvents(onEvent), agentbox.WithStdio(nil, out, out))...)
		if err != nil {
			t.Fatal(err)
		}
		runs[agent] = r
		outs[agent] = out.Name()
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	for name, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(ctx); err != nil {
				t.Errorf("%s: Start: %v", name, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for name, want := range map[string]int{"allowed": 0, "denied": agentbox.ExitDenied} {
		res, err := runs[name].Wait()
		if err != nil || res.ExitCode != want {
			t.Errorf("%s: Wait = %+v, %v; want exit %d", name, res, err, want)
		}
	}
	if b, _ := os.ReadFile(outs["denied"]); !strings.Contains(string(b), "agentbox: denied: touch no.txt (approval denied") {
		t.Errorf("denied run's stderr = %q; want the one-line denial", b)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "target", "yes.txt")); err != nil {
		t.Errorf("allowed touch did not happen: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "target", "no.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("denied touch happened: %v", err)
	}

	// The sleeper is listed while it runs, with its pid.
	sl := runs["sleeper"]
	waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })
	list, err := agentbox.List(w.registry)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != sl.ID() || list[0].Agent != "sleeper" || list[0].Pid != sl.Pid() {
		// what the registry holds and whether the sleeper still runs, to
		// tell a lost entry from a run that ended early
		files, _ := filepath.Glob(filepath.Join(w.registry, "*"))
		_, alive := os.Stat(fmt.Sprintf("/proc/%d", sl.Pid()))
		slOut, _ := os.ReadFile(outs["sleeper"])
		var evs []string
		raw, _ := os.ReadFile(w.audit)
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.Contains(l, `"agent":"sleeper"`) && !strings.Contains(l, `"event":"launch"`) {
				evs = append(evs, l)
			}
		}
		t.Fatalf("List = %+v; want only the sleeper run %s pid %d (registry files %q; sleeper pid present: %v; its output %q; its events %v)",
			list, sl.ID(), sl.Pid(), files, alive == nil, slOut, evs)
	}
	if err := sl.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := sl.Wait()
	if err != nil || !res.Stopped || res.ExitCode != 128+15 {
		t.Errorf("sleeper: Wait = %+v, %v; want stopped by SIGTERM (143)", res, err)
	}
	if list, _ := agentbox.List(w.registry); len(list) != 0 {
		t.Errorf("registry still lists %+v after Stop", list)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}

	if len(asked) != 2 {
		t.Errorf("approver asked %d times (%q); want 2", len(asked), asked)
	}
	f, err := os.Open(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vr, err := audit.Verify(f, nil)
	if err != nil {
		t.Fatalf("audit verify: %v (%+v)", err, vr)
	}
	evs, err := audit.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	decisions := map[string][]string{}
	for _, e := range evs {
		if e.Decision != "" {
			decisions[e.Agent] = append(decisions[e.Agent], e.Decision)
		}
	}
	if !slices.Contains(decisions["allowed"], audit.DecisionAskApproved) {
		t.Errorf("allowed run: decisions %v lack %s", decisions["allowed"], audit.DecisionAskApproved)
	}
	if !slices.Contains(decisions["denied"], audit.DecisionAskDenied) {
		t.Errorf("denied run: decisions %v lack %s", decisions["denied"], audit.DecisionAskDenied)
	}
	for _, agent := range []string{"allowed", "denied", "sleeper"} {
		v, ok := events.Load(agent)
		if !ok || !slices.Contains(*v.(*[]string), "launch:") || !slices.Contains(*v.(*[]string), "exit:") {
			t.Errorf("%s: events callback saw %v; want launch and exit", agent, v)
		}
	}
}

// TestNewRefusesExposedLayout: the checks an embedder relies on are in the
// library: an audit log or policy file the sandbox could write is refused
// by New with an *ExposedError, before anything starts.
func TestNewRefusesExposedLayout(t *testing.T) {
	w := newWorld(t)
	inTarget := filepath.Join(w.ws, "target", "p.yaml")
	b, _ := os.ReadFile(w.policy)
	os.WriteFile(inTarget, b, 0o600)
	for name, opts := range map[string][]agentbox.Option{
		"audit in feedback":  {agentbox.WithAudit(filepath.Join(w.ws, "feedback", "a.jsonl"))},
		"audit in context":   {agentbox.WithAudit(filepath.Join(w.ws, "context", "a.jsonl"))},
		"policy in target":   {agentbox.WithPolicyFiles(inTarget), agentbox.WithAudit(w.audit)},
		"socket in target":   {agentbox.WithApprove("socket:" + filepath.Join(w.ws, "target", "s.sock")), agentbox.WithAudit(w.audit)},
		"registry in target": {agentbox.WithRegistry(filepath.Join(w.ws, "target", "runs")), agentbox.WithAudit(w.audit)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := agentbox.New(w.ws, "developer", []string{"true"}, append(w.opts(), opts...)...)
			var ee *agentbox.ExposedError
			if !errors.As(err, &ee) {
				t.Fatalf("New = %v; want an *ExposedError", err)
			}
		})
	}
	_, err := agentbox.New(w.ws, "developer", []string{"true"}, append(w.opts(), agentbox.WithApprove("carrier-pigeon"))...)
	var oe *agentbox.OptionError
	if !errors.As(err, &oe) || oe.Option != "approve" {
		t.Errorf("bad approver: New = %v; want an *OptionError for approve", err)
	}
	if _, err := agentbox.New(w.ws, "no-such-role", []string{"true"}, w.opts()...); err == nil || !strings.Contains(err.Error(), "no-such-role") {
		t.Errorf("unknown role: New = %v; want an error naming it", err)
	}
}

// TestStopRunFromRegistry: StopRun (what `agentbox stop` calls) ends a run
// it only knows from the registry.
func TestStopRunFromRegistry(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	ready := filepath.Join(w.ws, "target", "ready")
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "trap '' TERM; : > ready; while :; do sleep 1; done"},
		w.opts(agentbox.WithAudit(w.audit), agentbox.WithoutExecPolicy())...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })
	// The shell ignores SIGTERM: StopRun must escalate to SIGKILL.
	if err := agentbox.StopRun(w.registry, r.ID(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("StopRun returned before the run ended")
	}
	res, err := r.Wait()
	if err != nil || res.ExitCode != 128+9 {
		t.Errorf("Wait = %+v, %v; want killed (137)", res, err)
	}
	if err := agentbox.StopRun(w.registry, r.ID(), time.Second); !errors.Is(err, agentbox.ErrNoSuchRun) {
		t.Errorf("second StopRun = %v; want ErrNoSuchRun", err)
	}
}

// waitFor polls cond (a file the sandboxed command creates: no event
// crosses the boundary) until it holds, for at most 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLaunchAndExitEventFields: the launch event says who started the run,
// where, which agentbox and which policy (digest and sources); the exit
// event how long it took and what it used (from the cgroup when there is
// one).
func TestLaunchAndExitEventFields(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	var launch, exit audit.Event
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"}, w.opts(
		agentbox.WithAudit(w.audit),
		agentbox.WithEvents(func(e audit.Event) {
			switch e.Event {
			case audit.EventLaunch:
				launch = e
			case audit.EventExit:
				exit = e
			}
		}))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"invoker_uid", "host", "agentbox_version", "policy_digest", "policy_sources", "role", "network", "limits", "grants", "kernel_refusals"} {
		if launch.Detail[k] == "" {
			t.Errorf("launch event lacks %s: %v", k, launch.Detail)
		}
	}
	if !strings.HasPrefix(launch.Detail["policy_digest"], "sha256:") || !strings.Contains(launch.Detail["policy_sources"], w.policy) {
		t.Errorf("policy digest/sources: %q %q", launch.Detail["policy_digest"], launch.Detail["policy_sources"])
	}
	for _, k := range []string{"duration", "peak_memory_bytes", "cpu_time", "usage_source"} {
		if exit.Detail[k] == "" {
			t.Errorf("exit event lacks %s: %v", k, exit.Detail)
		}
	}
	if cgroup.Available() == nil && exit.Detail["usage_source"] != "cgroup" {
		t.Errorf("cgroups available but usage from %q", exit.Detail["usage_source"])
	}
}

// TestWorkingDirectory: WithDir starts the command there and records it in
// the launch event; a directory outside the readable areas (or reached
// through a symlink that leaves them) is an OptionError naming it;
// WithCallerDir falls back to W/target.
func TestWorkingDirectory(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	proj := filepath.Join(w.ws, "target", "proj", "sub")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(w.ws, "target", "etclink")); err != nil {
		t.Fatal(err)
	}
	pwd := func(opt agentbox.Option) (string, string) {
		t.Helper()
		out, _ := os.CreateTemp(t.TempDir(), "out")
		defer out.Close()
		log := filepath.Join(t.TempDir(), "audit.jsonl")
		r, err := agentbox.New(w.ws, "developer", []string{"pwd"}, w.opts(opt, agentbox.WithAudit(log), agentbox.WithStdio(nil, out, out))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if res, err := r.Wait(); err != nil || res.ExitCode != 0 {
			t.Fatalf("pwd: %v %+v", err, res)
		}
		b, _ := os.ReadFile(out.Name())
		evs, _ := audit.ReadFile(log)
		launchCwd := ""
		for _, e := range evs {
			if e.Event == audit.EventLaunch {
				launchCwd = e.Cwd
			}
		}
		return strings.TrimSpace(string(b)), launchCwd
	}
	real, _ := filepath.EvalSymlinks(proj)
	if got, ev := pwd(agentbox.WithDir(proj)); got != real || ev != real {
		t.Errorf("WithDir(%s): pwd %q, launch cwd %q", proj, got, ev)
	}
	target, _ := filepath.EvalSymlinks(filepath.Join(w.ws, "target"))
	if got, _ := pwd(agentbox.WithCallerDir("/etc")); got != target {
		t.Errorf("WithCallerDir(/etc): pwd %q, want %q", got, target)
	}
	for _, bad := range []string{"/etc", w.ws, filepath.Join(w.ws, "target", "etclink"), filepath.Join(w.ws, "target", "nope")} {
		_, err := agentbox.New(w.ws, "developer", []string{"pwd"}, w.opts(agentbox.WithDir(bad))...)
		var oe *agentbox.OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), bad) {
			t.Errorf("WithDir(%s): %v, want an OptionError naming it", bad, err)
		}
	}
}

// TestRunGrants: --ro/--exec/--rw grant paths outside the workspace for one
// run, enforced by the kernel (checked with the exec policy off) and
// matched by the policy; bad paths are refused naming the flag.
func TestRunGrants(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	outside := t.TempDir()
	ro, rw, ex := filepath.Join(outside, "ro"), filepath.Join(outside, "rw"), filepath.Join(outside, "ex")
	for _, d := range []string{ro, rw, ex} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ro, "f"), []byte("data\n"), 0o644)
	os.WriteFile(filepath.Join(ex, "tool"), []byte("#!/bin/sh\necho tool ran\n"), 0o755)
	run := func(argv []string, opts ...agentbox.Option) (int, string) {
		t.Helper()
		out, _ := os.CreateTemp(t.TempDir(), "out")
		defer out.Close()
		r, err := agentbox.New(w.ws, "developer", argv, w.opts(append(opts, agentbox.WithAudit(w.audit), agentbox.WithApprove("none"), agentbox.WithStdio(nil, out, out))...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		res, _ := r.Wait()
		b, _ := os.ReadFile(out.Name())
		return res.ExitCode, string(b)
	}
	if code, out := run([]string{"cat", filepath.Join(ro, "f")}); code == 0 {
		t.Errorf("read outside the workspace without a grant: %s", out)
	}
	if code, out := run([]string{"cat", filepath.Join(ro, "f")}, agentbox.WithReadOnly(ro)); code != 0 || out != "data\n" {
		t.Errorf("--ro read: %d %q", code, out)
	}
	// The kernel refuses the write (the exec policy is off here).
	if code, _ := run([]string{"sh", "-c", "echo x > " + filepath.Join(ro, "g")}, agentbox.WithReadOnly(ro), agentbox.WithoutExecPolicy()); code == 0 {
		t.Error("--ro: a write succeeded")
	}
	if code, out := run([]string{"sh", "-c", "echo x > " + filepath.Join(rw, "g") + " && cat " + filepath.Join(rw, "g")}, agentbox.WithWritable(rw)); code != 0 || out != "x\n" {
		t.Errorf("--rw write: %d %q", code, out)
	}
	if code, out := run([]string{filepath.Join(ex, "tool")}, agentbox.WithExecutable(ex)); code != 0 || out != "tool ran\n" {
		t.Errorf("--exec: %d %q", code, out)
	}
	if code, _ := run([]string{filepath.Join(ex, "tool")}, agentbox.WithReadOnly(ex), agentbox.WithoutExecPolicy()); code == 0 {
		t.Error("--ro: a program ran (no execute right)")
	}
	os.Symlink(ro, filepath.Join(outside, "link"))
	for _, c := range []struct {
		opt  agentbox.Option
		want string
	}{
		{agentbox.WithReadOnly(filepath.Join(w.ws, "context")), "--ro"},
		{agentbox.WithWritable(filepath.Dir(w.ws)), "contains the workspace"},
		{agentbox.WithReadOnly(filepath.Join(outside, "link")), "symlink"},
		{agentbox.WithExecutable(filepath.Join(outside, "nope")), "--exec"},
		{agentbox.WithWritable(filepath.Dir(w.audit)), "audit log"},
	} {
		if _, err := agentbox.New(w.ws, "developer", []string{"true"}, w.opts(c.opt, agentbox.WithAudit(w.audit))...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want a refusal naming %q, got %v", c.want, err)
		}
	}
}

// TestHostGitIdentity: the caller's user.name and user.email reach git in
// the sandbox (whose HOME is the agent's own), so the first commit of a
// fresh repository works; a role with `git: {host_identity: false}` keeps
// them out.
func TestHostGitIdentity(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	w := newWorld(t)
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Host User\n\temail = host@example.com\n"), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	line := "git init -q r && cd r && git commit -q --allow-empty -m x && git log --format=%an:%ae"
	run := func(role string) (int, string) {
		out, _ := os.CreateTemp(t.TempDir(), "out")
		defer out.Close()
		r, err := agentbox.New(w.ws, role, []string{"sh", "-c", line}, w.opts(agentbox.WithEnv(env), agentbox.WithAudit(w.audit),
			agentbox.WithApprove("none"), agentbox.WithStdio(nil, out, out), agentbox.WithDir(filepath.Join(w.ws, "target")))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		res, _ := r.Wait()
		b, _ := os.ReadFile(out.Name())
		os.RemoveAll(filepath.Join(w.ws, "target", "r"))
		return res.ExitCode, string(b)
	}
	if code, out := run("developer"); code != 0 || !strings.Contains(out, "Host User:host@example.com") {
		t.Errorf("identity not carried: exit %d %q", code, out)
	}
	os.WriteFile(w.policy, []byte("version: 1\nroles:\n  private:\n    extends: developer\n    git: {host_identity: false}\n"), 0o600)
	if _, out := run("private"); strings.Contains(out, "host@example.com") {
		t.Errorf("host_identity: false still carried it: %q", out)
	}
}

// TestSecretsRedacted: an API key on a command line reaches neither the
// audit log nor the approver; the log marks what was removed and still
// verifies.
func TestSecretsRedacted(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	const secret = "sk-ant-api03-SECRETSECRETSECRET1234567890"
	var seen []string
	var mu sync.Mutex
	appr := approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
		mu.Lock()
		seen = append(seen, strings.Join(req.Argv, " ")+" | "+req.Action)
		mu.Unlock()
		return approval.Response{Answer: approval.AllowOnce, Approver: "test"}, nil
	})
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "touch " + secret + "; echo ANTHROPIC_API_KEY=" + secret + " > /dev/null"},
		w.opts(agentbox.WithAudit(w.audit), agentbox.WithApprover(appr), agentbox.WithDir(filepath.Join(w.ws, "target")))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Wait(); err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	raw, err := os.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "SECRETSECRET") {
		t.Errorf("the secret landed in the audit log")
	}
	if !strings.Contains(string(raw), "[REDACTED:token]") || !strings.Contains(string(raw), `"redacted":"`) {
		t.Errorf("no redaction mark in the log")
	}
	if _, err := audit.VerifyFile(w.audit); err != nil {
		t.Errorf("redacted log does not verify: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("no approval was asked (touch asks in this policy)")
	}
	for _, s := range seen {
		if strings.Contains(s, "SECRETSECRET") {
			t.Errorf("the approver saw the secret: %s", s)
		}
	}
}

// TestAgentGuide: the agent's HOME holds AGENTBOX.md explaining the
// boundary; a symlink planted in its place is not followed (the file it
// points to is left alone) and the launch warns instead.
func TestAgentGuide(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	run := func() (string, string) {
		out, _ := os.CreateTemp(t.TempDir(), "out")
		defer out.Close()
		var warn bytes.Buffer
		r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "cat $HOME/AGENTBOX.md"}, w.opts(agentbox.WithAudit(w.audit), agentbox.WithStdio(nil, out, out), agentbox.WithWarnings(&warn))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		r.Wait()
		b, _ := os.ReadFile(out.Name())
		return string(b), warn.String()
	}
	if out, _ := run(); !strings.Contains(out, "You are running inside agentbox") || !strings.Contains(out, "agentbox check") || !strings.Contains(out, "network: none") {
		t.Errorf("guide: %q", out)
	}
	guide := filepath.Join(w.ws, "agents", "main", "home", "AGENTBOX.md")
	// Unchanged, it is not rewritten (same inode, same mtime); edited, it
	// is written again.
	var st1, st2 unix.Stat_t
	unix.Stat(guide, &st1)
	run()
	unix.Stat(guide, &st2)
	if st1.Ino != st2.Ino || st1.Mtim != st2.Mtim {
		t.Errorf("an unchanged guide was rewritten")
	}
	want, _ := os.ReadFile(guide)
	os.WriteFile(guide, append(want[:len(want)-3:len(want)-3], "xx\n"...), 0o644)
	if out, _ := run(); out != string(want) {
		t.Errorf("an edited guide was not restored: %q", out)
	}
	// What the agent plants where the guide goes is replaced, never
	// opened: a symlink (written through, it would change the file it
	// names), a hard link to a file elsewhere (truncating it would), a
	// FIFO (opening it would block every later launch).
	victim := filepath.Join(w.ws, "target", "victim")
	for _, plant := range []struct {
		name string
		make func() error
	}{
		{"symlink", func() error { return os.Symlink(victim, guide) }},
		{"hard link", func() error { return os.Link(victim, guide) }},
		{"fifo", func() error { return unix.Mkfifo(guide, 0o644) }},
	} {
		os.WriteFile(victim, []byte("keep\n"), 0o644)
		os.Remove(guide)
		if err := plant.make(); err != nil {
			t.Fatalf("%s: %v", plant.name, err)
		}
		done := make(chan string, 1)
		go func() { out, _ := run(); done <- out }()
		select {
		case out := <-done:
			if out != string(want) {
				t.Errorf("%s planted: the agent read %q, want the guide", plant.name, out)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s planted at the guide: the launch hung", plant.name)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
			t.Errorf("%s planted: the file it names was changed: %q", plant.name, b)
		}
		if fi, err := os.Lstat(guide); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s planted: the guide is %v, %v; want a plain file", plant.name, fi.Mode(), err)
		}
	}
}

// TestDevFd: what shells do with /dev/fd and /dev/std* works in the
// sandbox without a rule of its own (its links are resolved by Landlock to
// the file itself): process substitution, here-strings on /dev/fd/0 and
// /dev/stdin, writing to /dev/fd/1 and /dev/stderr when they are pipes.
func TestDevFd(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("reason: bash not installed")
	}
	w := newWorld(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	line := `cat <(echo procsub); cat /dev/fd/0 <<< fd0; cat /dev/stdin <<< stdin; echo fd1 > /dev/fd/1; echo stderr > /dev/stderr`
	r, err := agentbox.New(w.ws, "developer", []string{"bash", "-c", line}, w.opts(agentbox.WithAudit(w.audit), agentbox.WithStdio(nil, pw, pw))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	pw.Close()
	out, _ := io.ReadAll(pr)
	if err != nil || res.ExitCode != 0 || string(out) != "procsub\nfd0\nstdin\nfd1\nstderr\n" {
		t.Errorf("exit %d %v, output %q", res.ExitCode, err, out)
	}
}

// TestRunIDAndTimeout: an orchestrator names its runs (WithRunID, seen in
// the registry and the audit log) and bounds them (WithTimeout: SIGTERM,
// kill grace, ExitTimeout).
func TestRunIDAndTimeout(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	r, err := agentbox.New(w.ws, "developer", []string{"sleep", "30"},
		w.opts(agentbox.WithRunID("orch-7"), agentbox.WithTimeout(200*time.Millisecond), agentbox.WithKillGrace(100*time.Millisecond), agentbox.WithAudit(w.audit))...)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != "orch-7" {
		t.Errorf("ID = %q, want orch-7", r.ID())
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != agentbox.ExitTimeout || !res.TimedOut {
		t.Errorf("exit %d timedOut %v, want %d", res.ExitCode, res.TimedOut, agentbox.ExitTimeout)
	}
	evs, err := audit.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Run != "orch-7" {
			t.Errorf("event %s of run %q, want orch-7", e.Event, e.Run)
		}
	}
}

// TestAuditQuota: a run that floods the shared audit log with program
// starts stops being able to start programs once it used its quota of
// decision events, and fails closed like on an audit write failure; its
// exit event is still written, and another run sharing the log is
// unaffected.
func TestAuditQuota(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	aw, err := audit.Open(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	run := func(quota int, script string) (*agentbox.Result, string) {
		var warn bytes.Buffer
		res, out := runToEnd(t, w.ws, []string{"sh", "-c", script},
			w.opts(agentbox.WithAuditWriter(aw), agentbox.WithAuditQuota(quota), agentbox.WithWarnings(&warn))...)
		return res, out + warn.String()
	}
	res, out := run(5, "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true || echo refused; done")
	if res.ExitCode != agentbox.ExitFailure || !errors.Is(res.AuditError, agentbox.ErrAuditQuota) || !strings.Contains(out, "refused") {
		t.Errorf("flooding run: exit %d, audit error %v\n%s", res.ExitCode, res.AuditError, out)
	}
	res, out = run(0, "/bin/true && echo fine")
	if res.ExitCode != 0 || !strings.Contains(out, "fine") {
		t.Errorf("the next run on the same log: exit %d\n%s", res.ExitCode, out)
	}
	evs, err := audit.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	exits, decisions := 0, 0
	for _, e := range evs {
		switch e.Event {
		case audit.EventExit:
			exits++
		case audit.EventExec:
			decisions++
		}
	}
	if exits != 2 || decisions > 5+2 {
		t.Errorf("%d exit events (want 2), %d exec events (want at most the quota plus the second run's)", exits, decisions)
	}
}

// TestHelperNotWired: a program that starts runs but whose main does not
// call MaybeRunHelper (and has no agentbox-helper beside it) gets one
// clear error from Start naming the fix, instead of starting itself as
// its own helper over and over until thread creation fails.
func TestHelperNotWired(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	needSandbox(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "nowire")
	build := exec.Command("go", "build", "-o", bin, "./testdata/nowire")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin)
	c.Env = append(os.Environ(), "NOWIRE_WS="+ws, "NOWIRE_AUDIT="+filepath.Join(dir, "audit.jsonl"))
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	// The helper starts in the background: the error comes from Start or
	// from Wait (exit 4 or 5).
	if ctx.Err() != nil || !errors.As(err, &ee) || (ee.ExitCode() != 4 && ee.ExitCode() != 5) ||
		!strings.Contains(string(out), "did not call agentbox.MaybeRunHelper()") {
		t.Fatalf("a program without MaybeRunHelper: %v (ctx %v)\n%s", err, ctx.Err(), out)
	}
}
