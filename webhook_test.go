package agentbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
)

// webhookReceiver is a chat bot on loopback: it checks each ask's
// signature and answers it through its answer URL with answer.
func webhookReceiver(t *testing.T, secret []byte, answer string, asks *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := approval.VerifyWebhook(secret, r.Header.Get(approval.WebhookTimestampHeader), r.Header.Get(approval.WebhookSignatureHeader), body, time.Now(), time.Minute); err != nil {
			t.Errorf("receiver: %v", err)
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		var a approval.WebhookAsk
		if err := json.Unmarshal(body, &a); err != nil {
			t.Errorf("receiver: %v", err)
			return
		}
		asks.Add(1)
		go func() {
			b, _ := json.Marshal(approval.WebhookAnswer{Nonce: a.Nonce, Answer: answer, By: "bot"})
			ts := time.Now().Unix()
			req, _ := http.NewRequest(http.MethodPost, a.AnswerURL, bytes.NewReader(b))
			req.Header.Set(approval.WebhookTimestampHeader, strconv.FormatInt(ts, 10))
			req.Header.Set(approval.WebhookSignatureHeader, approval.SignWebhook(secret, ts, b))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWebhookApprovals: a real run whose role asks before `touch`, the
// ask answered by a webhook on loopback. The answer decides whether the
// program runs; the webhook's identity must hold the grant the rule
// needs (approver: lead) or its answer is refused and audited; a webhook
// nobody listens on denies, with each failed delivery audited; the
// secret and the webhook URL's token never reach the audit log.
func TestWebhookApprovals(t *testing.T) {
	needSandbox(t)
	secret := []byte("a-shared-secret-0123456789")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, identity, answer string
		lead                   bool   // the rule needs approver role lead (members: root)
		unreachable            bool   // the webhook URL has no listener
		ran                    bool   // touch ran
		decision               string // the exec event's decision
		refused                bool   // an answer_refused event is in the log
	}{
		{name: "allow", identity: "uid:4321", answer: "allow", ran: true, decision: audit.DecisionAskApproved},
		{name: "deny", identity: "uid:4321", answer: "deny", decision: audit.DecisionAskDenied},
		{name: "granted identity", identity: "root", answer: "allow", lead: true, ran: true, decision: audit.DecisionAskApproved},
		{name: "identity without the grant", identity: "uid:4321", answer: "allow", lead: true, decision: audit.DecisionAskDenied, refused: true},
		{name: "unreachable", identity: "root", answer: "allow", unreachable: true, decision: audit.DecisionAskUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.lead {
				pol := "version: 1\napprovers:\n  lead: {members: [root], grant: ['*']}\nrules:\n  - {decision: ask, command: touch, approver: lead, description: touching needs a lead}\n"
				if err := os.WriteFile(w.policy, []byte(pol), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var asks atomic.Int32
			url := webhookReceiver(t, secret, tc.answer, &asks).URL + "/hook/TOKEN-IN-PATH"
			if tc.unreachable {
				url = dead + "/hook/TOKEN-IN-PATH"
			}
			target := filepath.Join(w.ws, "target")
			r, err := agentbox.New(w.ws, "developer", []string{"touch", "made"}, w.opts(
				agentbox.WithAudit(w.audit), agentbox.WithDir(target), agentbox.WithApprove("none"),
				agentbox.WithWebhook(approval.WebhookConfig{URLs: []string{url}, Secret: secret, Identity: tc.identity, Backoff: 20 * time.Millisecond}),
			)...)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			res, err := r.Wait()
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(filepath.Join(target, "made"))
			if ran := statErr == nil; ran != tc.ran || (res.ExitCode == 0) != tc.ran {
				t.Fatalf("touch ran = %v (exit %d), want %v", ran, res.ExitCode, tc.ran)
			}
			raw, err := os.ReadFile(w.audit)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, secret) || bytes.Contains(raw, []byte("TOKEN-IN-PATH")) {
				t.Fatal("the webhook secret or its URL's path reached the audit log")
			}
			if _, err := audit.VerifyFile(w.audit); err != nil {
				t.Fatalf("audit log: %v", err)
			}
			var decided, refused, failed bool
			for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				var e audit.Event
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				switch {
				case e.Event == audit.EventExec && len(e.Argv) > 0 && e.Argv[0] == "touch":
					decided = e.Decision == tc.decision
					if tc.ran && !strings.HasPrefix(e.Approver, "webhook:"+tc.identity) {
						t.Errorf("approver %q, want webhook:%s", e.Approver, tc.identity)
					}
				case e.Event == audit.EventAsk && e.Decision == audit.DecisionAnswerRefused:
					refused = true
				case e.Event == audit.EventAsk && e.Detail["webhook"] == approval.WebhookDeliveryFailed:
					failed = true
				}
			}
			if !decided || refused != tc.refused || failed != tc.unreachable {
				t.Fatalf("audit: decision %s seen %v, answer refused %v (want %v), delivery failed %v (want %v):\n%s", tc.decision, decided, refused, tc.refused, failed, tc.unreachable, raw)
			}
		})
	}
}

// TestWebhookRefusalsAudited: in a real run asking twice, a bot first
// sends each answer signed with the wrong secret, and before answering the
// second ask replays its signed answer to the first; all three are refused
// (401, 409) and land in the run's audit log as answer_refused, and the
// good answers still let both programs run.
func TestWebhookRefusalsAudited(t *testing.T) {
	needSandbox(t)
	secret := []byte("a-shared-secret-0123456789")
	type sent struct {
		url, ts, sig string
		body         []byte
	}
	var mu sync.Mutex
	var first *sent
	var codes []int
	postAnswer := func(s sent) int {
		req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(s.body))
		req.Header.Set(approval.WebhookTimestampHeader, s.ts)
		req.Header.Set(approval.WebhookSignatureHeader, s.sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("answer: %v", err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var a approval.WebhookAsk
		if err := json.Unmarshal(body, &a); err != nil {
			t.Errorf("receiver: %v", err)
			return
		}
		go func() {
			b, _ := json.Marshal(approval.WebhookAnswer{Nonce: a.Nonce, Answer: "allow", By: "bot"})
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			n, _ := strconv.ParseInt(ts, 10, 64)
			good := sent{a.AnswerURL, ts, approval.SignWebhook(secret, n, b), b}
			bad := good
			bad.sig = approval.SignWebhook([]byte("not-the-shared-secret-xyz"), n, b)
			mu.Lock()
			defer mu.Unlock()
			codes = append(codes, postAnswer(bad))
			if first != nil {
				codes = append(codes, postAnswer(*first)) // a replay of the first ask's answer
			} else {
				first = &good
			}
			codes = append(codes, postAnswer(good))
		}()
	}))
	defer srv.Close()
	w := newWorld(t)
	target := filepath.Join(w.ws, "target")
	// A script: each touch in it is a program start of its own, asked
	// about on its own.
	if err := os.WriteFile(filepath.Join(target, "two.sh"), []byte("touch a\ntouch b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "two.sh"}, w.opts(
		agentbox.WithAudit(w.audit), agentbox.WithDir(target), agentbox.WithApprove("none"),
		agentbox.WithWebhook(approval.WebhookConfig{URLs: []string{srv.URL}, Secret: secret, Identity: "root"}),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Wait(); err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	mu.Lock()
	got := fmt.Sprint(codes)
	mu.Unlock()
	if got != "[401 200 401 409 200]" {
		t.Fatalf("answer statuses %s, want [401 200 401 409 200]", got)
	}
	raw, err := os.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e audit.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == audit.EventAsk && e.Decision == audit.DecisionAnswerRefused && e.Detail["webhook"] == approval.WebhookRefused {
			switch {
			case strings.Contains(e.Reason, "bad signature"):
				count["bad signature"]++
			case strings.Contains(e.Reason, "already answered"):
				count["replay"]++
			}
		}
	}
	if count["bad signature"] != 2 || count["replay"] != 1 {
		t.Fatalf("refusals audited %v, want 2 bad signatures and 1 replay:\n%s", count, raw)
	}
	if bytes.Contains(raw, secret) {
		t.Fatal("the secret reached the audit log")
	}
}
