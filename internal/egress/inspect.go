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
	"github.com/agentbox/agentbox/internal/gitwire"
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
// the Headers of requests to the hosts Hosts allows — nowhere else: a
// request to those hosts carrying Placeholder in another header, its
// query or its path is refused, as is one carrying it to any other host
// the proxy reads. Value found in an answer is replaced by Placeholder
// (reflect.go).
type Secret struct {
	Name        string
	Placeholder string
	Value       string
	Hosts       func(host string, port int) bool
	// Headers are the request headers (any case) the value is put in:
	// the API's credential header (x-api-key, Authorization). None: the
	// value is put nowhere.
	Headers []string
	// Programs, when set, are the Programs (Config.Programs by name) that
	// alone hold the secret: its placeholder from any other process is
	// refused.
	Programs []string
}

// declares reports whether header k is one s is put in.
func (s Secret) declares(k string) bool {
	for _, h := range s.Headers {
		if strings.EqualFold(h, k) {
			return true
		}
	}
	return false
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
	// Origin is the process the connection came from (nil: not
	// attributed; Config.Processes unset).
	Origin *Origin
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
func (p *Proxy) inspect(c net.Conn, br *bufio.Reader, o *attribution, host string, port int, v Verdict, tlsHost string, detail map[string]string) {
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
				p.emit(o, host, port, Verdict{Decision: audit.DecisionDeny, Rule: v.Rule, Reason: why}, map[string]string{"inspected": "true"})
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
	p.emit(o, host, port, v, detail)
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
			p.serveRequest(w, r, Request{Method: r.Method, Scheme: scheme, Host: host, Port: port, Path: r.URL.Path, Origin: o.get()}, authority)
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
	p.closed(o, host, port, cc.read.Load(), cc.sent.Load(), start)
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
	// to take the secret (or its stand-in) elsewhere; one in another part
	// of a request to its hosts, an attempt to have the host hand the
	// value back (an echoing endpoint, a redirect).
	for _, s := range p.cfg.Secrets {
		var why string
		switch {
		case !p.holdsSecret(req.Origin, s):
			if carries(r, s.Placeholder) {
				why = notHeld(req.Origin, s)
			}
		case !s.Hosts(req.Host, req.Port):
			if carries(r, s.Placeholder) {
				why = fmt.Sprintf("the request carries the placeholder of secret %s, which is brokered for other hosts only", s.Name)
			}
		default:
			if where := misplaced(r, s); where != "" {
				why = fmt.Sprintf("the request carries the placeholder of secret %s in %s; it is put in place only in the header %s", s.Name, where, strings.Join(s.Headers, ", "))
				if len(s.Headers) == 0 {
					why = fmt.Sprintf("the request carries the placeholder of secret %s in %s; the secret declares no header to put it in", s.Name, where)
				}
			}
		}
		if why == "" {
			continue
		}
		detail["secret"] = s.Name
		v := Verdict{Decision: audit.DecisionDeny, Reason: why}
		p.emitRequest(req, v, detail)
		p.refuseRequest(w, req, v)
		return
	}
	var v Verdict
	var pushToken string // the approved push's token, put in the request
	var guard *gitwire.Guard
	if req.Push && p.cfg.PushTokens.Covers(req.Host, req.Port) {
		// A host whose pushes get a token per approved push: only the
		// approved push's tree gets it (pushtoken.go).
		var ok bool
		if v, pushToken, guard, ok = p.tokenPush(w, r, req, detail); !ok {
			return
		}
	} else if req.Push {
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
	toSecretHost := false
	for _, s := range p.cfg.Secrets {
		if s.Hosts(req.Host, req.Port) && p.holdsSecret(req.Origin, s) {
			substitute(out, s)
			toSecretHost = true
		}
	}
	if pushToken != "" {
		withPushToken(out, pushToken, guard)
		toSecretHost = true
	}
	rf := p.reflector.Load()
	if rf != nil && toSecretHost {
		// An answer the proxy can read: no compression it cannot undo.
		out.Header.Del("Accept-Encoding")
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
			if p.wireRefused(w, guard, req, detail) {
				return
			}
			var re *reflectedError
			if errors.As(err, &re) {
				detail := map[string]string{"method": req.Method, "path": req.Path, "secret": re.secret, "reflection": re.where, "form": re.form}
				v := Verdict{Decision: audit.DecisionDeny, Reason: re.Error()}
				p.emitRequest(req, v, detail)
				w.Header().Set("X-Agentbox", "agentbox: "+re.Error())
				http.Error(w, "agentbox: "+re.Error(), http.StatusBadGateway)
				return
			}
			msg := fmt.Sprintf("agentbox: %s %s%s: %v", req.Method, authority, req.Path, err)
			w.Header().Set("X-Agentbox", strings.ReplaceAll(msg, "\n", " "))
			http.Error(w, msg, http.StatusBadGateway)
		},
	}
	defer p.pushed(req, guard, detail) // closes the wire check
	if rf == nil {
		rp.ServeHTTP(w, out)
		return
	}
	sw := &scrubWriter{ResponseWriter: w, p: p, req: req}
	rp.ModifyResponse = func(resp *http.Response) error {
		// An answer of known length was relayed without flushes (whole
		// TLS records); sent on chunked now, it keeps that.
		sw.noFlush = announced(resp)
		return p.scrubAnswer(resp, req, toSecretHost)
	}
	rp.ServeHTTP(sw, out)
	sw.scrub(w.Header(), "trailer") // trailers are written when the handler returns
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
	req.Origin.detail(detail)
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

// misplaced says where r carries s's placeholder other than in the
// headers s is declared for ("" nowhere): another header (Basic
// credentials decoded), the query, the path.
func misplaced(r *http.Request, s Secret) string {
	for k, vs := range r.Header {
		if s.declares(k) {
			continue
		}
		for _, v := range vs {
			if strings.Contains(v, s.Placeholder) {
				return "the header " + k
			}
			if dec, ok := basicCredentials(v); ok && strings.Contains(dec, s.Placeholder) {
				return "the header " + k
			}
		}
	}
	if strings.Contains(r.URL.RawQuery, s.Placeholder) {
		return "the query"
	}
	if q, err := url.QueryUnescape(r.URL.RawQuery); err == nil && strings.Contains(q, s.Placeholder) {
		return "the query"
	}
	if strings.Contains(r.URL.Path, s.Placeholder) || strings.Contains(r.URL.RawPath, s.Placeholder) {
		return "the path"
	}
	return ""
}

// substitute puts s.Value in place of s.Placeholder in the values of the
// headers s is declared for (Basic credentials decoded and encoded
// again), and nowhere else.
func substitute(r *http.Request, s Secret) {
	for k, vs := range r.Header {
		if !s.declares(k) {
			continue
		}
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
}

// reflectedError refuses an answer that would hand a secret's value to
// the sandbox where it cannot be replaced (a redirect's Location, a
// content encoding the proxy does not read).
type reflectedError struct {
	secret, where, form string
	why                 string
}

func (e *reflectedError) Error() string {
	if e.why != "" {
		return e.why
	}
	return fmt.Sprintf("the answer's %s carries the real value of secret %s (%s): refused", e.where, e.secret, e.form)
}

// scrubAnswer readies an answer for the sandbox: a Location carrying a
// secret's value refuses it; the value in any other header is replaced
// by the placeholder; the body is scanned as it streams (its length
// changes with a replacement: sent chunked). toSecretHost: the request
// went to a secret's host, whose gzip/deflate answers are decoded and
// other encodings refused.
func (p *Proxy) scrubAnswer(resp *http.Response, req Request, toSecretHost bool) error {
	rf := p.reflector.Load()
	for _, k := range []string{"Location", "Content-Location", "Refresh", "Link"} {
		for _, v := range resp.Header.Values(k) {
			n := rf.contains(v)
			if n == nil {
				if u, err := url.PathUnescape(v); err == nil {
					n = rf.contains(u)
				}
			}
			if n != nil {
				return &reflectedError{secret: n.secret, where: strings.ToLower(k), form: n.form}
			}
		}
	}
	p.scrubHeader(resp.Header, req, "header")
	if !answerHasBody(req, resp) {
		return nil
	}
	body := resp.Body
	if ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); toSecretHost && ce != "" && ce != "identity" {
		var err error
		switch ce {
		case "gzip", "x-gzip":
			body, err = gzipBody(body)
		case "deflate":
			body, err = zlibBody(body)
		default:
			return &reflectedError{why: fmt.Sprintf("the answer is %s-encoded, which the proxy cannot search for the brokered secrets: refused", ce)}
		}
		if err != nil {
			return &reflectedError{why: fmt.Sprintf("the answer's %s encoding: %v", ce, err)}
		}
		resp.Header.Del("Content-Encoding")
	}
	var once sync.Map
	sr := rf.reader(body, announced(resp), func(n *needle) {
		if _, dup := once.LoadOrStore(n.secret+"\x00"+n.form, true); !dup {
			p.reflected(req, n, "body")
		}
	})
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if w, ok := resp.Body.(io.Writer); ok {
			resp.Body = scanRWC{scanReader: sr, w: w}
		}
		return nil
	}
	resp.Body = sr
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
}

// announced reports whether resp's body has a length announced ahead
// (and is no event stream): its reader does not wait on it piece by
// piece, so the scan may gather reads and its relay need not flush.
func announced(resp *http.Response) bool {
	return resp.ContentLength >= 0 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// answerHasBody reports whether an answer to req can carry a body.
func answerHasBody(req Request, resp *http.Response) bool {
	if req.Method == http.MethodHead || resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	s := resp.StatusCode
	return !(s >= 100 && s < 200 && s != http.StatusSwitchingProtocols || s == http.StatusNoContent || s == http.StatusNotModified)
}

// scrubHeader replaces the secrets' values in h's values (what: header,
// trailer), auditing each header that carried one.
func (p *Proxy) scrubHeader(h http.Header, req Request, what string) {
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = p.reflector.Load().replaceString(v, func(n *needle) { p.reflected(req, n, what+" "+k) })
		}
	}
}

