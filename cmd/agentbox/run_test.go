package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

func TestParseNetwork(t *testing.T) {
	cases := []struct {
		in   string
		want []uint16
		err  string
	}{
		{"none", nil, ""},
		{"proxy", nil, ""},
		{"tcp:443", []uint16{443}, ""},
		{"tcp:443,80,443", []uint16{443, 80}, ""},
		{"tcp: 22 ,80", []uint16{22, 80}, ""},
		{"tcp:", nil, "want none, proxy or tcp:"},
		{"udp:53", nil, "want none, proxy or tcp:"},
		{"tcp:0", nil, "port \"0\""},
		{"tcp:65536", nil, "port \"65536\""},
		{"tcp:http", nil, "port \"http\""},
		{"all", nil, "want none, proxy or tcp:"},
	}
	for _, c := range cases {
		n, err := parseNetwork(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseNetwork(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if c.in == "proxy" && !n.Proxy {
			t.Errorf("parseNetwork(proxy) = %+v, want Proxy", n)
		}
		if err != nil || !slices.Equal(n.TCPConnect, c.want) {
			t.Errorf("parseNetwork(%q) = %v, %v; want %v", c.in, n.TCPConnect, err, c.want)
		}
	}
}

func FuzzParseNetwork(f *testing.F) {
	for _, s := range []string{"none", "tcp:443,80", "tcp:", "tcp:0,,1", "tcp:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseNetwork(s)
		if err != nil {
			return
		}
		for _, p := range n.TCPConnect {
			if p == 0 {
				t.Errorf("parseNetwork(%q) accepted port 0", s)
			}
		}
		if s != "none" && len(n.TCPConnect) == 0 {
			t.Errorf("parseNetwork(%q) accepted an empty grant", s)
		}
		_ = policy.Network{}
	})
}

func TestInitWorkspace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	created, err := boundary.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 6 {
		t.Errorf("created %v, want the dir, 4 areas and agentbox.yaml", created)
	}
	for _, a := range []string{"context", "target", "feedback", "agents"} {
		if st, err := os.Stat(filepath.Join(dir, a)); err != nil || !st.IsDir() {
			t.Errorf("%s missing", a)
		}
	}
	pf := filepath.Join(dir, "agentbox.yaml")
	b, err := os.ReadFile(pf)
	if err != nil || !strings.Contains(string(b), "version: 1") || !strings.Contains(string(b), "# rules:") {
		t.Fatalf("agentbox.yaml: %v\n%s", err, b)
	}
	if _, err := load.Files(pf); err != nil {
		t.Errorf("the project template does not validate: %v", err)
	}
	// Idempotent, and keeps an edited policy.
	os.WriteFile(pf, []byte("version: 1\n# mine\n"), 0o644)
	created, err = boundary.Init(dir)
	if err != nil || len(created) != 0 {
		t.Errorf("second init: created %v, err %v", created, err)
	}
	if b, _ := os.ReadFile(pf); string(b) != "version: 1\n# mine\n" {
		t.Errorf("init overwrote the project policy")
	}
	// Refusals.
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := boundary.Init(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("init on a file: %v", err)
	}
	ws2 := t.TempDir()
	os.Symlink(t.TempDir(), filepath.Join(ws2, "target"))
	if _, err := boundary.Init(ws2); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("init with a symlinked area: %v", err)
	}
}

