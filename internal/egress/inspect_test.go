package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
)

const (
	realKey     = "sk-real-VALUE-0123456789"
	placeholder = "agentbox-placeholder-0123456789abcdef"
)

// inspectWorld is a TLS upstream standing in for a public API (its test CA
// standing in for the system's roots), a plain http upstream, and a
// proxy terminating TLS for example.com with a run authority.
type inspectWorld struct {
	tp     *testProxy
	api    *httptest.Server
	plain  *httptest.Server
	client *http.Client
	mu     sync.Mutex
	seen   []*http.Request
}

func newInspectWorld(t *testing.T, cfg Config, handler http.HandlerFunc) *inspectWorld {
	t.Helper()
	w := &inspectWorld{}
	record := func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.seen = append(w.seen, r.Clone(r.Context()))
		w.mu.Unlock()
		if handler != nil {
			handler(rw, r)
			return
		}
		io.WriteString(rw, "ok "+r.Method+" "+r.URL.Path)
	}
	w.api = httptest.NewTLSServer(http.HandlerFunc(record))
	t.Cleanup(w.api.Close)
	w.plain = httptest.NewServer(http.HandlerFunc(record))
	t.Cleanup(w.plain.Close)
	auth, err := NewAuthority("test", []string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(w.api.Certificate())
	cfg.Authority, cfg.UpstreamRoots = auth, roots
	if cfg.Terminate == nil {
		cfg.Terminate = func(host string, _ int) bool { return host == "example.com" }
	}
	apiHost, _, _ := strings.Cut(strings.TrimPrefix(w.api.URL, "https://"), ":")
	plainHost, _, _ := strings.Cut(strings.TrimPrefix(w.plain.URL, "http://"), ":")
	w.tp = newTestProxy(t, map[string]policy.Decision{"example.com": policy.Allow, "other.test": policy.Allow},
		map[string]string{"example.com": apiHost, "other.test": plainHost}, cfg)
	inside := x509.NewCertPool()
	inside.AddCert(auth.Cert())
	pu, _ := url.Parse("http://" + w.tp.addr)
	w.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: inside}}}
	return w
}

// apiURL is the upstream's URL under the name the proxy terminates.
func (w *inspectWorld) apiURL(path string) string {
	_, port, _ := strings.Cut(strings.TrimPrefix(w.api.URL, "https://"), ":")
	return "https://example.com:" + port + path
}

func (w *inspectWorld) plainURL(path string) string {
	_, port, _ := strings.Cut(strings.TrimPrefix(w.plain.URL, "http://"), ":")
	return "http://other.test:" + port + path
}

func (w *inspectWorld) do(t *testing.T, method, u string, hdr map[string]string) (int, string) {
	t.Helper()
	a := w.send(t, method, u, hdr, "body")
	return a.code, a.body
}

// answer is what the client got: the status, the header with each
// trailer as Trailer-NAME, the body and the error reading it.
type answer struct {
	code    int
	header  http.Header
	body    string
	readErr error
}

// send makes one request through the proxy and reads the whole answer.
func (w *inspectWorld) send(t *testing.T, method, u string, hdr map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	h := resp.Header.Clone()
	for k, vs := range resp.Trailer {
		h["Trailer-"+k] = vs
	}
	return answer{code: resp.StatusCode, header: h, body: string(b), readErr: err}
}

func exampleSecret() Secret {
	return Secret{Name: "API_KEY", Placeholder: placeholder, Value: realKey, Headers: []string{"x-api-key", "Authorization"},
		Hosts: func(h string, _ int) bool { return h == "example.com" }}
}

