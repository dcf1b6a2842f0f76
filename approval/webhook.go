package approval

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// The webhook protocol (docs/operations.md, "Approvals by webhook"): each
// ask is POSTed as a JSON WebhookAsk to every configured URL, signed with
// a shared secret; whoever holds the secret (a chat bot, an on-call tool)
// answers by POSTing a signed WebhookAnswer to the ask's one-time
// answer_url, which the run serves on a loopback (or configured) address.
//
// Both directions carry two headers:
//
//	X-Agentbox-Timestamp: UNIX_SECONDS
//	X-Agentbox-Signature: v1=HEX(HMAC-SHA256(secret, UNIX_SECONDS + "." + BODY))
//
// An answer is accepted once, only with a valid signature, a timestamp
// within the replay window, the ask's nonce, and before the ask's
// deadline; every refusal is audited. An unreachable webhook never
// allows: a delivery that fails every attempt leaves the ask to the
// run's other approvers, or denies it.

// Webhook headers.
const (
	WebhookTimestampHeader = "X-Agentbox-Timestamp"
	WebhookSignatureHeader = "X-Agentbox-Signature"
)

// Defaults of WebhookConfig.
const (
	DefaultWebhookWindow   = 5 * time.Minute
	DefaultWebhookAttempts = 3
	DefaultWebhookBackoff  = 500 * time.Millisecond
	// MinWebhookSecret is the shortest secret a webhook accepts (bytes).
	MinWebhookSecret = 16
	// webhookMaxBody bounds an answer's body.
	webhookMaxBody = 64 << 10
	// webhookAuditCap bounds the refusals one webhook approver audits,
	// so a flood of bad requests cannot fill the audit log.
	webhookAuditCap = 1000
	// webhookDoneKept is how many answered or expired nonces are kept to
	// tell a replay or a late answer from an unknown one.
	webhookDoneKept = 4096
)

