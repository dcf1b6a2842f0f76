// Package inbox is the approval inbox: one server that every run of a user
// attaches to as its approver (agentbox run --approve inbox), and a web
// page (with the JSON API it uses) where reviewers see every pending ask
// across runs, answer it, list and revoke the rules answers made, and
// read the history of asks and refusals from the audit logs.
//
// Runs connect to the inbox's unix socket (approval's inbox protocol);
// reviewers reach the page over HTTP on loopback, or over TLS beyond it
// (auth.go). What a run sends is shown, never trusted for anything else:
// the page escapes every value, and the only files the inbox edits are
// the project policies of runs that attached to it.
package inbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
)

// Config configures an inbox.
type Config struct {
	// Socket is where runs attach (default approval.DefaultInboxSocket()).
	Socket string
	// Listen is the page's address (default 127.0.0.1:0, a free port).
	// Beyond loopback it needs TLS: TLSCert and TLSKey, or SelfSigned.
	Listen          string
	TLSCert, TLSKey string
	SelfSigned      bool
	Hosts           []string // further Host header values accepted (a name the page is reached by)
	StateDir        string   // tokens (and a self-signed certificate); default $XDG_STATE_HOME/agentbox/inbox
	Users           []string // login names; default the current user's
	NewTokens       bool     // replace the users' API tokens
	AuditPath       string   // where the inbox audits what it sees happen (an ask whose run went away); "" none
	AuditKey        string
	AnswerWait      time.Duration // how long an answer waits for the run's ack (default 10 s)
	Logger          *slog.Logger
	// Webhook, when set, posts every ask to its URLs as well (webhook.go);
	// its Identity, if given, must be the inbox's own user.
	Webhook *approval.WebhookConfig
}

// Server is a running inbox.
type Server struct {
	cfg   Config
	log   *slog.Logger
	runLn *net.UnixListener
	webLn net.Listener
	http  *http.Server
	auth  *auth
	tls   bool
	base  string          // http(s)://host:port
	hosts map[string]bool // Host header values accepted (no DNS rebinding)
	audit *audit.Writer
	// Fingerprint is the SHA-256 of a self-signed certificate, to print.
	Fingerprint string

	mu      sync.Mutex
	runs    map[string]*runConn // attached, by run id
	seen    []approval.InboxAttach
	asks    map[string]*ask // pending, by inbox id
	settled map[string]settled
	order   []string // settled ids, oldest first (bounded)
	nextAsk int
	version uint64
	changed chan struct{}
	wg      sync.WaitGroup
	closed  bool

	webhook   *approval.Webhook
	webhookID string
	hooks     map[string]context.CancelFunc // asks being put to the webhook, by id
}

// ask is one pending question from a run.
type ask struct {
	ID       string
	seq      int
	run      *runConn
	reqID    string
	req      approval.InboxRequest
	deadline time.Time
	received time.Time
	// answering: an answer was sent to the run and waits for its ack.
	answering string // who
	waiter    chan answerOutcome
}

type answerOutcome struct {
	ok     bool
	status int
	msg    string
}

// settled remembers how an ask ended, so a late answer is told.
type settled struct {
	how string // "answered", "timeout", "canceled", "closed", "run-ended"
	by  string
	ans string
}

const maxSettled = 4096

// runConn is one attached run.
type runConn struct {
	info    approval.InboxAttach
	conn    net.Conn
	peer    string
	wmu     sync.Mutex
	rules   []approval.InboxRule
	revokes map[string]chan error
	gone    chan struct{}
}

// New opens the inbox's listeners (the runs' socket, the page's port)
// and its users' tokens; Serve then serves them.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Socket == "" {
		cfg.Socket = approval.DefaultInboxSocket()
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.AnswerWait == 0 {
		cfg.AnswerWait = 10 * time.Second
	}
	if cfg.StateDir == "" {
		cfg.StateDir = defaultStateDir()
	}
	if len(cfg.Users) == 0 {
		name := "uid" + strconv.Itoa(os.Getuid())
		if u, err := user.Current(); err == nil && u.Username != "" {
			name = u.Username
		}
		cfg.Users = []string{name}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, runs: map[string]*runConn{}, asks: map[string]*ask{},
		settled: map[string]settled{}, changed: make(chan struct{}), hooks: map[string]context.CancelFunc{}}
	var err error
	if s.auth, err = newAuth(cfg.StateDir, cfg.Users, cfg.NewTokens); err != nil {
		return nil, err
	}
	if err := s.listenWeb(); err != nil {
		return nil, err
	}
	if err := s.listenRuns(); err != nil {
		s.webLn.Close()
		return nil, err
	}
	if cfg.AuditPath != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.AuditPath), 0o700); err != nil {
			s.Close()
			return nil, fmt.Errorf("inbox audit log: %w", err)
		}
		if s.audit, err = audit.OpenKeyed(cfg.AuditPath, cfg.AuditKey); err != nil {
			s.Close()
			return nil, fmt.Errorf("inbox audit log: %w", err)
		}
	}
	if cfg.Webhook != nil {
		if err := s.startWebhook(*cfg.Webhook); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.http = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)}
	return s, nil
}

