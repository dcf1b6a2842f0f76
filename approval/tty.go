package approval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/shellquote"
	"golang.org/x/sys/unix"
)

// Keys of the tty prompt (Forge's confirmation prompt). A key counts only
// when it arrives alone (optionally followed by Enter): an arrow key's escape
// sequence ("\x1b[A") or pasted text is never read as its letters.
var ttyKeys = map[string]Answer{
	"a":    AllowOnce,
	"A":    AllowAlways,
	"d":    DenyOnce,
	"D":    DenyAlways,
	"r":    Remember,
	"R":    RememberDeny,
	"\x03": DenyOnce, // Ctrl-C
	"\x04": DenyOnce, // Ctrl-D
}

const ttyChoices = "[a] allow once  [A] allow always  [d] deny  [D] deny always  [r] remember  [R] deny and remember"

var ttyAnswerText = map[Answer]string{
	AllowOnce:    "allowed once",
	AllowAlways:  "allowed always (this session)",
	DenyOnce:     "denied",
	DenyAlways:   "denied always (this session)",
	Remember:     "allowed; saving the rule (the audit event says whether it was saved)",
	RememberDeny: "denied; saving the deny rule (the audit event says whether it was saved)",
}

// rememberPreview is what the terminal shows after [r] or [R]: the exact
// rule and the file it goes in, and how to confirm; ok is false when
// nothing would be saved (the prompt is shown again).
func rememberPreview(rem *InboxRemember, ans Answer) (text string, ok bool) {
	if rem == nil || rem.File == "" {
		return "  nothing can be saved: this run has no project policy file; choose another answer\r\n", false
	}
	decision, prefix := "allow", rem.Allow
	if ans == RememberDeny {
		decision, prefix = "deny", rem.Deny
	}
	if prefix == "" {
		why := ""
		if ans == Remember && rem.AllowNote != "" {
			why = " (" + shellquote.Sanitize(rem.AllowNote) + ")"
		}
		return "  nothing can be saved for this command" + why + "; choose another answer\r\n", false
	}
	return fmt.Sprintf("  saves in %s:\r\n    - decision: %s\r\n      command: %s\r\n  press Enter to save it, any other key to choose again\r\n  > ",
		shellquote.Sanitize(rem.File), decision, shellquote.Sanitize(prefix)), true
}

// ttyApprover is --approve tty: a prompt on the controlling terminal. It
// opens the terminal itself (never stdin, which belongs to the sandboxed
// program), holds the pty relay while prompting, and shows one request at a
// time, in arrival order.
type ttyApprover struct {
	path   string
	pauser Pauser
	log    *slog.Logger
	turn   fifo
}

func newTTY(opts Options) *ttyApprover {
	return &ttyApprover{path: opts.TTYPath, pauser: opts.Pauser, log: opts.Logger}
}

// Close does nothing; the terminal is opened per request.
func (t *ttyApprover) Close() error { return nil }

// Approve prompts on the terminal and waits for one valid key or the
// deadline. Invalid keys re-prompt.
func (t *ttyApprover) Approve(ctx context.Context, req Request) (Response, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	id := req.ID
	if id == "" {
		id = fmt.Sprintf("pid %d", req.Pid)
	}
	if err := t.turn.acquire(ctx); err != nil {
		return Response{}, ctxError(ctx, id)
	}
	defer t.turn.release()

	f, err := os.OpenFile(t.path, os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Response{}, fmt.Errorf("--approve tty: opening terminal: %w: %w", err, ErrUnavailable)
	}
	defer f.Close()
	who, err := ttyWho(f)
	if err != nil {
		return Response{}, fmt.Errorf("--approve tty: %s: %w: %w", t.path, err, ErrUnavailable)
	}

	if t.pauser != nil {
		t.pauser.Hold()
		defer t.pauser.Release()
	}
	restore, err := keyMode(f)
	if err != nil {
		return Response{}, fmt.Errorf("--approve tty: %s: %w: %w", t.path, err, ErrUnavailable)
	}
	defer restore()

	deadline, _ := ctx.Deadline()
	if err := f.SetReadDeadline(deadline); err != nil {
		// Without a deadline the read could outlive the timeout: refuse.
		return Response{}, fmt.Errorf("--approve tty: %s: %w: %w", t.path, err, ErrUnavailable)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	defer stop()

	if _, err := io.WriteString(f, formatPrompt(req, time.Until(deadline))); err != nil {
		return Response{}, fmt.Errorf("--approve tty: writing prompt to %s: %w: %w", t.path, err, ErrUnavailable)
	}
	buf := make([]byte, 256)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
				io.WriteString(f, "timed out, denied\r\n")
				return Response{}, ctxError(ctx, id)
			}
			return Response{}, fmt.Errorf("--approve tty: reading %s: %w: %w", t.path, err, ErrUnavailable)
		}
		key := string(bytes.TrimRight(buf[:n], "\r\n"))
		if ans, ok := ttyKeys[key]; ok {
			prefix := ""
			if ans == Remember || ans == RememberDeny {
				// The exact rule first; Enter, pressed after it was
				// shown (a key of its own), saves it.
				preview, ok := rememberPreview(req.Remember, ans)
				io.WriteString(f, "\r\n"+preview)
				if !ok {
					io.WriteString(f, "  "+ttyChoices+"\r\n  > ")
					continue
				}
				// An Enter typed before the rule was on screen (with the
				// key, or pasted after it) does not confirm it.
				unix.IoctlSetInt(fdOf(f), unix.TCFLSH, unix.TCIFLUSH)
				n, err := f.Read(buf)
				if err != nil {
					continue // the read at the top reports the deadline
				}
				if k := string(buf[:n]); k != "\r" && k != "\n" {
					io.WriteString(f, "not saved; choose again\r\n  "+ttyChoices+"\r\n  > ")
					continue
				}
				if ans == Remember && req.Remember != nil {
					prefix = req.Remember.Allow
				}
			}
			io.WriteString(f, ttyAnswerText[ans]+"\r\n")
			return Response{Answer: ans, Approver: who, Prefix: prefix, UID: ttyUID(f), UIDKnown: ttyUID(f) >= 0}, nil
		}
		if key != "" {
			fmt.Fprintf(f, "\r\ninvalid key %s\r\n", shellquote.Display([]string{key}))
		}
		io.WriteString(f, "  "+ttyChoices+"\r\n  > ")
	}
}

