package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
)

// testProxy runs a proxy on loopback deciding with rules: host -> decision.
type testProxy struct {
	p      *Proxy
	addr   string
	mu     sync.Mutex
	events []audit.Event
}

func newTestProxy(t testing.TB, rules map[string]policy.Decision, resolve map[string]string, cfg Config) *testProxy {
	t.Helper()
	tp := &testProxy{}
	cfg.Decide = func(host string, port int) policy.Result {
		d, ok := rules[host]
		if !ok {
			return policy.Result{Decision: policy.Deny, Reason: "host not in the network allowlist"}
		}
		return policy.Result{Decision: d, Reason: "test rule", Rule: &policy.RuleRef{ID: "test/" + host}}
	}
	cfg.Resolve = func(ctx context.Context, host string) ([]string, error) {
		if a, ok := resolve[host]; ok {
			return []string{a}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	if cfg.Internal == nil {
		// The test servers listen on loopback: their names are opted in
		// (TestProxyRebinding tests the refusal).
		cfg.Internal = func(host string, _ int) bool { _, ok := resolve[host]; return ok }
	}
	cfg.Audit = audit.SinkFunc(func(e audit.Event) error {
		tp.mu.Lock()
		tp.events = append(tp.events, e)
		tp.mu.Unlock()
		return nil
	})
	tp.p = New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp.addr = l.Addr().String()
	go tp.p.Serve(l)
	t.Cleanup(func() { tp.p.Close() })
	return tp
}

func (tp *testProxy) decisions() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []string
	for _, e := range tp.events {
		if e.Decision != "" {
			out = append(out, e.Action+"="+e.Decision)
		}
	}
	return out
}

// client is an HTTP client that goes through the proxy.
func (tp *testProxy) client() *http.Client {
	u, _ := url.Parse("http://" + tp.addr)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
}

func TestProxyDecidesByHost(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over tls") }))
	defer srv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello plain "+r.Host) }))
	defer plain.Close()
	_, tport, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, pport, _ := net.SplitHostPort(plain.Listener.Addr().String())
	tp := newTestProxy(t, map[string]policy.Decision{"allowed.test": policy.Allow, "plain.test": policy.Allow, "asked.test": policy.Ask},
		map[string]string{"allowed.test": "127.0.0.1", "plain.test": "127.0.0.1", "denied.test": "127.0.0.1", "asked.test": "127.0.0.1"}, Config{})
	c := tp.client()

	resp, err := c.Get("https://allowed.test:" + tport + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello over tls" {
		t.Errorf("allowed https: %q", body)
	}
	resp, err = c.Get("http://plain.test:" + pport + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "hello plain plain.test") {
		t.Errorf("allowed http: %q", body)
	}
	if _, err := c.Get("https://denied.test:" + tport + "/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("denied https: %v", err)
	}
	resp, err = c.Get("http://denied.test:" + pport + "/")
	if err != nil || resp.StatusCode != 403 {
		t.Errorf("denied http: %v %v", resp, err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "agentbox: connection to denied.test") {
			t.Errorf("denied body %q", b)
		}
	}
	// No approver: an ask is denied.
	if _, err := c.Get("https://asked.test:" + tport + "/"); err == nil {
		t.Error("ask without approver went through")
	}
	got := strings.Join(tp.decisions(), " ")
	for _, want := range []string{"tool:net:allowed.test:" + tport + "=allow", "tool:net:plain.test:" + pport + "=allow",
		"tool:net:denied.test:" + tport + "=deny", "tool:net:asked.test:" + tport + "=ask_unavailable"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit lacks %s: %s", want, got)
		}
	}
	// Bytes are recorded when a connection closes: the client's idle
	// connections are closed, and the proxy's handler, which ends on its
	// own goroutine, writes the event (waited for, bounded).
	c.CloseIdleConnections()
	testkit.WaitCond(t, "a closing event with bytes", func() bool {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		for _, e := range tp.events {
			if e.Detail["bytes_down"] != "" && e.Detail["bytes_down"] != "0" {
				return true
			}
		}
		return false
	})
}

