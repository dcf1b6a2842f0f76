//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
)

// TestReadOnlyCgroupsInContainer: what agentbox sees inside a container —
// every cgroup mount read-only, in a private mount namespace — runs the
// role (which asks for memory and pids limits) with one line saying the
// limits fall to the container's own cgroup, and notes it in the launch
// event: neither a silent skip nor a refusal. The audit log goes to stdout
// (--audit -), as in examples/kubernetes, and verifies.
func TestReadOnlyCgroupsInContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: needs root to remount the cgroup filesystems read-only in a private mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("reason: unshare (util-linux) not installed")
	}
	if err := CheckLandlock(false); err != nil {
		t.Skipf("reason: %v", err)
	}
	bin := agentboxBinary(t)
	d := t.TempDir()
	ws := filepath.Join(d, "ws")
	if out, err := exec.Command(bin, "init", ws).CombinedOutput(); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	script := `set -e
awk '$3 ~ /^cgroup/ {print $2}' /proc/self/mounts | while read -r m; do mount -o remount,bind,ro "$m"; done
exec "$0" run --quiet --role developer --workspace "$1" --audit - --approve none --no-user-policy -- sh -c 'echo inside > /dev/stderr'`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, bin, ws)
	// Its checkpoints in the test's directory, and no change journal that
	// outlives the test (one was left running, its workspace gone).
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(d, "state"), "AGENTBOX_CHECKPOINT_JOURNAL=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run with read-only cgroups: %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "read-only") || !strings.Contains(lines[0], "container's own cgroup") || lines[1] != "inside" {
		t.Errorf("stderr %q; want one line saying the limits fall to the container's cgroup, then the command's", stderr.String())
	}
	if _, err := audit.Verify(bytes.NewReader(stdout.Bytes()), nil); err != nil {
		t.Errorf("audit log on stdout does not verify: %v\n%s", err, stdout.String())
	}
	var evs []audit.Event
	if err := audit.Read(bytes.NewReader(stdout.Bytes()), audit.Filter{}, func(e audit.Event) error {
		evs = append(evs, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Event != audit.EventLaunch || !strings.Contains(evs[0].Detail["cgroup"], "read-only") {
		t.Errorf("launch event %+v; want a cgroup note", evs[0])
	}
}

// TestRegularUserLimits: a regular user created for the test runs a role
// with limits. Without a delegated cgroup the run is refused with one line
// naming --no-limits (not the blanket --best-effort); with --no-limits it
// runs, as that user, and says at launch that the limits were not applied.
// asRegularUser creates a user for the test and returns a function that
// runs agentbox (a copy of the built binary, in a directory the user owns)
// as that user, the directory, and the user.
func asRegularUser(t *testing.T) (run func(args ...string) (int, string), dir string, u testkit.User) {
	t.Helper()
	if err := CheckLandlock(false); err != nil {
		t.Skipf("reason: %v", err)
	}
	u = testkit.NewUser(t, fmt.Sprintf("abt%d-", len(t.Name())))
	dir, err := os.MkdirTemp("", "agentbox-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	os.Chown(dir, u.UID, u.GID)
	bin, err := os.ReadFile(agentboxBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "agentbox")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	run = func(args ...string) (int, string) {
		// Leading "ENV:NAME=value" arguments are added to the environment.
		var extra []string
		for len(args) > 0 && strings.HasPrefix(args[0], "ENV:") {
			extra, args = append(extra, strings.TrimPrefix(args[0], "ENV:")), args[1:]
		}
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
			"AGENTBOX_RUN_REGISTRY=" + filepath.Join(dir, "runs"),
			// no journal process outlives the test (and keeps its user)
			"AGENTBOX_CHECKPOINT_JOURNAL=off"}, extra...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Cred()}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	return run, dir, u
}

func TestRegularUserLimits(t *testing.T) {
	run, dir, u := asRegularUser(t)
	name := u.Name
	ws := filepath.Join(dir, "ws")
	if code, out := run("init", ws); code != 0 {
		t.Fatalf("init as %s: %d %s", name, code, out)
	}
	base := []string{"run", "--role", "developer", "--workspace", ws, "--audit", filepath.Join(dir, "audit.jsonl"), "--no-user-policy"}
	code, out := run(append(base, "--", "id", "-u")...)
	switch {
	case code == 0:
		t.Logf("this user has a usable cgroup (delegated); the refusal is not exercised")
	case code != ExitFailure || !strings.Contains(out, "--no-limits") || strings.Contains(out, "--best-effort") || strings.Count(strings.TrimSpace(out), "\n") != 0:
		t.Errorf("without cgroups: exit %d, want 125 and one line naming --no-limits:\n%s", code, out)
	}
	code, out = run(append(base, "--no-limits", "--", "id", "-u")...)
	if code != 0 || !strings.Contains(out, strconv.Itoa(u.UID)+"\n") || !strings.Contains(out, "--no-limits") {
		t.Errorf("--no-limits as %s: exit %d\n%s", name, code, out)
	}
}

// TestRegularUserReview: a review run as a regular user: the overlay is
// mounted in a user namespace of the run's own (userxattr); target/ is
// unchanged, diff lists the run's writes (a whiteout and an opaque
// directory among them), apply carries them in.
func TestRegularUserReview(t *testing.T) {
	run, dir, _ := asRegularUser(t)
	ws := filepath.Join(dir, "ws")
	if code, out := run("init", ws); code != 0 {
		t.Fatalf("init: %d %s", code, out)
	}
	target := filepath.Join(ws, "target")
	for _, f := range []string{"keep.txt", "gone.txt", "d/old.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(target, f)), 0o755)
		os.WriteFile(filepath.Join(target, f), []byte(f+"\n"), 0o644)
	}
	if out, err := exec.Command("chown", "-R", "--reference="+dir, ws).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	code, out := run("run", "--review", "--role", "developer", "--workspace", ws, "--no-limits", "--no-user-policy", "--",
		"sh", "-c", "echo new > new.txt && rm gone.txt && rm -r d && mkdir d && echo fresh > d/fresh.txt && echo more >> keep.txt")
	if code != 0 {
		// Where the overlay cannot be mounted the run is refused in one
		// line naming --review, before the command runs (fail closed).
		if code != ExitFailure || !strings.Contains(out, "--review needs overlayfs") || !strings.Contains(out, "run without --review") {
			t.Fatalf("review run as a regular user: exit %d, want 0 or a refusal naming --review\n%s", code, out)
		}
		if b, _ := os.ReadFile(filepath.Join(target, "keep.txt")); string(b) != "keep.txt\n" || !fileExists(filepath.Join(target, "gone.txt")) {
			t.Fatal("a refused review run changed target/")
		}
		t.Skipf("reason: the overlay mount is refused here for a regular user (%s); the refusal was checked", strings.TrimSpace(out[strings.LastIndex(out, "):")+2:]))
	}
	if b, _ := os.ReadFile(filepath.Join(target, "keep.txt")); string(b) != "keep.txt\n" || !fileExists(filepath.Join(target, "gone.txt")) {
		t.Fatal("the regular user's review run changed target/")
	}
	i := strings.Index(out, "agentbox diff|apply|discard ")
	if i < 0 {
		t.Fatalf("no run id in the launch line:\n%s", out)
	}
	id := strings.TrimRight(strings.Fields(out[i+len("agentbox diff|apply|discard "):])[0], ")")
	code, out = run("diff", "--stat", id)
	for _, want := range []string{"added    new.txt", "deleted  gone.txt", "deleted  d/old.txt", "added    d/fresh.txt", "modified keep.txt"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("diff --stat lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if code, out = run("apply", id); code != 0 {
		t.Fatalf("apply: %d %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "keep.txt")); string(b) != "keep.txt\nmore\n" || fileExists(filepath.Join(target, "gone.txt")) || fileExists(filepath.Join(target, "d", "old.txt")) {
		t.Error("apply did not carry the run's writes into target/")
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestRegularUserProxy: network mode proxy as a regular user: the helper
// is started in a user namespace of its own (a multithreaded process
// cannot unshare one for itself), where it makes the network namespace.
func TestRegularUserProxy(t *testing.T) {
	run, dir, _ := asRegularUser(t)
	ws := filepath.Join(dir, "ws")
	if code, out := run("init", ws); code != 0 {
		t.Fatalf("init: %d %s", code, out)
	}
	code, out := run("run", "--role", "developer", "--workspace", ws, "--no-limits", "--no-user-policy", "--network", "proxy", "--",
		"sh", "-c", "id -u; cat /proc/net/dev | grep -c :")
	if code != 0 || !strings.Contains(out, "network through the egress proxy") {
		t.Fatalf("proxy mode as a regular user: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "\n1\n") && !strings.HasSuffix(strings.TrimSpace(out), "1") {
		t.Errorf("the network namespace has more than loopback:\n%s", out)
	}
}
