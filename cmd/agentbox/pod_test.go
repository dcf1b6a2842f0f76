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
// runtime's profile may take away (ptrace, Landlock, seccomp) is a
// refusal in one line, exit 125, nothing started.
func TestUnderContainerRuntime(t *testing.T) {
	p := newPod(t)
	base := []string{"run", "--role", "developer", "--workspace", "/ws", "--approve", "none", "--audit", "-"}
	// the agent's steps, each decided when it starts
	steps := "echo made by the agent > /ws/target/out.txt\ngit --version\ncat /etc/shadow\ngit push origin main\necho done\n"
	if err := os.WriteFile(filepath.Join(p.ws, "target", "steps.sh"), []byte(steps), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(p.ws, "target", "steps.sh"), podUID, podUID)
	out, errOut, code := p.run(t, podOpts{}, append(base, "--", "sh", "steps.sh")...)
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
	if !built || !slices.Equal(copied, []string{"bin/agentbox", "bin/agentbox-helper"}) {
		t.Errorf("Dockerfile: make build %v, copies %v; want bin/agentbox and bin/agentbox-helper", built, copied)
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