// reflected audits a secret's value found in an answer (and replaced):
// the secret's name and where, never the value.
func (p *Proxy) reflected(req Request, n *needle, where string) {
	if p.cfg.Audit == nil {
		return
	}
	_ = p.cfg.Audit.Emit(audit.Event{Event: audit.EventViolation, Action: req.Action(),
		Reason: fmt.Sprintf("the answer from %s:%d carried the real value of secret %s (%s, %s): replaced by its placeholder", req.Host, req.Port, n.secret, where, n.form),
		Detail: map[string]string{"host": req.Host, "port": strconv.Itoa(req.Port), "secret": n.secret, "reflection": where, "form": n.form}})
}

// scrubWriter replaces the secrets' values in informational (1xx)
// answers' headers, which ReverseProxy relays before ModifyResponse, and
// drops the flushes ReverseProxy makes for an answer whose length the
// scan made unknown.
type scrubWriter struct {
	http.ResponseWriter
	p       *Proxy
	req     Request
	noFlush bool // the answer's Flushes are dropped
}

func (sw *scrubWriter) WriteHeader(code int) {
	if code < 200 {
		sw.scrub(sw.Header(), "header")
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *scrubWriter) scrub(h http.Header, what string) { sw.p.scrubHeader(h, sw.req, what) }

func (sw *scrubWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

func (sw *scrubWriter) Flush() {
	if !sw.noFlush {
		http.NewResponseController(sw.ResponseWriter).Flush()
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
		o := p.attribute(c)
		v := p.decide(o.get(), host, port)
		if !v.Allow {
			p.emit(o, host, port, v, map[string]string{"forward": "true"})
			return
		}
		tlsHost := ""
		if scheme == "https" {
			tlsHost = host
		}
		p.inspect(c, bufio.NewReader(c), o, host, port, v, tlsHost, map[string]string{"forward": "true"})
	})
}

// plainInspected serves one plain http:// request (already read from br)
// whose connection to host:port was allowed with v. One request per
// connection: a keep-alive connection would carry later requests to
// other hosts past the decision.
func (p *Proxy) plainInspected(c net.Conn, br *bufio.Reader, r *http.Request, o *attribution, host string, port int, v Verdict) {
	start := time.Now()
	p.emit(o, host, port, v, map[string]string{"inspected": "true"})
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
	p.serveRequest(w, r, Request{Method: r.Method, Scheme: "http", Host: host, Port: port, Path: r.URL.Path, Origin: o.get()}, authority)
	w.WriteHeader(http.StatusOK) // no-op once written
	p.closed(o, host, port, max(r.ContentLength, 0), cw.n, start)
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
