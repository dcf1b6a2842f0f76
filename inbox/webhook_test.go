package inbox_test

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
	"testing"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/inbox"
	"github.com/agentbox/agentbox/internal/testkit"
)

var hookSecret = []byte("inbox-webhook-test-secret-0123456789")

// receiver is a chat bot on loopback: it checks each ask's signature and
// keeps the asks it received.
type receiver struct {
	t    *testing.T
	srv  *httptest.Server
	asks chan approval.WebhookAsk
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, asks: make(chan approval.WebhookAsk, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := approval.VerifyWebhook(hookSecret, req.Header.Get(approval.WebhookTimestampHeader), req.Header.Get(approval.WebhookSignatureHeader), body, time.Now(), time.Minute); err != nil {
			t.Errorf("the inbox's ask does not verify: %v", err)
			http.Error(w, "bad signature", 401)
			return
		}
		var a approval.WebhookAsk
		if err := json.Unmarshal(body, &a); err != nil {
			t.Errorf("ask body: %v", err)
		}
		r.asks <- a
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) next() approval.WebhookAsk {
	r.t.Helper()
	select {
	case a := <-r.asks:
		return a
	case <-time.After(30 * time.Second):
		r.t.Fatal("no ask reached the webhook")
	}
	return approval.WebhookAsk{}
}

// answer posts a signed answer to the ask's answer URL (ts 0: now).
func answer(t *testing.T, a approval.WebhookAsk, decision, by string, secret []byte, ts int64) (int, string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"nonce":%q,"answer":%q,"by":%q}`, a.Nonce, decision, by))
	if ts == 0 {
		ts = time.Now().Unix()
	}
	req, _ := http.NewRequest("POST", a.AnswerURL, bytes.NewReader(body))
	req.Header.Set(approval.WebhookTimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(approval.WebhookSignatureHeader, approval.SignWebhook(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func webhookEvents(t *testing.T, log, kind string) []audit.Event {
	evs, _ := audit.ReadFile(log)
	var out []audit.Event
	for _, e := range evs {
		if e.Detail["webhook"] == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestInboxWebhook: the inbox posts each ask a run puts to it, signed, to
// its webhook; the webhook's answer reaches the run as the inbox's (the
// run checks the inbox user's grants) and the first answer wins between
// the page and the webhook either way round; a bad signature, a replay
// and an answer after the ask ended are refused and audited; an
// unreachable webhook leaves the ask on the page and the run's deadline
// denies it; a webhook identity that is not the inbox's user is refused.
func TestInboxWebhook(t *testing.T) {
	rcv := newReceiver(t)
	f := &fixture{t: t, sock: filepath.Join(t.TempDir(), "inbox.sock"), state: filepath.Join(t.TempDir(), "state"), audit: filepath.Join(t.TempDir(), "inbox.jsonl"),
		webhook: &approval.WebhookConfig{URLs: []string{rcv.srv.URL + "/hook?token=t0ps3cret"}, Secret: hookSecret}}
	f.serve("alice")
	a := f.run("r1", approval.InboxInfo{})

	// The webhook answers first.
	got := ask(a, 30*time.Second, "chmod", "600", "f")
	wa := rcv.next()
	if wa.Run != "r1" || wa.Action != "tool:exec:chmod 600 f" || wa.Rule != "developer/chmod" || !strings.HasPrefix(wa.AnswerURL, "http://127.0.0.1:") || wa.Type != "ask" {
		t.Errorf("the webhook's ask: %+v", wa)
	}
	pageID := f.waitAsks(1)[0].ID
	if wa.ID != pageID {
		t.Errorf("the webhook's ask id %q, the page's %q", wa.ID, pageID)
	}
	if code, body := answer(t, wa, "allow", "bot-x", []byte("another-secret-of-enough-length"), 0); code != 401 {
		t.Errorf("answer with a bad signature: %d %s, want 401", code, body)
	}
	if code, body := answer(t, wa, "allow", "bot-x", hookSecret, time.Now().Add(-time.Hour).Unix()); code != 401 {
		t.Errorf("answer outside the replay window: %d %s, want 401", code, body)
	}
	if code, body := answer(t, wa, "allow", "alice in #oncall", hookSecret, 0); code != 200 {
		t.Fatalf("the webhook's answer: %d %s", code, body)
	}
	o := <-got
	if o.err != nil || o.resp.Answer != approval.AllowOnce || !strings.Contains(o.resp.Approver, "inbox webhook:uid:") ||
		!strings.Contains(o.resp.Approver, "(by alice in #oncall)") || !o.resp.UIDKnown {
		t.Fatalf("the run got %+v %v", o.resp, o.err)
	}
	if code, body := answer(t, wa, "deny", "bot-x", hookSecret, 0); code != 409 {
		t.Errorf("the same answer URL again (a replay): %d %s, want 409", code, body)
	}
	if code, body := f.do("POST", "/api/asks/"+pageID, f.token, `{"answer":"deny"}`); code != 409 || !strings.Contains(body, "webhook:") {
		t.Errorf("the page's answer after the webhook's: %d %s, want 409 naming the webhook", code, body)
	}

	// The page answers first: the webhook's question ends (410).
	got = ask(a, 30*time.Second, "chmod", "700", "g")
	wa = rcv.next()
	pageID = f.waitAsks(1)[0].ID
	testkit.WaitCond(t, "the delivery audited", func() bool {
		for _, e := range webhookEvents(t, f.audit, approval.WebhookDelivered) {
			if e.Detail["request"] == wa.ID {
				return true
			}
		}
		return false
	})
	if code, body := f.do("POST", "/api/asks/"+pageID, f.token, `{"answer":"deny"}`); code != 200 {
		t.Fatalf("the page's answer: %d %s", code, body)
	}
	if o := <-got; o.err != nil || o.resp.Answer != approval.DenyOnce || strings.Contains(o.resp.Approver, "webhook") {
		t.Fatalf("the run got %+v %v", o.resp, o.err)
	}
	testkit.WaitCond(t, "the webhook's question withdrawn", func() bool {
		code, _ := answer(t, wa, "allow", "late bot", hookSecret, 0)
		return code == 410
	})

	// Every refusal audited in the inbox's log, the URL without its path
	// or query (a token), the secret nowhere.
	testkit.WaitCond(t, "refusals and deliveries audited", func() bool {
		return len(webhookEvents(t, f.audit, approval.WebhookRefused)) >= 4
	})
	for _, e := range webhookEvents(t, f.audit, approval.WebhookRefused) {
		if e.Decision != audit.DecisionAnswerRefused || e.Event != audit.EventAsk {
			t.Errorf("refusal audited as %+v", e)
		}
	}
	for _, e := range webhookEvents(t, f.audit, approval.WebhookDelivered) {
		if e.Run != "r1" || e.Detail["webhook_url"] != rcv.srv.URL {
			t.Errorf("delivery audited as %+v", e)
		}
	}
	if b := readFile(t, f.audit); strings.Contains(b, "t0ps3cret") || strings.Contains(b, string(hookSecret)) {
		t.Error("the webhook URL's token or the secret is in the inbox's audit log")
	}

	// A webhook nobody answers at: the ask stays on the page, the run's
	// deadline denies it (a failed delivery never allows).
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String() + "/hook"
	dead.Close()
	g := &fixture{t: t, sock: filepath.Join(t.TempDir(), "inbox.sock"), state: filepath.Join(t.TempDir(), "state"), audit: filepath.Join(t.TempDir(), "inbox.jsonl"),
		webhook: &approval.WebhookConfig{URLs: []string{deadURL}, Secret: hookSecret, Attempts: 2, Backoff: 10 * time.Millisecond}}
	g.serve()
	b := g.run("r2", approval.InboxInfo{})
	got = ask(b, 3*time.Second, "chmod", "600", "h")
	g.waitAsks(1)
	testkit.WaitCond(t, "failed deliveries audited", func() bool {
		return len(webhookEvents(t, g.audit, approval.WebhookDeliveryFailed)) == 2
	})
	if len(g.asks()) != 1 {
		t.Error("the ask left the page when its webhook failed")
	}
	if o := <-got; o.err == nil || o.resp.Answer.Allowed() {
		t.Errorf("an ask whose webhook failed ended %+v %v, want its deadline's error", o.resp, o.err)
	}

	// Another user's identity: refused.
	_, err := inbox.New(inbox.Config{Socket: filepath.Join(t.TempDir(), "x.sock"), StateDir: t.TempDir(), Logger: quiet,
		Webhook: &approval.WebhookConfig{URLs: []string{rcv.srv.URL}, Secret: hookSecret, Identity: "uid:4242"}})
	if err == nil || !strings.Contains(err.Error(), "not the inbox's user") {
		t.Errorf("a webhook identity other than the inbox's user: %v", err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
