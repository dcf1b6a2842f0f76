package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/inbox"
	"github.com/agentbox/agentbox/internal/testkit"
)

// TestMain doubles as a run for TestRunDiesWhileAsking: with
// INBOX_TEST_RUN set it attaches to that inbox socket, asks once and
// waits to be killed.
func TestMain(m *testing.M) {
	if sock := os.Getenv("INBOX_TEST_RUN"); sock != "" {
		a, err := approval.New("inbox:"+sock, approval.Options{Inbox: approval.InboxInfo{
			Attach: approval.InboxAttach{Run: "doomed", Agent: "a9", Role: "developer", Pid: os.Getpid()}}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		signal.Ignore(syscall.SIGPIPE)
		a.Approve(context.Background(), approval.Request{Argv: []string{"chmod", "600", "f"}, Action: "tool:exec:chmod 600 f", Rule: "developer/chmod"})
		os.Exit(3)
	}
	os.Exit(m.Run())
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	t     *testing.T
	srv   *inbox.Server
	sock  string
	state string
	audit string
	token string
	done  chan error
	// webhook, when set before serve, is the inbox's Config.Webhook.
	webhook *approval.WebhookConfig
}

func start(t *testing.T, users ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, sock: filepath.Join(dir, "inbox.sock"), state: filepath.Join(dir, "state"), audit: filepath.Join(dir, "inbox.jsonl")}
	f.serve(users...)
	return f
}

func (f *fixture) serve(users ...string) {
	f.t.Helper()
	srv, err := inbox.New(inbox.Config{Socket: f.sock, StateDir: f.state, Users: users, AuditPath: f.audit, AnswerWait: 5 * time.Second, Logger: quiet, Webhook: f.webhook})
	if err != nil {
		f.t.Fatal(err)
	}
	f.srv, f.done = srv, make(chan error, 1)
	f.token = srv.Token(srv.Users()[0])
	go func() { f.done <- srv.Serve(context.Background()) }()
	f.t.Cleanup(func() { srv.Close() })
}

// do sends one API request with the first user's token (auth "" sends none).
func (f *fixture) do(method, path, auth, body string, hdr ...string) (int, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, strings.TrimSuffix(f.srv.URL(), "/")+path, rd)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type askJSON struct {
	ID, Run, Action, Rule string
	Argv                  []string
	Recent, Changed       []string
	Remember              *approval.InboxRemember
}

func (f *fixture) asks() []askJSON {
	f.t.Helper()
	code, body := f.do("GET", "/api/asks", f.token, "")
	if code != 200 {
		f.t.Fatalf("asks: %d %s", code, body)
	}
	var r struct{ Asks []askJSON }
	json.Unmarshal([]byte(body), &r)
	return r.Asks
}

func (f *fixture) waitAsks(n int) []askJSON {
	f.t.Helper()
	var got []askJSON
	testkit.WaitCond(f.t, fmt.Sprintf("%d pending asks", n), func() bool { got = f.asks(); return len(got) == n })
	return got
}

// run attaches an approver as a run would.
func (f *fixture) run(id string, info approval.InboxInfo) approval.Approver {
	f.t.Helper()
	info.Attach.Run, info.Attach.Agent, info.Attach.Role = id, "agent-"+id, "developer"
	info.Attach.Policy = filepath.Join(f.state, "agentbox.yaml")
	a, err := approval.New("inbox:"+f.sock, approval.Options{Inbox: info, Logger: quiet})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { a.(io.Closer).Close() })
	return a
}

type outcome struct {
	resp approval.Response
	err  error
}

func ask(a approval.Approver, wait time.Duration, argv ...string) chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		r, err := a.Approve(ctx, approval.Request{Pid: 42, Program: "/usr/bin/" + argv[0], Argv: argv, Cwd: "/ws/target",
			Action: "tool:exec:" + strings.Join(argv, " "), Rule: "developer/" + argv[0], Reason: "permission change"})
		ch <- outcome{r, err}
	}()
	return ch
}

