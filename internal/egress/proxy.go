// Package egress is agentbox's per-run egress proxy: the only way out of a
// sandbox run with network mode proxy. The sandbox has a network namespace
// of its own with nothing but loopback, where the proxy's listener sits;
// the proxy itself runs outside, decides every connection by host (the
// policy's tool:net actions), asks an approver where the policy says ask,
// enforces a per-host rate limit, resolves names itself (the sandbox needs
// no DNS), and audits every connection with the bytes it carried.
//
// Protocols: HTTP CONNECT (HTTPS and any TLS passed through; the TLS server
// name must equal the CONNECT host) and plain HTTP requests in absolute
// form (decided on the request's host, one request per connection).
package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// Verdict is the outcome of deciding one connection.
type Verdict struct {
	Allow    bool
	Decision string // audit decision: allow, deny, ask_approved, ask_denied, ask_timeout, ask_unavailable
	Rule     string
	Approver string
	Reason   string
}

// Config configures a Proxy.
type Config struct {
	// Decide decides a connection to host:port (required): the policy's
	// answer for tool:net:host:port.
	Decide func(host string, port int) policy.Result
	// Ask obtains a human answer for an ask (nil: every ask is denied,
	// audited as ask_unavailable). It may block until the answer.
	Ask func(ctx context.Context, host string, port int, res policy.Result) Verdict
	// Audit receives the connection events (nil: none).
	Audit audit.Sink
	// Resolve maps a host name to addresses (default: the system
	// resolver). Tests map names to local servers here.
	Resolve func(ctx context.Context, host string) ([]string, error)
	// RatePerMinute limits new connections per host (0: none).
	RatePerMinute int
	// Internal reports the hosts whose names may resolve to loopback,
	// private, link-local or unique-local addresses (nil: none). For any
	// other name such addresses are dropped from the resolver's answer
	// and, when none is left, the connection is refused: an allowed name
	// that resolves to 127.0.0.1 (DNS rebinding) must not reach the
	// caller's own services. An IP literal is dialled as given: the
	// allow entry named the address.
	Internal func(host string, port int) bool
	// DialTimeout bounds connecting upstream (default 30 s).
	DialTimeout time.Duration

	// Authority and Terminate: the proxy terminates the TLS of CONNECTs to
	// the hosts Terminate reports (with certificates of Authority, which
	// the sandbox trusts) and reads their requests (inspect.go).
	Authority *Authority
	Terminate func(host string, port int) bool
	// UpstreamRoots verify the real hosts of terminated connections (nil:
	// the system's roots).
	UpstreamRoots *x509.CertPool
	// Secrets are the brokered credentials.
	Secrets []Secret
	// DecideRequest decides a request read from an inspected connection or
	// a plain http:// one (nil: allowed).
	DecideRequest func(Request) policy.Result
	// AskRequest asks about a request the policy asks about (nil: denied,
	// audited as ask_unavailable).
	AskRequest func(ctx context.Context, r Request, res policy.Result) Verdict
	// DecidePush decides a git push seen on the wire (nil: refused).
	DecidePush func(Request) policy.Result
	// Refused is told of each refused connection or request (nil: none):
	// the run says so once on stderr for the agent's own API host.
	Refused func(host string, port int, v Verdict)
	// Processes, when set, attributes each connection to the process
	// that opened it and the program it runs (attrib.go): recorded on its
	// audit events.
	Processes *Processes
	// Programs are rights of single programs (programs.go); they need
	// Processes to know which program a connection is from.
	Programs []Program
	// PushTokens, when set, gives the receive-pack requests of an approved
	// git push's process tree to its hosts a token minted for that push,
	// and refuses every other process's (pushtoken.go). It needs
	// Processes and the hosts' TLS terminated.
	PushTokens *PushTokens
}

// Proxy serves one run's egress.
type Proxy struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	trOnce sync.Once
	tr     *http.Transport

	// reflector finds the secrets' values in answers (nil: no secrets):
	// replaced when a push token is minted (redact).
	reflector atomic.Pointer[reflector]
	// redacted are values found in answers besides Config.Secrets (the
	// push tokens minted so far; mu held).
	redacted []Secret

	mu    sync.Mutex
	ls    []net.Listener
	conns map[net.Conn]struct{}
	rate  map[string][]time.Time
}

