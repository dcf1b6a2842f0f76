package gitwire

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitEnv is the environment every git of these tests runs with: no user or
// system config, a fixed identity.
func gitEnv(home string) []string {
	return append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
}

// gitOut runs git in dir and returns its stdout, failing the test on error.
func gitOut(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// gitTry runs git in dir and returns its combined output and error.
func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// server is git http-backend (the real smart-HTTP server, as CGI) on
// loopback, serving the bare repository repo.git under root. Every
// receive-pack body is recorded; with guard set, receive-pack requests go
// through a Guard first and refused pushes are answered with WriteRefusal.
type server struct {
	*httptest.Server
	root string

	mu     sync.Mutex
	bodies [][]byte
	guard  *Approval
	errs   []error
}

func newServer(t testing.TB, format Format, strict bool) *server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: no git on PATH")
	}
	exe := gitOut(t, t.TempDir(), "--exec-path")
	backend := filepath.Join(exe, "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("reason: no git-http-backend: %v", err)
	}
	s := &server{root: t.TempDir()}
	bare := filepath.Join(s.root, "repo.git")
	gitOut(t, s.root, "init", "-q", "--bare", "-b", "main", "--object-format="+string(format), bare)
	gitOut(t, bare, "config", "http.receivepack", "true")
	// A strict server keeps its history: forced and rewinding updates and
	// deletes are refused by it too, so each capture starts from a known
	// state.
	gitOut(t, bare, "config", "receive.advertisePushOptions", "true")
	if strict {
		gitOut(t, bare, "config", "receive.denyNonFastForwards", "true")
		gitOut(t, bare, "config", "receive.denyDeletes", "true")
	}
	cgiH := &cgi.Handler{Path: backend, Root: "/", Env: []string{
		"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + s.root}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			cgiH.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		ap := s.guard
		s.mu.Unlock()
		if ap == nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength, r.TransferEncoding = int64(len(body)), nil // net/http/cgi takes no "chunked"
			cgiH.ServeHTTP(w, r)
			return
		}
		s.serveGuarded(w, r, cgiH, body, *ap)
	}))
	t.Cleanup(s.Close)
	return s
}

// serveGuarded is what the egress proxy does with a Guard: commands
// refused → the refusal, without the server; else the body streams to the
// server through the Guard, and a refusal found in the pack replaces the
// server's answer (the server got no complete pack, so it updated
// nothing).
func (s *server) serveGuarded(w http.ResponseWriter, r *http.Request, h http.Handler, body []byte, ap Approval) {
	g := NewGuard(bytes.NewReader(body), ap, Limits{})
	defer g.Close()
	refuse := func(req *Request, err error) {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		w.Header().Set("Content-Type", ResultContentType)
		WriteRefusal(w, req, err)
	}
	req, err := g.Commands()
	if err != nil {
		refuse(req, err)
		return
	}
	// Streamed on with no length, as a proxy does: a refusal ends the body
	// early, and http-backend (which loops on a body shorter than
	// CONTENT_LENGTH) hands receive-pack a pack without its end.
	r.Body = io.NopCloser(g)
	r.ContentLength = -1
	r.Header.Del("Content-Length")
	r.TransferEncoding = nil // net/http/cgi refuses "chunked"; the stream is the same
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if err := g.Err(); err != nil {
		refuse(req, err)
		return
	}
	s.mu.Lock()
	s.errs = append(s.errs, nil)
	s.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// last returns the last receive-pack body recorded.
func (s *server) last(t testing.TB) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("no receive-pack body recorded")
	}
	return s.bodies[len(s.bodies)-1]
}

// url is the repository's URL for git.
func (s *server) url() string { return s.URL + "/repo.git" }

// serverRef is the server's value of ref ("" when it has none).
func (s *server) serverRef(t testing.TB, ref string) string {
	out, _ := gitTry(filepath.Join(s.root, "repo.git"), "rev-parse", "-q", "--verify", ref)
	return strings.TrimSpace(out)
}