// TestInspectBrokersSecret: a request to the secret's host through the
// terminating proxy arrives upstream with the real value in place of the
// placeholder in the headers the secret is declared for — as it is, and
// in Basic credentials — and the real value is in no audit event.
func TestInspectBrokersSecret(t *testing.T) {
	w := newInspectWorld(t, Config{Secrets: []Secret{exampleSecret()}}, nil)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+placeholder))
	for _, hdr := range []map[string]string{{"X-Api-Key": placeholder}, {"Authorization": basic}, {"Authorization": "Bearer " + placeholder}} {
		code, body := w.do(t, "GET", w.apiURL("/v1/models"), hdr)
		if code != 200 || body != "ok GET /v1/models" {
			t.Fatalf("%v: got %d %q", hdr, code, body)
		}
	}
	w.mu.Lock()
	seen := w.seen
	w.mu.Unlock()
	if got := seen[0].Header.Get("X-Api-Key"); got != realKey {
		t.Errorf("x-api-key upstream = %q, want the real value", got)
	}
	if u, pw, ok := seen[1].BasicAuth(); !ok || u != "x-access-token" || pw != realKey {
		t.Errorf("basic upstream = %q %q %v", u, pw, ok)
	}
	if got := seen[2].Header.Get("Authorization"); got != "Bearer "+realKey {
		t.Errorf("bearer upstream = %q", got)
	}
	for _, e := range w.tp.snapshot() {
		if strings.Contains(e.Action+e.Reason+strings.Join(mapValues(e.Detail), " "), realKey) {
			t.Errorf("the real value is in an audit event: %+v", e)
		}
	}
	if d := w.tp.decisions(); !contains(d, "tool:net:example.com:"+portOf(w.api.URL)+"=allow") {
		t.Errorf("no allowed connection event: %v", d)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func portOf(u string) string {
	i := strings.LastIndexByte(u, ':')
	return u[i+1:]
}

// TestInspectRefusesPlaceholderElsewhere: the placeholder sent to a host
// the secret is not brokered for (a plain http:// one here, whose
// requests the proxy reads too) is refused and audited with the secret's
// name; nothing reaches that host.
func TestInspectRefusesPlaceholderElsewhere(t *testing.T) {
	w := newInspectWorld(t, Config{Secrets: []Secret{exampleSecret()}}, nil)
	for _, hdr := range []map[string]string{
		{"Authorization": "Bearer " + placeholder},
		{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+placeholder))},
	} {
		code, body := w.do(t, "POST", w.plainURL("/collect"), hdr)
		if code != http.StatusForbidden || !strings.Contains(body, "placeholder of secret API_KEY") {
			t.Errorf("%v: got %d %q, want 403 naming the secret", hdr, code, body)
		}
	}
	code, body := w.do(t, "GET", w.plainURL("/q?x="+url.QueryEscape(placeholder)), nil)
	if code != http.StatusForbidden {
		t.Errorf("placeholder in the query: got %d %q", code, body)
	}
	w.mu.Lock()
	n := len(w.seen)
	w.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests reached the other host", n)
	}
	found := false
	for _, e := range w.tp.snapshot() {
		if e.Detail["secret"] == "API_KEY" && e.Decision == "deny" {
			found = true
		}
	}
	if !found {
		t.Errorf("no deny event naming the secret: %v", w.tp.decisions())
	}
}

// TestInspectRequestRules: GET allowed, POST asked (no approver: refused
// as ask_unavailable), both audited with method and path.
func TestInspectRequestRules(t *testing.T) {
	decide := func(r Request) policy.Result {
		if r.Method == "GET" {
			return policy.Result{Decision: policy.Allow, Reason: "reads", Rule: &policy.RuleRef{ID: "t/get"}}
		}
		return policy.Result{Decision: policy.Ask, Reason: "writes need approval", Rule: &policy.RuleRef{ID: "t/write"}}
	}
	w := newInspectWorld(t, Config{DecideRequest: decide}, nil)
	if code, body := w.do(t, "GET", w.apiURL("/repos/o/r"), nil); code != 200 {
		t.Errorf("GET: %d %q", code, body)
	}
	code, body := w.do(t, "POST", w.apiURL("/repos/o/r/issues"), nil)
	if code != http.StatusForbidden || !strings.Contains(body, "rule t/write") {
		t.Errorf("POST: %d %q, want 403 naming the rule", code, body)
	}
	p := portOf(w.api.URL)
	d := w.tp.decisions()
	for _, want := range []string{"tool:http:GET example.com:" + p + "/repos/o/r=allow", "tool:http:POST example.com:" + p + "/repos/o/r/issues=ask_unavailable"} {
		if !contains(d, want) {
			t.Errorf("no event %s in %v", want, d)
		}
	}
}

