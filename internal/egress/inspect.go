package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// Inspected connections. For the hosts Config.Terminate names the proxy
// does not pass TLS through: it answers the client's handshake with a
// certificate of the run's Authority (which the sandbox trusts), reads
// each HTTP request, decides it (brokered secrets, a git push, the
// network block's request rules), and sends it on over a TLS connection
// of its own to the real host, verified against the system's roots.
// Plain http:// requests and forwarded loopback APIs are read the same way.

// Secret is one brokered credential: the sandbox holds Placeholder where
// the caller had Value; the proxy puts Value in place of Placeholder in
// the headers and query of requests to the hosts Hosts allows, and refuses
// a request carrying Placeholder anywhere else.
type Secret struct {
	Name        string
	Placeholder string
	Value       string
	Hosts       func(host string, port int) bool
}

// Request is one HTTP request the proxy read, as it is decided.
type Request struct {
	Method string
	Scheme string // https (terminated) or http
	Host   string
	Port   int
	Path   string // without the query
	// Push is set for git smart HTTP's receive-pack (a push): its
	// advertisement (GET info/refs?service=git-receive-pack) and its POST.
	Push bool
	// Repo is the repository URL of a git smart HTTP request.
	Repo string
}

// Action is the request's policy action (tool:http:METHOD host:port/path).
func (r Request) Action() string { return policy.HTTPAction(r.Method, r.Host, r.Port, r.Path) }

// gitService classifies a git smart HTTP request: the service
// (git-upload-pack, git-receive-pack) and the repository URL, or "" for
// any other request. Both the advertisement and the POST are classified,
// so a push is refused before the client sends a pack.
func gitService(scheme, authority string, u *url.URL) (service, repo string) {
	p := u.Path
	switch {
	case strings.HasSuffix(p, "/info/refs"):
		service = u.Query().Get("service")
		p = strings.TrimSuffix(p, "/info/refs")
	case strings.HasSuffix(p, "/git-receive-pack"):
		service, p = "git-receive-pack", strings.TrimSuffix(p, "/git-receive-pack")
	case strings.HasSuffix(p, "/git-upload-pack"):
		service, p = "git-upload-pack", strings.TrimSuffix(p, "/git-upload-pack")
	default:
		return "", ""
	}
	if service != "git-receive-pack" && service != "git-upload-pack" {
		return "", ""
	}
	return service, scheme + "://" + authority + p
}

// terminates reports whether the proxy reads the requests to host:port.
func (p *Proxy) terminates(host string, port int) bool {
	return p.cfg.Authority != nil && p.cfg.Terminate != nil && p.cfg.Terminate(host, port)
}

// transport is the upstream side of inspected connections: dials through
// the proxy's resolver and internal-address checks, verifies TLS against
// UpstreamRoots (nil: the system's), keeps connections for reuse.
func (p *Proxy) transport() *http.Transport {
	p.trOnce.Do(func() {
		p.tr = &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				h, ps, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				port, _ := strconv.Atoi(ps)
				return p.dial(h, port)
			},
			TLSClientConfig:       &tls.Config{RootCAs: p.cfg.UpstreamRoots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   p.cfg.DialTimeout,
			ResponseHeaderTimeout: 10 * time.Minute,
			DisableCompression:    true,
		}
	})
	return p.tr
}

// countConn counts the bytes each way of an inspected connection.
type countConn struct {
	net.Conn
	r          *bufio.Reader
	read, sent atomic.Int64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.sent.Add(int64(n))
	return n, err
}

// oneConn is a listener that yields one connection, then blocks until
// Close.
type oneConn struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func newOneConn(c net.Conn) *oneConn {
	l := &oneConn{c: make(chan net.Conn, 1), done: make(chan struct{}), addr: c.LocalAddr()}
	l.c <- c
	return l
}

func (l *oneConn) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneConn) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *oneConn) Addr() net.Addr { return l.addr }