func TestMain(m *testing.M) {
	if agentbox.MaybeRunHelper() {
		return
	}
	if os.Getenv("AGENTBOX_TEST_MAIN") == "1" {
		// Act as the agentbox binary (for tests that need a real terminal).
		os.Unsetenv("AGENTBOX_TEST_MAIN")
		main()
		return
	}
	if dir := os.Getenv("AGENTBOX_TEST_FAKEMODEL"); dir != "" {
		serveFakeModel(dir, os.Getenv("AGENTBOX_TEST_FAKEMODEL_ADDR")) // inside a pod (pod_test.go)
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

func TestRunInteractiveShellUnderPTY(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	cmd := exec.Command(os.Args[0], "run", "--role", "clitest", "--workspace", ws, "--policy", roleFile,
		"--no-user-policy", "--approve", "none", "--no-exec-policy", "--audit", auditFile, "--", "/bin/sh", "-i")
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1", "TERM=dumb", "PS1=$ ")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 91})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var mu sync.Mutex
	var screen []byte
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			mu.Lock()
			screen = append(screen, b[:n]...)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	// Type once the shell shows its prompt (it runs in its own pty, so
	// this also proves the relay is up).
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		up := strings.Contains(string(screen), "$ ") || strings.Contains(string(screen), "# ") // PS1 is scrubbed: the default prompt
		mu.Unlock()
		if up {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no shell prompt:\n%s", screen)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The inner pty has the outer size; arithmetic proves a live shell; the
	// shell's tty is a new pty, not ours.
	io.WriteString(ptmx, "stty size; echo $((6*7)); tty; exit 5\n")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("interactive shell did not exit")
	}
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
	}
	mu.Lock()
	got := string(screen)
	mu.Unlock()
	if code := cmd.ProcessState.ExitCode(); code != 5 {
		t.Errorf("exit %d, want 5; output:\n%s", code, got)
	}
	for _, want := range []string{"24 91", "42", "/dev/pts/"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if outer := cmd.Stdin.(*os.File).Name(); strings.Contains(got, outer+"\r") || strings.Contains(got, outer+"\n") {
		t.Errorf("the shell runs on the outer terminal %s, want its own pty:\n%s", outer, got)
	}
}

const benchRole = `version: 1
roles:
  clitest:
    description: role for the run CLI tests
    default: allow
    filesystem: {context: ro, target: rwx, feedback: rw, own_agent: rwx, other_agents: ro}
    network: none
`

// cliWS makes a workspace with init and a private role file.
func cliWS(t *testing.T) (ws, roleFile, auditFile string) {
	t.Helper()
	if abi := sandbox.LandlockABI(); abi < sandbox.RequiredLandlockABI {
		t.Skipf("reason: Landlock ABI %d < %d", abi, sandbox.RequiredLandlockABI)
	}
	dir := t.TempDir()
	ws = filepath.Join(dir, "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	roleFile = filepath.Join(dir, "role.yaml")
	if err := os.WriteFile(roleFile, []byte(benchRole), 0o600); err != nil {
		t.Fatal(err)
	}
	return ws, roleFile, filepath.Join(dir, "audit.jsonl")
}

func TestRunCLI(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	base := []string{"run", "--role", "clitest", "--workspace", ws, "--policy", roleFile, "--no-user-policy", "--approve", "none"}
	cases := []struct {
		name    string
		args    []string
		code    int
		errPart string
	}{
		{"exit status propagates", []string{"--audit", auditFile, "--", "/bin/sh", "-c", "exit 3"}, 3, ""},
		{"signal status", []string{"--audit", auditFile, "--", "/bin/sh", "-c", "kill -KILL $$"}, 137, ""},
		{"not found", []string{"--audit", auditFile, "--", "no-such-cmd-xyz"}, exitNotFound, ""},
		{"timeout", []string{"--audit", auditFile, "--timeout", "300ms", "--", "/bin/sleep", "30"}, 124, ""},
		{"no exec policy flag", []string{"--audit", auditFile, "--no-exec-policy", "--", "/bin/true"}, 0, ""},
		{"audit log inside a writable area", []string{"--audit", filepath.Join(ws, "feedback", "a.jsonl"), "--", "/bin/true"}, exitFailure, "sandbox can write"},
		{"audit log inside a readable area", []string{"--audit", filepath.Join(ws, "context", "a.jsonl"), "--", "/bin/true"}, exitFailure, "sandbox can read"},
		{"bad memory", []string{"--memory", "lots", "--", "/bin/true"}, exitRunUsage, `--memory "lots"`},
		{"bad network", []string{"--network", "udp:53", "--", "/bin/true"}, exitRunUsage, `--network "udp:53"`},
		{"bad timeout", []string{"--timeout", "-1s", "--", "/bin/true"}, exitRunUsage, `--timeout "-1s"`},
		{"bad pids", []string{"--pids", "0", "--", "/bin/true"}, exitRunUsage, `--pids "0"`},
		{"bad approve", []string{"--approve", "email", "--", "/bin/true"}, exitRunUsage, `--approve "email"`},
		{"bad agent", []string{"--agent", "../x", "--", "/bin/true"}, exitRunUsage, "--agent"},
		{"no command", []string{"--audit", auditFile}, exitRunUsage, "no command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, "", append(slices.Clone(base), c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.errPart) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.errPart)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 && c.errPart != "" {
				t.Errorf("error is not one line: %q", stderr)
			}
		})
	}
	b, err := os.ReadFile(auditFile)
	if err != nil || !strings.Contains(string(b), `"event":"launch"`) || !strings.Contains(string(b), `"event":"exit"`) ||
		!strings.Contains(string(b), `"limit":"timeout"`) {
		t.Errorf("audit log lacks launch/exit/timeout events: %v\n%s", err, b)
	}
}

func TestRunCLIRefusesWritablePolicy(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	inTarget := filepath.Join(ws, "target", "role.yaml")
	b, _ := os.ReadFile(roleFile)
	if err := os.WriteFile(inTarget, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "", "run", "--role", "clitest", "--workspace", ws, "--policy", inTarget,
		"--no-user-policy", "--approve", "none", "--audit", auditFile, "--", "/bin/true")
	if code != exitFailure || !strings.Contains(stderr, "which the sandbox can write") {
		t.Errorf("exit %d, stderr %q; want 125 refusing the policy file", code, stderr)
	}
	os.RemoveAll(filepath.Join(ws, "feedback"))
	_, stderr, code = runCLI(t, "", "run", "--role", "clitest", "--workspace", ws, "--policy", roleFile,
		"--no-user-policy", "--approve", "none", "--audit", auditFile, "--", "/bin/true")
	if code != exitFailure || !strings.Contains(stderr, "feedback: missing") {
		t.Errorf("exit %d, stderr %q; want 125 naming the missing area", code, stderr)
	}
}

// sleeps lists pids of `sleep MARKER...` processes (argv[0] is sleep).
func sleeps(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(string(b), "sleep\x00"+marker) {
			out = append(out, e.Name())
		}
	}
	return out
}

