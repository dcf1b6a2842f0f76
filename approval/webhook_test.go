package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef-webhook-test")

// events collects a webhook's audit events.
type events struct {
	mu sync.Mutex
	l  []WebhookEvent
}

func (e *events) add(ev WebhookEvent) { e.mu.Lock(); e.l = append(e.l, ev); e.mu.Unlock() }

func (e *events) count(kind, substr string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.l {
		if ev.Kind == kind && strings.Contains(ev.Reason, substr) {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// receiver is a loopback webhook receiver: it checks each ask's
// signature and hands the ask to the test.
func receiver(t *testing.T, secret []byte) (*httptest.Server, chan WebhookAsk) {
	asks := make(chan WebhookAsk, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := VerifyWebhook(secret, r.Header.Get(WebhookTimestampHeader), r.Header.Get(WebhookSignatureHeader), body, time.Now(), time.Minute); err != nil {
			t.Errorf("receiver: the ask's signature: %v", err)
			http.Error(rw, err.Error(), http.StatusUnauthorized)
			return
		}
		var a WebhookAsk
		if err := json.Unmarshal(body, &a); err != nil {
			t.Errorf("receiver: %v", err)
		}
		asks <- a
	}))
	t.Cleanup(srv.Close)
	return srv, asks
}

// answer POSTs a signed answer to url, signed at ts with secret; it
// returns the HTTP status.
func answer(t *testing.T, url string, secret []byte, ts int64, a WebhookAnswer) int {
	t.Helper()
	body, _ := json.Marshal(a)
	return post(t, url, ts, SignWebhook(secret, ts, body), body)
}

func post(t *testing.T, url string, ts int64, sig string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set(WebhookTimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(WebhookSignatureHeader, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func newTestWebhook(t *testing.T, urls []string, ev *events) *Webhook {
	t.Helper()
	w, err := NewWebhook(WebhookConfig{URLs: urls, Secret: testSecret, Identity: "uid:4321", Backoff: 10 * time.Millisecond, Audit: ev.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

type webhookResult struct {
	r   Response
	err error
}

func webhookAsync(w Approver, timeout time.Duration, req Request) chan webhookResult {
	ch := make(chan webhookResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		r, err := w.Approve(ctx, req)
		ch <- webhookResult{r, err}
	}()
	return ch
}

// TestWebhookAnswer: a receiver's signed answer is the ask's answer, by
// the webhook's identity; the ask it got is signed and complete.
func TestWebhookAnswer(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		allowed bool
	}{{"allow", true}, {"deny", false}, {"allow_always", true}, {"deny_always", false}} {
		t.Run(tc.answer, func(t *testing.T) {
			srv, asks := receiver(t, testSecret)
			ev := &events{}
			w := newTestWebhook(t, []string{srv.URL + "/hook?token=SECRETTOKEN"}, ev)
			res := webhookAsync(w, 10*time.Second, Request{ID: "r1", Agent: "a1", Role: "developer", Run: "run1", Pid: 42, Program: "/usr/bin/git", Argv: []string{"git", "push"}, Action: "git push", Rule: "developer/git.push"})
			a := <-asks
			if a.ID != "r1" || a.Action != "git push" || a.Approver != "uid:4321" || !validNonce(a.Nonce) || !strings.HasSuffix(a.AnswerURL, "/answer/"+a.Nonce) {
				t.Fatalf("ask = %+v", a)
			}
			// The delivery is audited once the receiver's response is in,
			// with the ask as put (the caller's own record of it may be
			// gone by then: the inbox's was, under load).
			waitFor(t, "the delivery's audit event", func() bool { return ev.count(WebhookDelivered, "attempt 1 of") == 1 })
			ev.mu.Lock()
			for _, e := range ev.l {
				if e.Kind == WebhookDelivered && (e.Ask.ID != "r1" || e.Ask.Run != "run1" || e.Ask.Agent != "a1" || e.Ask.Role != "developer" || e.Ask.Pid != 42 || e.Ask.Rule != "developer/git.push") {
					t.Errorf("the delivery's event carries the ask %+v", e.Ask)
				}
			}
			ev.mu.Unlock()
			if code := answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: tc.answer, By: "alice@chat"}); code != http.StatusOK {
				t.Fatalf("answer: HTTP %d", code)
			}
			r := <-res
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.r.Answer.String() != tc.answer || r.r.Answer.Allowed() != tc.allowed || !r.r.UIDKnown || r.r.UID != 4321 || r.r.Approver != "webhook:uid:4321 (by alice@chat)" {
				t.Fatalf("response = %+v", r.r)
			}
			for _, e := range ev.l {
				if strings.Contains(e.URL+e.Reason, "SECRETTOKEN") || strings.Contains(e.URL+e.Reason, string(testSecret)) {
					t.Fatalf("audit event carries a secret: %+v", e)
				}
			}
		})
	}
}

// TestWebhookRefusals: an answer with a bad signature, a stale
// timestamp, another ask's nonce, a replay of an accepted answer, and an
// answer after the deadline are all refused and audited; a refused
// answer never becomes the ask's answer.
func TestWebhookRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		reason string
		// send posts the refused answer; ok posts the ask's real answer
		// first (for the replay).
		send func(t *testing.T, a WebhookAsk) int
		ok   bool
		late bool
	}{
		{name: "bad signature", code: http.StatusUnauthorized, reason: "bad signature", send: func(t *testing.T, a WebhookAsk) int {
			return answer(t, a.AnswerURL, []byte("another-secret-of-16+bytes"), time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "allow"})
		}},
		{name: "signature over another body", code: http.StatusUnauthorized, reason: "bad signature", send: func(t *testing.T, a WebhookAsk) int {
			ts := time.Now().Unix()
			deny, _ := json.Marshal(WebhookAnswer{Nonce: a.Nonce, Answer: "deny"})
			allow, _ := json.Marshal(WebhookAnswer{Nonce: a.Nonce, Answer: "allow"})
			return post(t, a.AnswerURL, ts, SignWebhook(testSecret, ts, deny), allow)
		}},
		{name: "stale timestamp", code: http.StatusUnauthorized, reason: "outside the replay window", send: func(t *testing.T, a WebhookAsk) int {
			return answer(t, a.AnswerURL, testSecret, time.Now().Add(-time.Hour).Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "allow"})
		}},
		{name: "nonce not the URL's", code: http.StatusBadRequest, reason: "not the answer URL's", send: func(t *testing.T, a WebhookAsk) int {
			return answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: strings.Repeat("0", 32), Answer: "allow"})
		}},
		{name: "replayed answer", code: http.StatusConflict, reason: "already answered", ok: true, send: func(t *testing.T, a WebhookAsk) int {
			return answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "deny"})
		}},
		{name: "after the deadline", code: http.StatusGone, reason: "had ended", late: true, send: func(t *testing.T, a WebhookAsk) int {
			return answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "allow"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, asks := receiver(t, testSecret)
			ev := &events{}
			w := newTestWebhook(t, []string{srv.URL}, ev)
			timeout := 10 * time.Second
			if tc.late {
				timeout = 300 * time.Millisecond
			}
			res := webhookAsync(w, timeout, Request{ID: "r1", Action: "curl example.org"})
			a := <-asks
			var first webhookResult
			if tc.ok {
				if code := answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "allow"}); code != http.StatusOK {
					t.Fatalf("first answer: HTTP %d", code)
				}
				first = <-res
			}
			if tc.late {
				first = <-res
				if !errors.Is(first.err, ErrTimeout) {
					t.Fatalf("ask without an answer: %v, want ErrTimeout", first.err)
				}
			}
			if code := tc.send(t, a); code != tc.code {
				t.Fatalf("refused answer: HTTP %d, want %d", code, tc.code)
			}
			if ev.count(WebhookRefused, tc.reason) != 1 {
				t.Fatalf("refusal not audited with %q: %+v", tc.reason, ev.l)
			}
			if tc.ok || tc.late {
				return
			}
			// The refused answer did not end the ask: a good one still can.
			select {
			case r := <-res:
				t.Fatalf("ask ended by a refused answer: %+v", r)
			default:
			}
			if code := answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "deny"}); code != http.StatusOK {
				t.Fatalf("good answer after the refused one: HTTP %d", code)
			}
			if r := <-res; r.err != nil || r.r.Answer != DenyOnce {
				t.Fatalf("ask = %+v, %v; want deny", r.r, r.err)
			}
		})
	}
}