func TestAnswerThroughAPI(t *testing.T) {
	f := start(t, "alice")
	a := f.run("r1", approval.InboxInfo{Context: func() ([]string, []string) {
		return []string{"allow: tool:exec:ls"}, []string{"modified target/a.go"}
	}, Preview: func(req approval.Request) *approval.InboxRemember {
		return &approval.InboxRemember{File: "/ws/agentbox.yaml", Allow: "chmod 600", Deny: "chmod"}
	}})
	got := ask(a, 30*time.Second, "chmod", "600", "f")
	asks := f.waitAsks(1)
	if asks[0].Run != "r1" || asks[0].Rule != "developer/chmod" || len(asks[0].Recent) != 1 || len(asks[0].Changed) != 1 {
		t.Errorf("ask as listed: %+v", asks[0])
	}
	if asks[0].Remember == nil || asks[0].Remember.Allow != "chmod 600" {
		t.Errorf("remember preview: %+v", asks[0].Remember)
	}
	id := asks[0].ID
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"answer":"yes"}`, 400},
		{`{"answer":"allow","extra":1}`, 400},
		{`{"answer":"allow"} {"answer":"deny"}`, 400},
		{`not json`, 400},
		{`{"answer":"allow","prefix":"chmod"}`, 400},
	} {
		if code, body := f.do("POST", "/api/asks/"+id, f.token, c.body); code != c.code {
			t.Errorf("answer %s: %d %s, want %d", c.body, code, body, c.code)
		}
	}
	if code, _ := f.do("POST", "/api/asks/a999", f.token, `{"answer":"allow"}`); code != 404 {
		t.Errorf("unknown id: %d, want 404", code)
	}
	if code, body := f.do("POST", "/api/asks/"+id, f.token, `{"answer":"allow"}`); code != 200 {
		t.Fatalf("answer: %d %s", code, body)
	}
	o := <-got
	if o.err != nil || o.resp.Answer != approval.AllowOnce || !strings.Contains(o.resp.Approver, "user=alice addr=127.0.0.1:") || !o.resp.UIDKnown {
		t.Errorf("the run got %+v %v", o.resp, o.err)
	}
	code, body := f.do("POST", "/api/asks/"+id, f.token, `{"answer":"deny"}`)
	if code != 409 || !strings.Contains(body, "already answered (allow) by user=alice") {
		t.Errorf("second answer: %d %s, want 409 naming the first", code, body)
	}
}

func TestAuthAndOrigin(t *testing.T) {
	f := start(t, "alice", "bob")
	if code, _ := f.do("GET", "/api/asks", "", ""); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := f.do("GET", "/api/asks", strings.Repeat("0", 64), ""); code != 401 {
		t.Errorf("wrong token: %d, want 401", code)
	}
	if code, _ := f.do("GET", "/", "", ""); code != 200 {
		t.Errorf("the page itself: %d", code)
	}
	// The tokens file is private.
	st, err := os.Stat(f.srv.TokenFile())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tokens file: %v %v", st.Mode(), err)
	}
	// Login with the one-time code: a session cookie; the code works once.
	login, _ := f.srv.LoginURL("bob")
	code := login[strings.Index(login, "#code=")+6:]
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	post := func(path, body string, hdr ...string) (int, string) {
		req, _ := http.NewRequest("POST", strings.TrimSuffix(f.srv.URL(), "/")+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if c, body := post("/api/login", `{"code":"`+code+`"}`); c != 200 || !strings.Contains(body, `"bob"`) {
		t.Fatalf("login: %d %s", c, body)
	}
	if c, _ := post("/api/login", `{"code":"`+code+`"}`); c != 401 {
		t.Errorf("the one-time code again: %d, want 401", c)
	}
	resp, err := client.Get(f.srv.URL() + "api/whoami")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("whoami with the cookie: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	// Cross-origin: refused with the cookie, before any handler.
	if c, body := post("/api/rules/revoke", `{"run":"x","id":"y"}`, "Origin", "http://evil.example"); c != 403 {
		t.Errorf("cross-origin POST: %d %s, want 403", c, body)
	}
	if c, _ := post("/api/rules/revoke", `{"run":"x","id":"y"}`, "Sec-Fetch-Site", "cross-site"); c != 403 {
		t.Errorf("Sec-Fetch-Site cross-site: %d, want 403", c)
	}
	if c, _ := post("/api/rules/revoke", `{"run":"x","id":"y"}`, "Content-Type", "application/x-www-form-urlencoded"); c != 415 {
		t.Errorf("a form post: %d, want 415", c)
	}
	// No CORS grant, ever.
	req, _ := http.NewRequest("GET", f.srv.URL()+"api/asks", nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Errorf("CORS header sent: %q", h)
	}
	// DNS rebinding: a foreign Host is refused.
	if c, _ := f.do("GET", "/api/asks", f.token, "", "Host", "attacker.example"); c == 200 {
		req, _ := http.NewRequest("GET", f.srv.URL()+"api/asks", nil)
		req.Host = "attacker.example"
		req.Header.Set("Authorization", "Bearer "+f.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("foreign Host: %v %v, want 421", resp.StatusCode, err)
		}
	}
}

func TestBeyondLoopbackNeedsTLS(t *testing.T) {
	dir := t.TempDir()
	_, err := inbox.New(inbox.Config{Socket: filepath.Join(dir, "s"), StateDir: dir, Listen: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "--tls-self-signed") {
		t.Fatalf("non-loopback without TLS: %v", err)
	}
	srv, err := inbox.New(inbox.Config{Socket: filepath.Join(dir, "s"), StateDir: dir, Listen: "0.0.0.0:0", SelfSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL(), "https://") || len(srv.Fingerprint) != 64 {
		t.Errorf("TLS inbox: %s fingerprint %q", srv.URL(), srv.Fingerprint)
	}
}

func TestExpiredAsk(t *testing.T) {
	f := start(t)
	a := f.run("r1", approval.InboxInfo{})
	got := ask(a, 300*time.Millisecond, "chmod", "600", "f")
	id := f.waitAsks(1)[0].ID
	o := <-got
	if !errors.Is(o.err, approval.ErrTimeout) {
		t.Fatalf("the run after its deadline: %v", o.err)
	}
	f.waitAsks(0)
	if code, body := f.do("POST", "/api/asks/"+id, f.token, `{"answer":"allow"}`); code != 410 {
		t.Errorf("answer to an expired ask: %d %s, want 410", code, body)
	}
}

// TestRunDiesWhileAsking: a run killed while its ask waits: the ask
// disappears from the inbox and the inbox's audit log says so.
func TestRunDiesWhileAsking(t *testing.T) {
	f := start(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "INBOX_TEST_RUN="+f.sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id := f.waitAsks(1)[0].ID
	cmd.Process.Kill()
	cmd.Wait()
	f.waitAsks(0)
	if code, _ := f.do("POST", "/api/asks/"+id, f.token, `{"answer":"allow"}`); code != 410 {
		t.Errorf("answer after the run died: %d, want 410", code)
	}
	var found bool
	testkit.WaitCond(t, "the dropped ask audited", func() bool {
		evs, _ := audit.ReadFile(f.audit)
		for _, e := range evs {
			if e.Run == "doomed" && e.Decision == audit.DecisionAskUnavailable && strings.Contains(e.Reason, "connection to the inbox closed") {
				found = true
			}
		}
		return found
	})
}

// TestInboxRestart: the inbox stops while a run waits; the ask waits
// for a new inbox, reappears there and is answered. Without one, the
// deadline denies it.
func TestInboxRestart(t *testing.T) {
	f := start(t)
	a := f.run("r1", approval.InboxInfo{})
	got := ask(a, 60*time.Second, "chmod", "600", "f")
	f.waitAsks(1)
	f.srv.Close()
	<-f.done
	select {
	case o := <-got:
		t.Fatalf("the ask ended when the inbox stopped: %+v %v", o.resp, o.err)
	default:
	}
	f.serve()
	id := f.waitAsks(1)[0].ID
	if code, body := f.do("POST", "/api/asks/"+id, f.token, `{"answer":"deny"}`); code != 200 {
		t.Fatalf("answer after the restart: %d %s", code, body)
	}
	if o := <-got; o.err != nil || o.resp.Answer != approval.DenyOnce {
		t.Errorf("the run got %+v %v", o.resp, o.err)
	}

	// No inbox at all: the deadline denies.
	f.srv.Close()
	<-f.done
	o := <-ask(a, 300*time.Millisecond, "chmod", "600", "g")
	if !errors.Is(o.err, approval.ErrTimeout) {
		t.Errorf("with no inbox: %+v %v, want a timeout", o.resp, o.err)
	}
}

// TestManyAsks: 100 pending asks from 10 runs are listed and answered
// within a bound (ten seconds; a few hundred milliseconds here).
func TestManyAsks(t *testing.T) {
	f := start(t)
	var chans []chan outcome
	for r := 0; r < 10; r++ {
		a := f.run(fmt.Sprintf("run%d", r), approval.InboxInfo{})
		for i := 0; i < 10; i++ {
			chans = append(chans, ask(a, 60*time.Second, "chmod", "600", fmt.Sprintf("f%d", i)))
		}
	}
	t0 := time.Now()
	asks := f.waitAsks(100)
	var wg sync.WaitGroup
	for i, a := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans := []string{"allow", "deny"}[i%2]
			if code, body := f.do("POST", "/api/asks/"+a.ID, f.token, `{"answer":"`+ans+`"}`); code != 200 {
				t.Errorf("answer %s: %d %s", a.ID, code, body)
			}
		}()
	}
	wg.Wait()
	allowed := 0
	for _, ch := range chans {
		o := <-ch
		if o.err != nil {
			t.Errorf("run: %v", o.err)
		} else if o.resp.Answer.Allowed() {
			allowed++
		}
	}
	took := time.Since(t0)
	if allowed != 50 {
		t.Errorf("%d allowed, want 50", allowed)
	}
	if took > 10*time.Second {
		t.Errorf("100 asks listed and answered in %v, bound 10s", took)
	}
	t.Logf("100 asks from 10 runs listed and answered in %v", took)
}

// TestRevokeSessionRule: the rules page's revoke reaches the run.
func TestRevokeSessionRule(t *testing.T) {
	f := start(t)
	var mu sync.Mutex
	rules := []approval.InboxRule{{ID: "session:1", Decision: "allow", Match: "tool:exec:chmod 600 f", By: "allow_always by x"}}
	a := f.run("r1", approval.InboxInfo{
		Rules: func() []approval.InboxRule {
			mu.Lock()
			defer mu.Unlock()
			return append([]approval.InboxRule(nil), rules...)
		},
		Revoke: func(id, by string) error {
			mu.Lock()
			defer mu.Unlock()
			if id != "session:1" || len(rules) == 0 {
				return fmt.Errorf("no session rule %q", id)
			}
			if !strings.Contains(by, "user=") {
				return fmt.Errorf("revoke without who: %q", by)
			}
			rules = nil
			return nil
		}})
	_ = a
	testkit.WaitCond(t, "the run's rules listed", func() bool {
		_, body := f.do("GET", "/api/rules", f.token, "")
		return strings.Contains(body, `"session:1"`)
	})
	if code, body := f.do("POST", "/api/rules/revoke", f.token, `{"run":"r1","id":"session:9"}`); code != 404 {
		t.Errorf("revoke unknown rule: %d %s", code, body)
	}
	if code, body := f.do("POST", "/api/rules/revoke", f.token, `{"run":"r1","id":"session:1"}`); code != 200 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if _, body := f.do("GET", "/api/rules", f.token, ""); strings.Contains(body, `"session:1"`) {
		t.Errorf("rule still listed after revoke: %s", body)
	}
}

// TestTwoUsersOneAsk: two reviewers answer the same ask at once; the
// first answer wins, the other is told who gave it, and the run got
// exactly one answer, recorded with its giver's login.
func TestTwoUsersOneAsk(t *testing.T) {
	f := start(t, "alice", "bob")
	a := f.run("r1", approval.InboxInfo{})
	got := ask(a, 30*time.Second, "chmod", "600", "f")
	id := f.waitAsks(1)[0].ID
	type res struct {
		user string
		code int
		body string
	}
	out := make(chan res, 2)
	for _, u := range []string{"alice", "bob"} {
		ans := map[string]string{"alice": "allow", "bob": "deny"}[u]
		go func() {
			code, body := f.do("POST", "/api/asks/"+id, f.srv.Token(u), `{"answer":"`+ans+`"}`)
			out <- res{u, code, body}
		}()
	}
	r1, r2 := <-out, <-out
	if r1.code == 409 {
		r1, r2 = r2, r1
	}
	if r1.code != 200 || r2.code != 409 || !strings.Contains(r2.body, "user="+r1.user) {
		t.Fatalf("answers: %+v / %+v; want one 200 and one 409 naming the first", r1, r2)
	}
	o := <-got
	if o.err != nil || !strings.Contains(o.resp.Approver, "user="+r1.user+" ") {
		t.Errorf("the run got %+v %v, want %s's answer", o.resp, o.err, r1.user)
	}
}

// lines is a writer the test reads back: what the run's terminal shows.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunTerminalLines: what a run's terminal shows about its inbox is
// agentbox lines, not log records: no inbox yet, a question waiting
// there with the page's address, the inbox gone.
func TestRunTerminalLines(t *testing.T) {
	dir := t.TempDir()
	f := &fixture{t: t, sock: filepath.Join(dir, "inbox.sock"), state: filepath.Join(dir, "state"), audit: filepath.Join(dir, "inbox.jsonl")}
	term := &lines{}
	a, err := approval.New("inbox:"+f.sock, approval.Options{Warnings: term, Logger: quiet,
		Inbox: approval.InboxInfo{Attach: approval.InboxAttach{Run: "r1", Agent: "a1", Role: "developer"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.(io.Closer).Close()
	f.serve()
	testkit.WaitCond(t, "the run attached", func() bool { return strings.Contains(term.String(), "approval inbox connected") })
	got := ask(a, 90*time.Second, "chmod", "600", "f")
	id := f.waitAsks(1)[0].ID
	f.do("POST", "/api/asks/"+id, f.token, `{"answer":"deny"}`)
	<-got
	f.srv.Close()
	<-f.done
	testkit.WaitCond(t, "the inbox gone said", func() bool { return strings.Contains(term.String(), "the approval inbox went away") })
	out := term.String()
	want := []string{
		"agentbox: warning: no approval inbox at " + f.sock + " yet (no such file or directory): questions wait for one until their deadline, then are denied (start it with: agentbox inbox)\n",
		"agentbox: waiting for an answer in the inbox: " + f.srv.URL() + " (chmod 600 f, auto-deny in 1m",
		"agentbox: warning: the approval inbox went away (" + f.sock + "); reconnecting: questions wait for it until their deadline\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("terminal lacks %q:\n%s", w, out)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "agentbox: ") {
			t.Errorf("line %q is not an agentbox line", l)
		}
	}
}