// inspect serves the HTTP requests of one client connection c (bytes the
// client sent early in br) whose connection to host:port was allowed with
// v. tlsHost, when not "", is the name the client's TLS must be for: the
// proxy terminates TLS with a certificate for it. The connection's close
// event records its bytes.
func (p *Proxy) inspect(c net.Conn, br *bufio.Reader, host string, port int, v Verdict, tlsHost string, detail map[string]string) {
	cc := &countConn{Conn: c, r: br}
	var conn net.Conn = cc
	scheme := "http"
	if tlsHost != "" {
		// A client speaking plain HTTP after CONNECT (Gemini CLI does so
		// for http:// upstreams) is served as plain HTTP.
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		first, err := br.Peek(1)
		c.SetReadDeadline(time.Time{})
		if err != nil {
			return
		}
		if first[0] == 0x16 {
			scheme = "https"
			var sniErr error
			tc := tls.Server(cc, &tls.Config{
				MinVersion: tls.VersionTLS12,
				NextProtos: []string{"http/1.1"},
				GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
					if sni := strings.TrimSuffix(hello.ServerName, "."); sni != "" && !strings.EqualFold(sni, tlsHost) {
						sniErr = fmt.Errorf("TLS server name %q does not match the CONNECT host %s", sni, tlsHost)
						return nil, sniErr
					}
					return p.cfg.Authority.Leaf(tlsHost)
				},
			})
			tc.SetDeadline(time.Now().Add(30 * time.Second))
			if err := tc.Handshake(); err != nil {
				why := "TLS handshake with the client: " + err.Error()
				if sniErr != nil {
					why = sniErr.Error()
				}
				p.emit(host, port, Verdict{Decision: audit.DecisionDeny, Rule: v.Rule, Reason: why}, map[string]string{"inspected": "true"})
				return
			}
			tc.SetDeadline(time.Time{})
			conn = tc
		}
	}
	start := time.Now()
	if detail == nil {
		detail = map[string]string{}
	}
	detail["inspected"] = "true"
	p.emit(host, port, v, detail)
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	if !(scheme == "https" && port == 443 || scheme == "http" && port == 80) {
		authority += ":" + strconv.Itoa(port)
	}
	l := newOneConn(conn)
	var active sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			active.Add(1)
			defer active.Done()
			p.serveRequest(w, r, Request{Method: r.Method, Scheme: scheme, Host: host, Port: port, Path: r.URL.Path}, authority)
		}),
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    maxRequestHeader,
		ErrorLog:          debugLog(),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				l.Close()
			}
		},
	}
	go srv.Serve(l)
	select {
	case <-l.done:
	case <-p.ctx.Done():
		srv.Close()
	}
	active.Wait() // a hijacked (upgraded) request ends with its handler
	p.closed(host, port, cc.read.Load(), cc.sent.Load(), start)
}

// serveRequest decides one request and, when it is allowed, sends it on
// with the brokered secrets in place.
func (p *Proxy) serveRequest(w http.ResponseWriter, r *http.Request, req Request, authority string) {
	if svc, repo := gitService(req.Scheme, authority, r.URL); svc != "" {
		req.Push, req.Repo = svc == "git-receive-pack", repo
	}
	detail := map[string]string{"method": req.Method, "path": req.Path}
	if req.Repo != "" {
		detail["git"] = "fetch"
		if req.Push {
			detail["git"] = "push"
		}
		detail["repo"] = req.Repo
	}
	// A placeholder sent where its secret is not brokered is an attempt
	// to take the secret (or its stand-in) elsewhere.
	for _, s := range p.cfg.Secrets {
		if s.Hosts(req.Host, req.Port) || !carries(r, s.Placeholder) {
			continue
		}
		detail["secret"] = s.Name
		v := Verdict{Decision: audit.DecisionDeny, Reason: fmt.Sprintf("the request carries the placeholder of secret %s, which is brokered for other hosts only", s.Name)}
		p.emitRequest(req, v, detail)
		p.refuseRequest(w, req, v)
		return
	}
	var v Verdict
	if req.Push {
		// A push is decided by the role's push rule whatever the client:
		// git, a renamed copy of it, a script or raw HTTP.
		v = p.decideRequest(req, p.cfg.DecidePush, "no push rule: pushes are refused")
	} else {
		v = p.decideRequest(req, p.cfg.DecideRequest, "")
	}
	// A request no rule names keeps its connection's decision, whose
	// event is in the log already; git requests are recorded always.
	if !v.Allow || v.Rule != "" || req.Repo != "" {
		p.emitRequest(req, v, detail)
	}
	if !v.Allow {
		p.refuseRequest(w, req, v)
		return
	}
	// The upstream request lives until its answer is relayed or the proxy
	// closes, not until the client connection's background read reports
	// something: a cancelled upstream read mid-answer aborts the client's
	// connection (ReverseProxy's ErrAbortHandler), which Gemini CLI met
	// as "other side closed" under load.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	// Full duplex: an upstream may answer before it has read the whole
	// request (a model API streaming as soon as its JSON decoder is done,
	// the body's last bytes still in flight). Without this, the server
	// closes the request body once the answer's header is written; the
	// transport's write of those last bytes fails, it closes the upstream
	// connection, and the answer is cut mid-stream — Gemini CLI's "other
	// side closed" under load (TestGeminiUnderRun).
	_ = http.NewResponseController(w).EnableFullDuplex()
	defer context.AfterFunc(p.ctx, cancel)()
	out := r.Clone(ctx)
	for _, s := range p.cfg.Secrets {
		if s.Hosts(req.Host, req.Port) {
			substitute(out, s)
		}
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = req.Scheme, authority
			pr.Out.Host = "" // the decided host, whatever Host the client sent
		},
		Transport: p.transport(),
		// FlushInterval 0: ReverseProxy flushes server-sent events and
		// answers of unknown length as they come, and lets a download of
		// known length fill whole TLS records.
		BufferPool: copyBuffers,
		ErrorLog:   debugLog(),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			msg := fmt.Sprintf("agentbox: %s %s%s: %v", req.Method, authority, req.Path, err)
			w.Header().Set("X-Agentbox", strings.ReplaceAll(msg, "\n", " "))
			http.Error(w, msg, http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, out)
}

