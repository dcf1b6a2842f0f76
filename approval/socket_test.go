package approval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as a tiny approval client run under another uid: with
// AGENTBOX_APPROVAL_TEST_DIAL=PATH it connects, prints the first line it
// receives, and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv("AGENTBOX_APPROVAL_TEST_DIAL"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Print(line)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sockPath returns a short socket path (sun_path is 108 bytes; t.TempDir
// names can be longer).
func sockPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "abx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "approve.sock")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newSocket(t *testing.T, opts Options) (*socketApprover, string) {
	t.Helper()
	path := sockPath(t)
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	a, err := New("socket:"+path, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := a.(*socketApprover)
	t.Cleanup(func() { s.Close() })
	return s, path
}

// testClient is a raw protocol client.
type testClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, path string) *testClient {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{t: t, conn: c, r: bufio.NewReader(c)}
}

// read returns the next server message, failing after 5 s.
func (c *testClient) read() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("reading server line: %v (got %q)", err, line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("server sent non-JSON %q: %v", line, err)
	}
	return m
}

func (c *testClient) expect(typ string) map[string]any {
	c.t.Helper()
	m := c.read()
	if m["type"] != typ {
		c.t.Fatalf("got %v, want a %q message", m, typ)
	}
	return m
}

func (c *testClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testClient) answer(id, answer, prefix string) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]string{"type": "response", "id": id, "answer": answer, "prefix": prefix})
	c.send(string(b))
}

type approveResult struct {
	resp Response
	err  error
}

// approveAsync runs Approve in the background.
func approveAsync(a Approver, timeout time.Duration, req Request) <-chan approveResult {
	ch := make(chan approveResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		r, err := a.Approve(ctx, req)
		ch <- approveResult{r, err}
	}()
	return ch
}

func waitResult(t *testing.T, ch <-chan approveResult) approveResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Approve did not return")
	}
	return approveResult{}
}

// waitPending waits until s holds n pending requests.
func waitPending(t *testing.T, s *socketApprover, n int) {
	t.Helper()
	for range 500 {
		s.mu.Lock()
		got := len(s.pending)
		s.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never saw %d pending requests", n)
}

var gitPush = Request{Agent: "a1", Role: "developer", Run: "run1", Pid: 4242, Program: "/usr/bin/git",
	Argv: []string{"git", "push", "origin", "main"}, Cwd: "/ws", Action: "git push origin main",
	Rule: "developer/git.push", Layer: "role", Reason: "push needs approval",
	Env: []string{"LD_PRELOAD=/ws/target/x.so"}, Identified: "git (the installed binary)"}

func TestSocketAnswers(t *testing.T) {
	s, path := newSocket(t, Options{})
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode = %v, %v; want a 0600 socket", fi.Mode(), err)
	}
	c := dial(t, path)
	if h := c.expect("hello"); h["version"] != float64(protocolVersion) {
		t.Fatalf("hello = %v", h)
	}
	tests := []struct {
		answer, prefix string
		want           Answer
	}{
		{"allow", "", AllowOnce},
		{"deny", "", DenyOnce},
		{"allow_always", "", AllowAlways},
		{"deny_always", "", DenyAlways},
		{"remember", "git push", Remember},
		{"remember", "", Remember},
	}
	for _, tt := range tests {
		ch := approveAsync(s, 10*time.Second, gitPush)
		req := c.expect("request")
		for k, v := range map[string]any{"agent": "a1", "role": "developer", "pid": float64(4242), "program": "/usr/bin/git",
			"cwd": "/ws", "action": "git push origin main", "rule": "developer/git.push", "reason": "push needs approval"} {
			if req[k] != v {
				t.Errorf("request[%q] = %v, want %v", k, req[k], v)
			}
		}
		if fmt.Sprint(req["env"]) != "[LD_PRELOAD=/ws/target/x.so]" || req["identified"] != "git (the installed binary)" {
			t.Errorf("request env = %v, identified = %v", req["env"], req["identified"])
		}
		if fmt.Sprint(req["argv"]) != "[git push origin main]" {
			t.Errorf("request argv = %v", req["argv"])
		}
		if d, err := time.Parse(time.RFC3339Nano, fmt.Sprint(req["deadline"])); err != nil || time.Until(d) < 5*time.Second {
			t.Errorf("deadline = %v, %v", req["deadline"], err)
		}
		id := req["id"].(string)
		c.answer(id, tt.answer, tt.prefix)
		if ack := c.expect("ack"); ack["id"] != id || ack["answer"] != tt.answer {
			t.Errorf("ack = %v", ack)
		}
		r := waitResult(t, ch)
		if r.err != nil || r.resp.Answer != tt.want || r.resp.Prefix != tt.prefix {
			t.Errorf("%s: got %+v, %v; want %v", tt.answer, r.resp, r.err, tt.want)
		}
		if want := fmt.Sprintf("socket uid=%d pid=%d", os.Getuid(), os.Getpid()); r.resp.Approver != want {
			t.Errorf("Approver = %q, want %q", r.resp.Approver, want)
		}
	}
}

