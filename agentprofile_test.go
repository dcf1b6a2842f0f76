package agentbox_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
)

// agentProfilePolicy defines a test agent profile the way a user would in
// a policy file.
const agentProfilePolicy = `version: 1
agents:
  tagent:
    description: a test agent
    programs: [tagent]
    views: [.tagent/login.json]
    dirs: [.tagent/state]
    env: [TAGENT_KEY]
    set_env: {TAGENT_SANDBOXED: "1", TAGENT_HOME: "$HOME/.tagent"}
    hosts: [api.tagent.invalid]
    base_url_env: [TAGENT_BASE_URL]
`

// TestAgentProfileApplied: a profile gives the agent a read-only view of
// the user's login (nothing else of the user's HOME), its own state
// directory, its key passed through, set_env values over the caller's,
// and its loopback API reachable at the same address from inside the
// sandbox's network namespace, decided and audited like any connection.
func TestAgentProfileApplied(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	pol := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(pol, []byte(agentProfilePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".tagent"), 0o700)
	os.WriteFile(filepath.Join(home, ".tagent", "login.json"), []byte(`{"login":"user-token-view"}`), 0o600)
	os.WriteFile(filepath.Join(home, "secret.txt"), []byte("other-home-file"), 0o600)
	api := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "pong-from-api") }))
	defer api.Close()
	port := strings.TrimPrefix(api.URL, "http://127.0.0.1:")

	script := `echo "login: $(cat $HOME/.tagent/login.json)"
echo x 2>/dev/null > $HOME/.tagent/login.json && echo VIEW-WRITABLE
cat ` + filepath.Join(home, "secret.txt") + ` 2>/dev/null && echo HOME-READABLE
echo "env: $TAGENT_KEY $TAGENT_SANDBOXED $TAGENT_HOME"
test -d $HOME/.tagent/state && echo state-dir
exec 3<>/dev/tcp/127.0.0.1/` + port + `
printf 'GET /ping HTTP/1.0\r\nHost: x\r\n\r\n' >&3
cat <&3
`
	path := filepath.Join(w.ws, "target", "agent.sh")
	os.WriteFile(path, []byte(script), 0o755)
	out, _ := os.CreateTemp(t.TempDir(), "out")
	defer out.Close()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	env := append(os.Environ(), "HOME="+home, "TAGENT_KEY=key-passed", "TAGENT_SANDBOXED=caller-value", "TAGENT_BASE_URL="+api.URL+"/v1")
	r, err := agentbox.New(w.ws, "developer", []string{"bash", path}, w.opts(agentbox.WithPolicyFiles(pol),
		agentbox.WithAgentProfile("tagent"), agentbox.WithEnv(env), agentbox.WithAudit(log), agentbox.WithStdio(nil, out, out))...)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Summary(); !strings.Contains(s, "agent profile tagent (--agent-profile)") || !strings.Contains(s, "egress proxy: 127.0.0.1:"+port) {
		t.Errorf("launch line %q", s)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	got := string(b)
	for _, want := range []string{`login: {"login":"user-token-view"}`, "env: key-passed 1 " + filepath.Join(w.ws, "agents", "main", "home", ".tagent"), "state-dir", "pong-from-api"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s (exit %d)", want, got, res.ExitCode)
		}
	}
	for _, bad := range []string{"VIEW-WRITABLE", "HOME-READABLE", "other-home-file"} {
		if strings.Contains(got, bad) {
			t.Errorf("output has %q:\n%s", bad, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".tagent", "login.json")); string(b) != `{"login":"user-token-view"}` {
		t.Errorf("the user's login file changed: %q", b)
	}
	evs, err := audit.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var forwarded bool
	for _, e := range evs {
		if e.Action == "tool:net:127.0.0.1:"+port && e.Decision == audit.DecisionAllow && e.Detail["forward"] == "true" {
			forwarded = true
		}
	}
	if !forwarded {
		t.Errorf("no audited forward to the API port %s", port)
	}
}

// TestAgentProfilePlantedSymlink: a symlink the agent left in its HOME
// where the profile's state directory goes is not followed (agentbox may
// be root): nothing is created through it, the run warns and goes on.
func TestAgentProfilePlantedSymlink(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	pol := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(pol, []byte(agentProfilePolicy), 0o600)
	outside := t.TempDir()
	homeIn := filepath.Join(w.ws, "agents", "main", "home")
	os.MkdirAll(homeIn, 0o700)
	if err := os.Symlink(outside, filepath.Join(homeIn, ".tagent")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".tagent"), 0o700)
	os.WriteFile(filepath.Join(home, ".tagent", "login.json"), []byte(`{}`), 0o600)
	var warn strings.Builder
	r, err := agentbox.New(w.ws, "developer", []string{"true"}, w.opts(agentbox.WithPolicyFiles(pol), agentbox.WithAgentProfile("tagent"),
		agentbox.WithEnv(append(os.Environ(), "HOME="+home)), agentbox.WithAudit(filepath.Join(t.TempDir(), "a.jsonl")), agentbox.WithWarnings(&warn))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created through the planted symlink: %v", ents)
	}
	if !strings.Contains(warn.String(), "agent profile tagent") || !strings.Contains(warn.String(), "symlink there is not followed") {
		t.Errorf("warning %q", warn.String())
	}
}

// TestAgentProfileErrors: an unknown profile and a bad base URL are
// option errors naming the value; no profile for an unknown command.
func TestAgentProfileErrors(t *testing.T) {
	w := newWorld(t)
	_, err := agentbox.New(w.ws, "developer", []string{"true"}, w.opts(agentbox.WithAgentProfile("nope"))...)
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "claude-code, codex, gemini") {
		t.Errorf("unknown profile: %v", err)
	}
	_, err = agentbox.New(w.ws, "developer", []string{"claude"}, w.opts(agentbox.WithEnv([]string{"PATH=/nonexistent", "ANTHROPIC_BASE_URL=ftp://x"}))...)
	if err == nil || !strings.Contains(err.Error(), `API base URL "ftp://x"`) {
		t.Errorf("bad base URL: %v", err)
	}
	_, err = agentbox.New(w.ws, "developer", []string{"claude"}, w.opts(agentbox.WithEnv([]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:3128"}))...)
	if err == nil || !strings.Contains(err.Error(), "egress proxy's port") {
		t.Errorf("proxy port as base URL: %v", err)
	}
	r, err := agentbox.New(w.ws, "developer", []string{"true"}, w.opts()...)
	if err != nil || strings.Contains(r.Summary(), "agent profile") {
		t.Errorf("true got a profile: %v %q", err, r.Summary())
	}
}