// decideRequest runs decide (nil: allow unless deflt says why not), and
// the approver for an ask.
func (p *Proxy) decideRequest(req Request, decide func(Request) policy.Result, deflt string) Verdict {
	var res policy.Result
	switch {
	case decide != nil:
		res = decide(req)
	case deflt != "":
		res = policy.Result{Decision: policy.Deny, Reason: deflt}
	default:
		res = policy.Result{Decision: policy.Allow}
	}
	var ask func(policy.Result) Verdict
	if p.cfg.AskRequest != nil {
		ask = func(res policy.Result) Verdict { return p.cfg.AskRequest(p.ctx, req, res) }
	}
	return verdictOf(res, ask)
}

func (p *Proxy) emitRequest(req Request, v Verdict, detail map[string]string) {
	if p.cfg.Audit == nil {
		return
	}
	detail["host"], detail["port"] = req.Host, strconv.Itoa(req.Port)
	_ = p.cfg.Audit.Emit(audit.Event{Event: audit.EventNet, Action: req.Action(), Decision: v.Decision,
		Rule: v.Rule, Reason: v.Reason, Approver: v.Approver, Detail: detail})
	if !v.Allow && p.cfg.Refused != nil {
		p.cfg.Refused(req.Host, req.Port, v)
	}
}

func (p *Proxy) refuseRequest(w http.ResponseWriter, req Request, v Verdict) {
	what := fmt.Sprintf("%s %s:%d%s", req.Method, req.Host, req.Port, req.Path)
	if req.Push {
		what = "git push to " + req.Repo
	}
	msg := fmt.Sprintf("agentbox: denied: %s", what)
	if v.Rule != "" {
		msg += " (rule " + v.Rule + ")"
	}
	if v.Reason != "" {
		msg += ": " + v.Reason
	}
	w.Header().Set("X-Agentbox", strings.ReplaceAll(msg, "\n", " "))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, msg+"\n")
}

// carries reports whether r holds s in its URL, a header value, or the
// password or user of Basic credentials.
func carries(r *http.Request, s string) bool {
	if strings.Contains(r.URL.RawQuery, s) || strings.Contains(r.URL.Path, s) {
		return true
	}
	if q, err := url.QueryUnescape(r.URL.RawQuery); err == nil && strings.Contains(q, s) {
		return true
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
			if dec, ok := basicCredentials(v); ok && strings.Contains(dec, s) {
				return true
			}
		}
	}
	return false
}

