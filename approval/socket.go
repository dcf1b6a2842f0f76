package approval

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/procfs"
	"golang.org/x/sys/unix"
)

const (
	// clientQueue is how many lines may wait for a slow client before it is
	// dropped (it can reconnect and gets every pending request again).
	clientQueue = 256
	// writeTimeout bounds one write to a client.
	writeTimeout = 5 * time.Second
)

// socketApprover is --approve socket:PATH. agentbox listens; approval clients
// (orchestrators, examples/approval-client) connect, receive every pending
// request and answer by id. The first valid answer wins. The peer's uid, read
// with SO_PEERCRED, is the access check; the 0600 file mode is a second line.
type socketApprover struct {
	path    string
	ln      *net.UnixListener
	allowed []int
	log     *slog.Logger
	done    sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	seq     uint64
	pending pendingSet
	clients map[*client]struct{}
}

// client is one authenticated approval connection.
type client struct {
	conn *net.UnixConn
	who  string // "socket uid=1000 pid=42"
	uid  int
	out  chan []byte // lines to write; closed when the client is removed
}

func listenSocket(path string, opts Options) (*socketApprover, error) {
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, fmt.Errorf("--approve socket:%s: path is %d bytes, unix sockets allow at most %d",
			path, len(path), len(unix.RawSockaddrUnix{}.Path)-1)
	}
	if err := removeStale(path); err != nil {
		return nil, fmt.Errorf("--approve socket:%s: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("--approve socket:%s: %w", path, err)
	}
	// The socket is briefly created with the umask's mode; the peer uid check
	// below is the real gate, this only stops other users from connecting.
	mode := os.FileMode(0o600)
	for _, u := range opts.AllowedUIDs {
		if u != os.Getuid() && u != 0 {
			mode = 0o666 // other users named as approvers may connect: the peer uid check gates them
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--approve socket:%s: %w", path, err)
	}
	s := &socketApprover{
		path:    path,
		ln:      ln,
		allowed: slices.Clone(opts.AllowedUIDs),
		log:     opts.Logger,
		pending: pendingSet{},
		clients: make(map[*client]struct{}),
	}
	s.done.Add(1)
	go s.acceptLoop()
	return s, nil
}

// removeStale makes room for the socket: a missing path is fine, a socket
// nobody listens on is removed, anything else is refused.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket (mode %s); refusing to replace it", path, fi.Mode())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("another process is listening on %s", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("checking existing socket: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}

// Approve publishes req to every connected client (and to clients that
// connect later) and waits for the first valid answer or the deadline.
func (s *socketApprover) Approve(ctx context.Context, req Request) (Response, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Response{}, fmt.Errorf("socket approver %s is closed: %w", s.path, ErrUnavailable)
	}
	s.seq++
	p, err := s.pending.addLocked(s.seq, req, func(req Request) []byte { return requestLine(req, deadline) })
	if err != nil {
		s.mu.Unlock()
		return Response{}, err
	}
	for c := range s.clients {
		s.sendLocked(c, p.line)
	}
	s.mu.Unlock()
	return s.pending.wait(ctx, &s.mu, p, func(m cancelMsg) { s.broadcastLocked(nil, m) })
}

// Close stops listening, removes the socket file, disconnects every client
// and fails pending requests with ErrUnavailable.
func (s *socketApprover) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.ln.Close() // also unlinks s.path
	s.pending.closeLocked(fmt.Errorf("socket approver %s closed: %w", s.path, ErrUnavailable),
		func(m cancelMsg) { s.broadcastLocked(nil, m) })
	for c := range s.clients {
		s.removeLocked(c)
	}
	s.mu.Unlock()
	s.done.Wait()
	return err
}

func (s *socketApprover) acceptLoop() {
	defer s.done.Done()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			s.log.Error("approval: accept failed; approvals will time out", "socket", s.path, "err", err)
			return
		}
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			s.serve(conn)
		}()
	}
}

