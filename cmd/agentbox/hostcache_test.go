package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