func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", "inbox")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "agentbox", "inbox")
	}
	return filepath.Join("/var/lib/agentbox/inbox")
}

// URL is the page's address; LoginURL the address that logs user in
// (with a one-time code in its fragment, never sent to a server log).
func (s *Server) URL() string { return s.base + "/" }

// LoginURL returns a login link for user with a fresh one-time code.
func (s *Server) LoginURL(user string) (string, error) {
	code, err := s.auth.oneTime(user)
	if err != nil {
		return "", err
	}
	return s.base + "/login#code=" + code, nil
}

// Users are the login names, in order.
func (s *Server) Users() []string { return s.cfg.Users }

// Token returns user's API token (for tests and `agentbox inbox token`).
func (s *Server) Token(user string) string { return s.auth.tokens[user] }

// TokenFile is where the users' API tokens are kept (0600).
func (s *Server) TokenFile() string { return s.auth.file }

// Socket is where runs attach.
func (s *Server) Socket() string { return s.cfg.Socket }

// listenRuns creates the runs' socket: 0600 in a 0700 directory; a stale
// socket (nobody listening) is replaced, anything else refused.
func (s *Server) listenRuns() error {
	path := s.cfg.Socket
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("inbox socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return fmt.Errorf("inbox socket %s: exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return fmt.Errorf("inbox socket %s: another inbox is listening there", path)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("inbox socket %s: removing the stale socket: %w", path, err)
		}
	}
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return fmt.Errorf("inbox socket %s: %w", path, err)
	}
	s.runLn = ln
	return nil
}

// Serve serves runs and the page until ctx ends or Close.
func (s *Server) Serve(ctx context.Context) error {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.acceptRuns()
	}()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err := s.http.Serve(s.webLn)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Close stops the inbox: the page, the socket (runs' pending asks then
// wait for an inbox until their deadline) and the audit log.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	runs := make([]*runConn, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	for id, cancel := range s.hooks {
		cancel()
		delete(s.hooks, id)
	}
	s.mu.Unlock()
	if s.webhook != nil {
		s.webhook.Close()
	}
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.http.Shutdown(ctx)
		cancel()
	}
	s.webLn.Close()
	s.runLn.Close()
	for _, r := range runs {
		r.conn.Close()
	}
	s.wg.Wait()
	if s.audit != nil {
		s.audit.Close()
	}
	return nil
}

func (s *Server) acceptRuns() {
	for {
		conn, err := s.runLn.AcceptUnix()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveRun(conn)
		}()
	}
}

// bump records a change for the page's live stream.
func (s *Server) bumpLocked() {
	s.version++
	close(s.changed)
	s.changed = make(chan struct{})
}

// serveRun authenticates one run's connection (its uid must be ours or
// root), reads its attach line and then its messages until it closes.
func (s *Server) serveRun(conn *net.UnixConn) {
	defer conn.Close()
	cred, err := approval.PeerCred(conn)
	if err != nil || (int(cred.Uid) != os.Getuid() && cred.Uid != 0) {
		s.log.Warn("inbox: refused a run's connection from another user", "err", err)
		return
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := readLine(r)
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	var at approval.InboxAttach
	if err := json.Unmarshal(line, &at); err != nil || at.Type != "attach" || at.Run == "" {
		writeJSONLine(conn, map[string]string{"type": "error", "message": "the first line must be an attach message"})
		return
	}
	rc := &runConn{info: at, conn: conn, peer: fmt.Sprintf("uid=%d pid=%d", cred.Uid, cred.Pid),
		revokes: map[string]chan error{}, gone: make(chan struct{})}
	// Where the page is: the run names it at its terminal while it waits
	// for an answer.
	rc.send(approval.InboxWelcome{Type: "welcome", URL: s.URL()})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if old := s.runs[at.Run]; old != nil {
		old.conn.Close() // the run reconnected; the old connection is dead
	}
	s.runs[at.Run] = rc
	if !slices.ContainsFunc(s.seen, func(a approval.InboxAttach) bool { return a.Run == at.Run }) {
		s.seen = append(s.seen, at)
	}
	s.bumpLocked()
	s.mu.Unlock()
	s.log.Info("inbox: run attached", "run", at.Run, "agent", at.Agent, "role", at.Role)
	for {
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			continue
		}
		if err != nil {
			break
		}
		s.handleRun(rc, line)
	}
	s.detach(rc)
}

