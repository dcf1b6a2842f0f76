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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// The inbox protocol: a run attaches to an approval inbox (agentbox
// inbox) by connecting to its unix socket and speaks JSON lines, the
// socket protocol's messages with the direction of the questions
// reversed (docs/inbox.md):
//
//	run → inbox: attach, request, ack, error, cancel, rules
//	inbox → run: response (with "approver"), revoke
//
// The run connects out, so one inbox serves every run of its user; the
// inbox answers as an approver whose uid the run reads with SO_PEERCRED.

// InboxAttach is the first line a run sends: who it is and where the
// inbox finds what it shows about it (audit log, project policy).
type InboxAttach struct {
	Type      string    `json:"type"` // "attach"
	Version   int       `json:"version"`
	Run       string    `json:"run"`
	Agent     string    `json:"agent"`
	Role      string    `json:"role"`
	Workspace string    `json:"workspace,omitempty"`
	Command   []string  `json:"command,omitempty"`
	Audit     string    `json:"audit,omitempty"`
	Policy    string    `json:"policy,omitempty"` // the project policy file "remember" answers write
	Pid       int       `json:"pid"`              // the launcher's pid
	Started   time.Time `json:"started"`
}

// InboxRequest is a held program as the run sends it to the inbox: the
// socket protocol's request plus the run's recent commands and the files
// it has changed so far (InboxInfo.Context).
type InboxRequest struct {
	requestMsg
	Recent  []string `json:"recent,omitempty"`
	Changed []string `json:"changed,omitempty"`
	// Remember is what the "always" answers would write (InboxInfo.Preview).
	Remember *InboxRemember `json:"remember,omitempty"`
}

// InboxWelcome is the inbox's first line to a run that attached: the
// address of its page, which the run names at its terminal while a
// question waits there.
type InboxWelcome struct {
	Type string `json:"type"` // "welcome"
	URL  string `json:"url"`
}

// InboxRemember is the exact rule a "remember" answer would save in the
// project policy, and a "remember deny" answer; an empty prefix with the
// note saying why nothing would be saved.
type InboxRemember struct {
	File      string `json:"file"`
	Allow     string `json:"allow,omitempty"`
	AllowNote string `json:"allow_note,omitempty"`
	Deny      string `json:"deny,omitempty"`
}

// InboxRule is one session rule of a run: what the run's answers added,
// with who added it and when, and the id a revoke names.
type InboxRule struct {
	ID       string    `json:"id"`
	Decision string    `json:"decision"`
	Match    string    `json:"match"`
	By       string    `json:"by,omitempty"`
	At       time.Time `json:"at,omitzero"`
}

// InboxRules is the run's "rules" line: every session rule in force, sent
// on attach and whenever they change.
type InboxRules struct {
	Type  string      `json:"type"` // "rules"
	Rules []InboxRule `json:"rules"`
	// Revoked names the revoke this line answers, when it answers one.
	Revoked string `json:"revoked,omitempty"`
}

// InboxInfo is what an inbox approver tells the inbox about its run, and
// the hooks through which the inbox's answers reach the run's session.
type InboxInfo struct {
	Attach InboxAttach
	// Rules lists the run's session rules; Revoke removes one (the inbox's
	// revoke button). Both optional.
	Rules  func() []InboxRule
	Revoke func(id, by string) error
	// Context returns the run's last commands and the files it has changed
	// so far, sent with each request. Optional.
	Context func() (recent, changed []string)
	// Preview returns what the "always" answers to req would save.
	// Optional.
	Preview func(req Request) *InboxRemember
}

// DefaultInboxSocket is where `agentbox inbox` listens for runs and where
// `--approve inbox` connects: $AGENTBOX_INBOX when set, else
// $XDG_RUNTIME_DIR/agentbox/inbox.sock, /run/agentbox/inbox.sock for
// root, /tmp/agentbox-UID/inbox.sock otherwise.
func DefaultInboxSocket() string {
	if p := os.Getenv("AGENTBOX_INBOX"); filepath.IsAbs(p) {
		return p
	}
	if os.Geteuid() == 0 {
		return "/run/agentbox/inbox.sock"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", "inbox.sock")
	}
	return filepath.Join(os.TempDir(), "agentbox-"+strconv.Itoa(os.Geteuid()), "inbox.sock")
}

// inboxApprover is --approve inbox[:PATH]: it connects to an inbox and
// keeps reconnecting while the run lasts; a request waits (until its
// deadline) for an inbox to answer it, and is sent again to an inbox that
// restarts.
type inboxApprover struct {
	path    string
	info    InboxInfo
	allowed []int
	log     *slog.Logger
	warn    io.Writer // the user's "agentbox: ..." lines (Options.Warnings)

	mu      sync.Mutex
	conn    *net.UnixConn
	peer    string // "uid=0 pid=42" of the connected inbox
	peerUID int
	pending pendingSet
	seq     uint64
	closed  bool
	wake    chan struct{} // closed by Close
	done    sync.WaitGroup
	warned  bool
	url     string        // the inbox page's address, from its welcome line
	welcome chan struct{} // closed once url is known
}

