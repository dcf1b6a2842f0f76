package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// jconn is what a journalClient needs of its connection: a *rawConn in a
// run, a net.Conn in tests.
type jconn interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
}

// rawConn is a blocking unix stream socket used through x/sys/unix: a
// run asks the journal a question or two, and dialing through package
// net costs its poller's and dialer's set-up on every launch.
type rawConn struct{ fd int }

// dialRaw connects to the unix socket sock, waiting at most timeout.
func dialRaw(sock string, timeout time.Duration) (*rawConn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint journal: socket: %w", err)
	}
	c := &rawConn{fd: fd}
	c.SetDeadline(time.Now().Add(timeout))
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: sock})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("checkpoint journal: connect %s: %w", sock, err)
	}
	return c, nil
}

// SetDeadline sets the socket's send and receive timeouts to the time
// left until t (a blocking read or write past it fails with EAGAIN).
func (c *rawConn) SetDeadline(t time.Time) error {
	d := time.Until(t)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
}

func (c *rawConn) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, fmt.Errorf("checkpoint journal: read: %w", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *rawConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Write(c.fd, b[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, fmt.Errorf("checkpoint journal: write: %w", err)
		}
		done += n
	}
	return done, nil
}

// recvmsg reads into b and oob (descriptors passed with the answer).
func (c *rawConn) recvmsg(b, oob []byte) (n, oobn int, err error) {
	for {
		n, oobn, _, _, err = unix.Recvmsg(c.fd, b, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("checkpoint journal: recvmsg: %w", err)
	}
	if n == 0 && oobn == 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return n, oobn, nil
}

func (c *rawConn) Close() error {
	if c.fd < 0 {
		return errors.New("checkpoint journal: connection closed twice")
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}
