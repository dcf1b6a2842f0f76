package approval

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// term is a real pty pair: the approver opens the slave by path (as it would
// /dev/tty); the test plays the user on the master.
type term struct {
	t      *testing.T
	master *os.File
	slave  *os.File
	mu     sync.Mutex
	out    bytes.Buffer
}

func newTerm(t *testing.T) *term {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("reason: cannot open a pty: %v", err)
	}
	tm := &term{t: t, master: master, slave: slave}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { slave.Close(); master.Close() })
	return tm
}

func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// waitFor waits until the terminal has shown sub at least n times.
func (tm *term) waitFor(sub string, n int) string {
	tm.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if out := tm.output(); strings.Count(out, sub) >= n {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
	tm.t.Fatalf("terminal never showed %q %d times; got:\n%q", sub, n, tm.output())
	return ""
}

func (tm *term) press(keys string) {
	tm.t.Helper()
	if _, err := tm.master.WriteString(keys); err != nil {
		tm.t.Fatal(err)
	}
}

// recorder is a Pauser that records calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Hold()    { r.mu.Lock(); r.calls = append(r.calls, "hold"); r.mu.Unlock() }
func (r *recorder) Release() { r.mu.Lock(); r.calls = append(r.calls, "release"); r.mu.Unlock() }
func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.calls, ",")
}