func newInbox(path string, opts Options) (*inboxApprover, error) {
	if path == "" {
		path = DefaultInboxSocket()
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("--approve inbox:%s: the socket path must be absolute", path)
	}
	a := &inboxApprover{path: path, info: opts.Inbox, allowed: opts.AllowedUIDs, log: opts.Logger, warn: opts.Warnings,
		pending: pendingSet{}, wake: make(chan struct{}), welcome: make(chan struct{})}
	if a.warn == nil {
		a.warn = io.Discard
	}
	a.info.Attach.Type, a.info.Attach.Version = "attach", protocolVersion
	if len(a.allowed) == 0 {
		a.allowed = []int{os.Getuid(), 0}
	}
	first := make(chan error, 1)
	a.done.Add(1)
	go a.loop(first)
	if err := <-first; err != nil && !a.warned {
		a.warned = true
		fmt.Fprintf(a.warn, "agentbox: warning: no approval inbox at %s yet (%v): questions wait for one until their deadline, then are denied (start it with: agentbox inbox)\n", path, causeOf(err))
	}
	return a, nil
}

// loop connects, serves the connection until it breaks, and connects
// again, until Close. first receives the outcome of the first attempt.
func (a *inboxApprover) loop(first chan<- error) {
	defer a.done.Done()
	backoff := 50 * time.Millisecond
	for {
		conn, err := a.connect()
		if first != nil {
			first <- err
			first = nil
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			a.serve(conn)
		}
		select {
		case <-a.wake:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// connect dials the inbox, checks who listens there, and sends attach,
// the session rules and every request still pending.
func (a *inboxApprover) connect() (*net.UnixConn, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: a.path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	cred, err := PeerCred(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if !slices.Contains(a.allowed, int(cred.Uid)) {
		conn.Close()
		return nil, fmt.Errorf("inbox socket %s is served by uid %d, not by an allowed approver %v", a.path, cred.Uid, a.allowed)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		conn.Close()
		return nil, errors.New("closed")
	}
	a.conn, a.peer, a.peerUID = conn, fmt.Sprintf("uid=%d pid=%d", cred.Uid, cred.Pid), int(cred.Uid)
	a.writeLocked(encodeLine(a.info.Attach))
	a.writeLocked(a.rulesLine(""))
	ids := make([]string, 0, len(a.pending))
	for id := range a.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a.writeLocked(a.pending[id].line)
	}
	if a.warned {
		fmt.Fprintf(a.warn, "agentbox: approval inbox connected: %s\n", a.path)
		a.warned = false
	}
	return conn, nil
}

func (a *inboxApprover) rulesLine(revoked string) []byte {
	m := InboxRules{Type: "rules", Rules: []InboxRule{}, Revoked: revoked}
	if a.info.Rules != nil {
		m.Rules = append(m.Rules, a.info.Rules()...)
	}
	return encodeLine(m)
}

// writeLocked sends one line; a failed write closes the connection (the
// read loop then reconnects).
func (a *inboxApprover) writeLocked(line []byte) {
	if a.conn == nil {
		return
	}
	a.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := a.conn.Write(line); err != nil {
		a.conn.Close()
	}
}

// serve reads the inbox's lines until the connection breaks.
func (a *inboxApprover) serve(conn *net.UnixConn) {
	r := bufio.NewReaderSize(conn, 4096)
	for {
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			a.mu.Lock()
			a.writeLocked(encodeLine(errorMsg{Type: "error", Message: err.Error()}))
			a.mu.Unlock()
			continue
		}
		if err != nil {
			break
		}
		a.handle(line)
	}
	a.mu.Lock()
	if a.conn == conn {
		a.conn = nil
	}
	a.mu.Unlock()
	conn.Close()
	if !a.isClosed() {
		fmt.Fprintf(a.warn, "agentbox: warning: the approval inbox went away (%s); reconnecting: questions wait for it until their deadline\n", a.path)
		a.mu.Lock()
		a.warned = true
		a.mu.Unlock()
	}
}

func (a *inboxApprover) peerLabel() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peer
}

func (a *inboxApprover) isConnected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn != nil
}