// New returns a proxy; Serve starts it.
func New(cfg Config) *Proxy {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{cfg: cfg, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}, rate: map[string][]time.Time{}}
	p.reflector.Store(newReflector(cfg.Secrets))
	if cfg.PushTokens != nil {
		cfg.PushTokens.minted = p.redact
	}
	return p
}

// redact adds value (a minted push token, name) to what answers are
// searched for: found, it is replaced by a placeholder (reflect.go).
func (p *Proxy) redact(name, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redacted = append(p.redacted, Secret{Name: name, Placeholder: "agentbox-redacted-push-token", Value: value})
	p.reflector.Store(newReflector(append(slices.Clone(p.cfg.Secrets), p.redacted...)))
}

// Serve accepts connections on l until Close (or l fails).
func (p *Proxy) Serve(l net.Listener) error {
	return p.serve(l, p.handle)
}

// Forward serves l, a listener inside the sandbox's namespace, as a plain
// TCP forward to host:port (a model gateway on the caller's loopback the
// sandbox addresses as 127.0.0.1:port): each connection is decided,
// rate-limited, asked and audited like a proxied one to host:port.
func (p *Proxy) Forward(l net.Listener, host string, port int) error {
	return p.serve(l, func(c net.Conn) {
		o := p.attribute(c)
		v := p.decide(o.when(p.governs(host, port)), host, port)
		if !v.Allow {
			p.emit(o, host, port, v, map[string]string{"forward": "true"})
			return
		}
		up, err := p.dial(host, port)
		if err != nil {
			p.emit(o, host, port, Verdict{Decision: v.Decision, Rule: v.Rule, Approver: v.Approver, Reason: v.Reason + "; upstream: " + err.Error()}, map[string]string{"error": err.Error(), "forward": "true"})
			return
		}
		defer up.Close()
		o.hold()
		start := time.Now()
		p.emit(o, host, port, v, map[string]string{"forward": "true"})
		upN, downN := pipe(c, bufio.NewReader(c), up)
		p.closed(o, host, port, upN, downN, start)
	})
}

func (p *Proxy) serve(l net.Listener, handle func(net.Conn)) error {
	p.mu.Lock()
	p.ls = append(p.ls, l)
	p.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		p.mu.Lock()
		full := len(p.conns) >= maxConns
		if !full {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if full {
			p.refuseInput(c, http.StatusServiceUnavailable, fmt.Sprintf("more than %d connections open at once", maxConns))
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			handle(c)
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
			c.Close()
		}()
	}
}

// Close stops accepting, ends every open connection and waits for their
// handlers (each writes its audit event).
func (p *Proxy) Close() error {
	p.cancel()
	p.mu.Lock()
	for _, l := range p.ls {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.tr != nil {
		p.tr.CloseIdleConnections()
	}
	return nil
}

// decide runs the policy (a program's own hosts first, programs.go), the
// rate limit and, for ask, the approver, for a connection from o.
func (p *Proxy) decide(o *Origin, host string, port int) Verdict {
	var ask func(policy.Result) Verdict
	if p.cfg.Ask != nil {
		ask = func(res policy.Result) Verdict { return p.cfg.Ask(p.ctx, host, port, res) }
	}
	v := verdictOf(p.decideHost(o, host, port), ask)
	if v.Allow && p.cfg.RatePerMinute > 0 && !p.take(host) {
		v = Verdict{Decision: audit.DecisionDeny, Rule: v.Rule,
			Reason: fmt.Sprintf("rate limit: more than %d new connections per minute to %s", p.cfg.RatePerMinute, host)}
	}
	return v
}

// verdictOf turns a policy result into a verdict, asking (ask nil: no
// approver, denied as ask_unavailable) when the policy asks.
func verdictOf(res policy.Result, ask func(policy.Result) Verdict) Verdict {
	v := Verdict{Reason: res.Reason}
	if res.Rule != nil {
		v.Rule = res.Rule.ID
	}
	switch res.Decision {
	case policy.Allow:
		v.Allow, v.Decision = true, audit.DecisionAllow
	case policy.Deny:
		v.Decision = audit.DecisionDeny
	case policy.Ask:
		if ask == nil {
			v.Decision, v.Reason = audit.DecisionAskUnavailable, res.Reason+"; no approver"
		} else {
			a := ask(res)
			a.Rule = v.Rule
			v = a
		}
	}
	return v
}

// take counts one connection to host in the last minute's window.
func (p *Proxy) take(host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	w := p.rate[host][:0]
	for _, t := range p.rate[host] {
		if now.Sub(t) < time.Minute {
			w = append(w, t)
		}
	}
	if len(w) >= p.cfg.RatePerMinute {
		p.rate[host] = w
		return false
	}
	p.rate[host] = append(w, now)
	return true
}

func (p *Proxy) emit(a *attribution, host string, port int, v Verdict, detail map[string]string) {
	if p.cfg.Audit == nil {
		return
	}
	a.after(p, func(o *Origin) { p.write(o, host, port, v, detail) })
}

// write audits one connection event from o.
func (p *Proxy) write(o *Origin, host string, port int, v Verdict, detail map[string]string) {
	if detail == nil {
		detail = map[string]string{}
	}
	o.detail(detail)
	detail["host"], detail["port"] = host, strconv.Itoa(port)
	_ = p.cfg.Audit.Emit(audit.Event{Event: audit.EventNet, Action: policy.NetAction(host, port), Decision: v.Decision,
		Rule: v.Rule, Reason: v.Reason, Approver: v.Approver, Detail: detail})
}

// refuse answers a denied request with a proxy error the client shows.
func refuse(c net.Conn, status int, msg string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nX-Agentbox: %s\r\nContent-Length: %d\r\n\r\n%s\n",
		status, http.StatusText(status), strings.ReplaceAll(msg, "\r\n", " "), len(msg)+1, msg)
}

