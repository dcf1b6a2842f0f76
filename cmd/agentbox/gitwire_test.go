package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
)

// Git over HTTPS through the terminating proxy: a git smart-HTTP server on
// loopback (git-http-backend behind TLS with the test CA, standing in for
// a forge) that wants a token; the token is brokered, so clone works with
// a value the sandbox never holds, and a push — by git, by a renamed copy
// of git, by a raw POST — is refused on the wire, audited as a push, and
// leaves the remote's refs as they were.

const gitToken = "ghp_agentboxTEST0123456789tokenvalue"

// gitForge serves the bare repositories under root over TLS at
// repo.test:PORT (the proxy resolves repo.test to loopback). Requests
// without the token get 401, as a private repository's do.
func gitForge(t *testing.T, root string, ca *testkit.TestCA) (port string, requests func() []string) {
	return forge(t, root, ca, func(r *http.Request) string { return r.Method + " " + r.URL.RequestURI() },
		func(r *http.Request) bool { _, pw, ok := r.BasicAuth(); return ok && pw == gitToken })
}

// forge serves the bare repositories under root through git-http-backend
// over TLS on loopback. A request authorized refuses gets 401 with a
// Basic challenge; note says what to record of each request ("":
// nothing), seen returns the records. The backend gets whole bodies
// only: one cut short (a push the proxy refused after its pack) would
// leave git-http-backend spinning on its end.
func forge(t *testing.T, root string, ca *testkit.TestCA, note func(*http.Request) string, authorized func(*http.Request) bool) (port string, seen func() []string) {
	t.Helper()
	exe, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("reason: git --exec-path: %v", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(exe)), "git-http-backend")
	if !testkit.Exists(bin) {
		t.Skipf("reason: %s is not installed", bin)
	}
	h := &cgi.Handler{Path: bin, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=forge-user"}}
	var mu sync.Mutex
	var records []string
	srv := &http.Server{TLSConfig: ca.Server, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := note(r); n != "" {
			mu.Lock()
			records = append(records, n)
			mu.Unlock()
		}
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "a valid token is required", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "request body cut short", http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			r.Header.Del("Transfer-Encoding")
		}
		h.ServeHTTP(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	_, port, _ = net.SplitHostPort(l.Addr().String())
	return port, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), records...)
	}
}

func refsOf(t *testing.T, bare string) string {
	out, err := exec.Command("git", "-C", bare, "for-each-ref").CombinedOutput()
	if err != nil {
		t.Fatalf("for-each-ref: %v %s", err, out)
	}
	return string(out)
}

// TestGitOverBrokeredHTTPS: clone with a brokered token under the
// developer role; pushes by git, a renamed git and curl refused on the
// wire under --no-exec-policy (so nothing but the proxy stands in the way).
func TestGitOverBrokeredHTTPS(t *testing.T) {
	testkit.NeedProg(t, "git", "curl")
	w := newAgentWorld(t)
	ca := testkit.NewTestCA(t, "repo.test")
	forge := filepath.Join(w.dir, "forge")
	bare := filepath.Join(forge, "repo.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", w.proj, bare).CombinedOutput(); err != nil {
		t.Fatalf("bare repo: %v %s", err, out)
	}
	port, requests := gitForge(t, forge, ca)
	before := refsOf(t, bare)
	url := "https://x-access-token:${GH_TOKEN}@repo.test:" + port + "/repo.git"
	common := []string{"--secret", "GH_TOKEN@repo.test", "--proxy-resolve", "repo.test=127.0.0.1", "--allow-internal-host", "repo.test"}
	run := func(extra []string, script string) (string, int) {
		t.Helper()
		args := append([]string{"run", "--role", "developer", "--workspace", w.ws}, common...)
		args = append(append(args, extra...), "--", "sh", "-c", script)
		cmd := exec.Command(filepath.Join(w.bin, "agentbox"), args...)
		cmd.Dir = filepath.Join(w.ws, "target")
		cmd.Env = w.env("GH_TOKEN="+gitToken, "SSL_CERT_FILE="+ca.CAFile)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}

	// Clone under the developer role (exec policy on).
	out, code := run(nil, `git clone -q "`+url+`" cloned && git -C cloned log --oneline -1 && echo "token seen inside: $GH_TOKEN"`)
	if code != 0 || !strings.Contains(out, "initial") {
		t.Fatalf("clone with the brokered token: exit %d\n%s", code, out)
	}
	if strings.Contains(out, gitToken) || !strings.Contains(out, "token seen inside: agentbox-placeholder-") {
		t.Errorf("the sandbox saw the real token, or no placeholder:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.ws, "target", "cloned", ".git", "config")); strings.Contains(string(b), gitToken) {
		t.Errorf("the real token is in the clone's .git/config")
	}

	// Pushes with nothing but the proxy in the way.
	script := `cd cloned && git -c user.email=a@b -c user.name=A commit -q --allow-empty -m pushed &&
echo "== git push"; git push origin HEAD:refs/heads/main 2>&1
echo "== renamed git"; cp "$(command -v git)" ./mygit && ./mygit push origin HEAD:refs/heads/pushed 2>&1
echo "== raw POST"; curl -sS -X POST -H "Content-Type: application/x-git-receive-pack-request" --data-binary "0000" "https://repo.test:` + port + `/repo.git/git-receive-pack" 2>&1
echo "== done"`
	out, _ = run([]string{"--no-exec-policy"}, script)
	t.Logf("pushes:\n%s", out)
	for _, part := range []string{"== git push", "== renamed git", "== raw POST"} {
		i := strings.Index(out, part)
		if i < 0 {
			t.Fatalf("no %q section:\n%s", part, out)
		}
		sect := out[i:]
		if j := strings.Index(sect[len(part):], "=="); j >= 0 {
			sect = sect[:len(part)+j]
		}
		if !strings.Contains(sect, "agentbox: denied: git push to https://repo.test:"+port+"/repo.git") && !strings.Contains(sect, "403") {
			t.Errorf("%s: not refused as a push:\n%s", part, sect)
		}
	}
	if after := refsOf(t, bare); after != before {
		t.Errorf("the remote's refs changed:\nbefore %s\nafter %s", before, after)
	}
	for _, r := range requests() {
		if strings.Contains(r, "receive-pack") {
			t.Errorf("a push request reached the forge: %s", r)
		}
	}
	evs, raw := w.events(t)
	if strings.Contains(string(raw), gitToken) {
		t.Error("the audit log holds the real token")
	}
	pushes := 0
	for _, e := range evs {
		if e.Event == audit.EventNet && e.Detail["git"] == "push" && e.Decision == audit.DecisionDeny {
			pushes++
			if e.Rule != "developer/git.push" {
				t.Errorf("push refused by %q, want the role's push rule developer/git.push", e.Rule)
			}
		}
	}
	if pushes < 3 {
		t.Errorf("%d push refusals audited, want at least 3 (git, renamed git, raw POST)", pushes)
	}
}
