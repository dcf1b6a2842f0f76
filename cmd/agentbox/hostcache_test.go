package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/testkit"
)

// TestHostGoCache: a project depending on a module that is in the host's
// Go module cache (creack/pty, one of agentbox's own dependencies) builds
// under the developer role with no network: the host cache is offered
// read-only as a file:// GOPROXY and the launch line says so. With
// --host-caches off the same build cannot fetch the module. A cache that
// is missing falls back with one line; one inside the workspace refuses
// the run.
func TestHostGoCache(t *testing.T) {
	testkit.NeedProg(t, "go")
	w := newAgentWorld(t)
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("reason: go env: %v", err)
	}
	modcache := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(modcache, "cache", "download", "github.com", "creack", "pty", "@v", "v1.1.24.zip")); err != nil {
		t.Skipf("reason: github.com/creack/pty@v1.1.24 is not in the host module cache (%v); go mod download fills it", err)
	}
	proj := filepath.Join(w.ws, "target", "usespty")
	os.MkdirAll(proj, 0o755)
	for name, body := range map[string]string{
		"go.mod":  "module example.com/usespty\n\ngo 1.21\n\nrequire github.com/creack/pty v1.1.24\n",
		"go.sum":  "github.com/creack/pty v1.1.24 h1:bJrF4RRfyJnbTJqzRLHzcGaZK1NeM5kTC9jGgovnR1s=\ngithub.com/creack/pty v1.1.24/go.mod h1:08sCNb52WyoAwi2QDyzUCTgcvVFhUzewun7wtTfvcwE=\n",
		"main.go": "package main\n\nimport _ \"github.com/creack/pty\"\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"GOMODCACHE=" + modcache, "GOFLAGS=-mod=mod"}
	run := func(extra ...string) (string, int) {
		args := append([]string{"run", "--role", "developer", "--approve", "none", "--workspace", w.ws}, extra...)
		cmd := exec.Command(filepath.Join(w.bin, "agentbox"), append(args, "--", "go", "build", "-o", "/dev/null", ".")...)
		cmd.Dir = proj
		cmd.Env = w.env(env...)
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(b), code
	}
	out2, code := run("--host-caches", "off")
	if code == 0 {
		t.Fatalf("the build fetched the module with no network and no host cache:\n%s", out2)
	}
	out2, code = run()
	if code != 0 || !strings.Contains(out2, "host go cache read-only: "+filepath.Join(modcache, "cache", "download")) {
		t.Fatalf("the build with the host cache: exit %d\n%s", code, out2)
	}
	// A missing cache: one line, the run goes on.
	env = []string{"GOMODCACHE=" + filepath.Join(w.dir, "no-such-cache"), "GOFLAGS=-mod=mod"}
	out2, _ = run()
	if !strings.Contains(out2, "host Go module cache "+filepath.Join(w.dir, "no-such-cache", "cache", "download")+" not found") {
		t.Errorf("no line for a missing cache:\n%s", out2)
	}
	// A cache inside the workspace: refused.
	inside := filepath.Join(w.ws, "target", "modcache")
	os.MkdirAll(filepath.Join(inside, "cache", "download"), 0o755)
	env = []string{"GOMODCACHE=" + inside}
	out2, code = run()
	if code != 125 || !strings.Contains(out2, "is inside the workspace") {
		t.Errorf("a cache inside the workspace: exit %d\n%s", code, out2)
	}
	// A cache the run may write through a --rw grant: refused too.
	granted := filepath.Join(w.dir, "rwcache")
	os.MkdirAll(filepath.Join(granted, "cache", "download"), 0o755)
	env = []string{"GOMODCACHE=" + granted}
	out2, code = run("--rw", granted)
	if code != 125 || !strings.Contains(out2, "is inside the writable grant "+granted) {
		t.Errorf("a cache under a --rw grant: exit %d\n%s", code, out2)
	}
	// Reached through a symlink: not offered.
	link := filepath.Join(w.dir, "linked-cache")
	os.Symlink(modcache, link)
	env = []string{"GOMODCACHE=" + link}
	if out2, _ = run(); !strings.Contains(out2, "is reached through a symlink") {
		t.Errorf("a symlinked cache:\n%s", out2)
	}
}