func TestSocketTimeout(t *testing.T) {
	s, path := newSocket(t, Options{})
	c := dial(t, path)
	c.expect("hello")
	start := time.Now()
	ch := approveAsync(s, 300*time.Millisecond, gitPush)
	id := c.expect("request")["id"].(string)
	if m := c.expect("cancel"); m["id"] != id || m["reason"] != "timeout" {
		t.Errorf("cancel = %v", m)
	}
	r := waitResult(t, ch)
	if !errors.Is(r.err, ErrTimeout) || r.resp.Answer.Allowed() {
		t.Fatalf("got %+v, %v; want ErrTimeout", r.resp, r.err)
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Errorf("timed out after %v, before the deadline", el)
	}
	// A late answer is refused, not applied to anything.
	c.answer(id, "allow", "")
	if m := c.expect("error"); !strings.Contains(fmt.Sprint(m["message"]), "unknown request id") {
		t.Errorf("late answer: %v", m)
	}
}

func TestSocketMalformedLinesAreIgnored(t *testing.T) {
	s, path := newSocket(t, Options{})
	c := dial(t, path)
	c.expect("hello")
	ch := approveAsync(s, 10*time.Second, gitPush)
	id := c.expect("request")["id"].(string)
	bad := []string{
		`allow`,
		`{"type":"response","id":"` + id + `","answer":"yes"}`,
		`{"type":"response","id":"` + id + `","answer":"deny","answer":"allow"}`,
		`{"type":"response","id":"` + id + `","answer":"allow"} trailing`,
		`{"type":"response","id":"nope","answer":"allow"}`,
		`{"type":"response","id":"` + id + `","answer":"remember","prefix":"rm -rf /"}`,
		`{"type":"response","id":"` + id + `","answer":"allow","prefix":"git"}`,
		`{"type":"hello"}`,
		`{"type":"response","id":"` + id + `","answer":"allow"` + strings.Repeat(" ", maxLineBytes) + `}`,
	}
	for _, line := range bad {
		c.send(line)
		if m := c.expect("error"); m["message"] == "" {
			t.Errorf("%.60s: empty error message", line)
		}
	}
	select {
	case r := <-ch:
		t.Fatalf("malformed lines resolved the request: %+v, %v", r.resp, r.err)
	default:
	}
	c.answer(id, "deny", "")
	c.expect("ack")
	if r := waitResult(t, ch); r.err != nil || r.resp.Answer != DenyOnce {
		t.Fatalf("got %+v, %v; want deny", r.resp, r.err)
	}
}

func TestSocketOutOfOrderAnswers(t *testing.T) {
	s, path := newSocket(t, Options{})
	c := dial(t, path)
	c.expect("hello")
	answers := []string{"allow", "deny", "allow_always", "deny_always"}
	chans := make([]<-chan approveResult, len(answers))
	ids := make([]string, len(answers))
	for i := range answers {
		req := gitPush
		req.Pid = 100 + i
		chans[i] = approveAsync(s, 10*time.Second, req)
		m := c.expect("request") // wait, so requests arrive in a known order
		if m["pid"] != float64(100+i) {
			t.Fatalf("request %d has pid %v", i, m["pid"])
		}
		ids[i] = m["id"].(string)
	}
	for i := len(answers) - 1; i >= 0; i-- {
		c.answer(ids[i], answers[i], "")
		c.expect("ack")
		r := waitResult(t, chans[i])
		if r.err != nil || r.resp.Answer.String() != answers[i] {
			t.Errorf("request %d: got %+v, %v; want %s", i, r.resp, r.err, answers[i])
		}
	}
}