// TestWebhookUnreachable: a webhook nobody listens on is tried a bounded
// number of times, each failure audited, and the ask ends unavailable
// (denied by the caller), never allowed; with another approver it is
// left to that one.
func TestWebhookUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/hook"
	ln.Close()
	for _, tc := range []struct {
		name   string
		status int // a receiver answering this status; 0: nobody listens
	}{{"nobody listens", 0}, {"HTTP 500", 500}} {
		t.Run(tc.name, func(t *testing.T) {
			u := dead
			if tc.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(tc.status) }))
				defer srv.Close()
				u = srv.URL
			}
			ev := &events{}
			w := newTestWebhook(t, []string{u}, ev)
			r := <-webhookAsync(w, 10*time.Second, Request{ID: "r1", Action: "curl example.org"})
			if !errors.Is(r.err, ErrUnavailable) || r.r.Answer.Allowed() {
				t.Fatalf("unreachable webhook: %+v, %v; want ErrUnavailable", r.r, r.err)
			}
			if n := ev.count(WebhookDeliveryFailed, "attempt"); n != DefaultWebhookAttempts {
				t.Fatalf("%d delivery failures audited, want %d: %+v", n, DefaultWebhookAttempts, ev.l)
			}
			// Alongside another approver, the other one's answer counts.
			other := Func(func(ctx context.Context, req Request) (Response, error) {
				<-ctx.Done()
				return Response{}, ctxError(ctx, req.ID)
			})
			r = <-webhookAsync(Any(w, other), 300*time.Millisecond, Request{ID: "r2"})
			if !errors.Is(r.err, ErrTimeout) {
				t.Fatalf("Any(unreachable webhook, silent approver): %v, want ErrTimeout", r.err)
			}
		})
	}
}