// cacheProbe is the script a run executes against its host caches: for
// each cache (its directory in the sandbox from the variable the tool
// reads) it prints the host's entry, overwrites it, adds one, renames one
// away and changes a time (chmod is a policed program), then tries the host's directory
// itself. Kept in a file: the policy engine cannot resolve a write to
// $GOCACHE/... in a command line. The module cache is shown at the host's
// own path, outside the areas the policy knows as writable, where it asks
// before mv and touch (the go command's own writes are not commands): the
// probe only writes files there.
const cacheProbe = `for d in "$GOCACHE" "$GOMODCACHE" "$npm_config_cache/_cacache" "$PIP_CACHE_DIR" "$CARGO_HOME/registry" "$CARGO_HOME/git"; do
  echo "seen: $(cat "$d/00/entry" 2>&1) own: $(cat "$d/00/own" 2>&1)"
  echo poisoned > "$d/00/entry" && echo own > "$d/00/own" || echo "FAILED in $d"
  if [ "$d" != "$GOMODCACHE" ]; then
    { [ ! -e "$d/00/gone" ] || mv "$d/00/gone" "$d/00/moved"; } && touch -d 2001-01-01 "$d/00/kept" || echo "FAILED in $d"
  fi
done
for h in "$@"; do echo poisoned > "$h/00/entry" 2>/dev/null && echo "WROTE the host's $h"; done
echo "GOCACHE=$GOCACHE"
`