func TestSocketLateClientAndSecondClient(t *testing.T) {
	s, path := newSocket(t, Options{})
	ch1 := approveAsync(s, 10*time.Second, Request{ID: "first", Argv: []string{"curl", "x"}})
	waitPending(t, s, 1)
	ch2 := approveAsync(s, 10*time.Second, Request{ID: "second", Argv: []string{"make"}})
	waitPending(t, s, 2) // both requests pending, nobody connected
	a := dial(t, path)
	a.expect("hello")
	got := []string{a.expect("request")["id"].(string), a.expect("request")["id"].(string)}
	if got[0] != "first" || got[1] != "second" {
		t.Fatalf("resent requests %v, want [first second] in order", got)
	}
	b := dial(t, path)
	b.expect("hello")
	b.expect("request")
	b.expect("request")
	b.answer("second", "allow", "")
	b.expect("ack")
	if m := a.expect("cancel"); m["id"] != "second" || m["reason"] != "answered" {
		t.Errorf("other client got %v, want cancel answered", m)
	}
	a.answer("second", "deny", "") // too late: the first answer won
	a.expect("error")
	a.answer("first", "deny", "")
	a.expect("ack")
	if r := waitResult(t, ch2); r.err != nil || r.resp.Answer != AllowOnce {
		t.Errorf("second: %+v, %v", r.resp, r.err)
	}
	if r := waitResult(t, ch1); r.err != nil || r.resp.Answer != DenyOnce {
		t.Errorf("first: %+v, %v", r.resp, r.err)
	}
	ch3 := approveAsync(s, time.Second, Request{ID: "dup"})
	a.expect("request")
	if _, err := s.Approve(context.Background(), Request{ID: "dup"}); err == nil || !strings.Contains(err.Error(), "already pending") {
		t.Errorf("duplicate id: %v", err)
	}
	a.answer("dup", "deny", "")
	waitResult(t, ch3)
}

func TestSocketDisallowedUID(t *testing.T) {
	// Our own uid is not in the list, so even we are refused.
	s, path := newSocket(t, Options{AllowedUIDs: []int{os.Getuid() + 12345}})
	ch := approveAsync(s, 500*time.Millisecond, gitPush)
	c := dial(t, path)
	m := c.expect("error")
	if !strings.Contains(fmt.Sprint(m["message"]), "not allowed") {
		t.Errorf("error = %v", m)
	}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := c.r.ReadBytes('\n'); err != io.EOF {
		t.Fatalf("refused connection got %q, %v; want EOF (no request)", line, err)
	}
	if r := waitResult(t, ch); !errors.Is(r.err, ErrTimeout) {
		t.Errorf("got %+v, %v; want timeout", r.resp, r.err)
	}
}

// TestSocketOtherUserRefused connects from a real process running as
// nobody, with the socket's mode opened up, so only SO_PEERCRED stands in
// the way.
func TestSocketOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("reason: needs root to run a client as another uid")
	}
	s, path := newSocket(t, Options{})
	ch := approveAsync(s, 2*time.Second, gitPush)
	os.Chmod(filepath.Dir(path), 0o755)
	os.Chmod(path, 0o666)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's directory may not be reachable for nobody; copy it.
	bin := filepath.Join(filepath.Dir(path), "client.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AGENTBOX_APPROVAL_TEST_DIAL="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("reason: cannot run a client as uid 65534: %v: %s", err, out)
	}
	if !strings.Contains(string(out), `"type":"error"`) || !strings.Contains(string(out), "uid 65534 is not allowed") {
		t.Fatalf("client as nobody got %q, want a refusal", out)
	}
	if r := waitResult(t, ch); !errors.Is(r.err, ErrTimeout) {
		t.Errorf("got %+v, %v; want timeout", r.resp, r.err)
	}
}