// basicCredentials decodes the user:password of a Basic header value.
func basicCredentials(v string) (string, bool) {
	scheme, enc, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// substitute puts s.Value in place of s.Placeholder in r's header values
// (Basic credentials decoded and encoded again) and query.
func substitute(r *http.Request, s Secret) {
	for k, vs := range r.Header {
		for i, v := range vs {
			if dec, ok := basicCredentials(v); ok && strings.Contains(dec, s.Placeholder) {
				scheme, _, _ := strings.Cut(v, " ")
				vs[i] = scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(dec, s.Placeholder, s.Value)))
				continue
			}
			if strings.Contains(v, s.Placeholder) {
				vs[i] = strings.ReplaceAll(v, s.Placeholder, s.Value)
			}
		}
		r.Header[k] = vs
	}
	if strings.Contains(r.URL.RawQuery, s.Placeholder) {
		r.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, s.Placeholder, url.QueryEscape(s.Value))
	}
}

// ForwardHTTP serves l, a listener inside the sandbox's namespace, as the
// loopback API at host:port the sandbox addresses as 127.0.0.1:port, with
// its requests read (secrets brokered, request rules, pushes): scheme
// https terminates the client's TLS with the run's authority and speaks
// TLS upstream.
func (p *Proxy) ForwardHTTP(l net.Listener, host string, port int, scheme string) error {
	if scheme == "https" && p.cfg.Authority == nil {
		return errors.New("egress: an https forward needs the run's authority")
	}
	return p.serve(l, func(c net.Conn) {
		v := p.decide(host, port)
		if !v.Allow {
			p.emit(host, port, v, map[string]string{"forward": "true"})
			return
		}
		tlsHost := ""
		if scheme == "https" {
			tlsHost = host
		}
		p.inspect(c, bufio.NewReader(c), host, port, v, tlsHost, map[string]string{"forward": "true"})
	})
}

// plainInspected serves one plain http:// request (already read from br)
// whose connection to host:port was allowed with v. One request per
// connection: a keep-alive connection would carry later requests to
// other hosts past the decision.
func (p *Proxy) plainInspected(c net.Conn, br *bufio.Reader, r *http.Request, host string, port int, v Verdict) {
	start := time.Now()
	p.emit(host, port, v, map[string]string{"inspected": "true"})
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	if port != 80 {
		authority += ":" + strconv.Itoa(port)
	}
	r.RemoteAddr = c.RemoteAddr().String()
	r.Header.Del("Proxy-Connection")
	r.Header.Del("Proxy-Authorization")
	cw := &countWriter{w: c}
	w := &closeWriter{w: cw, h: http.Header{}}
	p.serveRequest(w, r, Request{Method: r.Method, Scheme: "http", Host: host, Port: port, Path: r.URL.Path}, authority)
	w.WriteHeader(http.StatusOK) // no-op once written
	p.closed(host, port, max(r.ContentLength, 0), cw.n, start)
}

// closeWriter is an http.ResponseWriter on a raw connection for one
// response delimited by the connection's close.
type closeWriter struct {
	w       io.Writer
	h       http.Header
	written bool
}

func (cw *closeWriter) Header() http.Header { return cw.h }

func (cw *closeWriter) WriteHeader(status int) {
	if cw.written {
		return
	}
	cw.written = true
	cw.h.Del("Content-Length")
	cw.h.Del("Transfer-Encoding")
	cw.h.Set("Connection", "close")
	fmt.Fprintf(cw.w, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	cw.h.Write(cw.w)
	io.WriteString(cw.w, "\r\n")
}

func (cw *closeWriter) Write(b []byte) (int, error) {
	cw.WriteHeader(http.StatusOK)
	return cw.w.Write(b)
}

// Flush is a no-op: every Write goes to the connection at once.
func (cw *closeWriter) Flush() {}

// copyBuffers are ReverseProxy's copy buffers: 128 KiB, fewer reads and
// writes per download than its 32 KiB default.
var copyBuffers = &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *(b.p.Get().(*[]byte)) }
func (b *bufferPool) Put(x []byte) { b.p.Put(&x) }

// debugLog is where the proxy's HTTP server and reverse proxy report
// their own errors: nowhere, unless AGENTBOX_DEBUG_EGRESS names a file.
func debugLog() *log.Logger {
	if f := os.Getenv("AGENTBOX_DEBUG_EGRESS"); f != "" {
		if w, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			return log.New(w, "egress: ", log.Lmicroseconds)
		}
	}
	return log.New(io.Discard, "", 0)
}