// client is a working repository pushing to a server.
type client struct {
	t   testing.TB
	dir string
	n   int
}

func newClient(t testing.TB, s *server, format Format) *client {
	c := &client{t: t, dir: t.TempDir()}
	gitOut(t, c.dir, "init", "-q", "-b", "main", "--object-format="+string(format), ".")
	gitOut(t, c.dir, "remote", "add", "origin", s.url())
	return c
}

// commit writes a file and commits it; returns the commit id.
func (c *client) commit(msg string) string {
	c.n++
	name := fmt.Sprintf("f%d.txt", c.n)
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(strings.Repeat(msg+"\n", 50*c.n)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	gitOut(c.t, c.dir, "add", name)
	gitOut(c.t, c.dir, "commit", "-q", "-m", msg)
	return c.git("rev-parse", "HEAD")
}

func (c *client) git(args ...string) string { return gitOut(c.t, c.dir, args...) }

// push runs git push and returns its output and whether it succeeded.
func (c *client) push(args ...string) (string, bool) {
	out, err := gitTry(c.dir, append([]string{"push"}, args...)...)
	return out, err == nil
}

// capture is one recorded push body and the refs it was made from.
type capture struct {
	name string
	body []byte
	fmt  Format
}

// captureSet records real pushes of one object format: every kind of
// update these tests check, each body as git sent it.
func captureSet(t testing.TB, format Format) map[string]capture {
	t.Helper()
	s := newServer(t, format, true)
	c := newClient(t, s, format)
	got := map[string]capture{}
	rec := func(name string, wantOK bool, args ...string) {
		t.Helper()
		out, ok := c.push(args...)
		if ok != wantOK {
			t.Fatalf("%s: git push %v: ok=%v, want %v\n%s", name, args, ok, wantOK, out)
		}
		got[name] = capture{name: name, body: s.last(t), fmt: format}
	}
	c.commit("A")
	rec("create", true, "origin", "main")
	b := c.commit("B")
	rec("ff", true, "origin", "main")
	c.git("checkout", "-q", "-b", "feature")
	c.commit("C")
	rec("new-branch", true, "origin", "feature")
	c.git("checkout", "-q", "main")
	c.git("commit", "-q", "--amend", "-m", "B rewritten")
	rec("force", false, "--force", "origin", "main")
	c.git("reset", "-q", "--hard", b)
	rec("rewind", false, "--force", "origin", "main~1:main")
	rec("delete-main", false, "origin", ":main")
	// A merge: topic from A, merged into main.
	c.git("checkout", "-q", "-b", "topic", "main~1")
	c.commit("D")
	c.git("checkout", "-q", "main")
	c.git("merge", "-q", "--no-ff", "-m", "merge topic", "topic")
	rec("merge", true, "origin", "main")
	// Two refs at once: main fast-forwards, feature moves on too.
	c.commit("E")
	c.git("checkout", "-q", "feature")
	c.commit("F")
	c.git("checkout", "-q", "main")
	rec("multi", true, "origin", "main", "feature")
	c.git("tag", "-a", "-m", "v1", "v1")
	rec("tag", true, "origin", "v1")
	rec("delete-feature", false, "origin", ":feature")
	c.commit("G")
	rec("push-option", true, "-o", "ci.skip", "-o", "note=x y", "origin", "main")
	// A shallow clone's push says which commits are its shallow ends.
	sh := &client{t: t, dir: t.TempDir(), n: 100}
	gitOut(t, sh.dir, "clone", "-q", "--depth", "1", s.url(), ".")
	sh.commit("H")
	out, ok := sh.push("origin", "main")
	if !ok {
		t.Fatalf("shallow push: %s", out)
	}
	got["shallow"] = capture{name: "shallow", body: s.last(t), fmt: format}
	return got
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