func TestSocketPathChecks(t *testing.T) {
	path := sockPath(t)
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New("socket:"+path, Options{Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Error("regular file was replaced")
	}
	os.Remove(path)

	// A live listener is not replaced.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New("socket:"+path, Options{Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("live socket: %v", err)
	}
	// A stale one (nobody listening) is.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	a, err := New("socket:"+path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	// Close fails pending requests and removes the socket.
	ch := approveAsync(a, 10*time.Second, gitPush)
	waitPending(t, a.(*socketApprover), 1)
	a.(io.Closer).Close()
	if r := waitResult(t, ch); !errors.Is(r.err, ErrUnavailable) {
		t.Errorf("after Close: %+v, %v", r.resp, r.err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
	if _, err := a.Approve(context.Background(), gitPush); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Approve after Close: %v", err)
	}

	long := "/tmp/" + strings.Repeat("x", 120)
	if _, err := New("socket:"+long, Options{}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("long path: %v", err)
	}
}

// BenchmarkSocketRoundTrip measures one ask answered by a connected client:
// request line out, response line in, Approve returns.
func BenchmarkSocketRoundTrip(b *testing.B) {
	dir, err := os.MkdirTemp("", "abb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	a, err := New("socket:"+path, Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer a.(io.Closer).Close()
	conn, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	go func() { // auto-approving client
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["type"] == "request" {
				fmt.Fprintf(conn, `{"type":"response","id":%q,"answer":"allow"}`+"\n", m["id"])
			}
		}
	}()
	ctx := context.Background()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if r, err := a.Approve(ctx, gitPush); err != nil || r.Answer != AllowOnce {
			b.Fatal(r, err)
		}
		cancel()
	}
}

// TestSocketDescendantRefused connects from a child process with our own
// uid — what a sandboxed program that reached the socket would be — and
// checks it cannot approve its own request.
func TestSocketDescendantRefused(t *testing.T) {
	s, path := newSocket(t, Options{})
	ch := approveAsync(s, 2*time.Second, gitPush)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "AGENTBOX_APPROVAL_TEST_DIAL="+path)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), `"type":"error"`) || !strings.Contains(string(out), "inside this agentbox run") {
		t.Fatalf("client in our own process tree got %q, want a refusal", out)
	}
	if r := waitResult(t, ch); !errors.Is(r.err, ErrTimeout) {
		t.Errorf("got %+v, %v; want timeout", r.resp, r.err)
	}
}

// TestSocketRequestLineBounded: a request whose argv, environment, cwd and
// action the sandbox made huge (a 1 MB argv, control characters that JSON
// escapes sixfold) reaches the client as one line of at most 64 KiB, with
// each cut value marked with its length and SHA-256, and can be answered.
func TestSocketRequestLineBounded(t *testing.T) {
	s, path := newSocket(t, Options{})
	c := dial(t, path)
	c.expect("hello")
	huge := gitPush
	huge.Argv = []string{"git", "push", strings.Repeat("a", 1<<20)}
	for range 3000 {
		huge.Argv = append(huge.Argv, "w")
	}
	huge.Env = []string{"LD_PRELOAD=" + strings.Repeat("\x01", 100<<10)}
	huge.Cwd = "/ws/" + strings.Repeat("d/", 50<<10)
	huge.Action = "git push " + strings.Repeat("\x02", 50<<10)
	ch := approveAsync(s, 10*time.Second, huge)
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > maxLineBytes {
		t.Errorf("request line of %d bytes; the protocol promises at most %d", len(line), maxLineBytes)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(line), &req); err != nil || req["type"] != "request" {
		t.Fatalf("request line does not parse: %v", err)
	}
	argv := fmt.Sprint(req["argv"])
	if !strings.Contains(argv, "…[cut: 1048576 bytes, sha256:") || !strings.Contains(fmt.Sprint(req["action"]), "…[cut: ") {
		t.Errorf("cut values carry no marker: argv %.200s action %.100s", argv, req["action"])
	}
	c.answer(req["id"].(string), "deny", "")
	c.expect("ack")
	if r := waitResult(t, ch); r.err != nil || r.resp.Answer != DenyOnce {
		t.Errorf("answer to a bounded request: %+v %v", r.resp, r.err)
	}
}