// TestInspectRefusesPush: git smart HTTP's receive-pack — the
// advertisement and the POST, however sent — is decided by the push rule
// (none given: refused) and audited as a push; upload-pack (fetch) goes
// through.
func TestInspectRefusesPush(t *testing.T) {
	w := newInspectWorld(t, Config{}, nil)
	for _, c := range []struct{ method, path string }{
		{"GET", "/o/r.git/info/refs?service=git-receive-pack"},
		{"POST", "/o/r.git/git-receive-pack"},
		{"POST", "/o/r/git-receive-pack"},
	} {
		code, body := w.do(t, c.method, w.apiURL(c.path), map[string]string{"Content-Type": "application/x-git-receive-pack-request"})
		if code != http.StatusForbidden || !strings.Contains(body, "git push to https://example.com:") {
			t.Errorf("%s %s: %d %q, want a refused push", c.method, c.path, code, body)
		}
	}
	if code, _ := w.do(t, "GET", w.apiURL("/o/r.git/info/refs?service=git-upload-pack"), nil); code != 200 {
		t.Errorf("fetch advertisement: %d", code)
	}
	w.mu.Lock()
	for _, r := range w.seen {
		if strings.Contains(r.URL.String(), "receive-pack") {
			t.Errorf("a push request reached the server: %s %s", r.Method, r.URL)
		}
	}
	w.mu.Unlock()
	pushes := 0
	for _, e := range w.tp.snapshot() {
		if e.Detail["git"] == "push" && e.Decision == "deny" && strings.HasSuffix(e.Detail["repo"], "/o/r.git") || e.Detail["git"] == "push" && strings.HasSuffix(e.Detail["repo"], "/o/r") {
			pushes++
		}
	}
	if pushes != 3 {
		t.Errorf("%d push events, want 3: %+v", pushes, w.tp.snapshot())
	}
	// With a push rule that allows, the push goes through.
	w2 := newInspectWorld(t, Config{DecidePush: func(Request) policy.Result { return policy.Result{Decision: policy.Allow} }}, nil)
	if code, _ := w2.do(t, "POST", w2.apiURL("/o/r.git/git-receive-pack"), nil); code != 200 {
		t.Errorf("allowed push: %d", code)
	}
}

// TestInspectStreams: a streamed answer (server-sent events, or lines of
// unknown length) reaches the client event by event — the first before
// the upstream sends the second — with no secret and with a brokered
// secret (its answers scanned: the scanner holds nothing back that could
// not begin the value).
func TestInspectStreams(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   Config
		ctype string
	}{
		{"events", Config{}, "text/event-stream"},
		{"events scanned", Config{Secrets: []Secret{exampleSecret()}}, "text/event-stream"},
		{"lines scanned", Config{Secrets: []Secret{exampleSecret()}}, "application/x-ndjson"},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			w := newInspectWorld(t, c.cfg, func(rw http.ResponseWriter, r *http.Request) {
				rw.Header().Set("Content-Type", c.ctype)
				io.WriteString(rw, "data: first\n\n")
				rw.(http.Flusher).Flush()
				<-release
				io.WriteString(rw, "data: second\n\n")
			})
			// a first event held back would block until this deadline
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", w.apiURL("/stream"), nil)
			resp, err := w.client.Do(req)
			if err != nil {
				close(release)
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			line, err := br.ReadString('\n')
			close(release)
			if err != nil || line != "data: first\n" {
				t.Fatalf("first event: %q %v", line, err)
			}
			rest, _ := io.ReadAll(br)
			if !strings.Contains(string(rest), "data: second") {
				t.Errorf("second event missing: %q", rest)
			}
		})
	}
}