// detach drops a run whose connection closed: its pending asks disappear
// (audited: the run ended or was killed while they waited).
func (s *Server) detach(rc *runConn) {
	close(rc.gone)
	s.mu.Lock()
	if s.runs[rc.info.Run] == rc {
		delete(s.runs, rc.info.Run)
	}
	var dropped []*ask
	for id, a := range s.asks {
		if a.run == rc {
			delete(s.asks, id)
			s.settleLocked(id, settled{how: "run-ended"})
			if a.waiter != nil {
				a.waiter <- answerOutcome{status: http.StatusGone, msg: "the run's connection closed before it took the answer"}
			}
			dropped = append(dropped, a)
		}
	}
	s.bumpLocked()
	closing := s.closed
	s.mu.Unlock()
	for _, a := range dropped {
		reason := "the run's connection to the inbox closed while this ask was pending (the run ended, was killed, or is reconnecting)"
		if closing {
			reason = "the inbox stopped while this ask was pending; the run waits for an inbox until the ask's deadline"
		}
		s.auditEvent(audit.Event{Agent: rc.info.Agent, Role: rc.info.Role, Run: rc.info.Run, Event: audit.EventAsk,
			Pid: a.req.Pid, Action: a.req.Action, Rule: a.req.Rule, Decision: audit.DecisionAskUnavailable,
			Approver: "inbox", Reason: reason})
	}
}

func (s *Server) auditEvent(e audit.Event) {
	if s.audit == nil {
		return
	}
	if err := s.audit.Write(e); err != nil {
		s.log.Error("inbox: audit log write failed", "err", err)
	}
}

func (s *Server) settleLocked(id string, st settled) {
	if cancel := s.hooks[id]; cancel != nil {
		cancel() // the webhook's question ends: a late answer there is refused (410)
		delete(s.hooks, id)
	}
	if _, ok := s.settled[id]; !ok {
		s.order = append(s.order, id)
	}
	s.settled[id] = st
	for len(s.order) > maxSettled {
		delete(s.settled, s.order[0])
		s.order = s.order[1:]
	}
}

// maxAsksPerRun bounds what one run may keep pending in the inbox.
const maxAsksPerRun = 256

