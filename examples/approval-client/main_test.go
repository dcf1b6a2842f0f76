package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/approval"
)

// lockedBuffer is a bytes.Buffer safe to read while run writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// server starts a real socket approver in a short temp dir.
func server(t *testing.T) (approval.Approver, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "abc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	a, err := approval.New("socket:"+path, approval.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.(io.Closer).Close() })
	return a, path
}

// startClient runs the client in the background; the returned function
// waits for its exit status.
func startClient(t *testing.T, stdin io.Reader, args ...string) (*lockedBuffer, func() int) {
	t.Helper()
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(args, stdin, out, out) }()
	return out, func() int {
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("client did not exit")
			return -1
		}
	}
}

func approve(t *testing.T, a approval.Approver, timeout time.Duration, argv ...string) (approval.Answer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := a.Approve(ctx, approval.Request{Program: "/usr/bin/" + argv[0], Argv: argv, Cwd: "/ws", Rule: "test/rule"})
	return r.Answer, err
}

func TestPrefixRules(t *testing.T) {
	a, path := server(t)
	out, wait := startClient(t, strings.NewReader(""), "--socket", path,
		"--allow-prefix", "git commit", "--allow-prefix", "make", "--deny-prefix", "git commit --amend", "--deny-rest", "--count", "5")
	tests := []struct {
		argv []string
		want approval.Answer
	}{
		{[]string{"/usr/bin/git", "commit", "-m", "x"}, approval.AllowOnce},
		{[]string{"git", "commit", "--amend"}, approval.DenyOnce},
		{[]string{"make", "-j2"}, approval.AllowOnce},
		{[]string{"git", "push"}, approval.DenyOnce},
		{[]string{"evil", "\x1b[2K\rALLOWED"}, approval.DenyOnce},
	}
	for _, tt := range tests {
		got, err := approve(t, a, 5*time.Second, tt.argv...)
		if err != nil || got != tt.want {
			t.Errorf("%q: got %v, %v; want %v", tt.argv, got, err, tt.want)
		}
	}
	if code := wait(); code != 0 {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if s := out.String(); strings.Contains(s, "\x1b") || !strings.Contains(s, `"\x1b[2K\rALLOWED"`) {
		t.Errorf("hostile argv not escaped in client output:\n%q", s)
	}
}

func TestAlwaysAndUnmatched(t *testing.T) {
	a, path := server(t)
	_, wait := startClient(t, strings.NewReader(""), "--socket", path, "--allow-prefix", "ls", "--always", "--count", "1")
	if got, err := approve(t, a, 300*time.Millisecond, "rm", "-rf", "x"); !errors.Is(err, approval.ErrTimeout) {
		t.Errorf("unmatched request: %v, %v; want left to time out", got, err)
	}
	if got, err := approve(t, a, 5*time.Second, "ls", "-l"); err != nil || got != approval.AllowAlways {
		t.Errorf("ls: %v, %v; want allow_always", got, err)
	}
	wait()
}

func TestInteractive(t *testing.T) {
	a, path := server(t)
	_, wait := startClient(t, strings.NewReader("what\nY\nn\n"), "--socket", path, "--interactive", "--count", "2")
	if got, err := approve(t, a, 5*time.Second, "curl", "example.com"); err != nil || got != approval.AllowAlways {
		t.Errorf("first: %v, %v", got, err)
	}
	if got, err := approve(t, a, 5*time.Second, "curl", "example.org"); err != nil || got != approval.DenyOnce {
		t.Errorf("second: %v, %v", got, err)
	}
	wait()
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"--socket", "/x", "extra"}, {"--socket", "/x", "--deny-rest", "--interactive"}, {"--nope"}} {
		if code := run(args, strings.NewReader(""), io.Discard, io.Discard); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code := run([]string{"--socket", "/nonexistent/s"}, strings.NewReader(""), io.Discard, io.Discard); code != 1 {
		t.Errorf("missing socket: exit %d, want 1", code)
	}
}