func (a *inboxApprover) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// handle applies one inbox line: a response settles its request; a revoke
// removes a session rule. Anything malformed gets an error line and
// changes nothing.
func (a *inboxApprover) handle(line []byte) {
	fields, err := decodeObject(line)
	var typ string
	if err == nil {
		err = json.Unmarshal(fields["type"], &typ)
	}
	if err != nil {
		a.reply(errorMsg{Type: "error", Message: "malformed line: " + err.Error()})
		return
	}
	switch typ {
	case "welcome":
		var url string
		if json.Unmarshal(fields["url"], &url) == nil && url != "" {
			a.mu.Lock()
			if a.url == "" {
				close(a.welcome)
			}
			a.url = capfield.Value(displaySafe(url), 200)
			a.mu.Unlock()
		}
	case "revoke":
		var id, by string
		if json.Unmarshal(fields["id"], &id) != nil || id == "" {
			a.reply(errorMsg{Type: "error", Message: `revoke: "id" must be a non-empty string`})
			return
		}
		_ = json.Unmarshal(fields["by"], &by)
		if a.info.Revoke == nil {
			a.reply(errorMsg{Type: "error", ID: id, Message: "this run does not take revokes"})
			return
		}
		if err := a.info.Revoke(id, "inbox "+capfield.Value(displaySafe(by), 200)+" ("+a.peerLabel()+")"); err != nil {
			a.reply(errorMsg{Type: "error", ID: id, Message: "revoke: " + err.Error()})
			return
		}
		a.mu.Lock()
		a.writeLocked(a.rulesLine(id))
		a.mu.Unlock()
	case "response":
		m, err := parseClientLine(line)
		if err != nil {
			a.reply(errorMsg{Type: "error", Message: err.Error()})
			return
		}
		var by string
		_ = json.Unmarshal(fields["approver"], &by)
		by = capfield.Value(displaySafe(by), 200)
		a.mu.Lock()
		defer a.mu.Unlock()
		who := "inbox " + a.peer
		if by != "" {
			who = "inbox " + by + " (" + a.peer + ")"
		}
		reply, _ := a.pending.answerLocked(m, who, a.peerUID)
		a.writeLocked(reply)
	default:
		a.reply(errorMsg{Type: "error", Message: fmt.Sprintf("unknown message type %q (want response or revoke)", typ)})
	}
}

// RulesChanged sends the run's session rules to the inbox again; the run
// calls it whenever they change (an answer added one).
func (a *inboxApprover) RulesChanged() {
	a.mu.Lock()
	a.writeLocked(a.rulesLine(""))
	a.mu.Unlock()
}

func (a *inboxApprover) reply(msg any) {
	a.mu.Lock()
	a.writeLocked(encodeLine(msg))
	a.mu.Unlock()
}

// Approve sends req to the inbox (now, or when it connects) and waits
// for its answer or the deadline.
func (a *inboxApprover) Approve(ctx context.Context, req Request) (Response, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if a.isConnected() {
		// Connected: its welcome line (the page's address) is on its way.
		select {
		case <-a.welcome:
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	var recent, changed []string
	if a.info.Context != nil {
		recent, changed = a.info.Context()
	}
	rem := req.Remember
	if a.info.Preview != nil {
		rem = a.info.Preview(req)
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return Response{}, fmt.Errorf("inbox approver closed: %w", ErrUnavailable)
	}
	a.seq++
	p, err := a.pending.addLocked(a.seq, req, func(req Request) []byte {
		return inboxRequestLine(req, deadline, recent, changed, rem)
	})
	if err != nil {
		a.mu.Unlock()
		return Response{}, err
	}
	a.writeLocked(p.line)
	where := a.url
	if where == "" {
		where = "agentbox inbox (socket " + a.path + ")"
	}
	a.mu.Unlock()
	fmt.Fprintf(a.warn, "agentbox: waiting for an answer in the inbox: %s (%s, auto-deny in %s)\n",
		where, capfield.Value(shellquote.Display(req.Argv), 160), time.Until(deadline).Round(time.Second))
	return a.pending.wait(ctx, &a.mu, p, func(m cancelMsg) { a.writeLocked(encodeLine(m)) })
}

// inboxRequestLine is requestLine with the run's context, whose lists
// are bounded (20 entries of 512 bytes each) so the line stays within
// the protocol's limit.
func inboxRequestLine(req Request, deadline time.Time, recent, changed []string, rem *InboxRemember) []byte {
	cut := func(l []string) []string {
		if len(l) > 20 {
			l = append(l[:0:0], l[len(l)-20:]...)
		}
		return capfield.Words(l, 512, 8<<10)
	}
	base := requestLine(req, deadline)
	var m InboxRequest
	if err := json.Unmarshal(base, &m.requestMsg); err != nil {
		return base
	}
	m.Recent, m.Changed = cut(recent), cut(changed)
	if rem != nil {
		r := *rem
		for _, f := range []*string{&r.File, &r.Allow, &r.AllowNote, &r.Deny} {
			*f = capfield.Value(*f, 1024)
		}
		m.Remember = &r
	}
	line := encodeLine(m)
	if len(line) > maxLineBytes {
		return base
	}
	return line
}

// Close cancels pending requests (denied: ErrUnavailable), tells the inbox
// and disconnects.
func (a *inboxApprover) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.wake)
	a.pending.closeLocked(fmt.Errorf("inbox approver closed: %w", ErrUnavailable),
		func(m cancelMsg) { a.writeLocked(encodeLine(m)) })
	if a.conn != nil {
		a.conn.Close()
	}
	a.mu.Unlock()
	a.done.Wait()
	return nil
}

// displaySafe drops control characters from a label the inbox chose.
func displaySafe(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// causeOf is the last part of a dial error ("connect: no such file or
// directory" → "no such file or directory"), for a warning line.
func causeOf(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