// Bounds on what the sandbox sends before a connection is decided: the
// proxy runs in agentbox's own process, outside the run's cgroup, so its
// memory must not grow with the agent's input (a 160 MiB header line once
// took agentbox to ~480 MiB in a --memory 64M run).
const (
	maxRequestLine   = 8 << 10  // request line (method, target, version): 414 past it
	maxRequestHeader = 64 << 10 // request line and headers together: 431 past it
	maxConnectTarget = 253 + 6  // a DNS name, ':' and a port
	maxConns         = 512      // connections open at once per run: 503 past it
)

func (p *Proxy) handle(c net.Conn) {
	// Attribution starts now, alongside reading the request: a
	// connection no programs: block governs does not wait for it.
	o := p.attribute(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	lr := &io.LimitedReader{R: c, N: maxRequestHeader}
	first := bufio.NewReaderSize(lr, maxRequestLine)
	line, err := first.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		p.refuseInput(c, http.StatusRequestURITooLong, fmt.Sprintf("request line longer than %d bytes", maxRequestLine))
		return
	}
	if err != nil {
		return // not HTTP, or closed: nothing to decide
	}
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(bytes.Clone(line)), first))
	req, err := http.ReadRequest(br)
	if err != nil {
		if lr.N <= 0 {
			p.refuseInput(c, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request headers larger than %d bytes", maxRequestHeader))
		}
		return // not HTTP (SOCKS and others are not served): nothing to decide
	}
	lr.N = 1<<63 - 1 // decided from here on: the body and the tunnel are not bounded
	c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		if len(req.Host) > maxConnectTarget {
			p.refuseInput(c, http.StatusRequestURITooLong, fmt.Sprintf("CONNECT target longer than %d bytes", maxConnectTarget))
			return
		}
		p.connect(c, br, req, o)
		return
	}
	p.plain(c, br, req, o)
}

// refuseInput answers a request the proxy will not read to its end and
// audits it as a denied connection (the target is not known or not
// trusted, so none is recorded).
func (p *Proxy) refuseInput(c net.Conn, status int, why string) {
	refuse(c, status, "agentbox: "+why)
	if p.cfg.Audit != nil {
		_ = p.cfg.Audit.Emit(audit.Event{Event: audit.EventNet, Action: "tool:net:", Decision: audit.DecisionDeny,
			Reason: why, Detail: map[string]string{"status": strconv.Itoa(status)}})
	}
}

// hostPort splits an authority, defaulting the port.
func hostPort(authority string, def int) (string, int, error) {
	if !strings.Contains(authority, ":") || strings.HasSuffix(authority, "]") {
		return strings.Trim(authority, "[]"), def, nil
	}
	h, ps, err := net.SplitHostPort(authority)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", authority)
	}
	return h, port, nil
}