func newTTYApprover(t *testing.T, tm *term, p Pauser) Approver {
	t.Helper()
	a, err := New("tty", Options{TTYPath: tm.slave.Name(), Pauser: p})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const promptEnd = "  > "

func TestTTYKeys(t *testing.T) {
	tests := []struct {
		keys string
		want Answer
	}{
		{"a", AllowOnce},
		{"A", AllowAlways},
		{"d", DenyOnce},
		{"D", DenyAlways},
		{"a\r", AllowOnce},
		{"d\n", DenyOnce},
		{"\x03", DenyOnce},
	}
	for _, tt := range tests {
		tm := newTerm(t)
		rec := &recorder{}
		a := newTTYApprover(t, tm, rec)
		before, err := unix.IoctlGetTermios(int(tm.slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		ch := approveAsync(a, 10*time.Second, gitPush)
		out := tm.waitFor(promptEnd, 1)
		for _, want := range []string{"agent a1, role developer, pid 4242", "program: /usr/bin/git",
			"argv:    git push origin main\r", "env:     LD_PRELOAD=/ws/target/x.so\r", "identified: git (the installed binary)\r", "cwd:     /ws\r", "rule:    developer/git.push (role)\r",
			"reason:  push needs approval\r", "[a] allow once", "[A] allow always", "[d] deny", "[D] deny always", "[r] remember"} {
			if !strings.Contains(out, want) {
				t.Errorf("prompt lacks %q:\n%s", want, out)
			}
		}
		if rec.String() != "hold" {
			t.Errorf("while prompting, pauser calls = %q, want hold", rec)
		}
		tm.press(tt.keys)
		r := waitResult(t, ch)
		if r.err != nil || r.resp.Answer != tt.want {
			t.Errorf("keys %q: got %+v, %v; want %v", tt.keys, r.resp, r.err, tt.want)
		}
		if !strings.HasPrefix(r.resp.Approver, "tty:/dev/pts/") || !strings.HasSuffix(r.resp.Approver, " uid=0") && os.Getuid() == 0 {
			t.Errorf("Approver = %q", r.resp.Approver)
		}
		if rec.String() != "hold,release" {
			t.Errorf("pauser calls = %q, want hold,release", rec)
		}
		after, _ := unix.IoctlGetTermios(int(tm.slave.Fd()), unix.TCGETS)
		if after.Lflag != before.Lflag || after.Iflag != before.Iflag {
			t.Errorf("terminal mode not restored: lflag %#x -> %#x", before.Lflag, after.Lflag)
		}
	}
}

func TestTTYHostileArgvIsEscaped(t *testing.T) {
	tm := newTerm(t)
	a := newTTYApprover(t, tm, nil)
	req := Request{
		Program: "/usr/bin/git\x1b[1A",
		Argv:    []string{"git", "push", "\x1b[2K\rALLOWED", "a\nrule:    harmless", "\u202egnp.exe"},
		Cwd:     "/ws/\x1b]0;title\x07",
		Rule:    "r\r", Reason: "why\x1b[0m", Agent: "x\x08",
	}
	ch := approveAsync(a, 10*time.Second, req)
	out := tm.waitFor(promptEnd, 1)
	tm.press("d")
	if r := waitResult(t, ch); r.err != nil || r.resp.Answer != DenyOnce {
		t.Fatalf("got %+v, %v", r.resp, r.err)
	}
	for _, bad := range []string{"\x1b", "\rALLOWED", "\x07", "\x08", "\u202e", "\nrule:    harmless"} {
		if strings.Contains(out, bad) {
			t.Errorf("prompt contains raw %q:\n%q", bad, out)
		}
	}
	for _, want := range []string{`$'\x1b[2K\rALLOWED'`, `$'a\nrule:    harmless'`, `$'\u202egnp.exe'`, `/ws/\x1b]0;title\x07`, `/usr/bin/git\x1b[1A`} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt lacks escaped %s:\n%s", want, out)
		}
	}
}

func TestTTYInvalidKeysReprompt(t *testing.T) {
	tm := newTerm(t)
	a := newTTYApprover(t, tm, nil)
	ch := approveAsync(a, 10*time.Second, gitPush)
	tm.waitFor(promptEnd, 1)
	// An arrow key's escape sequence contains "A" but must not count as it.
	for i, keys := range []string{"x", "\x1b[A", "aa", "\r"} {
		tm.press(keys)
		tm.waitFor(promptEnd, i+2)
	}
	if n := strings.Count(tm.output(), "invalid key"); n != 3 {
		t.Errorf("saw %d invalid-key messages, want 3:\n%s", n, tm.output())
	}
	tm.press("D")
	if r := waitResult(t, ch); r.err != nil || r.resp.Answer != DenyAlways {
		t.Fatalf("got %+v, %v; want deny_always", r.resp, r.err)
	}
}

func TestTTYTimeout(t *testing.T) {
	tm := newTerm(t)
	rec := &recorder{}
	a := newTTYApprover(t, tm, rec)
	ch := approveAsync(a, 300*time.Millisecond, gitPush)
	r := waitResult(t, ch)
	if !errors.Is(r.err, ErrTimeout) || r.resp.Answer.Allowed() {
		t.Fatalf("got %+v, %v; want ErrTimeout", r.resp, r.err)
	}
	tm.waitFor("timed out, denied", 1)
	if rec.String() != "hold,release" {
		t.Errorf("pauser calls = %q", rec)
	}
}

func TestTTYTypeaheadIsDiscarded(t *testing.T) {
	tm := newTerm(t)
	tm.press("a") // typed before any prompt (in the terminal's buffer now): must not answer it
	a := newTTYApprover(t, tm, nil)
	ch := approveAsync(a, 10*time.Second, gitPush)
	tm.waitFor(promptEnd, 1)
	// Had the type-ahead been read as the answer, the result would be
	// "a"'s, not the deny typed after the prompt.
	tm.press("d")
	if r := waitResult(t, ch); r.resp.Answer != DenyOnce {
		t.Fatalf("got %+v, %v", r.resp, r.err)
	}
}

func TestTTYSerializesPrompts(t *testing.T) {
	tm := newTerm(t)
	rec := &recorder{}
	a := newTTYApprover(t, tm, rec)
	first, second := gitPush, gitPush
	first.Pid, second.Pid = 1001, 1002
	ch1 := approveAsync(a, 10*time.Second, first)
	tm.waitFor("pid 1001", 1)
	ch2 := approveAsync(a, 10*time.Second, second)
	time.Sleep(100 * time.Millisecond)
	if strings.Contains(tm.output(), "pid 1002") {
		t.Fatal("second prompt shown while the first is open")
	}
	tm.press("a")
	tm.waitFor("pid 1002", 1)
	tm.waitFor(promptEnd, 2)
	tm.press("d")
	if r := waitResult(t, ch1); r.resp.Answer != AllowOnce {
		t.Errorf("first: %+v, %v", r.resp, r.err)
	}
	if r := waitResult(t, ch2); r.resp.Answer != DenyOnce {
		t.Errorf("second: %+v, %v", r.resp, r.err)
	}
	if rec.String() != "hold,release,hold,release" {
		t.Errorf("pauser calls = %q", rec)
	}
}

func TestTTYQueuedRequestTimesOut(t *testing.T) {
	tm := newTerm(t)
	a := newTTYApprover(t, tm, nil)
	ch1 := approveAsync(a, 10*time.Second, gitPush)
	tm.waitFor(promptEnd, 1)
	ch2 := approveAsync(a, 200*time.Millisecond, gitPush)
	if r := waitResult(t, ch2); !errors.Is(r.err, ErrTimeout) {
		t.Errorf("queued request: %+v, %v; want ErrTimeout", r.resp, r.err)
	}
	tm.press("a")
	if r := waitResult(t, ch1); r.resp.Answer != AllowOnce {
		t.Errorf("first: %+v, %v", r.resp, r.err)
	}
	// The lock was released: a third request prompts.
	ch3 := approveAsync(a, 10*time.Second, gitPush)
	tm.waitFor(promptEnd, 2)
	tm.press("d")
	waitResult(t, ch3)
}

func TestTTYUnavailable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notatty")
	os.WriteFile(file, nil, 0o600)
	for _, path := range []string{filepath.Join(dir, "missing"), file} {
		a, err := New("tty", Options{TTYPath: path})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Approve(context.Background(), gitPush); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", path, err)
		}
	}
}

