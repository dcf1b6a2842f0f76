package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// screen accumulates what the relay writes to the user's terminal.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) pump(r *os.File) {
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		s.mu.Lock()
		s.buf.Write(b[:n])
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// waitFor waits until the screen, after position from, contains want and
// returns the position after it.
func (s *screen) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		text := s.buf.String()
		s.mu.Unlock()
		if i := strings.Index(text[from:], want); i >= 0 {
			return from + i + len(want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Fatalf("screen never showed %q; after offset %d it has:\n%q", want, from, s.buf.String()[from:])
	return 0
}

// TestPTYRelayInteractiveShell drives an interactive shell through the
// relay from an outer pty that plays the user's terminal: typed commands
// run, window size changes propagate, Ctrl-C interrupts the foreground job,
// Hold keeps keys away from the child, and the outer terminal's mode is
// restored afterwards.
func TestPTYRelayInteractiveShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("reason: no sh in PATH")
	}
	// The user's terminal: we type into userKeys and read the screen from it;
	// the relay gets the terminal side.
	userKeys, userTTY, err := pty.Open()
	if err != nil {
		t.Skipf("reason: cannot open a pty: %v", err)
	}
	defer userKeys.Close()
	defer userTTY.Close()
	if err := pty.Setsize(userKeys, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(fileFd(userTTY), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}

	p, err := OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.SlaveName(), "/dev/pts/") {
		t.Errorf("SlaveName() = %q, want /dev/pts/N", p.SlaveName())
	}
	cmd := exec.Command(sh, "-i")
	cmd.Env = []string{"PS1=$ ", "PATH=/usr/bin:/bin", "TERM=dumb"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.Slave(), p.Slave(), p.Slave()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	scr := &screen{}
	go scr.pump(userKeys)
	relayErr := make(chan error, 1)
	go func() { relayErr <- p.Relay(context.Background(), userTTY, userTTY) }()

	type_ := func(s string) {
		t.Helper()
		if _, err := userKeys.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	// Raw mode on the outer terminal while relaying.
	var raw *unix.Termios
	for i := 0; i < 200; i++ {
		raw, _ = unix.IoctlGetTermios(fileFd(userTTY), unix.TCGETS)
		if raw.Lflag&unix.ICANON == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if raw.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Fatalf("outer terminal not in raw mode during relay: lflag %#x", raw.Lflag)
	}

	pos := 0
	type_("echo h''i-there\r")
	pos = scr.waitFor(t, pos, "hi-there")

	type_("stty size\r")
	pos = scr.waitFor(t, pos, "30 100")

	// Resize the user's terminal; the kernel would signal the foreground
	// group of that terminal, which agentbox is not in here, so deliver the
	// SIGWINCH ourselves.
	if err := pty.Setsize(userKeys, &pty.Winsize{Rows: 41, Cols: 123}); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ws, err := unix.IoctlGetWinsize(fileFd(p.Master()), unix.TIOCGWINSZ)
		if err == nil && ws.Row == 41 && ws.Col == 123 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inner pty size %+v, want 41x123", ws)
		}
		time.Sleep(10 * time.Millisecond)
	}
	type_("stty size\r")
	pos = scr.waitFor(t, pos, "41 123")

	// Ctrl-C interrupts the foreground job via the inner line discipline.
	type_("sleep 100; echo slept\r")
	testkit.WaitCond(t, "the shell to start sleep 100", func() bool { return childRunning(cmd.Process.Pid, "sleep") })
	start := time.Now()
	type_("\x03")
	type_("echo after-i''nt\r")
	pos = scr.waitFor(t, pos, "after-int")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Ctrl-C took %v", d)
	}
	scr.mu.Lock()
	if strings.Contains(scr.buf.String(), "\nslept") {
		t.Errorf("sleep was not interrupted")
	}
	scr.mu.Unlock()

	// Hold also holds the child's output: what the sandboxed program prints
	// while a prompt owns the terminal cannot redraw the prompt.
	gate, printed := filepath.Join(t.TempDir(), "gate"), filepath.Join(t.TempDir(), "printed")
	type_("while [ ! -e " + gate + " ]; do sleep 0.01; done; echo late-out''put; : > " + printed + "\r")
	pos = scr.waitFor(t, pos, "late-out''put") // the typed line's echo, not the output
	testkit.WaitCond(t, "the shell to wait for the gate", func() bool { return childRunning(cmd.Process.Pid, "sleep") })
	p.Hold()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The child has printed (the file comes after its echo) while held.
	testkit.WaitCond(t, "the held child to print", func() bool { _, err := os.Stat(printed); return err == nil })
	scr.mu.Lock()
	leaked := strings.Contains(scr.buf.String()[pos:], "late-output")
	scr.mu.Unlock()
	if leaked {
		t.Fatal("child output reached the terminal while held")
	}

	// Hold: keys stay in the user's terminal for the prompt to read.
	type_("y")
	got := make([]byte, 16)
	userTTY.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := userTTY.Read(got)
	if err != nil || string(got[:n]) != "y" {
		t.Fatalf("prompt read %q, %v; want the held key \"y\"", got[:n], err)
	}
	userTTY.SetReadDeadline(time.Time{})
	p.Release()
	pos = scr.waitFor(t, pos, "late-output")
	type_("echo rel''eased\r")
	pos = scr.waitFor(t, pos, "released")

	type_("exit\r")
	select {
	case err := <-relayErr:
		if err != nil {
			t.Fatalf("Relay: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Relay did not return after the shell exited")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("shell exit: %v", err)
	}
	after, err := unix.IoctlGetTermios(fileFd(userTTY), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("outer terminal mode not restored:\n before %+v\n after  %+v", before, after)
	}
}