// TestProxySNIMismatch: a TLS connection whose server name differs from
// the decided CONNECT host is cut before it reaches the server.
func TestProxySNIMismatch(t *testing.T) {
	reached := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached <- struct{}{} }))
	srv.StartTLS()
	defer srv.Close()
	_, tport, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tp := newTestProxy(t, map[string]policy.Decision{"allowed.test": policy.Allow}, map[string]string{"allowed.test": "127.0.0.1"}, Config{})
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n", tport, tport)
	br := bufio.NewReader(conn)
	status, _ := br.ReadString('\n')
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT: %q", status)
	}
	br.ReadString('\n')
	tc := tls.Client(conn, &tls.Config{ServerName: "evil.test", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil {
		t.Fatal("TLS with another server name went through")
	}
	select {
	case <-reached:
		t.Fatal("the server was reached")
	default:
	}
	if got := strings.Join(tp.decisions(), " "); !strings.Contains(got, "=deny") {
		t.Errorf("no deny event for the SNI mismatch: %s", got)
	}
}

func TestProxyRateLimitAndAsk(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer plain.Close()
	_, pport, _ := net.SplitHostPort(plain.Listener.Addr().String())
	var asked []string
	tp := newTestProxy(t, map[string]policy.Decision{"a.test": policy.Allow, "ask.test": policy.Ask, "no.test": policy.Ask},
		map[string]string{"a.test": "127.0.0.1", "ask.test": "127.0.0.1", "no.test": "127.0.0.1"},
		Config{RatePerMinute: 2, Ask: func(ctx context.Context, host string, port int, res policy.Result) Verdict {
			asked = append(asked, host)
			if host == "ask.test" {
				return Verdict{Allow: true, Decision: audit.DecisionAskApproved, Approver: "tester"}
			}
			return Verdict{Decision: audit.DecisionAskDenied, Approver: "tester", Reason: "no"}
		}})
	c := tp.client()
	codes := []int{}
	for i := 0; i < 3; i++ {
		resp, err := c.Get("http://a.test:" + pport + "/")
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.StatusCode)
		resp.Body.Close()
	}
	if fmt.Sprint(codes) != "[200 200 403]" {
		t.Errorf("rate limit 2/min: statuses %v", codes)
	}
	resp, err := c.Get("http://ask.test:" + pport + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("approved ask: %v %v", resp, err)
	}
	resp, err = c.Get("http://no.test:" + pport + "/")
	if err != nil || resp.StatusCode != 403 {
		t.Errorf("denied ask: %v %v", resp, err)
	}
	if strings.Join(asked, ",") != "ask.test,no.test" {
		t.Errorf("asked %v", asked)
	}
}

// TestProxyBoundedInput: what the sandbox sends before a connection is
// decided is bounded, because the proxy lives in agentbox's own memory,
// outside the run's cgroup. A 160 MiB header, a 4 MiB CONNECT target and
// a 300-byte CONNECT host are refused with 431, 414, 414, each audited,
// and the proxy's allocations stay far below what was sent.
func TestProxyBoundedInput(t *testing.T) {
	tp := newTestProxy(t, map[string]policy.Decision{}, nil, Config{})
	filler := make([]byte, 64<<10)
	for i := range filler {
		filler[i] = 'a'
	}
	send := func(head string, body int) string {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			c.Write([]byte(head))
			for n := 0; n < body; n += len(filler) {
				if _, err := c.Write(filler); err != nil {
					return // the proxy stopped reading and closed: expected
				}
			}
		}()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, c := range []struct {
		name, head string
		body       int
		want       string
	}{
		{"160 MiB header", "GET http://x.test/ HTTP/1.1\r\nX-Big: ", 160 << 20, " 431 "},
		{"4 MiB CONNECT target", "CONNECT ", 4 << 20, " 414 "},
		{"300-byte CONNECT host", "CONNECT " + strings.Repeat("h", 300) + ":443 HTTP/1.1\r\n\r\n", 0, " 414 "},
	} {
		if got := send(c.head, c.body); !strings.Contains(got, c.want) {
			t.Errorf("%s: answer %q, want%s", c.name, got, c.want)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("the proxy allocated %d MiB while refusing oversized input", grew>>20)
	}
	testkit.WaitCond(t, "three refusals audited", func() bool {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		n := 0
		for _, e := range tp.events {
			if e.Decision == audit.DecisionDeny && (e.Detail["status"] == "431" || e.Detail["status"] == "414") {
				n++
			}
		}
		return n == 3
	})
}

// TestProxyRebinding: an allowed name that resolves to a loopback,
// private or link-local address is refused (DNS rebinding would reach
// the caller's own services on any port) unless it is listed as
// internal; an address allowed as itself is dialled.
func TestProxyRebinding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal-service") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	rules := map[string]policy.Decision{"rebind.test": policy.Allow, "listed.test": policy.Allow, "127.0.0.1": policy.Allow}
	resolve := map[string]string{"rebind.test": "127.0.0.1", "listed.test": "127.0.0.1"}
	tp := newTestProxy(t, rules, resolve, Config{Internal: func(host string, _ int) bool { return host == "listed.test" }})
	c := tp.client()
	get := func(host string) (int, string) {
		resp, err := c.Get("http://" + host + ":" + port + "/")
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("rebind.test"); code != http.StatusForbidden || strings.Contains(body, "internal-service") {
		t.Errorf("rebind.test -> 127.0.0.1: %d %q; want refused", code, body)
	}
	if code, body := get("listed.test"); code != 200 || body != "internal-service" {
		t.Errorf("listed.test (internal): %d %q", code, body)
	}
	if code, body := get("127.0.0.1"); code != 200 || body != "internal-service" {
		t.Errorf("127.0.0.1 allowed as itself: %d %q", code, body)
	}
	got := strings.Join(tp.decisions(), " ")
	if !strings.Contains(got, "tool:net:rebind.test:"+port+"=deny") {
		t.Errorf("refusal not audited as a deny: %s", got)
	}
	for _, c := range []struct {
		addr     string
		internal bool
	}{{"127.0.0.1", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.1.1", true}, {"169.254.169.254", true},
		{"100.64.0.1", true}, {"0.0.0.0", true}, {"::1", true}, {"fd00::1", true}, {"fe80::1", true},
		{"93.184.216.34", false}, {"2606:4700::1", false}, {"100.128.0.1", false}} {
		if internalAddr(c.addr) != c.internal {
			t.Errorf("internalAddr(%s) = %v", c.addr, !c.internal)
		}
	}
}
