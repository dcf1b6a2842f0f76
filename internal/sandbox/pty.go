package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal pair for a sandboxed command plus the relay
// between it and the user's terminal.
//
// Why a new pty rather than the user's terminal: a sandboxed program that
// shares the outer terminal can push keystrokes into it (TIOCSTI), change
// its mode, or signal the outer job. With its own pty the program's session,
// process groups and line discipline are all inside the sandbox; agentbox
// copies bytes between the two. TIOCSTI on the inner pty could only inject
// into the inner pty's own input (and seccomp refuses it anyway).
//
// Use: OpenPTY; start the child with Slave() as its stdin/stdout/stderr in
// a new session with Setsid and Setctty (Ctty: 0); call Relay (which closes
// agentbox's copy of the slave, so the relay ends when the last process
// inside closes it); Close when done. Hold and Release pause forwarding of
// the user's keys while an approval prompt owns the terminal.
type PTY struct {
	master *os.File
	slave  *os.File

	slaveOnce sync.Once

	mu   sync.Mutex
	held bool
	// out gates the child's output while held: an approval prompt must not
	// be overwritten by escape sequences the sandboxed program prints.
	out struct {
		sync.Mutex
		cond    *sync.Cond
		held    bool // no output is forwarded while set
		writing bool // a write to the outer terminal is in progress
		stop    bool // Relay is ending: let the copier through
	}
	wakeR   *os.File // the stdin pump polls this to notice Hold/Release/stop
	wakeW   *os.File
	running bool
}

// OpenPTY opens a new pty pair. Both descriptors are close-on-exec; pass
// Slave() explicitly as the child's stdio.
func OpenPTY() (*PTY, error) {
	m0, s, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("pty: opening /dev/ptmx: %w", err)
	}
	// pty.Open leaves the master in blocking mode (it calls Fd()). Re-wrap
	// a non-blocking duplicate so reads use the runtime poller and can be
	// interrupted by deadlines and Close.
	m, err := pollableDup(m0)
	m0.Close()
	if err != nil {
		s.Close()
		return nil, err
	}
	// The slave goes to the child as stdio; it must be in blocking mode
	// (Fd() switches it and tells the runtime).
	s.Fd()
	r, w, err := os.Pipe()
	if err != nil {
		m.Close()
		s.Close()
		return nil, fmt.Errorf("pty: wake pipe: %w", err)
	}
	p := &PTY{master: m, slave: s, wakeR: r, wakeW: w}
	p.out.cond = sync.NewCond(&p.out)
	return p, nil
}

// Slave returns the terminal side for the child's fds 0, 1 and 2.
func (p *PTY) Slave() *os.File { return p.slave }

// SlaveName returns the slave's device path (e.g. /dev/pts/3), for a
// Landlock rule that lets the sandboxed program reopen its own terminal.
func (p *PTY) SlaveName() string { return p.slave.Name() }

// Master returns the controlling side (agentbox's end).
func (p *PTY) Master() *os.File { return p.master }

// CloseSlave closes agentbox's copy of the slave. Relay does this itself;
// call it directly only when not relaying. Safe to call more than once.
func (p *PTY) CloseSlave() error {
	var err error
	p.slaveOnce.Do(func() { err = p.slave.Close() })
	return err
}

// Hold stops forwarding in both directions. When it returns the relay is
// not reading `in` and not writing `out`, and will do neither until
// Release, so a prompt owns the terminal: the user's keys cannot reach the
// child, and the child's output (which could carry escape sequences that
// redraw the prompt) waits in the pty until Release. Hold and Release are
// safe to call when no relay runs; they do not nest.
func (p *PTY) Hold() {
	p.mu.Lock() // waits for an in-progress read of `in` to finish
	p.held = true
	p.mu.Unlock()
	p.wake()
	p.out.Lock()
	p.out.held = true
	for p.out.writing { // let an in-progress write to the terminal finish
		p.out.cond.Wait()
	}
	p.out.Unlock()
}

// Release resumes forwarding after Hold.
func (p *PTY) Release() {
	p.mu.Lock()
	p.held = false
	p.mu.Unlock()
	p.wake()
	p.out.Lock()
	p.out.held = false
	p.out.cond.Broadcast()
	p.out.Unlock()
}

// gateOutput waits while output is held, then marks a write in progress;
// the caller must call outputDone after writing.
func (p *PTY) gateOutput() {
	p.out.Lock()
	for p.out.held && !p.out.stop {
		p.out.cond.Wait()
	}
	p.out.writing = true
	p.out.Unlock()
}

func (p *PTY) outputDone() {
	p.out.Lock()
	p.out.writing = false
	p.out.cond.Broadcast()
	p.out.Unlock()
}

func (p *PTY) wake() {
	// Non-blocking in effect: one byte is enough and the pump drains it; a
	// full pipe already means "look again".
	p.wakeW.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	p.wakeW.Write([]byte{0})
}

// Close closes the master, the slave (if still open) and internal pipes.
func (p *PTY) Close() error {
	err := p.master.Close()
	p.CloseSlave()
	p.wakeR.Close()
	p.wakeW.Close()
	if err != nil {
		return fmt.Errorf("pty: closing master: %w", err)
	}
	return nil
}