// TestPTYRelayPipesAndCancel relays from a pipe (not a terminal) and checks
// cancellation returns ctx.Err() promptly while the child still runs.
func TestPTYRelayPipesAndCancel(t *testing.T) {
	p, err := OpenPTY()
	if err != nil {
		t.Skipf("reason: cannot open a pty: %v", err)
	}
	defer p.Close()
	cmd := exec.Command("/bin/cat")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.Slave(), p.Slave(), p.Slave()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inW.Close()
	scr := &screen{}
	go scr.pump(outR)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Relay(ctx, inR, outW) }()
	inW.Write([]byte("ping-through-cat\n"))
	scr.waitFor(t, 0, "ping-through-cat\r\nping-through-cat")
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Relay after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Relay did not return after cancel")
	}
}

// TestPTYRelayCancelWithStuckChild cancels a relay whose child never reads
// its input while the user keeps typing: Relay must still return.
func TestPTYRelayCancelWithStuckChild(t *testing.T) {
	p, err := OpenPTY()
	if err != nil {
		t.Skipf("reason: cannot open a pty: %v", err)
	}
	defer p.Close()
	// Non-canonical input: a full input queue then blocks the writer
	// (canonical mode would discard the excess instead).
	tio, err := unix.IoctlGetTermios(fileFd(p.Slave()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	makeRaw(tio)
	if err := unix.IoctlSetTermios(fileFd(p.Slave()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "60")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.Slave(), p.Slave(), p.Slave()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	inR, inW, _ := os.Pipe()
	defer inW.Close()
	go func() {
		junk := bytes.Repeat([]byte("x"), 4096)
		for {
			if _, err := inW.Write(junk); err != nil {
				return
			}
		}
	}()
	outR, outW, _ := os.Pipe()
	defer outR.Close()
	go io.Copy(io.Discard, outR)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Relay(ctx, inR, outW) }()
	time.Sleep(500 * time.Millisecond) // let the inner pty's input buffer fill
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Relay = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Relay blocked after cancel with a child that does not read")
	}
}

// TestPTYInjectionStaysInside runs a child that pushes "echo pwned\n" into
// its terminal with TIOCSTI (no seccomp here, so the ioctl itself works for
// root): the bytes land in the inner pty, never in the user's terminal.
func TestPTYInjectionStaysInside(t *testing.T) {
	userKeys, userTTY, err := pty.Open()
	if err != nil {
		t.Skipf("reason: cannot open a pty: %v", err)
	}
	defer userKeys.Close()
	defer userTTY.Close()
	p, err := OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPTYHelperProcess$")
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_PTY_CHILD=tiocsti")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.Slave(), p.Slave(), p.Slave()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scr := &screen{}
	go scr.pump(userKeys)
	// Held: the relay must not consume the user's terminal input, or it
	// would hide bytes injected there.
	p.Hold()
	relayErr := make(chan error, 1)
	go func() { relayErr <- p.Relay(context.Background(), userTTY, userTTY) }()
	cmd.Wait()
	n, err := unix.IoctlGetInt(fileFd(userTTY), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		buf := make([]byte, n)
		userTTY.Read(buf)
		t.Fatalf("user's terminal has %d injected input bytes: %q", n, buf)
	}
	p.Release() // the child's output was held until now
	if err := <-relayErr; err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, 0, "TIOCSTI-RESULT")
	scr.mu.Lock()
	t.Logf("child screen: %q", scr.buf.String())
	scr.mu.Unlock()
}

// TestPTYHelperProcess is the child side of the pty tests.
func TestPTYHelperProcess(t *testing.T) {
	if os.Getenv("AGENTBOX_TEST_PTY_CHILD") != "tiocsti" {
		t.Skip("reason: helper process for TestPTYInjectionStaysInside, runs only when re-executed")
	}
	var errno syscall.Errno
	for _, c := range []byte("echo pwned\n") {
		b := c
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&b)))
		if e != 0 {
			errno = e
		}
	}
	fmt.Printf("TIOCSTI-RESULT errno=%d\r\n", errno)
	os.Exit(0)
}

// childRunning reports whether a child of pid runs a program named comm.
func childRunning(pid int, comm string) bool {
	for child := range strings.FieldsSeq(readFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")) {
		if strings.TrimSpace(readFile("/proc/"+child+"/comm")) == comm {
			return true
		}
	}
	return false
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