// TestTTYAnswerCarriesTheTerminalOwner: an answer at the terminal is
// attributed to the uid owning it (who may grant what is checked against
// it).
func TestTTYAnswerCarriesTheTerminalOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: giving the pty to another uid needs root")
	}
	tm := newTerm(t)
	if err := os.Chown(tm.slave.Name(), 65534, -1); err != nil {
		t.Fatal(err)
	}
	a := newTTYApprover(t, tm, &recorder{})
	ch := approveAsync(a, 10*time.Second, gitPush)
	tm.waitFor(promptEnd, 1)
	tm.master.Write([]byte("a"))
	r := <-ch
	if r.err != nil || !r.resp.UIDKnown || r.resp.UID != 65534 || !strings.Contains(r.resp.Approver, "uid=65534") {
		t.Errorf("answer %+v %v, want uid 65534 known", r.resp, r.err)
	}
}

// TestTTYRememberShowsTheRule: [r] and [R] show the exact rule and the
// file it goes in, and answer only on an Enter pressed after that; any
// other key goes back to the choices; a command nothing can be saved for
// says so and asks again.
func TestTTYRememberShowsTheRule(t *testing.T) {
	rem := &InboxRemember{File: "/ws/agentbox.yaml", Allow: "chmod 600", Deny: "chmod"}
	cases := []struct {
		name   string
		rem    *InboxRemember
		keys   []string // pressed one at a time, each after the terminal answered the last
		shown  []string
		want   Answer
		prefix string
	}{
		{"remember, confirmed", rem, []string{"r", "\r"}, []string{"saves in /ws/agentbox.yaml:", "- decision: allow", "command: chmod 600", "press Enter to save it"}, Remember, "chmod 600"},
		{"remember deny, confirmed", rem, []string{"R", "\r"}, []string{"- decision: deny", "command: chmod\r"}, RememberDeny, ""},
		{"remember, then another key", rem, []string{"r", "x", "d"}, []string{"command: chmod 600", "not saved; choose again"}, DenyOnce, ""},
		{"r with Enter at once is not a confirmation", rem, []string{"r\r", "x", "a"}, []string{"command: chmod 600", "not saved; choose again"}, AllowOnce, ""},
		{"nothing to save", &InboxRemember{File: "/ws/agentbox.yaml", AllowNote: "unsafe to remember as a prefix"}, []string{"r", "a"}, []string{"nothing can be saved for this command (unsafe to remember as a prefix)"}, AllowOnce, ""},
		{"no project policy", nil, []string{"r", "a"}, []string{"nothing can be saved: this run has no project policy file"}, AllowOnce, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := newTerm(t)
			a := newTTYApprover(t, tm, nil)
			req := Request{Pid: 7, Program: "/usr/bin/chmod", Argv: []string{"chmod", "600", "f"}, Action: "tool:exec:chmod 600 f", Remember: c.rem}
			ch := approveAsync(a, 10*time.Second, req)
			tm.waitFor(promptEnd, 1)
			for i, k := range c.keys {
				tm.press(k)
				if i < len(c.keys)-1 {
					tm.waitFor(promptEnd, i+2)
				}
			}
			r := waitResult(t, ch)
			if r.err != nil || r.resp.Answer != c.want || r.resp.Prefix != c.prefix {
				t.Fatalf("got %+v, %v; want %v with prefix %q", r.resp, r.err, c.want, c.prefix)
			}
			out := tm.output()
			for _, w := range c.shown {
				if !strings.Contains(out, w) {
					t.Errorf("terminal lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