// formatPrompt renders the request. Every value the sandboxed program could
// influence goes through QuoteArgv or Sanitize, and every line ends in
// "\r\n" so the layout holds whether or not the terminal is in raw mode.
func formatPrompt(req Request, left time.Duration) string {
	var b strings.Builder
	line := func(label, value string) {
		if value != "" {
			fmt.Fprintf(&b, "  %-8s %s\r\n", label+":", value)
		}
	}
	b.WriteString("\r\nagentbox: approval needed")
	var who []string
	if req.Agent != "" {
		who = append(who, "agent "+shellquote.Sanitize(req.Agent))
	}
	if req.Role != "" {
		who = append(who, "role "+shellquote.Sanitize(req.Role))
	}
	if req.Pid != 0 {
		who = append(who, fmt.Sprintf("pid %d", req.Pid))
	}
	if len(who) > 0 {
		b.WriteString(" (" + strings.Join(who, ", ") + ")")
	}
	b.WriteString("\r\n")
	line("program", shellquote.Sanitize(req.Program))
	if req.Identified != "" {
		line("identified", shellquote.Sanitize(req.Identified))
	}
	line("argv", shellquote.Display(req.Argv))
	if len(req.Env) > 0 {
		line("env", shellquote.Display(req.Env))
	}
	line("cwd", shellquote.Sanitize(req.Cwd))
	rule := shellquote.Sanitize(req.Rule)
	if req.Layer != "" {
		rule += " (" + shellquote.Sanitize(req.Layer) + ")"
	}
	line("rule", rule)
	line("reason", shellquote.Sanitize(req.Reason))
	fmt.Fprintf(&b, "  %s   (auto-deny in %s)\r\n  > ", ttyChoices, left.Round(time.Second))
	return b.String()
}

// ttyWho names the terminal and its owner for the audit log, e.g.
// "tty:/dev/pts/3 uid=1000". It fails if f is not a terminal.
func ttyWho(f *os.File) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fdOf(f), &st); err != nil {
		return "", err
	}
	name := f.Name()
	if real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fdOf(f))); err == nil {
		name = real
	}
	return fmt.Sprintf("tty:%s uid=%d", name, st.Uid), nil
}

// keyMode switches the terminal to single-key input without echo or signal
// keys and discards type-ahead, so keys typed before the prompt appeared
// cannot answer it. It returns a function restoring the previous mode.
func keyMode(f *os.File) (restore func(), err error) {
	fd := fdOf(f)
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("not a terminal (TCGETS): %w", err)
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, fmt.Errorf("setting terminal mode (TCSETS): %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH); err != nil {
		unix.IoctlSetTermios(fd, unix.TCSETS, old)
		return nil, fmt.Errorf("flushing terminal input (TCFLSH): %w", err)
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// fdOf returns f's descriptor without f.Fd(), which would switch it to
// blocking mode and break read deadlines. The descriptor stays valid while f
// is open.
func fdOf(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// fifo is a lock handed to waiters in arrival order, so concurrent prompts
// are shown one at a time in the order they were requested.
type fifo struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan struct{}
}

// acquire waits for the lock or the end of ctx.
func (q *fifo) acquire(ctx context.Context) error {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q.waiters = append(q.waiters, ch)
	q.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, w := range q.waiters {
		if w == ch {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return ctx.Err()
		}
	}
	// The lock was handed to us as ctx ended; pass it on.
	q.releaseLocked()
	return ctx.Err()
}

func (q *fifo) release() {
	q.mu.Lock()
	q.releaseLocked()
	q.mu.Unlock()
}

func (q *fifo) releaseLocked() {
	if len(q.waiters) == 0 {
		q.busy = false
		return
	}
	ch := q.waiters[0]
	q.waiters = q.waiters[1:]
	close(ch)
}

// ttyUID is the terminal's owner (-1 unknown): who types at it.
func ttyUID(f *os.File) int {
	var st syscall.Stat_t
	if err := syscall.Fstat(fdOf(f), &st); err != nil {
		return -1
	}
	return int(st.Uid)
}