// Relay copies the user's keys from in to the child and the child's output
// to out until the child side is closed by every process (read on the
// master reports EIO), ctx is cancelled, or writing to out fails. Call it
// after the child has been started: it closes agentbox's copy of the slave.
//
// If in is a terminal it is put in raw mode for the duration (restored on
// return, also on error): Ctrl-C, Ctrl-Z and friends then reach the inner
// pty as bytes and its line discipline turns them into signals for the
// child's foreground process group. The inner pty starts with in's window
// size, and each SIGWINCH received by agentbox copies in's size to the inner
// pty (the kernel then signals the child's foreground group). If in is not
// a terminal its bytes are forwarded as they are until EOF.
//
// It returns nil when the child side closed, ctx.Err() on cancellation.
func (p *PTY) Relay(ctx context.Context, in *os.File, out *os.File) error {
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return errors.New("pty: Relay already running")
	}
	p.running = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running = false
		p.mu.Unlock()
	}()
	p.CloseSlave()

	inFd := fileFd(in)
	if old, err := unix.IoctlGetTermios(inFd, unix.TCGETS); err == nil {
		raw := *old
		makeRaw(&raw)
		if err := unix.IoctlSetTermios(inFd, unix.TCSETS, &raw); err != nil {
			return fmt.Errorf("pty: setting %s to raw mode (TCSETS): %w", in.Name(), err)
		}
		defer unix.IoctlSetTermios(inFd, unix.TCSETS, old)

		p.copySize(inFd)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		sizeDone := make(chan struct{})
		defer close(sizeDone)
		go func() {
			for {
				select {
				case <-winch:
					p.copySize(inFd)
				case <-sizeDone:
					return
				}
			}
		}()
	}

	stop := make(chan struct{})
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		p.pumpInput(inFd, stop)
	}()
	defer func() {
		close(stop)
		p.wake()
		// A child that stopped reading can leave the pump blocked writing
		// to the master; the deadline unblocks it.
		p.master.SetWriteDeadline(time.Now())
		<-pumpDone
		p.master.SetWriteDeadline(time.Time{})
	}()

	p.out.Lock()
	p.out.stop = false
	p.out.Unlock()
	outDone := make(chan error, 1)
	go func() { outDone <- p.copyMasterOutput(out) }()
	select {
	case err := <-outDone:
		return err
	case <-ctx.Done():
		p.out.Lock()
		p.out.stop = true // a held copier must not keep Relay from returning
		p.out.cond.Broadcast()
		p.out.Unlock()
		p.master.SetReadDeadline(time.Now())
		<-outDone
		p.master.SetReadDeadline(time.Time{})
		return ctx.Err()
	}
}

// copyMasterOutput copies until the slave is closed everywhere (EIO). Each
// write waits while the output is held (see Hold).
func (p *PTY) copyMasterOutput(out io.Writer) error {
	buf := make([]byte, 32*1024)
	for {
		n, err := p.master.Read(buf)
		if n > 0 {
			p.gateOutput()
			_, werr := out.Write(buf[:n])
			p.outputDone()
			if werr != nil {
				return fmt.Errorf("pty: writing child output: %w", werr)
			}
		}
		if err != nil {
			if errors.Is(err, syscall.EIO) || errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil // cancelled by Relay
			}
			return fmt.Errorf("pty: reading child output: %w", err)
		}
	}
}

// pumpInput forwards in to the master. It waits in poll(2) on in and the
// wake pipe, and reads in only while holding p.mu with held false, so Hold
// (which takes p.mu) returns only when no read is in progress.
func (p *PTY) pumpInput(inFd int, stop <-chan struct{}) {
	wakeFd := fileFd(p.wakeR)
	buf := make([]byte, 4096)
	inOpen := true
	for {
		select {
		case <-stop:
			return
		default:
		}
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		fds := []unix.PollFd{{Fd: int32(wakeFd), Events: unix.POLLIN}}
		if !held && inOpen {
			fds = append(fds, unix.PollFd{Fd: int32(inFd), Events: unix.POLLIN})
		}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[0].Revents != 0 {
			var junk [64]byte
			unix.Read(wakeFd, junk[:])
			continue
		}
		if len(fds) < 2 || fds[1].Revents == 0 {
			continue
		}
		p.mu.Lock()
		if p.held {
			p.mu.Unlock()
			continue
		}
		n, err := unix.Read(inFd, buf)
		p.mu.Unlock()
		switch {
		case n > 0:
			if _, err := p.master.Write(buf[:n]); err != nil {
				return
			}
		case err == unix.EAGAIN || err == unix.EINTR:
		default:
			// EOF or error on in: stop forwarding but keep relaying output.
			inOpen = false
		}
	}
}

// copySize copies the window size of the terminal fd to the inner pty.
func (p *PTY) copySize(fd int) {
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
		unix.IoctlSetWinsize(fileFd(p.master), unix.TIOCSWINSZ, ws)
	}
}

// makeRaw is cfmakeraw(3).
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

// fileFd returns f's descriptor without f.Fd(), which would switch a
// pollable file to blocking mode and break deadlines.
func fileFd(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// pollableDup returns a non-blocking, close-on-exec duplicate of f that the
// runtime poller manages.
func pollableDup(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(fileFd(f)), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pty: duplicating %s: %w", f.Name(), err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty: making %s non-blocking: %w", f.Name(), err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