// handleRun applies one line from a run.
func (s *Server) handleRun(rc *runConn, line []byte) {
	var head struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Answer  string `json:"answer"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		s.log.Warn("inbox: malformed line from a run", "run", rc.info.Run, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	find := func() *ask {
		for _, a := range s.asks {
			if a.run == rc && a.reqID == head.ID {
				return a
			}
		}
		return nil
	}
	switch head.Type {
	case "request":
		var req approval.InboxRequest
		if err := json.Unmarshal(line, &req); err != nil || req.ID == "" || find() != nil {
			rc.send(map[string]string{"type": "error", "id": head.ID, "message": "malformed or duplicate request"})
			return
		}
		deadline, err := time.Parse(time.RFC3339Nano, req.Deadline)
		if err != nil {
			rc.send(map[string]string{"type": "error", "id": head.ID, "message": "request without a valid deadline"})
			return
		}
		n := 0
		for _, a := range s.asks {
			if a.run == rc {
				n++
			}
		}
		if n >= maxAsksPerRun {
			rc.send(map[string]string{"type": "error", "id": head.ID, "message": "too many pending asks from this run"})
			return
		}
		s.nextAsk++
		a := &ask{ID: "a" + strconv.Itoa(s.nextAsk), seq: s.nextAsk, run: rc, reqID: req.ID, req: req, deadline: deadline, received: time.Now()}
		s.asks[a.ID] = a
		if s.webhook != nil && !s.closed {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			s.hooks[a.ID] = cancel
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.postAsk(ctx, a)
			}()
		}
		s.bumpLocked()
	case "ack", "error":
		if a := find(); a != nil && a.waiter != nil {
			if head.Type == "ack" {
				delete(s.asks, a.ID)
				s.settleLocked(a.ID, settled{how: "answered", by: a.answering, ans: head.Answer})
				a.waiter <- answerOutcome{ok: true}
			} else {
				a.answering = ""
				a.waiter <- answerOutcome{status: http.StatusConflict, msg: "the run refused the answer: " + head.Message}
			}
			a.waiter = nil
			s.bumpLocked()
			return
		}
		if head.Type == "error" && head.ID != "" {
			if ch := rc.revokes[head.ID]; ch != nil {
				delete(rc.revokes, head.ID)
				ch <- errors.New(head.Message)
			}
		}
	case "cancel":
		if a := find(); a != nil {
			delete(s.asks, a.ID)
			s.settleLocked(a.ID, settled{how: head.Reason})
			if a.waiter != nil {
				a.waiter <- answerOutcome{status: http.StatusGone, msg: "the ask ended first (" + head.Reason + ")"}
			}
			s.bumpLocked()
		}
	case "rules":
		var m approval.InboxRules
		if json.Unmarshal(line, &m) == nil {
			rc.rules = m.Rules
			if ch := rc.revokes[m.Revoked]; m.Revoked != "" && ch != nil {
				delete(rc.revokes, m.Revoked)
				ch <- nil
			}
			s.bumpLocked()
		}
	}
}

// send writes one line to the run.
func (rc *runConn) send(msg any) error {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return writeJSONLine(rc.conn, msg)
}

func writeJSONLine(c net.Conn, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.Write(append(b, '\n'))
	return err
}

// Answer gives answer to the pending ask id on behalf of who (a login
// and address, recorded by the run in its audit event). The first answer
// wins: a second one, or one to an ask that ended, is refused with the
// HTTP status saying why (409 answered, 410 ended, 404 unknown).
func (s *Server) Answer(id, answer, prefix, who string) (int, string) {
	ans, err := approval.ParseAnswer(answer)
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	if prefix != "" && ans != approval.Remember {
		return http.StatusBadRequest, `"prefix" is only valid with answer "remember"`
	}
	s.mu.Lock()
	a := s.asks[id]
	if a == nil {
		st, ok := s.settled[id]
		s.mu.Unlock()
		switch {
		case !ok:
			return http.StatusNotFound, fmt.Sprintf("unknown ask %q", id)
		case st.how == "answered":
			return http.StatusConflict, fmt.Sprintf("already answered (%s) by %s", st.ans, st.by)
		}
		return http.StatusGone, fmt.Sprintf("the ask ended (%s) before this answer", st.how)
	}
	if a.answering != "" {
		by := a.answering
		s.mu.Unlock()
		return http.StatusConflict, "already being answered by " + by
	}
	if time.Now().After(a.deadline) {
		s.mu.Unlock()
		return http.StatusGone, "the ask's deadline passed (the run denies it)"
	}
	a.answering = who
	ch := make(chan answerOutcome, 1)
	a.waiter = ch
	rc := a.run
	s.bumpLocked()
	s.mu.Unlock()
	msg := map[string]string{"type": "response", "id": a.reqID, "answer": ans.String(), "approver": who}
	if prefix != "" {
		msg["prefix"] = prefix
	}
	if err := rc.send(msg); err != nil {
		s.mu.Lock()
		if a.waiter == ch {
			a.answering, a.waiter = "", nil
		}
		s.mu.Unlock()
		return http.StatusBadGateway, "the run could not be reached: " + err.Error()
	}
	t := time.NewTimer(s.cfg.AnswerWait)
	defer t.Stop()
	select {
	case o := <-ch:
		if o.ok {
			return http.StatusOK, "applied"
		}
		return o.status, o.msg
	case <-t.C:
		s.mu.Lock()
		if a.waiter == ch {
			a.answering, a.waiter = "", nil
		}
		s.mu.Unlock()
		return http.StatusGatewayTimeout, "the run did not confirm the answer"
	}
}

// Revoke removes session rule id from run (its next identical command is
// decided by the policy again).
func (s *Server) Revoke(run, id, who string) (int, string) {
	s.mu.Lock()
	rc := s.runs[run]
	if rc == nil {
		s.mu.Unlock()
		return http.StatusNotFound, fmt.Sprintf("run %q is not attached", run)
	}
	if !slices.ContainsFunc(rc.rules, func(r approval.InboxRule) bool { return r.ID == id }) {
		s.mu.Unlock()
		return http.StatusNotFound, fmt.Sprintf("run %s has no session rule %q", run, id)
	}
	ch := make(chan error, 1)
	rc.revokes[id] = ch
	s.mu.Unlock()
	if err := rc.send(map[string]string{"type": "revoke", "id": id, "by": who}); err != nil {
		return http.StatusBadGateway, "the run could not be reached: " + err.Error()
	}
	t := time.NewTimer(s.cfg.AnswerWait)
	defer t.Stop()
	select {
	case err := <-ch:
		if err != nil {
			return http.StatusConflict, err.Error()
		}
		s.log.Info("inbox: session rule revoked", "run", run, "rule", id, "by", who)

		return http.StatusOK, "revoked"
	case <-rc.gone:
		return http.StatusGone, "the run ended"
	case <-t.C:
		s.mu.Lock()
		delete(rc.revokes, id)
		s.mu.Unlock()
		return http.StatusGatewayTimeout, "the run did not confirm the revoke"
	}
}

// askView is an ask as the page and the API show it.
type askView struct {
	ID         string                  `json:"id"`
	Run        string                  `json:"run"`
	Agent      string                  `json:"agent"`
	Role       string                  `json:"role"`
	Workspace  string                  `json:"workspace,omitempty"`
	Pid        int                     `json:"pid"`
	Program    string                  `json:"program"`
	Identified string                  `json:"identified,omitempty"`
	Argv       []string                `json:"argv"`
	Parent     []string                `json:"parent,omitempty"`
	Env        []string                `json:"env,omitempty"`
	Cwd        string                  `json:"cwd"`
	Action     string                  `json:"action"`
	Rule       string                  `json:"rule"`
	Layer      string                  `json:"layer,omitempty"`
	Reason     string                  `json:"reason"`
	Deadline   time.Time               `json:"deadline"`
	Received   time.Time               `json:"received"`
	Recent     []string                `json:"recent,omitempty"`
	Changed    []string                `json:"changed,omitempty"`
	Answering  string                  `json:"answering,omitempty"`
	Remember   *approval.InboxRemember `json:"remember,omitempty"` // what the "always" answers write
}

// Asks lists the pending asks, newest first.
func (s *Server) Asks() []askView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]askView, 0, len(s.asks))
	for _, a := range s.asks {
		v := askView{ID: a.ID, Run: a.run.info.Run, Agent: a.run.info.Agent, Role: a.req.Role, Workspace: a.run.info.Workspace,
			Pid: a.req.Pid, Program: a.req.Program, Identified: a.req.Identified, Argv: a.req.Argv, Parent: a.req.Parent, Env: a.req.Env,
			Cwd: a.req.Cwd, Action: a.req.Action, Rule: a.req.Rule, Layer: a.req.Layer, Reason: a.req.Reason,
			Deadline: a.deadline, Received: a.received, Recent: a.req.Recent, Changed: a.req.Changed, Answering: a.answering}
		v.Remember = a.req.Remember
		out = append(out, v)
	}
	slices.SortFunc(out, func(x, y askView) int { return s.asks[y.ID].seq - s.asks[x.ID].seq })
	return out
}

// runView is an attached run with its session rules.
type runView struct {
	approval.InboxAttach
	Attached bool                 `json:"attached"`
	Rules    []approval.InboxRule `json:"rules"`
}

// Runs lists the runs seen, attached ones with their session rules.
func (s *Server) Runs() []runView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]runView, 0, len(s.seen))
	for _, at := range s.seen {
		v := runView{InboxAttach: at, Rules: []approval.InboxRule{}}
		if rc := s.runs[at.Run]; rc != nil {
			v.Attached = true
			v.Rules = append(v.Rules, rc.rules...)
		}
		out = append(out, v)
	}
	return out
}

// policies are the project policy files of the runs seen (the only files
// the inbox edits); logs their audit logs and the inbox's own.
func (s *Server) policies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, at := range s.seen {
		if at.Policy != "" && !slices.Contains(out, at.Policy) {
			out = append(out, at.Policy)
		}
	}
	return out
}

func (s *Server) logs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if s.cfg.AuditPath != "" {
		out = append(out, s.cfg.AuditPath)
	}
	for _, at := range s.seen {
		if at.Audit != "" && at.Audit != "-" && !slices.Contains(out, at.Audit) {
			out = append(out, at.Audit)
		}
	}
	return out
}

// current returns the inbox's version and a channel closed at its next
// change.
func (s *Server) current() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version, s.changed
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most 1 MiB (a run's request is at most
// 64 KiB; its rules list may be longer).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > 1<<20 {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		return line, nil
	}
}