// serve authenticates one connection and runs its read loop.
func (s *socketApprover) serve(conn *net.UnixConn) {
	defer conn.Close()
	cred, err := PeerCred(conn)
	if err != nil {
		s.log.Warn("approval: refused socket connection: cannot read peer credentials", "socket", s.path, "err", err)
		return
	}
	if !slices.Contains(s.allowed, int(cred.Uid)) {
		s.log.Warn("approval: refused socket connection from disallowed uid",
			"socket", s.path, "uid", cred.Uid, "pid", cred.Pid, "allowed", s.allowed)
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		conn.Write(encodeLine(errorMsg{Type: "error", Message: fmt.Sprintf("uid %d is not allowed to approve", cred.Uid)}))
		return
	}
	// The sandboxed program runs with our uid, so the uid check alone would
	// let it approve its own requests if it could reach the socket (the
	// kernel boundary is meant to stop that; this is the second line).
	// Everything agentbox runs is its descendant (it is a child subreaper,
	// so even daemonized processes stay below it); approvers never are.
	if inside, err := descendantOf(int(cred.Pid), os.Getpid()); err != nil || inside {
		why := "it runs inside this agentbox run"
		if err != nil {
			why = "its process cannot be inspected: " + err.Error()
		}
		s.log.Warn("approval: refused socket connection: "+why, "socket", s.path, "uid", cred.Uid, "pid", cred.Pid)
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		conn.Write(encodeLine(errorMsg{Type: "error", Message: "refused: " + why}))
		return
	}
	c := &client{conn: conn, who: fmt.Sprintf("socket uid=%d pid=%d", cred.Uid, cred.Pid), uid: int(cred.Uid), out: make(chan []byte, clientQueue)}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.clients[c] = struct{}{}
	s.sendLocked(c, encodeLine(helloMsg{Type: "hello", Version: protocolVersion, Server: "agentbox"}))
	ps := make([]*pending, 0, len(s.pending))
	for _, p := range s.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *pending) int { return cmp.Compare(a.seq, b.seq) })
	for _, p := range ps {
		s.sendLocked(c, p.line)
	}
	s.mu.Unlock()
	s.log.Info("approval: client connected", "socket", s.path, "client", c.who)

	go c.writeLoop()
	r := bufio.NewReaderSize(conn, 4096)
	for {
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			s.reply(c, errorMsg{Type: "error", Message: err.Error()})
			continue
		}
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		s.handle(c, line)
	}
	s.mu.Lock()
	s.removeLocked(c)
	s.mu.Unlock()
	s.log.Info("approval: client disconnected", "socket", s.path, "client", c.who)
}

// handle applies one client line. Errors go back to the client as error
// lines; they never resolve a request.
func (s *socketApprover) handle(c *client, line []byte) {
	m, err := parseClientLine(line)
	if err != nil {
		s.log.Warn("approval: bad client line", "client", c.who, "err", err)
		s.reply(c, errorMsg{Type: "error", Message: err.Error()})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	reply, ok := s.pending.answerLocked(m, c.who, c.uid)
	s.sendLocked(c, reply)
	if ok {
		s.broadcastLocked(c, cancelMsg{Type: "cancel", ID: m.ID, Reason: "answered"})
	}
}

func (s *socketApprover) reply(c *client, msg any) {
	s.mu.Lock()
	s.sendLocked(c, encodeLine(msg))
	s.mu.Unlock()
}

// broadcastLocked queues msg for every client except skip.
func (s *socketApprover) broadcastLocked(skip *client, msg any) {
	line := encodeLine(msg)
	for c := range s.clients {
		if c != skip {
			s.sendLocked(c, line)
		}
	}
}

// sendLocked queues a line for c, dropping c if it is too slow to keep up.
func (s *socketApprover) sendLocked(c *client, line []byte) {
	if _, ok := s.clients[c]; !ok {
		return
	}
	select {
	case c.out <- line:
	default:
		s.log.Warn("approval: dropping client that does not read its messages", "client", c.who)
		s.removeLocked(c)
	}
}

func (s *socketApprover) removeLocked(c *client) {
	if _, ok := s.clients[c]; !ok {
		return
	}
	delete(s.clients, c)
	close(c.out)
}

// writeLoop writes queued lines in order; once the queue is closed (the
// client was removed) it closes the connection, which ends the read loop.
func (c *client) writeLoop() {
	for line := range c.out {
		c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := c.conn.Write(line); err != nil {
			c.conn.Close()
		}
	}
	c.conn.Close()
}

// PeerCred returns the credentials (pid, uid, gid) the kernel reports for
// the other end of a unix socket connection (SO_PEERCRED): who an
// approval client, a run or an inbox really is.
func PeerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}

func encodeLine(msg any) []byte {
	b, err := json.Marshal(msg)
	if err != nil { // cannot happen: only structs of strings and ints are encoded
		b = []byte(`{"type":"error","message":"agentbox bug: cannot encode message"}`)
	}
	return append(b, '\n')
}

var errLineTooLong = fmt.Errorf("line longer than %d bytes ignored", maxLineBytes)

// readLine returns the next '\n'-terminated line (a final unterminated line
// counts). A line over maxLineBytes is consumed and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxLineBytes+1 {
				tooLong, line = true, nil
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0 && !tooLong:
			return line, nil
		case err != nil:
			return nil, err
		case tooLong:
			return nil, errLineTooLong
		}
		return line, nil
	}
}

// descendantOf reports whether pid is a (strict) descendant of ancestor,
// following parent links in /proc. ancestor itself is not its own
// descendant (an in-process client, as in tests). pid 0 (a peer in another
// pid namespace) is not a descendant: the sandbox cannot create pid
// namespaces.
func descendantOf(pid, ancestor int) (bool, error) {
	if pid == ancestor || pid <= 1 {
		return false, nil
	}
	for range 4096 { // bounded: pid chains are short, /proc may change under us
		ppid, err := parentPid(pid)
		if err != nil {
			return false, err
		}
		if ppid == ancestor {
			return true, nil
		}
		if ppid <= 1 {
			return false, nil
		}
		pid = ppid
	}
	return false, fmt.Errorf("parent chain of pid %d too long", pid)
}

// parentPid reads the parent pid from /proc/PID/stat. The command name
// (field 2) may contain spaces and parentheses, so parse after its last ')'.
func parentPid(pid int) (int, error) {
	st, err := procfs.ReadStat(pid)
	return st.Ppid, err
}