// hostCacheTree is the host's caches as they stand: every path with its
// mode, owner, size, modification time, extended attributes and content.
func hostCacheTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(&b, "%s %v %d:%d %d %d", p, fi.Mode(), st.Uid, st.Gid, fi.Size(), fi.ModTime().UnixNano())
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			fmt.Fprintf(&b, " xattrs=%q", buf[:n])
		}
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// makeHostCaches fills a host home's Go build, npm, pip and cargo caches
// with an entry to read, one to delete and one to change.
func makeHostCaches(t *testing.T, home string) []string {
	t.Helper()
	dirs := []string{filepath.Join(home, ".cache", "go-build"), filepath.Join(home, "go", "pkg", "mod"), filepath.Join(home, ".npm", "_cacache"),
		filepath.Join(home, ".cache", "pip"), filepath.Join(home, ".cargo", "registry"), filepath.Join(home, ".cargo", "git")}
	for _, d := range dirs {
		for name, body := range map[string]string{"entry": "host's " + filepath.Base(d), "gone": "x", "kept": "y"} {
			if err := os.MkdirAll(filepath.Join(d, "00"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "00", name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dirs
}

// TestHostCachesCopyOnWrite is the cache-poisoning attack, as root and as
// a regular user (made by the test): a run of the developer role reads
// the host's Go build and module, npm, pip and cargo caches (the module
// cache at the host's own path, the others in the agent's area) where its tools
// look (the launch line names them), overwrites an entry, adds one,
// renames one away, changes a time, and tries the host's
// directories directly; the host's caches are byte for byte, mode, time
// and xattr what they were. The same agent's next run sees its own
// writes (its layer persists); another agent sees the host's. With
// A symlink planted where an agent's layer goes is not followed. With
// --no-host-caches the caches are not there, and a Go module in target/
// gets the one line saying the first build is cold and what warms it.
func TestHostCachesCopyOnWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: the regular-user half creates a user, which needs root")
	}
	needRunSandbox(t)
	if err := sandbox.MountNamespaceAvailable(); err != nil {
		t.Skipf("reason: no mount namespace for the layers here: %v", err)
	}
	for _, regular := range []bool{false, true} {
		name := map[bool]string{false: "root", true: "regular user"}[regular]
		t.Run(name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "agentbox-hostcache-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			// Before the removal (clean-ups run last first): unpark the
			// overlays a root launcher parked for this test's layers,
			// and only those.
			t.Cleanup(func() {
				if _, err := helper.UnparkUnder(dir); err != nil {
					t.Errorf("unparking this test's cache overlays: %v", err)
				}
			})
			os.Chmod(dir, 0o755)
			home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "home", "ws")
			hostDirs := makeHostCaches(t, home)
			if _, err := boundary.Init(ws); err != nil {
				t.Fatal(err)
			}
			proj := filepath.Join(ws, "target", "mod")
			os.MkdirAll(proj, 0o755)
			os.WriteFile(filepath.Join(proj, "go.mod"), []byte("module example.com/mod\n\ngo 1.21\n"), 0o644)
			os.WriteFile(filepath.Join(proj, "probe.sh"), []byte(cacheProbe), 0o644)
			exe, _ := os.Executable()
			var cred *syscall.Credential
			if regular {
				u := testkit.NewUser(t, "abh")
				cred = u.Cred()
				u.Own(home)
				exe = testkit.CopyBinary(t, dir, "agentbox")
			}
			before := ""
			for _, d := range hostDirs {
				before += hostCacheTree(t, d)
			}
			run := func(agent string, extra ...string) string {
				layered := len(extra) == 0 && agent != "planted"
				t.Helper()
				args := append([]string{"run", "--role", "developer", "--approve", "none", "--workspace", ws, "--agent", agent,
					"--checkpoints", "off", "--no-limits", "--no-user-policy", "--audit", filepath.Join(home, "audit-"+agent+".jsonl")}, extra...)
				// The module cache is shown at the host's own path: writing
				// there is writing the layer (its host directory is
				// checked byte for byte below).
				direct := append(hostDirs[:1:1], hostDirs[2:]...)
				cmd := exec.Command(exe, append(append(args, "--", "sh", "probe.sh"), direct...)...)
				cmd.Dir = proj
				cmd.Env = []string{"AGENTBOX_TEST_MAIN=1", "AGENTBOX_CHECKPOINT_JOURNAL=off", "PATH=/usr/bin:/bin", "HOME=" + home,
					"XDG_STATE_HOME=" + filepath.Join(home, "state"), "AGENTBOX_RUN_REGISTRY=" + filepath.Join(home, "runs")}
				if cred != nil {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
				}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("agent %s %v: %v\n%s", agent, extra, err, out)
				}
				if layered && strings.Contains(string(out), "FAILED") || strings.Contains(string(out), "WROTE") {
					t.Errorf("agent %s %v:\n%s", agent, extra, out)
				}
				return string(out)
			}
			cows := []string{"go-build", "go-mod", "npm", "pip", "cargo-registry", "cargo-git"}
			out := run("a")
			if !strings.Contains(out, "host caches copy-on-write (writes stay in this agent's layer): "+strings.Join(cows, " ")) {
				t.Errorf("the launch line does not name the layered caches:\n%s", out)
			}
			if !strings.Contains(out, "GOCACHE="+filepath.Join(ws, "agents", "a", "cache", "go-build")) {
				t.Errorf("GOCACHE does not point at the merged view:\n%s", out)
			}
			for _, d := range hostDirs {
				if want := "seen: host's " + filepath.Base(d) + " own: cat:"; !strings.Contains(out, want) {
					t.Errorf("the first run did not see the host's %s (want %q):\n%s", d, want, out)
				}
			}
			out = run("a")
			if n := strings.Count(out, "seen: poisoned own: own"); n != len(hostDirs) {
				t.Errorf("the agent's second run sees its own layer in %d of %d caches:\n%s", n, len(hostDirs), out)
			}
			out = run("b")
			if n := strings.Count(out, "seen: host's"); n != len(hostDirs) {
				t.Errorf("another agent sees the host's entry in %d of %d caches:\n%s", n, len(hostDirs), out)
			}
			// A symlink the agent planted where its layer goes, to another
			// host cache: never followed, that cache is not layered.
			planted := filepath.Join(ws, "agents", "planted", "cache", ".hostlayers", "go-build")
			os.MkdirAll(planted, 0o755)
			if err := os.Symlink(hostDirs[3], filepath.Join(planted, "upper")); err != nil {
				t.Fatal(err)
			}
			if cred != nil {
				filepath.Walk(filepath.Join(ws, "agents", "planted"), func(p string, _ os.FileInfo, _ error) error {
					return os.Lchown(p, int(cred.Uid), int(cred.Gid))
				})
			}
			if out = run("planted"); !strings.Contains(out, "host go-build cache not layered") || !strings.Contains(out, "a symlink is not followed") {
				t.Errorf("a planted symlink for the layer:\n%s", out)
			}
			after := ""
			for _, d := range hostDirs {
				after += hostCacheTree(t, d)
			}
			if after != before {
				t.Errorf("the host's caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			out = run("c", "--no-host-caches")
			if strings.Contains(out, "copy-on-write") || strings.Contains(out, "seen: host's") {
				t.Errorf("--no-host-caches still layered the host's caches:\n%s", out)
			}
			if !strings.Contains(out, "first build in this agent's cache is cold; --host-caches would start it from the host's") {
				t.Errorf("no line about the cold cache:\n%s", out)
			}
		})
	}
}
