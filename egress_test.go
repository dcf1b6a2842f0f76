package agentbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// netWorld runs commands under network mode proxy with names mapped to
// local servers (loopback only).
type netWorld struct {
	world
	names map[string]string
}

func (n *netWorld) resolve(ctx context.Context, host string) ([]string, error) {
	if a, ok := n.names[host]; ok {
		return []string{a}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// run runs script (a file in target/) and returns exit code, output and
// the run's audit events.
func (n *netWorld) run(t *testing.T, script string, opts ...agentbox.Option) (int, string, []audit.Event) {
	t.Helper()
	path := filepath.Join(n.ws, "target", fmt.Sprintf("s%d.sh", len(script)))
	os.WriteFile(path, []byte(script), 0o755)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	res, out := runToEnd(t, n.ws, []string{"sh", path}, append(n.opts(
		agentbox.WithAudit(log), agentbox.WithResolver(n.resolve), agentbox.WithInternalHosts("*.test")), opts...)...)
	evs, _ := audit.ReadFile(log)
	return res.ExitCode, out, evs
}

func netDecisions(evs []audit.Event) string {
	var out []string
	for _, e := range evs {
		if e.Event == audit.EventNet && e.Decision != "" {
			out = append(out, strings.TrimPrefix(e.Action, "tool:net:")+"="+e.Decision)
		}
	}
	return strings.Join(out, " ")
}

// openSockets counts this process's open sockets (the proxies' listeners
// and connections are sockets).
func openSockets(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// TestEgressProxy: network mode proxy with local servers standing in for
// the internet. An allowed name is reached with curl (HTTPS), Python
// (plain HTTP) and git (clone over HTTPS); a denied name gets the proxy's
// error and a deny event; a process ignoring the proxy reaches nothing — a
// server on the host's loopback, another address, the proxy port on another
// loopback address, UDP; a TLS server name other than the CONNECT host is
// cut; the rate limit holds; an ask host waits for the approver; nothing
// of the proxies (no socket) is left after the runs.
func TestEgressProxy(t *testing.T) {
	needSandbox(t)
	for _, p := range []string{"curl", "python3", "git"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("reason: %s not installed", p)
		}
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret-api-answer") }))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain-answer") }))
	defer plain.Close()
	// A git HTTP server: git http-backend behind net/http/cgi, over TLS.
	repos := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", filepath.Join(repos, "repo.git")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	seed := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main", seed}, {"-C", seed, "commit", "-q", "--allow-empty", "-m", "first"},
		{"-C", seed, "push", "-q", filepath.Join(repos, "repo.git"), "main"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	execPath, _ := exec.Command("git", "--exec-path").Output()
	gitSrv := httptest.NewTLSServer(&cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}})
	defer gitSrv.Close()
	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }
	tp, pp, gp := port(tlsSrv), port(plain), port(gitSrv)

	n := &netWorld{world: newWorld(t), names: map[string]string{"api.test": "127.0.0.1", "denied.test": "127.0.0.1",
		"git.test": "127.0.0.1", "ask.test": "127.0.0.1", "rate.test": "127.0.0.1", "rebind.example": "127.0.0.1"}}
	// curl, python and git clone are allowed by this file; the host
	// decides the network.
	pol := `version: 1
rules:
  - {decision: allow, command: "curl -sk"}
  - {decision: allow, command: "curl -s"}
  - {decision: allow, command: "python3 -"}
  - {decision: allow, command: "python3 -c"}
  - {decision: allow, command: "git clone"}
  - {decision: allow, command: "git remote-https"}
`
	if err := os.WriteFile(n.policy, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	fds := openSockets(t)

	t.Run("allowed and denied names", func(t *testing.T) {
		script := fmt.Sprintf(`curl -sk https://api.test:%[1]s/; echo " curl=$?"
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://api.test:%[2]s/").read().decode())'
git -c http.sslVerify=false clone -q https://git.test:%[3]s/repo.git cloned && git -C cloned log --oneline | wc -l
curl -sk https://denied.test:%[1]s/; echo " denied=$?"
curl -s http://denied.test:%[2]s/
`, tp, pp, gp)
		code, out, evs := n.run(t, script, agentbox.WithAllowHosts("api.test", "git.test"))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		for _, want := range []string{"secret-api-answer curl=0", "plain-answer", "\n1\n", "agentbox: connection to denied.test:" + pp + " denied: host not in the network allowlist"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "denied=0") {
			t.Errorf("https to a denied name succeeded:\n%s", out)
		}
		// audit report: hosts per agent, with the bytes of allowed ones.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, e := range evs {
			enc.Encode(e)
		}
		rep, err := audit.Summarize(&buf, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		use := map[string]audit.HostUse{}
		for _, h := range rep.Hosts {
			use[h.Host] = h
		}
		if h := use["api.test:"+tp]; h.Allowed != 1 || h.BytesDown == 0 || h.BytesUp == 0 || h.Agent == "" {
			t.Errorf("report host api.test:%s = %+v, want 1 allowed with bytes both ways, per agent", tp, h)
		}
		if h := use["denied.test:"+tp]; h.Refused != 1 || h.Allowed != 0 {
			t.Errorf("report host denied.test:%s = %+v, want 1 refused", tp, h)
		}
		got := netDecisions(evs)
		for _, want := range []string{"api.test:" + tp + "=allow", "api.test:" + pp + "=allow", "git.test:" + gp + "=allow", "denied.test:" + tp + "=deny"} {
			if !strings.Contains(got, want) {
				t.Errorf("audit lacks %s: %s", want, got)
			}
		}
	})

	t.Run("no direct egress", func(t *testing.T) {
		udp, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer udp.Close()
		_, up, _ := net.SplitHostPort(udp.LocalAddr().String())
		script := fmt.Sprintf(`python3 - <<'PY'
import socket
def tcp(host, port):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((host, port))
        return "CONNECTED"
    except OSError as e:
        return "refused: %%s" %% e
def udp(host, port):
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"escape", (host, port))
        return "sent"
    except OSError as e:
        return "refused: %%s" %% e
print("host-loopback-server", tcp("127.0.0.1", %[1]s))
print("other-address", tcp("10.255.255.1", 80))
print("proxy-port-other-loopback", tcp("127.0.0.2", 3128))
print("udp-other-address", udp("10.255.255.1", 53))
print("udp-host-loopback", udp("127.0.0.1", %[2]s))
PY
`, pp, up)
		// Network mode proxy: the sandbox's own namespace, the proxy's
		// listener in it (under the role's network: none this reached
		// nothing trivially).
		code, out, _ := n.run(t, script, agentbox.WithNetwork(policy.Network{Proxy: true}))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		for _, line := range []string{"host-loopback-server refused", "other-address refused", "proxy-port-other-loopback refused", "udp-other-address refused"} {
			if !strings.Contains(out, line) {
				t.Errorf("output lacks %q:\n%s", line, out)
			}
		}
		if strings.Contains(out, "CONNECTED") {
			t.Errorf("a direct connection got out:\n%s", out)
		}
		// The datagram sent to "127.0.0.1" stayed in the sandbox's own
		// loopback: the host's socket has nothing (the run has ended, so
		// anything sent would already be queued).
		udp.SetReadDeadline(time.Now())
		buf := make([]byte, 64)
		if k, _, err := udp.ReadFrom(buf); err == nil {
			t.Errorf("host UDP socket received %q from the sandbox", buf[:k])
		}
	})

	t.Run("TLS server name other than the CONNECT host", func(t *testing.T) {
		script := fmt.Sprintf(`python3 - <<'PY'
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT api.test:%[1]s HTTP/1.1\r\nHost: api.test:%[1]s\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(1)
    if not chunk:
        break
    head += chunk
print("connect:", head.split(b"\r\n")[0].decode())
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname="other.test")
    t.sendall(b"GET / HTTP/1.0\r\n\r\n")
    print("FRONTED", t.recv(4096))
except (OSError, ssl.SSLError) as e:
    print("cut:", type(e).__name__)
PY
`, tp)
		code, out, evs := n.run(t, script, agentbox.WithAllowHosts("api.test"))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if !strings.Contains(out, "connect: HTTP/1.1 200") || !strings.Contains(out, "cut:") || strings.Contains(out, "FRONTED") {
			t.Errorf("server-name mismatch was not cut:\n%s", out)
		}
		var found bool
		for _, e := range evs {
			if e.Event == audit.EventNet && e.Decision == audit.DecisionDeny && strings.Contains(e.Reason, `"other.test" does not match the CONNECT host api.test`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no deny event naming the server name: %s", netDecisions(evs))
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		script := fmt.Sprintf("for i in 1 2 3; do curl -s -o /dev/null -w '%%{http_code} ' http://rate.test:%s/; done\n", pp)
		code, out, evs := n.run(t, script, agentbox.WithNetwork(policy.Network{Proxy: true, Allow: []string{"rate.test"}, RatePerMinute: 2}))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if strings.TrimSpace(out) != "200 200 403" {
			t.Errorf("rate limit 2/min: got %q, want 200 200 403", out)
		}
		if got := netDecisions(evs); !strings.HasSuffix(got, "rate.test:"+pp+"=deny") {
			t.Errorf("third connection not denied in the audit log: %s", got)
		}
	})

	t.Run("ask host waits for a socket approval", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "approve.sock")
		asked := make(chan map[string]any, 4)
		go testkit.AnswerApprovals(sock, func(req map[string]any) string {
			asked <- req
			if req["action"] == "tool:net:ask.test:"+pp {
				return "allow"
			}
			return "deny"
		})
		script := fmt.Sprintf("curl -s http://ask.test:%s/; echo\n", pp)
		code, out, evs := n.run(t, script, agentbox.WithApprove("socket:"+sock),
			agentbox.WithNetwork(policy.Network{Proxy: true, Ask: []string{"ask.test"}}))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if !strings.Contains(out, "plain-answer") {
			t.Errorf("approved host not reached:\n%s", out)
		}
		if got := netDecisions(evs); got != "ask.test:"+pp+"="+audit.DecisionAskApproved {
			t.Errorf("audit: %s", got)
		}
		if len(asked) != 1 {
			t.Errorf("approver asked %d times, want once", len(asked))
		}
	})

	// A "remember" answer to a connection ask lasts the run (nothing is
	// saved for a host, so it counts as "always", as the protocol says):
	// the second connection is not asked again. Before the judge, the
	// network path treated it as allow-once and asked every time.
	t.Run("remember on a host is not asked again", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "approve.sock")
		asked := make(chan map[string]any, 4)
		go testkit.AnswerApprovals(sock, func(req map[string]any) string {
			asked <- req
			return "remember"
		})
		script := fmt.Sprintf("curl -s http://ask.test:%s/; echo; curl -s http://ask.test:%s/; echo\n", pp, pp)
		code, out, evs := n.run(t, script, agentbox.WithApprove("socket:"+sock),
			agentbox.WithNetwork(policy.Network{Proxy: true, Ask: []string{"ask.test"}}))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if strings.Count(out, "plain-answer") != 2 {
			t.Errorf("approved host not reached twice:\n%s", out)
		}
		if len(asked) != 1 {
			t.Errorf("approver asked %d times, want once", len(asked))
		}
		if got := netDecisions(evs); !strings.HasPrefix(got, "ask.test:"+pp+"="+audit.DecisionAskApproved+" ask.test:"+pp+"="+audit.DecisionAllow) {
			t.Errorf("audit: %s", got)
		}
	})

	// DNS rebinding: a name the run allows that resolves to loopback (the
	// test's servers, standing in for the caller's own services) is
	// refused unless listed as internal (*.test is, rebind.example not).
	t.Run("allowed name resolving to loopback refused", func(t *testing.T) {
		script := fmt.Sprintf("curl -s http://rebind.example:%s/; echo\n", pp)
		code, out, evs := n.run(t, script, agentbox.WithAllowHosts("rebind.example"))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if strings.Contains(out, "plain-answer") || !strings.Contains(out, "loopback, private or link-local") {
			t.Errorf("rebinding name reached the loopback server:\n%s", out)
		}
		if got := netDecisions(evs); got != "rebind.example:"+pp+"="+audit.DecisionDeny {
			t.Errorf("audit: %s", got)
		}
	})

	t.Run("ask host without an approver is denied", func(t *testing.T) {
		script := fmt.Sprintf("curl -s http://ask.test:%s/; echo\n", pp)
		code, out, evs := n.run(t, script, agentbox.WithNetwork(policy.Network{Proxy: true, Ask: []string{"ask.test"}}))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if strings.Contains(out, "plain-answer") || !strings.Contains(out, "agentbox: connection to ask.test:"+pp+" denied") {
			t.Errorf("ask host without approver:\n%s", out)
		}
		if got := netDecisions(evs); !strings.HasPrefix(got, "ask.test:"+pp+"=ask_") || strings.HasSuffix(got, audit.DecisionAskApproved) {
			t.Errorf("audit: %s", got)
		}
	})

	// Nothing of the proxies is left in this process: every listener and
	// connection was closed with its run (the servers' own idle
	// connections close as their peers did; wait for that, bounded).
	deadline := time.Now().Add(10 * time.Second)
	for openSockets(t) > fds && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if now := openSockets(t); now > fds {
		t.Errorf("sockets: %d before the runs, %d after", fds, now)
	}
}