// dial resolves host (the proxy resolves names; the sandbox has no DNS)
// and connects to the first address that answers.
func (p *Proxy) dial(host string, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs, err := p.resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a, strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

// resolve returns the addresses host may be dialled at: an IP literal as
// given; a name's addresses without the internal ones unless the name is
// listed as internal (*internalError when only internal ones are left).
func (p *Proxy) resolve(ctx context.Context, host string, port int) ([]string, error) {
	if net.ParseIP(host) != nil {
		return []string{host}, nil
	}
	resolve := p.cfg.Resolve
	if resolve == nil {
		resolve = net.DefaultResolver.LookupHost
	}
	addrs, err := resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	if p.cfg.Internal != nil && p.cfg.Internal(host, port) {
		return addrs, nil
	}
	var public, internal []string
	for _, a := range addrs {
		if internalAddr(a) {
			internal = append(internal, a)
		} else {
			public = append(public, a)
		}
	}
	if len(public) == 0 && len(internal) > 0 {
		return nil, &internalError{host: host, addrs: internal}
	}
	return public, nil
}

// internalError refuses a name that resolves only to internal addresses.
type internalError struct {
	host  string
	addrs []string
}

func (e *internalError) Error() string {
	return fmt.Sprintf("%s resolves to %s, a loopback, private or link-local address: refused (a name must not reach the host's own services; list it under network: internal, or allow the address itself)",
		e.host, strings.Join(e.addrs, ", "))
}

// internalAddr reports loopback, private (RFC 1918, unique-local fc00::/7),
// link-local, unspecified and shared (100.64.0.0/10) addresses.
func internalAddr(a string) bool {
	ip := net.ParseIP(a)
	if ip == nil {
		return true // not an address: never dialled as one
	}
	if ip4 := ip.To4(); ip4 != nil && ip4[0] == 100 && ip4[1]&0xc0 == 64 {
		return true
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast()
}

// open decides target (host[:port], default port defPort) and connects
// upstream. A malformed target, a refusal or an unreachable host gets the
// proxy's error on c (and the decision its audit event); ok is false then.
func (p *Proxy) open(c net.Conn, o *attribution, target string, defPort int, what string, dial bool) (host string, port int, v Verdict, up net.Conn, ok bool) {
	host, port, err := hostPort(target, defPort)
	if err != nil {
		refuse(c, http.StatusBadRequest, "agentbox: bad "+what+": "+err.Error())
		return "", 0, v, nil, false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	// The decision waits for the attribution only where it depends on
	// it: a host some programs: block governs, or a connection whose
	// requests are read (a placeholder may be a program's).
	v = p.decide(o.when(!dial || p.governs(host, port)), host, port)
	if !v.Allow {
		o.hold()
		p.emit(o, host, port, v, nil)
		if p.cfg.Refused != nil {
			p.cfg.Refused(host, port, v)
		}
		refuse(c, http.StatusForbidden, fmt.Sprintf("agentbox: connection to %s:%d denied: %s", host, port, v.Reason))
		return "", 0, v, nil, false
	}
	if dial {
		up, err = p.dial(host, port)
	} else {
		// Requests are read and sent on later, over connections of the
		// proxy's own: the name is checked now, so a refusal is decided
		// and audited with the connection.
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
		_, err = p.resolve(ctx, host, port)
		cancel()
	}
	var ie *internalError
	if errors.As(err, &ie) {
		p.emit(o, host, port, Verdict{Decision: audit.DecisionDeny, Rule: v.Rule, Reason: err.Error()}, map[string]string{"resolved": strings.Join(ie.addrs, " ")})
		refuse(c, http.StatusForbidden, "agentbox: connection to "+host+" denied: "+err.Error())
		return "", 0, v, nil, false
	}
	if err != nil {
		p.emit(o, host, port, Verdict{Decision: v.Decision, Rule: v.Rule, Approver: v.Approver, Reason: v.Reason + "; upstream: " + err.Error()}, map[string]string{"error": err.Error()})
		refuse(c, http.StatusBadGateway, fmt.Sprintf("agentbox: %s:%d: %v", host, port, err))
		return "", 0, v, nil, false
	}
	// Before the client hears back, its socket's holder is found (the
	// upstream was dialled meanwhile).
	o.hold()
	return host, port, v, up, true
}

func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request, o *attribution) {
	if h, port, err := hostPort(req.Host, 443); err == nil && p.terminates(strings.ToLower(strings.TrimSuffix(h, ".")), port) {
		host, port, v, _, ok := p.open(c, o, req.Host, 443, "CONNECT target", false)
		if !ok {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		p.inspect(c, br, o, host, port, v, host, nil)
		return
	}
	host, port, v, up, ok := p.open(c, o, req.Host, 443, "CONNECT target", true)
	if !ok {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// The TLS server name must be the host that was decided: otherwise a
	// client could reach another site behind the same address (domain
	// fronting) under an allowed name.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	raw, sni, isTLS, err := readClientHello(br)
	c.SetReadDeadline(time.Time{})
	if isTLS && (err != nil || sni != "" && !strings.EqualFold(strings.TrimSuffix(sni, "."), host)) {
		why := fmt.Sprintf("TLS server name %q does not match the CONNECT host %s", sni, host)
		if err != nil {
			why = "unreadable TLS ClientHello: " + err.Error()
		}
		p.emit(o, host, port, Verdict{Decision: audit.DecisionDeny, Rule: v.Rule, Reason: why}, map[string]string{"sni": sni})
		return
	}
	start := time.Now()
	opened := map[string]string{}
	if sni != "" {
		opened["sni"] = sni
	}
	p.emit(o, host, port, v, opened) // the decision, before any byte goes out
	if _, err := up.Write(raw); err != nil {
		return
	}
	upN, downN := pipe(c, br, up)
	p.closed(o, host, port, upN+int64(len(raw)), downN, start)
}

// closed records what an allowed connection carried when it ends (an
// event without a decision: the decision was recorded when it opened).
func (p *Proxy) closed(o *attribution, host string, port int, up, down int64, start time.Time) {
	p.emit(o, host, port, Verdict{Reason: "connection closed"}, map[string]string{
		"bytes_up": strconv.FormatInt(up, 10), "bytes_down": strconv.FormatInt(down, 10),
		"duration": time.Since(start).Round(time.Millisecond).String()})
}

// pipe copies both ways until both sides are done and returns the bytes
// each way. Bytes the client sent early (still in br) go first; the rest
// is copied socket to socket, which the kernel does with splice(2) when
// both ends are TCP sockets (no copy through the proxy's memory).
func pipe(c net.Conn, br *bufio.Reader, up net.Conn) (upN, downN int64) {
	if k := br.Buffered(); k > 0 {
		b, _ := br.Peek(k)
		n, err := up.Write(b)
		upN += int64(n)
		if err != nil {
			return upN, 0
		}
	}
	done := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(up, c)
		if tc, ok := up.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		done <- n
	}()
	downN, _ = io.Copy(c, up)
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	return upN + <-done, downN
}

func (p *Proxy) plain(c net.Conn, br *bufio.Reader, req *http.Request, o *attribution) {
	if req.URL == nil || req.URL.Host == "" || req.URL.Scheme != "http" {
		refuse(c, http.StatusBadRequest, "agentbox: the egress proxy takes CONNECT and absolute http:// requests only")
		return
	}
	if p.cfg.Authority != nil || len(p.cfg.Secrets) > 0 || p.cfg.DecideRequest != nil {
		// Requests are read and decided: served like an inspected
		// connection whose first request is already read.
		host, port, v, _, ok := p.open(c, o, req.URL.Host, 80, "request target", false)
		if !ok {
			return
		}
		p.plainInspected(c, br, req, o, host, port, v)
		return
	}
	host, port, v, up, ok := p.open(c, o, req.URL.Host, 80, "request target", true)
	if !ok {
		return
	}
	defer up.Close()
	start := time.Now()
	p.emit(o, host, port, v, nil)
	// One request per connection: a keep-alive connection would carry
	// later requests to other hosts past the decision.
	req.RequestURI = ""
	req.Close = true
	req.Header.Set("Connection", "close")
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	cw := &countWriter{w: up}
	if err := req.Write(cw); err != nil {
		return
	}
	down, _ := io.Copy(c, up)
	p.closed(o, host, port, cw.n, down, start)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