// findProcs lists pids whose NUL-separated cmdline contains s.
func findProcs(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestRunKilledLauncherLeavesNothing SIGKILLs agentbox itself mid-run:
// with --trace-all, PTRACE_O_EXITKILL and the helper's pdeathsig take the
// whole tree down; in the default notify mode the command dies and what
// still runs can start no program any more (its exec notifications have
// no listener); with a cgroup the next run kills what is left.
func TestRunKilledLauncherLeavesNothing(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	cases := []struct {
		name  string
		extra []string
		// survivors: processes may outlive the launcher, but cannot exec
		survivors bool
	}{
		{"exec supervisor tracing everything", []string{"--trace-all"}, false},
		{"exec supervisor, notify mode: survivors cannot exec", nil, true},
		{"cgroup, next run cleans", []string{"--no-exec-policy", "--pids", "200"}, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if slices.Contains(c.extra, "--pids") {
				if err := cgroup.Available(); err != nil {
					t.Skipf("reason: %v", err)
				}
			}
			if c.survivors {
				if err := helper.ExecNotifySupported(); err != nil {
					t.Skipf("reason: %v", err)
				}
			}
			marker := strconv.Itoa(3000 + i*100 + os.Getpid()%100)
			verdict := filepath.Join(ws, "target", "exec-after-kill-"+marker)
			args := append([]string{"run", "--role", "clitest", "--workspace", ws, "--policy", roleFile,
				"--no-user-policy", "--approve", "none", "--audit", auditFile}, c.extra...)
			script := "setsid sleep " + marker + ".1 & sleep " + marker + ".2 & sleep " + marker + ".3"
			if c.survivors {
				// A background shell that keeps starting programs: once the
				// supervisor is gone, exec fails and it records that.
				script = "setsid sh -c ': > " + verdict + ".started; while /bin/true; do :; done; echo exec-refused > " + verdict + "' " + marker + ".1 & " + script
			}
			args = append(args, "--", "/bin/sh", "-c", script)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Whatever happens, nothing of this case outlives it (a later
			// run with the same marker would count its sleeps).
			defer func() {
				cmd.Process.Kill()
				for _, p := range append(findProcs("sleep\x00"+marker), findProcs(marker+".1")...) {
					if pid, err := strconv.Atoi(p); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}()
			deadline := time.Now().Add(10 * time.Second)
			// Counted by argv[0]: `setsid sleep` matches the marker before
			// it has exec'd sleep, and its cmdline is briefly empty while
			// it does.
			for len(sleeps(marker)) < 3 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := len(sleeps(marker)); n < 3 {
				t.Fatalf("only %d sleeps started", n)
			}
			if c.survivors {
				// The loop runs (its shell has exec'd and is not held at a
				// decision, where the launcher's death would kill it).
				for time.Now().Before(deadline) {
					if _, err := os.Stat(verdict + ".started"); err == nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			cmd.Process.Kill()
			cmd.Wait()
			if slices.Contains(c.extra, "--pids") {
				// The next run removes the stale cgroup and kills what is in it.
				_, stderr, code := runCLI(t, "", "run", "--role", "clitest", "--workspace", ws, "--policy", roleFile,
					"--no-user-policy", "--approve", "none", "--audit", auditFile, "--no-exec-policy", "--pids", "200", "--", "/bin/true")
				if code != 0 {
					t.Fatalf("next run: exit %d: %s", code, stderr)
				}
			}
			if c.survivors {
				for time.Now().Before(deadline) {
					if b, _ := os.ReadFile(verdict); strings.TrimSpace(string(b)) == "exec-refused" {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if b, _ := os.ReadFile(verdict); strings.TrimSpace(string(b)) != "exec-refused" {
					t.Errorf("a process that outlived the killed launcher could still start programs (%s: %q)", verdict, b)
				}
				for _, p := range append(findProcs("sleep\x00"+marker), findProcs(marker+".1")...) {
					if pid, err := strconv.Atoi(p); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return
			}
			for len(findProcs("sleep\x00"+marker)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if left := findProcs("sleep\x00" + marker); len(left) > 0 {
				t.Errorf("processes outlived the killed launcher: %v", left)
				for _, p := range left {
					if pid, err := strconv.Atoi(p); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
		})
	}
}

// TestUsageErrorsOneLine: a flag error is one line naming the flag and
// --help; run exits 125 (never 2, which the command itself may return),
// other subcommands 2.
func TestUsageErrorsOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--bogus", "--", "true"}, exitRunUsage, "run: flag provided but not defined: -bogus (see agentbox run --help)"},
		{[]string{"run", "--", "true"}, exitRunUsage, `run: Required flag "role" not set`},
		{[]string{"run", "--role", "developer", "--", "true"}, exitRunUsage, "no agentbox workspace (context/, target/, feedback/, agents/) at or above"},
		{[]string{"check", "--bogus"}, exitUsage, "check: flag provided but not defined: -bogus (see agentbox check --help)"},
		{[]string{"audit", "verify", "--nope"}, exitUsage, "audit verify: flag provided but not defined: -nope"},
	} {
		_, stderr, code := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// TestLaunchLine: run says in one line at launch what the command gets —
// its network among it, so "no network" is never silent — and --quiet
// drops the line.
func TestLaunchLine(t *testing.T) {
	ws, roleFile, auditFile := cliWS(t)
	base := []string{"run", "--role", "clitest", "--workspace", ws, "--policy", roleFile, "--no-user-policy", "--approve", "none", "--audit", auditFile}
	_, stderr, code := runCLI(t, "", append(base, "--", "/bin/true")...)
	if code != 0 || !strings.Contains(stderr, "agentbox: role clitest") || !strings.Contains(stderr, "network: none (grant with --allow-host HOST or --network)") ||
		!strings.Contains(stderr, "no approver: asks are denied") {
		t.Errorf("launch line: exit %d stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "", append(base, "--quiet", "--", "/bin/true")...)
	if code != 0 || strings.Contains(stderr, "agentbox: role") {
		t.Errorf("--quiet: exit %d stderr %q", code, stderr)
	}
}

// TestNewAppFor: a subcommand named first gets a tree of that command only,
// with the same name and flags as in the whole tree; anything else gets
// every command, and each command's name matches its constructor.
func TestNewAppFor(t *testing.T) {
	all := newAppFor([]string{"agentbox"})
	if len(all.Commands) != len(commands) {
		t.Fatalf("whole tree has %d commands, want %d", len(all.Commands), len(commands))
	}
	for i, c := range commands {
		if got := all.Commands[i].Name; got != c.name {
			t.Errorf("command %d is %q, listed as %q", i, got, c.name)
		}
		one := newAppFor([]string{"agentbox", c.name, "--help"})
		if len(one.Commands) != 1 || one.Commands[0].Name != c.name || len(one.Commands[0].Flags) != len(all.Commands[i].Flags) {
			t.Errorf("tree for %q: %d commands", c.name, len(one.Commands))
		}
	}
	for _, args := range [][]string{{"agentbox", "--help"}, {"agentbox", "nosuch"}, {"agentbox", "--version"}} {
		if n := len(newAppFor(args).Commands); n != len(commands) {
			t.Errorf("%q: %d commands, want all %d", args, n, len(commands))
		}
	}
}

// TestNestedWorkspaceNotTrusted: an agent makes target/proj into a
// workspace with its own agentbox.yaml allowing what the role refuses;
// `run`, `check` and the hook started from there (the usage README shows)
// refuse it with one line naming the outer workspace and --workspace,
// instead of loading its file as the owner's project policy.
func TestNestedWorkspaceNotTrusted(t *testing.T) {
	outer := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(outer); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(outer, "target", "proj")
	for _, a := range []string{"context", "target", "feedback", "agents"} {
		if err := os.MkdirAll(filepath.Join(inner, a), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	planted := "version: 1\nrules:\n  - {decision: allow, command: git push}\n  - {decision: allow, host: \"*\"}\n"
	if err := os.WriteFile(filepath.Join(inner, "agentbox.yaml"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(inner, "target"))
	_, errOut, code := runCLI(t, "", "run", "--role", "developer", "--no-user-policy", "--audit", "-", "--", "true")
	if code == 0 || !strings.Contains(errOut, "not trusted") || !strings.Contains(errOut, "--workspace") {
		t.Errorf("run from a nested workspace: exit %d %q", code, errOut)
	}
	out, errOut, code := runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--", "git", "push", "origin", "main")
	if code != exitBadInput || !strings.Contains(errOut, "not trusted") {
		t.Errorf("check from a nested workspace: exit %d %q %q", code, out, errOut)
	}
	in := `{"hook_event_name":"PreToolUse","cwd":"` + inner + `/target","tool_name":"Bash","tool_input":{"command":"git push origin main"}}`
	out, errOut, code = runCLI(t, in, "hook", "claude-code", "--role", "developer", "--audit", "none")
	if code != exitHookBlock || !strings.Contains(out, `"deny"`) || !strings.Contains(errOut, "not trusted") {
		t.Errorf("hook from a nested workspace: exit %d %q %q", code, out, errOut)
	}
	// Named with --workspace, the owner trusts it.
	out, _, code = runCLI(t, "", "check", "--role", "developer", "--no-user-policy", "--workspace", inner, "--", "git", "push", "origin", "main")
	if code != exitCheckDeny && code != exitCheckAllow {
		t.Errorf("check --workspace inner: exit %d %s", code, out)
	}
}

// TestPrivatePTYs: a run whose stdio is no terminal (headless agents,
// CI) opens pseudo-terminals of its own — a devpts instance in the run's
// mount namespace — while the machine's terminals stay invisible: a pty
// held open outside is not listed inside, and no /dev/pts/N of the host
// can be opened. Needs the run's mount namespace (root).
func TestPrivatePTYs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: pseudo-terminals of the run's own need its mount namespace, made for root runs")
	}
	testkit.NeedProg(t, "python3")
	ws, roleFile, auditFile := cliWS(t)
	hostM, hostS, err := pty.Open() // a terminal of the machine's, held open
	if err != nil {
		t.Fatal(err)
	}
	defer hostM.Close()
	defer hostS.Close()
	os.WriteFile(filepath.Join(ws, "target", "t.py"), []byte(`import os, pty
out = open("out.txt", "w")
print("listed", sorted(os.listdir("/dev/pts")), file=out)
m, s = pty.openpty()
os.write(s, b"ping\n")
print("echo", os.read(m, 64), file=out)
`), 0o644)
	_, errOut, code := runCLI(t, "", "run", "--role", "clitest", "--workspace", ws, "--policy", roleFile, "--no-user-policy",
		"--approve", "none", "--no-exec-policy", "--audit", auditFile, "--quiet", "--cwd", filepath.Join(ws, "target"), "--", "python3", "t.py")
	b, _ := os.ReadFile(filepath.Join(ws, "target", "out.txt"))
	out := string(b)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "listed ['ptmx']") {
		t.Errorf("the machine's terminals are listed inside (host holds %s):\n%s", hostS.Name(), out)
	}
	if !strings.Contains(out, `echo b'ping\r\n'`) {
		t.Errorf("no working pty inside:\n%s%s", out, errOut)
	}
}