// WebhookAsk is the JSON body POSTed to a webhook for one ask.
type WebhookAsk struct {
	Type       string   `json:"type"` // "ask"
	Version    int      `json:"version"`
	ID         string   `json:"id"`
	Nonce      string   `json:"nonce"` // 32 hex digits; the answer must carry it
	Run        string   `json:"run,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Role       string   `json:"role,omitempty"`
	Pid        int      `json:"pid,omitempty"`
	Program    string   `json:"program,omitempty"`
	Identified string   `json:"identified,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	Cwd        string   `json:"cwd,omitempty"`
	Action     string   `json:"action,omitempty"`
	Rule       string   `json:"rule,omitempty"`
	Layer      string   `json:"layer,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Approver   string   `json:"approver"`   // the identity the answer counts as (--webhook-identity)
	Deadline   string   `json:"deadline"`   // RFC 3339; answers after it are refused
	AnswerURL  string   `json:"answer_url"` // POST the signed WebhookAnswer here, once
}

// WebhookAnswer is the JSON body POSTed to an ask's answer_url.
type WebhookAnswer struct {
	Nonce  string `json:"nonce"`
	Answer string `json:"answer"` // allow, deny, allow_always, deny_always, remember, remember_deny
	// By names who answered in the receiving tool (a chat user), for the
	// audit log. It is the tool's word, not checked: grants are the
	// webhook identity's.
	By string `json:"by,omitempty"`
}

// WebhookConfig configures a webhook approver (NewWebhook).
type WebhookConfig struct {
	// URLs receive each ask (http or https).
	URLs []string
	// Secret is the shared HMAC key (at least MinWebhookSecret bytes;
	// ReadWebhookSecret reads it from a file). Never logged nor audited.
	Secret []byte
	// Identity is the unix user (name or uid:N) whose grants the
	// webhook's answers carry: the policy's approvers block decides what
	// it may grant, as for an answer at the terminal.
	Identity string
	// Listen is the address the answer URLs are served on; default
	// 127.0.0.1:0 (a free loopback port).
	Listen string
	// AnswerBase replaces "http://LISTEN" in answer URLs (a reverse
	// proxy's address); optional.
	AnswerBase string
	// Window is the replay window: a signed message whose timestamp is
	// further from now than this is refused. Default DefaultWebhookWindow.
	Window time.Duration
	// Attempts bounds the deliveries of one ask to one URL; Backoff is
	// the wait before the second, doubled for each next one.
	Attempts int
	Backoff  time.Duration
	// Audit receives what the webhook did and refused (optional).
	Audit func(WebhookEvent)
}

// WebhookEvent is one thing a webhook approver reports for the audit
// log. It never carries the secret; URL is the webhook's scheme and host
// only (a path may hold a token).
type WebhookEvent struct {
	Kind    string // WebhookDelivered, WebhookDeliveryFailed, WebhookRefused
	Request string // the ask's id ("" for an answer naming no known ask)
	Action  string // the ask's action, when known
	URL     string
	Reason  string
	// Ask is the request as it was put to the webhook (zero when the
	// event names no known ask): a delivery is reported after the POST
	// returns, by which time the ask may have been answered and gone
	// from the caller's own records.
	Ask Request
}

// Kinds of WebhookEvent.
const (
	WebhookDelivered      = "webhook_delivered"
	WebhookDeliveryFailed = "webhook_delivery_failed"
	WebhookRefused        = "webhook_answer_refused"
)

// ReadWebhookSecret reads a shared secret from path: the file's content
// without surrounding white space. The file must not be readable or
// writable by group or others (like an ssh key), and the secret must be
// at least MinWebhookSecret bytes.
func ReadWebhookSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("webhook secret %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("webhook secret %s: mode %04o lets others read or change it (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("webhook secret %s: %w", path, err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinWebhookSecret {
		return nil, fmt.Errorf("webhook secret %s: %d bytes, want at least %d", path, len(b), MinWebhookSecret)
	}
	return b, nil
}

// SignWebhook returns the X-Agentbox-Signature value of body sent at
// unix time ts: "v1=" and the hex HMAC-SHA256 of "TS.BODY".
func SignWebhook(secret []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks a signed message: the timestamp header (unix
// seconds) within window of now, and the signature header equal to
// SignWebhook's (compared in constant time). The error says which check
// failed, never the expected signature.
func VerifyWebhook(secret []byte, tsHeader, sigHeader string, body []byte, now time.Time, window time.Duration) error {
	ts, err := strconv.ParseInt(strings.TrimSpace(tsHeader), 10, 64)
	if err != nil || ts <= 0 {
		return fmt.Errorf("%s %q: want unix seconds", WebhookTimestampHeader, capfield.Value(tsHeader, 40))
	}
	sig := strings.TrimSpace(sigHeader)
	if !strings.HasPrefix(sig, "v1=") {
		return fmt.Errorf("%s: want v1=HEX", WebhookSignatureHeader)
	}
	got, err := hex.DecodeString(sig[3:])
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%s: want v1= and 64 hex digits", WebhookSignatureHeader)
	}
	want, _ := hex.DecodeString(SignWebhook(secret, ts, body)[3:])
	if !hmac.Equal(got, want) {
		return errors.New("bad signature")
	}
	// Checked after the signature so an unsigned message learns nothing
	// about the clock.
	if d := now.Sub(time.Unix(ts, 0)); d > window || d < -window {
		return fmt.Errorf("timestamp %d is %s from now, outside the replay window of %s", ts, d.Round(time.Second), window)
	}
	return nil
}

// parseWebhookAnswer parses an answer body: one JSON object with a
// 32-hex-digit nonce and a known answer; unknown fields are an error.
func parseWebhookAnswer(body []byte) (WebhookAnswer, error) {
	var a WebhookAnswer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return WebhookAnswer{}, fmt.Errorf("webhook answer: %w", err)
	}
	if dec.More() {
		return WebhookAnswer{}, errors.New("webhook answer: more than one JSON value")
	}
	if !validNonce(a.Nonce) {
		return WebhookAnswer{}, fmt.Errorf("webhook answer: nonce %q: want 32 hex digits", capfield.Value(a.Nonce, 80))
	}
	if _, err := ParseAnswer(a.Answer); err != nil {
		return WebhookAnswer{}, fmt.Errorf("webhook answer: %w", err)
	}
	a.By = capfield.Value(shellquote.Sanitize(a.By), 120)
	return a, nil
}

func validNonce(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// webhookPending is one ask waiting for its answer.
type webhookPending struct {
	id, action string
	req        Request // as put to the webhook, for the audit
	deadline   time.Time
	answer     chan WebhookAnswer // buffered 1; sent to once
	// ended is the ask's context: once it is done (answered elsewhere,
	// cancelled), an answer is refused at once, before Approve's goroutine
	// has seen it end, so an answer is never told "accepted" and dropped.
	ended context.Context
}

// Webhook is the webhook approver: NewWebhook.
type Webhook struct {
	cfg    WebhookConfig
	uid    int
	ln     net.Listener
	srv    *http.Server
	base   string
	client *http.Client

	mu       sync.Mutex
	pending  map[string]*webhookPending // by nonce
	done     map[string]string          // nonce → "answered" or "expired"
	doneFIFO []string
	audited  int
	closed   bool
	closing  chan struct{} // closed by Close: pending asks end
}

// NewWebhook checks cfg, resolves its identity and starts serving
// answer URLs. Close stops the server and ends pending asks.
// Check validates cfg without listening: URLs, secret, identity.
func (cfg WebhookConfig) Check() error {
	_, err := cfg.check()
	return err
}

func (cfg WebhookConfig) check() (uid int, err error) {
	if len(cfg.URLs) == 0 {
		return 0, errors.New("webhook: no URL")
	}
	for _, u := range cfg.URLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return 0, fmt.Errorf("webhook URL %q: want http(s)://HOST/PATH", capfield.Value(u, 200))
		}
	}
	if len(cfg.Secret) < MinWebhookSecret {
		return 0, fmt.Errorf("webhook: the secret has %d bytes, want at least %d (--webhook-secret FILE)", len(cfg.Secret), MinWebhookSecret)
	}
	return webhookUID(cfg.Identity)
}

// NewWebhook checks cfg (at least one http(s) URL, a secret of at least
// MinWebhookSecret bytes, an identity whose grants its answers carry),
// fills in the defaults and starts listening for answers on cfg.Listen
// (a free loopback port when empty). The caller closes the Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	uid, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWebhookWindow
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultWebhookAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultWebhookBackoff
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("webhook: listen for answers on %s: %w", cfg.Listen, err)
	}
	w := &Webhook{cfg: cfg, uid: uid, ln: ln, pending: map[string]*webhookPending{}, done: map[string]string{}, closing: make(chan struct{})}
	w.base = strings.TrimSuffix(cfg.AnswerBase, "/")
	if w.base == "" {
		w.base = "http://" + ln.Addr().String()
	}
	w.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /answer/{nonce}", w.serveAnswer)
	w.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go w.srv.Serve(ln)
	return w, nil
}

// webhookUID resolves --webhook-identity: a user name or uid:N.
func webhookUID(id string) (int, error) {
	switch {
	case id == "":
		return 0, errors.New("webhook: no identity (--webhook-identity USER: the unix user whose grants its answers carry)")
	case strings.HasPrefix(id, "uid:"):
		n, err := strconv.Atoi(id[4:])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("webhook identity %q: want uid:NUMBER", id)
		}
		return n, nil
	}
	u, err := user.Lookup(id)
	if err != nil {
		return 0, fmt.Errorf("webhook identity %q: no such user on this machine", id)
	}
	return strconv.Atoi(u.Uid)
}

// UID is the uid of the webhook's identity: the grants its answers carry.
func (w *Webhook) UID() int { return w.uid }

// Addr is the address answers are served on.
func (w *Webhook) Addr() net.Addr { return w.ln.Addr() }

// Close stops serving answers; pending asks end with ErrUnavailable.
func (w *Webhook) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.closing)
	}
	w.mu.Unlock()
	return w.srv.Close()
}

func (w *Webhook) audit(e WebhookEvent) {
	if w.cfg.Audit != nil {
		w.cfg.Audit(e)
	}
}

// refuse audits a refused answer (up to webhookAuditCap, then one line
// saying the rest are not) and writes the HTTP error.
func (w *Webhook) refuse(rw http.ResponseWriter, code int, p *webhookPending, why string) {
	w.mu.Lock()
	w.audited++
	n := w.audited
	w.mu.Unlock()
	switch {
	case n < webhookAuditCap:
		e := WebhookEvent{Kind: WebhookRefused, Reason: why}
		if p != nil {
			e.Request, e.Action, e.Ask = p.id, p.action, p.req
		}
		w.audit(e)
	case n == webhookAuditCap:
		w.audit(WebhookEvent{Kind: WebhookRefused, Reason: why + "; further refused answers are not audited"})
	}
	http.Error(rw, "agentbox: "+why, code)
}

func (w *Webhook) markDone(nonce, how string) {
	if _, ok := w.done[nonce]; !ok {
		w.doneFIFO = append(w.doneFIFO, nonce)
		if len(w.doneFIFO) > webhookDoneKept {
			delete(w.done, w.doneFIFO[0])
			w.doneFIFO = w.doneFIFO[1:]
		}
	}
	w.done[nonce] = how
}

func (w *Webhook) serveAnswer(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, webhookMaxBody+1))
	if err != nil || len(body) > webhookMaxBody {
		w.refuse(rw, http.StatusBadRequest, nil, "answer body unreadable or over 64 KiB")
		return
	}
	now := time.Now()
	if err := VerifyWebhook(w.cfg.Secret, r.Header.Get(WebhookTimestampHeader), r.Header.Get(WebhookSignatureHeader), body, now, w.cfg.Window); err != nil {
		w.mu.Lock()
		p := w.pending[r.PathValue("nonce")] // for the audit line only
		w.mu.Unlock()
		w.refuse(rw, http.StatusUnauthorized, p, "answer refused: "+err.Error())
		return
	}
	a, err := parseWebhookAnswer(body)
	if err != nil {
		w.refuse(rw, http.StatusBadRequest, nil, "answer refused: "+err.Error())
		return
	}
	if a.Nonce != r.PathValue("nonce") {
		w.refuse(rw, http.StatusBadRequest, nil, "answer refused: its nonce is not the answer URL's")
		return
	}
	w.mu.Lock()
	p := w.pending[a.Nonce]
	how := w.done[a.Nonce]
	if p != nil && now.Before(p.deadline) && p.ended.Err() == nil {
		delete(w.pending, a.Nonce)
		w.markDone(a.Nonce, "answered")
		p.answer <- a
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
		io.WriteString(rw, "agentbox: answer accepted\n")
		return
	}
	w.mu.Unlock()
	switch {
	case p != nil && p.ended.Err() != nil && now.Before(p.deadline):
		w.refuse(rw, http.StatusGone, p, "answer "+a.Answer+" refused: the ask had ended (answered elsewhere or the run stopped waiting)")
	case p != nil:
		w.refuse(rw, http.StatusGone, p, "answer "+a.Answer+" refused: after the ask's deadline "+p.deadline.UTC().Format(time.RFC3339))
	case how == "answered":
		w.refuse(rw, http.StatusConflict, nil, "answer "+a.Answer+" refused: the ask was already answered (a replay?)")
	case how == "expired":
		w.refuse(rw, http.StatusGone, nil, "answer "+a.Answer+" refused: the ask had ended (its deadline passed or the run stopped waiting)")
	default:
		w.refuse(rw, http.StatusNotFound, nil, "answer "+a.Answer+" refused: no ask with this nonce")
	}
}

// Approve posts req to every webhook URL and waits for a signed answer,
// the end of ctx, or every delivery failing (ErrUnavailable).
func (w *Webhook) Approve(ctx context.Context, req Request) (Response, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var nb [16]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return Response{}, fmt.Errorf("webhook: nonce: %w", err)
	}
	nonce := hex.EncodeToString(nb[:])
	if req.ID == "" {
		req.ID = "w" + nonce[:12]
	}
	p := &webhookPending{id: req.ID, action: req.Action, req: req, deadline: deadline, answer: make(chan WebhookAnswer, 1), ended: ctx}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return Response{}, fmt.Errorf("webhook: closed: %w", ErrUnavailable)
	}
	w.pending[nonce] = p
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.pending[nonce] == p {
			delete(w.pending, nonce)
			w.markDone(nonce, "expired")
		}
		w.mu.Unlock()
	}()
	body, err := json.Marshal(WebhookAsk{
		Type: "ask", Version: 1, ID: req.ID, Nonce: nonce, Run: req.Run, Agent: req.Agent, Role: req.Role,
		Pid: req.Pid, Program: req.Program, Identified: req.Identified, Argv: req.Argv, Cwd: req.Cwd,
		Action: req.Action, Rule: req.Rule, Layer: req.Layer, Reason: req.Reason,
		Approver: w.cfg.Identity, Deadline: deadline.UTC().Format(time.RFC3339Nano),
		AnswerURL: w.base + "/answer/" + nonce,
	})
	if err != nil {
		return Response{}, fmt.Errorf("webhook: %w", err)
	}
	failed := make(chan error, len(w.cfg.URLs))
	for _, u := range w.cfg.URLs {
		go func() { failed <- w.deliver(ctx, u, body, p) }()
	}
	var errs []error
	for {
		select {
		case a := <-p.answer:
			ans, _ := ParseAnswer(a.Answer) // checked by parseWebhookAnswer
			who := "webhook:" + w.cfg.Identity
			if a.By != "" {
				who += " (by " + a.By + ")"
			}
			return Response{Answer: ans, Approver: who, UID: w.uid, UIDKnown: true}, nil
		case err := <-failed:
			if err == nil {
				continue
			}
			errs = append(errs, err)
			if len(errs) == len(w.cfg.URLs) {
				if ctx.Err() != nil {
					return Response{}, ctxError(ctx, req.ID)
				}
				return Response{}, fmt.Errorf("request %s: %w: %w", req.ID, errors.Join(errs...), ErrUnavailable)
			}
		case <-ctx.Done():
			return Response{}, ctxError(ctx, req.ID)
		case <-w.closing:
			return Response{}, fmt.Errorf("request %s: webhook closed: %w", req.ID, ErrUnavailable)
		}
	}
}

// redactURL is what the audit log says of a webhook URL: scheme and host
// (a path or query may hold a token).
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Scheme + "://" + p.Host
}

// deliver POSTs body to u, up to cfg.Attempts times with doubling
// backoff, auditing each outcome; nil once a 2xx answer came.
func (w *Webhook) deliver(ctx context.Context, u string, body []byte, p *webhookPending) error {
	wait := w.cfg.Backoff
	var last error
	for attempt := 1; attempt <= w.cfg.Attempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			wait *= 2
		}
		last = w.post(ctx, u, body)
		if last == nil {
			w.audit(WebhookEvent{Kind: WebhookDelivered, Request: p.id, Action: p.action, Ask: p.req, URL: redactURL(u),
				Reason: fmt.Sprintf("ask delivered (attempt %d of %d)", attempt, w.cfg.Attempts)})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.audit(WebhookEvent{Kind: WebhookDeliveryFailed, Request: p.id, Action: p.action, Ask: p.req, URL: redactURL(u),
			Reason: fmt.Sprintf("attempt %d of %d: %v", attempt, w.cfg.Attempts, last)})
	}
	return fmt.Errorf("webhook %s: %d attempts failed, the last: %w", redactURL(u), w.cfg.Attempts, last)
}

func (w *Webhook) post(ctx context.Context, u string, body []byte) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(actx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return errors.New("bad request URL")
	}
	ts := time.Now().Unix()
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(WebhookTimestampHeader, strconv.FormatInt(ts, 10))
	hr.Header.Set(WebhookSignatureHeader, SignWebhook(w.cfg.Secret, ts, body))
	resp, err := w.client.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, which may hold a token
		}
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

// Any asks every approver at once and returns the first answer; the
// others' questions are withdrawn. It fails only when all fail: with
// the first error that is not ErrUnavailable, else ErrUnavailable. It
// closes what it was given that are io.Closers.
func Any(as ...Approver) Approver {
	if len(as) == 1 {
		return as[0]
	}
	return anyApprover(as)
}

type anyApprover []Approver

func (m anyApprover) Approve(ctx context.Context, req Request) (Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type res struct {
		r   Response
		err error
	}
	ch := make(chan res, len(m))
	for _, a := range m {
		go func() {
			r, err := a.Approve(ctx, req)
			ch <- res{r, err}
		}()
	}
	var first error
	var unavailable []error
	for range m {
		x := <-ch
		if x.err == nil {
			return x.r, nil
		}
		if errors.Is(x.err, ErrUnavailable) {
			unavailable = append(unavailable, x.err)
		} else if first == nil {
			first = x.err
		}
	}
	if first != nil {
		return Response{}, first
	}
	return Response{}, errors.Join(unavailable...)
}

func (m anyApprover) Close() error {
	var errs []error
	for _, a := range m {
		if c, ok := a.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