// TestInspectServerName: a TLS client asking for another name than the
// CONNECT host is refused and audited (no domain fronting through the
// terminating proxy), and the authority cannot vouch for names outside
// its constraints.
func TestInspectServerName(t *testing.T) {
	w := newInspectWorld(t, Config{}, nil)
	tr := w.client.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "elsewhere.test"
	tr.TLSClientConfig.InsecureSkipVerify = true
	c := &http.Client{Transport: tr}
	if resp, err := c.Get(w.apiURL("/")); err == nil {
		resp.Body.Close()
		t.Fatalf("a TLS client naming another host got through: %d", resp.StatusCode)
	}
	// The client sees the handshake fail before the proxy's handler has
	// written its event.
	testkit.WaitCond(t, "a deny event for the server name", func() bool {
		w.tp.mu.Lock()
		defer w.tp.mu.Unlock()
		for _, e := range w.tp.events {
			if e.Decision == "deny" && strings.Contains(e.Reason, `"elsewhere.test" does not match`) {
				return true
			}
		}
		return false
	})
	// The authority's name constraints: a leaf for another name does not
	// verify, even though the authority issued it.
	auth := w.tp.p.cfg.Authority
	leaf, err := auth.Leaf("evil.test")
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(leaf.Certificate[0])
	roots := x509.NewCertPool()
	roots.AddCert(auth.Cert())
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "evil.test"}); err == nil {
		t.Error("a leaf for a name outside the constraints verified")
	}
	ok, _ := auth.Leaf("example.com")
	cert, _ = x509.ParseCertificate(ok.Certificate[0])
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err != nil {
		t.Errorf("a leaf for the inspected host does not verify: %v", err)
	}
}

// FuzzRequestParts: git service classification, Basic credentials and
// secret substitution on any URL and header value: no panic; after
// substitution the placeholder is gone from the declared header, and
// nothing else changed; a placeholder elsewhere is found misplaced.
func FuzzRequestParts(f *testing.F) {
	f.Add("/o/r.git/info/refs", "service=git-receive-pack", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+placeholder)))
	f.Add("/o/r/git-upload-pack", "", "Bearer "+placeholder)
	f.Add("/x", "key="+placeholder, "basic !!!")
	f.Fuzz(func(t *testing.T, path, query, header string) {
		u := &url.URL{Scheme: "https", Host: "example.com", Path: path, RawQuery: query}
		gitService("https", "example.com", u)
		basicCredentials(header)
		r, err := http.NewRequest("GET", u.String(), nil)
		if err != nil {
			return
		}
		r.Header.Set("Authorization", header)
		r.Header.Set("X-Other", header)
		carries(r, placeholder)
		where := misplaced(r, exampleSecret())
		if strings.Contains(header, placeholder) && where == "" {
			t.Errorf("the placeholder in X-Other is not found misplaced")
		}
		rawQuery := r.URL.RawQuery
		substitute(r, exampleSecret())
		if strings.Contains(r.Header.Get("Authorization"), placeholder) {
			t.Errorf("placeholder left after substitution: %q", r.Header.Get("Authorization"))
		}
		if r.URL.RawQuery != rawQuery || r.Header.Get("X-Other") != header {
			t.Errorf("substituted outside the declared headers: %q %q", r.URL.RawQuery, r.Header.Get("X-Other"))
		}
		if dec, ok := basicCredentials(r.Header.Get("Authorization")); ok && strings.Contains(dec, placeholder) {
			t.Errorf("placeholder left in Basic credentials: %q", dec)
		}
	})
}

// snapshot copies the events recorded so far.
func (tp *testProxy) snapshot() []audit.Event {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]audit.Event(nil), tp.events...)
}

// TestInspectAnswerBeforeBody: an upstream that starts its answer before
// it has read the whole request (a model API streaming as soon as it can)
// gets the rest of the request, and the client the whole answer: the
// proxy reads the client's body while it relays the answer (full duplex).
// Without that, the body's last bytes never arrive, the upstream
// connection is closed and the client's is cut ("other side closed").
func TestInspectAnswerBeforeBody(t *testing.T) {
	w := newInspectWorld(t, Config{}, func(rw http.ResponseWriter, r *http.Request) {
		http.NewResponseController(rw).EnableFullDuplex()
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, "data: first\n\n")
		rw.(http.Flusher).Flush()
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(rw, "data: got %d %v\n\n", n, err)
	})
	pr, pw := io.Pipe()
	// bounded: without full duplex the exchange stalls instead of ending
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", w.apiURL("/v1/stream"), pr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.Write(bytes.Repeat([]byte("a"), 64<<10))
	}()
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() { r, err := w.client.Do(req); got <- result{r, err} }()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.resp.Body.Close()
	br := bufio.NewReader(r.resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: first\n" {
		t.Fatalf("first event: %q %v", line, err)
	}
	// the rest of the request only after the answer has begun
	<-done
	pw.Write(bytes.Repeat([]byte("b"), 64<<10))
	pw.Close()
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "data: got 131072 <nil>") {
		t.Errorf("the rest of the answer: %q %v", rest, err)
	}
}
