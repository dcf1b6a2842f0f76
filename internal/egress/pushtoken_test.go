package egress

import (
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// TestPushTokenInjectedAndRedacted: a receive-pack request from a process
// without a grant is refused and mints nothing; with the grant (this test
// process, as an approved push) the token the mint command printed goes
// upstream in the Authorization header only, an answer that echoes it
// reaches the client with the placeholder (a violation audited), and
// closing the table revokes it.
func TestPushTokenInjectedAndRedacted(t *testing.T) {
	dir := t.TempDir()
	const token = "ghs_pushTOKEN0123456789abcdefXYZ"
	mint, revoke := filepath.Join(dir, "mint"), filepath.Join(dir, "revoke")
	for f, body := range map[string]string{
		mint:   "#!/bin/sh\ncat > " + dir + "/request\nprintf '{\"token\":\"" + token + "\",\"id\":\"tok-1\"}\\n'\n",
		revoke: "#!/bin/sh\ncat > " + dir + "/revoked\n",
	} {
		if err := os.WriteFile(f, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	procs := NewProcesses()
	procs.SetNetPid(os.Getpid())
	defer procs.Close()
	procs.Exec(os.Getpid(), 0, 0, "git", "/usr/bin/git")
	var sink auditRecorder
	pt := NewPushTokens(PushTokenConfig{Mint: []string{mint}, Revoke: []string{revoke}, RunID: "run1", Audit: &sink,
		Hosts: func(h string, _ int) bool { return h == "example.com" }})
	var upstreamAuth string
	w := newInspectWorld(t, Config{Processes: procs, PushTokens: pt}, func(rw http.ResponseWriter, r *http.Request) {
		upstreamAuth = r.Header.Get("Authorization")
		rw.Header().Set("X-Echo", upstreamAuth)
		io.WriteString(rw, "you sent "+upstreamAuth+" and "+token)
	})
	w.client.Transport.(*http.Transport).DisableKeepAlives = true
	u := w.apiURL("/repo.git/info/refs?service=git-receive-pack")

	code, body := w.do(t, "GET", u, map[string]string{"Authorization": "Basic eDp5"})
	if code != http.StatusForbidden || !strings.Contains(body, "no approved git push") || upstreamAuth != "" {
		t.Fatalf("without a grant: %d %q (upstream saw %q), want 403 no approved git push", code, body, upstreamAuth)
	}
	if _, err := os.Stat(filepath.Join(dir, "request")); err == nil {
		t.Fatal("a token was minted for a process without a grant")
	}

	repo, _, _ := strings.Cut(u, "/info/refs")
	id, err := pt.Grant(PushGrant{Pid: os.Getpid(), Program: "git", Remote: "origin", URL: repo, Refs: []string{"refs/heads/feature"}})
	if err != nil {
		t.Fatal(err)
	}
	code, body = w.do(t, "GET", u, nil)
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	if code != http.StatusOK || upstreamAuth != want {
		t.Fatalf("with grant %s: %d %q, upstream saw %q, want %q", id, code, body, upstreamAuth, want)
	}
	if strings.Contains(body, token) || !strings.Contains(body, "agentbox-redacted-push-token") {
		t.Errorf("the token came back to the client: %q", body)
	}
	req, _ := os.ReadFile(filepath.Join(dir, "request"))
	if !strings.Contains(string(req), `"refs":["refs/heads/feature"]`) || !strings.Contains(string(req), `"push":"`+id+`"`) {
		t.Errorf("mint request %s lacks the push's refs or id", req)
	}
	// Another repository on the same host: refused, no new mint.
	if code, body := w.do(t, "GET", w.apiURL("/other.git/info/refs?service=git-receive-pack"), nil); code != http.StatusForbidden || !strings.Contains(body, "approved to push to") {
		t.Errorf("another repository: %d %q, want 403", code, body)
	}
	pt.Close()
	revoked, _ := os.ReadFile(filepath.Join(dir, "revoked"))
	if !strings.Contains(string(revoked), `"id":"tok-1"`) || !strings.Contains(string(revoked), token) {
		t.Errorf("revoke got %q, want the token and its id", revoked)
	}
	var minted, violations, revokedEv int
	for _, e := range append(sink.events(), w.tp.snapshot()...) {
		if strings.Contains(e.Reason+strings.Join(mapValues(e.Detail), " "), token) {
			t.Errorf("the token's value in an audit event: %+v", e)
		}
		switch {
		case e.Detail["push_token"] == "minted":
			minted++
		case e.Detail["push_token"] == "revoked" && strings.Contains(e.Reason, "the run ended"):
			revokedEv++
		case e.Event == audit.EventViolation && strings.HasPrefix(e.Detail["secret"], "push token"):
			violations++
		}
	}
	if minted != 1 || revokedEv != 1 || violations == 0 {
		t.Errorf("events: %d minted, %d revoked, %d violations; want 1, 1, some", minted, revokedEv, violations)
	}
}

func TestParseMinted(t *testing.T) {
	for _, c := range []struct{ out, token, id, err string }{
		{"tok123\n", "tok123", "", ""},
		{"tok123\nsecond line\n", "tok123", "", ""},
		{`{"token":"t1","id":"i1","expires":"2030"}`, "t1", "i1", ""},
		{"", "", "", "printed no token"},
		{`{"id":"x"}`, "", "", "printed no token"},
		{`{"token":`, "", "", "its JSON answer"},
		{"has space", "", "", "not a token"},
		{"user:pass", "", "", "not a token"},
	} {
		tok, id, _, err := parseMinted([]byte(c.out))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.out, err, c.err)
			}
			continue
		}
		if err != nil || tok != c.token || id != c.id {
			t.Errorf("%q: %q %q %v, want %q %q", c.out, tok, id, err, c.token, c.id)
		}
	}
}

func FuzzParseMinted(f *testing.F) {
	f.Add([]byte("tok\n"))
	f.Add([]byte(`{"token":"a","id":"b","expires":"c"}`))
	f.Add([]byte("{\"token\":\"a\\u0000b\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, _, _, err := parseMinted(b)
		if err == nil && (tok == "" || strings.ContainsAny(tok, " \t\r\n:")) {
			t.Fatalf("accepted token %q", tok)
		}
	})
}

func TestSameRepo(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://github.com/o/r.git", "https://github.com/o/r", true},
		{"https://GitHub.com:443/o/r/", "https://github.com/o/r.git", true},
		{"https://github.com/o/r", "https://github.com/o/other", false},
		{"https://github.com:8443/o/r", "https://github.com/o/r", false},
		{"", "https://github.com/o/r", false},
		{"/local/path", "/local/path", false},
	} {
		if got := sameRepo(c.a, c.b); got != c.same {
			t.Errorf("sameRepo(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// auditRecorder keeps the events emitted to it.
type auditRecorder struct {
	mu  sync.Mutex
	evs []audit.Event
}

func (r *auditRecorder) Emit(e audit.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	return nil
}

func (r *auditRecorder) events() []audit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]audit.Event(nil), r.evs...)
}