// TestWebhookClose: closing the webhook (the run ends) ends a pending
// ask unavailable at once, and a later ask too, never allowed.
func TestWebhookClose(t *testing.T) {
	srv, asks := receiver(t, testSecret)
	w := newTestWebhook(t, []string{srv.URL}, &events{})
	res := webhookAsync(w, time.Minute, Request{ID: "r1"})
	<-asks
	w.Close()
	if r := <-res; !errors.Is(r.err, ErrUnavailable) || r.r.Answer.Allowed() {
		t.Fatalf("pending ask after Close: %+v, %v; want ErrUnavailable", r.r, r.err)
	}
	if r := <-webhookAsync(w, time.Minute, Request{ID: "r2"}); !errors.Is(r.err, ErrUnavailable) {
		t.Fatalf("ask after Close: %v; want ErrUnavailable", r.err)
	}
}

// TestWebhookConfig: what NewWebhook and ReadWebhookSecret refuse.
func TestWebhookConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  WebhookConfig
		want string
	}{
		{"no URL", WebhookConfig{Secret: testSecret, Identity: "uid:1"}, "no URL"},
		{"bad URL", WebhookConfig{URLs: []string{"ftp://x"}, Secret: testSecret, Identity: "uid:1"}, "want http(s)"},
		{"short secret", WebhookConfig{URLs: []string{"http://127.0.0.1:1/"}, Secret: []byte("short"), Identity: "uid:1"}, "at least 16"},
		{"no identity", WebhookConfig{URLs: []string{"http://127.0.0.1:1/"}, Secret: testSecret}, "no identity"},
		{"unknown user", WebhookConfig{URLs: []string{"http://127.0.0.1:1/"}, Secret: testSecret, Identity: "no-such-user-here"}, "no such user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewWebhook(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewWebhook: %v, want %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		mode          uint32
		want          string
	}{
		{"ok", "  0123456789abcdef0123\n", 0o600, ""},
		{"group readable", "0123456789abcdef0123", 0o640, "chmod 600"},
		{"short", "abc\n", 0o600, "at least 16"},
	} {
		t.Run("secret "+tc.name, func(t *testing.T) {
			p := dir + "/" + strings.ReplaceAll(tc.name, " ", "-")
			if err := writeFileMode(p, tc.content, tc.mode); err != nil {
				t.Fatal(err)
			}
			b, err := ReadWebhookSecret(p)
			if tc.want == "" {
				if err != nil || string(b) != "0123456789abcdef0123" {
					t.Fatalf("ReadWebhookSecret = %q, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("ReadWebhookSecret: %v, want %q naming the file", err, tc.want)
			}
		})
	}
}

func FuzzParseWebhookAnswer(f *testing.F) {
	for _, s := range []string{
		`{"nonce":"0123456789abcdef0123456789abcdef","answer":"allow","by":"alice"}`,
		`{"nonce":"0123456789abcdef0123456789abcdef","answer":"deny"}`,
		`{"nonce":"0123456789ABCDEF0123456789abcdef","answer":"allow"}`,
		`{"nonce":"0123456789abcdef0123456789abcdef","answer":"yes"}`,
		`{"nonce":"x","answer":"allow","extra":1}`,
		`{} {}`, `[]`, ``, `{"by":"\u001b[2J"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := parseWebhookAnswer(body)
		if err != nil {
			return
		}
		ans, perr := ParseAnswer(a.Answer)
		if perr != nil || ans == 0 || !validNonce(a.Nonce) || len(a.By) > 400 {
			t.Fatalf("accepted %q as %+v", body, a)
		}
	})
}

func FuzzVerifyWebhook(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"nonce":"0123456789abcdef0123456789abcdef","answer":"allow"}`)
	f.Add("1800000000", SignWebhook(testSecret, 1_800_000_000, body), body)
	f.Add("1800000000", "v1=00", body)
	f.Add("-1", "v1=", []byte{})
	f.Add("99999999999999999999", "v2=abc", body)
	f.Fuzz(func(t *testing.T, ts, sig string, b []byte) {
		if err := VerifyWebhook(testSecret, ts, sig, b, now, time.Minute); err != nil {
			return
		}
		// Accepted: it must be exactly the signature of this body.
		n, _ := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
		if strings.TrimSpace(sig) != SignWebhook(testSecret, n, b) && !strings.EqualFold(strings.TrimSpace(sig), SignWebhook(testSecret, n, b)) {
			t.Fatalf("accepted signature %q for %q at %q", sig, b, ts)
		}
	})
}

func writeFileMode(p, content string, mode uint32) error {
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Chmod(p, os.FileMode(mode))
}

// TestWebhookAnswerAfterEnd: once the ask's context is done (the inbox's
// page answered first, the run stopped waiting) a webhook answer is
// refused (410) at once — never told "accepted" and then dropped because
// Approve had not yet seen its context end.
func TestWebhookAnswerAfterEnd(t *testing.T) {
	srv, asks := receiver(t, testSecret)
	w := newTestWebhook(t, []string{srv.URL}, &events{})
	for i := range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := w.Approve(ctx, Request{ID: fmt.Sprintf("r%d", i), Action: "git push"})
			done <- err
		}()
		a := <-asks
		cancel()
		if code := answer(t, a.AnswerURL, testSecret, time.Now().Unix(), WebhookAnswer{Nonce: a.Nonce, Answer: "allow"}); code != http.StatusGone {
			t.Fatalf("trial %d: an answer after the ask ended: HTTP %d, want 410", i, code)
		}
		if err := <-done; err == nil {
			t.Fatalf("trial %d: Approve answered after its context ended", i)
		}
	}
}