// TestEgressBadHostPattern: a host pattern that is not one (a URL) is
// refused before anything runs, naming the value.
func TestEgressBadHostPattern(t *testing.T) {
	w := newWorld(t)
	_, err := agentbox.New(w.ws, "developer", []string{"true"}, w.opts(agentbox.WithAllowHosts("http://example.com/path"))...)
	if err == nil {
		t.Fatal("a URL accepted as a host pattern")
	}
	if !strings.Contains(err.Error(), "http://example.com/path") {
		t.Errorf("error does not name the pattern: %v", err)
	}
}

// TestExampleRegistriesPolicy: examples/network/registries.yaml loads and
// decides as its comments say.
func TestExampleRegistriesPolicy(t *testing.T) {
	w := newWorld(t)
	eng, err := load.Policy(policy.LoadOptions{Role: "builder", Workspace: w.ws, NoUserFile: true,
		Files: []string{"examples/network/registries.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		want policy.Decision
	}{
		{"registry.npmjs.org", 443, policy.Allow},
		{"github.com", 443, policy.Allow},
		{"github.com", 22, policy.Deny},
		{"gist.github.com", 443, policy.Deny},
		{"example.com", 443, policy.Deny},
	} {
		if got := eng.Decide(policy.Query{Host: c.host, Port: c.port}); got.Decision != c.want {
			t.Errorf("%s:%d = %v (%s), want %v", c.host, c.port, got.Decision, got.Reason, c.want)
		}
	}
	if got := eng.Decide(policy.Query{Action: "tool:git:push origin main"}); got.Decision != policy.Deny {
		t.Errorf("git push = %v, want deny", got.Decision)
	}
}

// TestEgressLoopbackForward: --allow-host 127.0.0.1:PORT under network
// mode proxy reaches a service on the caller's loopback (clients skip the
// proxy for loopback; the sandbox's namespace has nothing there): a plain
// TCP echo and an HTTP server are reached at the same address and port,
// each connection decided and audited (forward) with its bytes; a port
// not granted is refused.
func TestEgressLoopbackForward(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("reason: python3 not installed")
	}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "loopback-web-answer") }))
	defer web.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0") // listening, never granted
	if err != nil {
		t.Fatal(err)
	}
	defer closed.Close()
	port := func(l net.Listener) string { _, p, _ := net.SplitHostPort(l.Addr().String()); return p }
	ep, wp, cp := port(echo), port(web.Listener), port(closed)

	n := &netWorld{world: newWorld(t), names: map[string]string{}}
	if err := os.WriteFile(n.policy, []byte("version: 1\nrules:\n  - {decision: allow, command: \"python3 -\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`python3 - <<'PY'
import socket, urllib.request
def echo(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"ping-through-forward\n")
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
    return got.decode().strip()
try:
    print("echo:", echo(%[1]s))
except OSError as e:
    print("echo refused:", e)
try:
    print("web:", urllib.request.urlopen("http://127.0.0.1:%[2]s/", timeout=10).read().decode())
except OSError as e:
    print("web refused:", e)
try:
    socket.create_connection(("127.0.0.1", %[3]s), timeout=10)
    print("not-granted CONNECTED")
except OSError as e:
    print("not-granted refused:", e)
PY
`, ep, wp, cp)
	code, out, evs := n.run(t, script, agentbox.WithAllowHosts("127.0.0.1:"+ep, "127.0.0.1:"+wp))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"echo: ping-through-forward", "web: loopback-web-answer", "not-granted refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	allowed := map[string]bool{}
	bytesUp := map[string]string{}
	for _, e := range evs {
		if e.Event != audit.EventNet || e.Detail["forward"] != "true" && e.Detail["bytes_up"] == "" {
			continue
		}
		if e.Decision == audit.DecisionAllow {
			allowed[e.Action] = true
		}
		if e.Detail["bytes_up"] != "" {
			bytesUp[e.Action] = e.Detail["bytes_up"]
		}
		if strings.HasSuffix(e.Action, ":"+cp) {
			t.Errorf("the not-granted port has an event: %+v", e)
		}
	}
	for _, p := range []string{ep, wp} {
		a := "tool:net:127.0.0.1:" + p
		if !allowed[a] || bytesUp[a] == "" || bytesUp[a] == "0" {
			t.Errorf("%s: allowed %v, bytes up %q; want an allowed forward with its bytes (%s)", a, allowed[a], bytesUp[a], netDecisions(evs))
		}
	}
}
