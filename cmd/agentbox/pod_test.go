package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mobyseccomp "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/agentbox/agentbox/internal/fakemodel"
	"github.com/agentbox/agentbox/internal/testkit"
)

// A container runtime's conditions, from its own published data: runc
// (the runtime containerd and CRI-O start) runs agentbox from an OCI
// bundle whose seccomp profile is the Docker/containerd default as
// github.com/moby/profiles/seccomp generates it for the process's
// capabilities, with the runtime's default capability set, no_new_privs,
// a non-root uid, new pid/net/ipc/uts/mount namespaces, a read-only
// cgroupfs and sysfs, and a read-only root file system holding the host's
// /usr and /etc (the image) plus the workspace volume.

// dockerDefaultCaps is the capability set containerd and Docker give a
// container by default (moby's oci/caps/defaults.go).
var dockerDefaultCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}

// pod is an OCI bundle runc runs agentbox from.
type pod struct {
	dir, rootfs, bin, ws, home, tmp string
}

const podUID = 1000

var (
	podBinOnce sync.Once
	podBinDir  string
	podBinErr  error
)

// newPod builds the bundle's root file system and a workspace owned by
// the pod's user. It skips, saying why, without root or runc.
func newPod(t *testing.T) *pod {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("reason: running runc needs root")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("reason: runc is not installed (apt-get install runc; .ci/run installs it)")
	}
	podBinOnce.Do(func() {
		podBinDir, podBinErr = os.MkdirTemp("", "agentbox-pod-bin")
		if podBinErr != nil {
			return
		}
		os.Chmod(podBinDir, 0o755)
		cmd := exec.Command("go", "build", "-o", podBinDir+"/", "./cmd/agentbox", "./cmd/agentbox-helper")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			podBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if podBinErr != nil {
		t.Fatal(podBinErr)
	}
	d := t.TempDir()
	os.Chmod(d, 0o755)
	p := &pod{dir: d, rootfs: filepath.Join(d, "rootfs"), bin: podBinDir, ws: filepath.Join(d, "ws"), home: filepath.Join(d, "home"), tmp: filepath.Join(d, "tmp")}
	if err := os.Mkdir(p.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p.tmp, 0o777|os.ModeSticky)
	for _, sub := range []string{"usr", "etc", "proc", "dev", "sys", "tmp", "ws", "home/agent", "opt/agentbox", "run"} {
		if err := os.MkdirAll(filepath.Join(p.rootfs, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// /bin, /lib... as the host has them: symlinks into /usr (merged
	// /usr), or directories bound below
	for _, top := range []string{"bin", "sbin", "lib", "lib64", "lib32", "libx32"} {
		target, err := os.Readlink("/" + top)
		switch {
		case err == nil:
			os.Symlink(target, filepath.Join(p.rootfs, top))
		case dirExists("/" + top):
			os.MkdirAll(filepath.Join(p.rootfs, top), 0o755)
		}
	}
	// the workspace volume and the user's home, owned by the pod's user
	if out, err := exec.Command(filepath.Join(p.bin, "agentbox"), "init", p.ws).CombinedOutput(); err != nil {
		t.Fatalf("agentbox init: %v %s", err, out)
	}
	os.MkdirAll(p.home, 0o755)
	for _, dir := range []string{p.ws, p.home} {
		if out, err := exec.Command("chown", "-R", fmt.Sprint(podUID)+":"+fmt.Sprint(podUID), dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	return p
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// podOpts change the runtime's defaults for one test.
type podOpts struct {
	caps []string // nil: the runtime's defaults
	// env is added to the container's environment; binds are extra
	// read-only bind mounts (destination -> source)
	env   []string
	binds map[string]string
	// deny are syscalls taken out of the default profile (a runtime or a
	// profile that refuses them)
	deny []string
}

// spec is the OCI runtime spec the runtime would write for the agent
// container of examples/kubernetes/job.yaml.
func (p *pod) spec(t *testing.T, o podOpts, args []string) *specs.Spec {
	t.Helper()
	caps := o.caps
	if caps == nil {
		caps = dockerDefaultCaps
	}
	ro := []string{"rbind", "ro", "nosuid", "nodev"}
	s := &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "agent",
		Process: &specs.Process{
			User:            specs.User{UID: podUID, GID: podUID},
			Args:            args,
			Env:             []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin:/opt/agentbox", "HOME=/home/agent", "TERM=dumb"},
			Cwd:             "/ws/target",
			NoNewPrivileges: true,
			Capabilities:    &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
			{Destination: "/tmp", Type: "bind", Source: p.tmp, Options: []string{"rbind", "rw"}}, // the image's writable /tmp
			{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=755"}},
			{Destination: "/usr", Type: "bind", Source: "/usr", Options: ro},
			{Destination: "/etc", Type: "bind", Source: "/etc", Options: ro},
			{Destination: "/opt/agentbox", Type: "bind", Source: p.bin, Options: ro},
			{Destination: "/ws", Type: "bind", Source: p.ws, Options: []string{"rbind", "rw"}},
			{Destination: "/home/agent", Type: "bind", Source: p.home, Options: []string{"rbind", "rw"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace}, {Type: specs.CgroupNamespace}},
			MaskedPaths: []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	s.Process.Env = append(s.Process.Env, o.env...)
	for dst, src := range o.binds {
		os.MkdirAll(filepath.Join(p.rootfs, dst), 0o755)
		s.Mounts = append(s.Mounts, specs.Mount{Destination: dst, Type: "bind", Source: src, Options: ro})
	}
	for _, top := range []string{"bin", "sbin", "lib", "lib64", "lib32", "libx32"} {
		if _, err := os.Readlink("/" + top); err != nil && dirExists("/"+top) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/" + top, Type: "bind", Source: "/" + top, Options: ro})
		}
	}
	sc, err := mobyseccomp.GetDefaultProfile(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range o.deny {
		for i := range sc.Syscalls {
			sc.Syscalls[i].Names = slices.DeleteFunc(sc.Syscalls[i].Names, func(n string) bool { return n == name })
		}
	}
	s.Linux.Seccomp = sc
	return s
}

// run runs args (agentbox's argv after "agentbox") in the pod and
// returns its stdout, stderr and exit status.
func (p *pod) run(t *testing.T, o podOpts, args ...string) (string, string, int) {
	t.Helper()
	return p.runArgv(t, o, append([]string{"/opt/agentbox/agentbox"}, args...)...)
}

// runArgv runs argv as the container's process.
func (p *pod) runArgv(t *testing.T, o podOpts, argv ...string) (string, string, int) {
	t.Helper()
	s := p.spec(t, o, argv)
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("agentbox-pod-%d", time.Now().UnixNano())
	state := filepath.Join(p.dir, "runc-state")
	cmd := exec.Command("runc", "--root", state, "run", "--bundle", p.dir, id)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		exec.Command("runc", "--root", state, "kill", id, "KILL").Run()
		<-done
		t.Fatalf("runc run did not end in 3 minutes:\n%s%s", out.String(), errb.String())
	}
	exec.Command("runc", "--root", state, "delete", "--force", id).Run()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestUnderContainerRuntime: agentbox as the entrypoint of a container
// with the runtime's defaults (examples/kubernetes/job.yaml's agent): the
// kernel boundary, the exec supervisor and the audit log on stdout work;
// the cgroupfs is read-only, so the run goes on without per-run limits
// and says so; --network proxy, which needs a network namespace of its
// own, is refused in one line naming the setting; each protection a
// runtime's profile may take away (ptrace, Landlock, seccomp(2)) is a
// refusal in one line, exit 125, nothing started. The same with the
// Job's own securityContext (every capability dropped).
func TestUnderContainerRuntime(t *testing.T) {
	p := newPod(t)
	// as examples/kubernetes/job.yaml: the runtime's default profile
	// refuses the user namespace that would keep chmod and utime of the
	// pod's own files outside the workspace from the agent
	base := []string{"run", "--role", "developer", "--workspace", "/ws", "--approve", "none", "--audit", "-", "--allow-weaker", "metadata"}
	// the agent's steps, each decided when it starts
	steps := "echo made by the agent > /ws/target/out.txt\ngit --version\ncat /etc/shadow\ngit push origin main\necho done\n"
	if err := os.WriteFile(filepath.Join(p.ws, "target", "steps.sh"), []byte(steps), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(p.ws, "target", "steps.sh"), podUID, podUID)
	// without it, one line naming what is missing and the flag
	out, errOut, code := p.run(t, podOpts{}, append(slices.Clone(base[:len(base)-2]), "--", "sh", "steps.sh")...)
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); code != 125 || !strings.Contains(lines[len(lines)-1], "--allow-weaker metadata") {
		t.Errorf("without --allow-weaker metadata: exit %d, want 125 and a line naming the flag:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(p.ws, "target", "out.txt")); err == nil {
		t.Error("without --allow-weaker metadata the agent's steps ran")
	}
	out, errOut, code = p.run(t, podOpts{}, append(base, "--", "sh", "steps.sh")...)
	if code != 0 || !strings.Contains(out, "done") {
		t.Errorf("the agent's steps: exit %d, want 0 with every step run:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`"event":"launch"`, `"event":"exec"`, `"action":"tool:git:push origin main"`, `"decision":"deny"`, `"event":"exit"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit log on stdout lacks %s (exit %d):\nstdout:\n%s\nstderr:\n%s", want, code, out, errOut)
		}
	}
	for _, want := range []string{"git version", "Permission denied", "agentbox: denied: git push origin main"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("the run's output lacks %q (exit %d):\n%s%s", want, code, out, errOut)
		}
	}
	if b, err := os.ReadFile(filepath.Join(p.ws, "target", "out.txt")); err != nil || string(b) != "made by the agent\n" {
		t.Errorf("target/out.txt from inside the pod: %q %v", b, err)
	}
	// an ask answered over the approval socket, by an orchestrator
	// outside the container (here the test, through the volume)
	victim := filepath.Join(p.ws, "target", "victim")
	os.WriteFile(victim, []byte("x\n"), 0o644)
	os.Chown(victim, podUID, podUID)
	sock := filepath.Join(p.home, "approve.sock")
	asked := make(chan map[string]any, 1)
	go testkit.AnswerApprovals(sock, func(req map[string]any) string {
		select {
		case asked <- req:
		default:
		}
		return "allow"
	})
	out, errOut, code = p.run(t, podOpts{}, "run", "--role", "developer", "--workspace", "/ws", "--approve", "socket:/home/agent/approve.sock",
		"--audit", "-", "--checkpoints", "off", "--allow-weaker", "metadata", "--", "rm", "/ws/target/victim")
	select {
	case req := <-asked:
		if code != 0 || !strings.Contains(fmt.Sprint(req["argv"]), "rm") {
			t.Errorf("approved rm: exit %d, request %v\n%s%s", code, req, out, errOut)
		}
	default:
		t.Errorf("no approval request reached the socket (exit %d)\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(victim); err == nil {
		t.Error("the approved rm did not run")
	}
	// the Job's own securityContext: capabilities: {drop: [ALL]}
	out, errOut, code = p.run(t, podOpts{caps: []string{}}, append(base, "--", "sh", "steps.sh")...)
	if code != 0 || !strings.Contains(out, "done") || !strings.Contains(out+errOut, "agentbox: denied: git push origin main") {
		t.Errorf("with every capability dropped: exit %d\n%s%s", code, out, errOut)
	}

	// what a runtime's profile can take away: one line, exit 125, nothing started
	for _, c := range []struct {
		name string
		deny []string
		want string
	}{
		{"no ptrace", []string{"ptrace"}, "--no-exec-policy"},
		{"no landlock", []string{"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"}, "--best-effort"},
		{"no seccomp", []string{"seccomp"}, "seccomp(2) system call is refused"},
		// the runtime's own profile: no network namespace for the sandbox
		{"network proxy", nil, "--network tcp:PORT"},
	} {
		os.Remove(filepath.Join(p.ws, "target", "ran.txt"))
		args := base
		if c.deny == nil {
			args = append(slices.Clone(base), "--allow-host", "example.test")
		}
		out, errOut, code := p.run(t, podOpts{deny: c.deny}, append(args, "--", "sh", "-c", "echo ran > /ws/target/ran.txt")...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if last := lines[len(lines)-1]; code != 125 || !strings.Contains(last, c.want) || !strings.HasPrefix(last, "agentbox: ") {
			t.Errorf("%s: exit %d, want 125 and a last line naming %s:\n%s%s", c.name, code, c.want, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(p.ws, "target", "ran.txt")); err == nil {
			t.Errorf("%s: the command ran", c.name)
		}
	}
}

// TestDockerfileCopiesBuiltBinaries: the image's Dockerfile builds with
// make build and copies exactly the binaries it makes, and its entrypoint
// is agentbox (no container engine here: its steps are checked).
func TestDockerfileCopiesBuiltBinaries(t *testing.T) {
	b, err := os.ReadFile("../../examples/kubernetes/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := exec.Command("make", "-n", "-C", "../..", "build").Output()
	if err != nil {
		t.Skipf("reason: make -n build: %v", err)
	}
	var copied []string
	built := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "RUN" && strings.Join(f[1:], " ") == "make build":
			built = true
		case len(f) >= 3 && f[0] == "COPY" && strings.HasPrefix(f[1], "--from=build"):
			for _, src := range f[2 : len(f)-1] {
				copied = append(copied, strings.TrimPrefix(src, "/src/"))
			}
		}
	}
	if !built || !slices.Equal(copied, []string{"bin/agentbox", "bin/agentbox-helper", "bin/agentbox-export"}) {
		t.Errorf("Dockerfile: make build %v, copies %v; want bin/agentbox, bin/agentbox-helper and bin/agentbox-export", built, copied)
	}
	for _, out := range copied {
		if !strings.Contains(string(mk), "-o "+out+" ") {
			t.Errorf("make build does not make %s", out)
		}
	}
	if !strings.Contains(string(b), `ENTRYPOINT ["/usr/local/bin/agentbox"]`) {
		t.Error("the image's entrypoint is not agentbox")
	}
}

// serveFakeModel is the test binary as the fake model API inside a pod
// (the container's loopback is not the host's): it serves dir/script.json
// on addr, says so with dir/ready, and when dir/stop appears writes what
// the agent sent back to dir/results.json and exits.
func serveFakeModel(dir, addr string) {
	b, err := os.ReadFile(filepath.Join(dir, "script.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var script []fakemodel.Step
	if err := json.Unmarshal(b, &script); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := fakemodel.StartOn(addr, script)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			break
		}
	}
	res, _ := json.Marshal(map[string]any{"results": srv.ToolResults(), "guide": srv.Saw("You are running inside agentbox")})
	os.WriteFile(filepath.Join(dir, "results.json"), res, 0o644)
	srv.Close()
}

// TestClaudeCodeInPod: the real Claude Code CLI under agentbox as a Job
// runs it, inside the container-runtime harness, against a fake model
// API served in the same pod: its tool calls run, the push is refused,
// and the audit log records them.
func TestClaudeCodeInPod(t *testing.T) {
	claude := needCLI(t, "claude", "@anthropic-ai/claude-code")
	p := newPod(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(p.dir, "testbin")
	os.Mkdir(test, 0o755)
	if out, err := exec.Command("cp", self, filepath.Join(test, "agentbox.test")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	shared := filepath.Join(p.home, "fake") // outside the sandbox's reach
	os.MkdirAll(shared, 0o755)
	steps := []fakemodel.Step{
		bash("echo from-the-agent > agent.txt && cat agent.txt"),
		bash("git push origin main"),
		{Text: "All done."},
	}
	b, _ := json.Marshal(steps)
	os.WriteFile(filepath.Join(shared, "script.json"), b, 0o644)
	exec.Command("chown", "-R", fmt.Sprint(podUID)+":"+fmt.Sprint(podUID), p.home).Run()
	const port = "18080"
	script := `/opt/testbin/agentbox.test & 
while [ ! -e /home/agent/fake/ready ]; do sleep 0.05; done
/opt/agentbox/agentbox run --role developer --workspace /ws --approve none --audit /home/agent/audit.jsonl --allow-weaker metadata --network tcp:` + port + ` -- ` + claude + ` -p "do the scripted work" --dangerously-skip-permissions
rc=$?
touch /home/agent/fake/stop; wait; exit $rc`
	o := podOpts{
		env: []string{"AGENTBOX_TEST_FAKEMODEL=/home/agent/fake", "AGENTBOX_TEST_FAKEMODEL_ADDR=127.0.0.1:" + port,
			"ANTHROPIC_API_KEY=" + fakeAnthropicKey, "ANTHROPIC_BASE_URL=http://127.0.0.1:" + port},
		binds: map[string]string{"/opt/testbin": test},
	}
	out, errOut, code := p.runArgv(t, o, "/bin/sh", "-c", script)
	if code != 0 || !strings.Contains(out, "All done.") {
		t.Fatalf("claude in the pod: exit %d\n%s%s", code, out, errOut)
	}
	res, err := os.ReadFile(filepath.Join(shared, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []string
		Guide   bool
	}
	json.Unmarshal(res, &got)
	if len(got.Results) < 2 || !strings.Contains(got.Results[0], "from-the-agent") || !strings.Contains(got.Results[1], "agentbox: denied: git push origin main") {
		t.Errorf("tool results the model got back: %q", got.Results)
	}
	log, err := os.ReadFile(filepath.Join(p.home, "audit.jsonl"))
	if err != nil {
		ents, _ := os.ReadDir(p.home)
		t.Logf("home: %v", ents)
	}
	if !strings.Contains(string(log), `"decided":"tool:git:push origin main"`) || strings.Contains(string(log), fakeAnthropicKey) {
		t.Errorf("the pod's audit log (%d bytes): push not recorded, or the key in it:\n%.3000s\n%s%s", len(log), log, out, errOut)
	}
}

// TestDefaultProfileCalls: what the Docker/containerd default seccomp
// profile, generated for a container with no capabilities (the Job's),
// allows of the calls agentbox makes, as examples/kubernetes/README.md
// states it: everything but pidfd_getfd (a denied program's stderr is then
// reopened through /proc) and new user namespaces (--network proxy).
func TestDefaultProfileCalls(t *testing.T) {
	s := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	sc, err := mobyseccomp.GetDefaultProfile(s)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, sys := range sc.Syscalls {
		if sys.Action != specs.ActAllow || len(sys.Args) > 0 {
			continue
		}
		for _, n := range sys.Names {
			allowed[n] = true
		}
	}
	for _, n := range []string{"ptrace", "seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
		"pidfd_open", "pidfd_send_signal", "process_vm_readv", "prctl", "wait4", "inotify_init1", "inotify_add_watch"} {
		if !allowed[n] {
			t.Errorf("the default profile no longer allows %s (README says it does)", n)
		}
	}
	for _, n := range []string{"pidfd_getfd", "unshare"} {
		if allowed[n] {
			t.Errorf("the default profile now allows %s unconditionally (README says it does not)", n)
		}
	}
}
