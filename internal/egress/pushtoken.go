package egress

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/gitwire"
	"github.com/agentbox/agentbox/internal/procfs"
	"golang.org/x/sys/unix"
)

// Push tokens. A `git push` the exec policy allows (or a human approves)
// gets a grant for its process (pid and start time: a pid used again is
// another process); its children (git-remote-https) hold it too. The
// first receive-pack request from that tree to a push host has a token
// minted for it by the user's command (userconf push.tokens), once per
// push; the proxy puts it in the request's Authorization (Basic
// x-access-token:TOKEN) and nowhere else: the token never enters the
// sandbox (an answer carrying it gets a placeholder, reflect.go). Any
// other process's receive-pack request to a push host gets no token and
// is refused. When the push's process exits (or the run ends) the token
// is revoked by the user's revoke command. Every step is audited with
// the token's id or a fingerprint, never its value.

// PushTokenConfig configures a run's push tokens.
type PushTokenConfig struct {
	// Mint is the command that prints a token for one push (argv; a JSON
	// request on its stdin). Required.
	Mint []string
	// Revoke is the command told of a token once its push is over (nil:
	// tokens are left to expire).
	Revoke []string
	// Timeout bounds each mint and revoke (default 10 s).
	Timeout time.Duration
	// Hosts reports the hosts whose receive-pack requests get the token.
	Hosts func(host string, port int) bool
	// Protected are branch names (or refs/ names) a push without a
	// refspec may not take as its one branch.
	Protected []string
	// RunID goes into the mint request.
	RunID string
	// Env is the commands' environment (the caller's).
	Env []string
	// Audit receives the push token events (nil: none).
	Audit audit.Sink
}

// PushGrant is one approved push: the process that runs it and what it
// may touch.
type PushGrant struct {
	Pid int
	// Start is the process's start time (clock ticks since boot; 0: read
	// now, the process being stopped at its exec).
	Start uint64
	// Program is the program as decided ("git").
	Program string
	// Remote is the remote as the command named it; URL is its URL
	// (credentials dropped): the repository the token is for ("": not
	// known, and no request matches).
	Remote, URL string
	// Refs are the refs the push may update (refs/heads/x); empty: one
	// branch that is not protected.
	Refs []string
	// Approver is who approved it ("" the policy allowed it).
	Approver string
}

// PushTokens is a run's table of approved pushes and their tokens.
type PushTokens struct {
	cfg    PushTokenConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	grants map[int]*pushGrant // by pid
	seq    int
	// minted is told of each minted token (the proxy redacts it from
	// answers).
	minted func(name, token string)
}

// pushGrant is a grant and its token's state.
type pushGrant struct {
	PushGrant
	id     string // push-N, unique in the run
	pidfd  int
	mintMu sync.Mutex
	minted bool   // a mint was tried
	token  string // the token ("" none)
	tokID  string // the token's id (the mint's, else a fingerprint)
	expiry string
	err    error // the mint's failure
	ended  bool
}

// NewPushTokens returns an empty table.
func NewPushTokens(cfg PushTokenConfig) *PushTokens {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &PushTokens{cfg: cfg, ctx: ctx, cancel: cancel, grants: map[int]*pushGrant{}}
}

// Covers reports whether the receive-pack requests to host:port get
// push tokens.
func (t *PushTokens) Covers(host string, port int) bool {
	return t != nil && t.cfg.Hosts != nil && t.cfg.Hosts(host, port)
}

// Grant records an approved push; it returns the push's id. The process
// must still be the one g names (checked by start time); its exit ends
// the grant and revokes a minted token.
func (t *PushTokens) Grant(g PushGrant) (string, error) {
	if t.ctx.Err() != nil {
		return "", errors.New("push grant: the run is ending")
	}
	fd, err := unix.PidfdOpen(g.Pid, 0)
	if err != nil {
		return "", fmt.Errorf("push grant for pid %d: pidfd: %w", g.Pid, err)
	}
	st, err := procfs.ReadStat(g.Pid)
	if err != nil || g.Start != 0 && st.StartTime != g.Start {
		unix.Close(fd)
		return "", fmt.Errorf("push grant for pid %d: the process is gone", g.Pid)
	}
	// The pidfd names the process from here on; its start time tells it
	// from a later process given the same pid.
	g.Start = st.StartTime
	t.mu.Lock()
	t.seq++
	pg := &pushGrant{PushGrant: g, id: "push-" + strconv.Itoa(t.seq), pidfd: fd}
	if old := t.grants[g.Pid]; old != nil {
		// The same process approved again (it exec'd git push twice):
		// the earlier push is over.
		delete(t.grants, g.Pid)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.end(old, "the process started another push")
		}()
	}
	t.grants[g.Pid] = pg
	t.mu.Unlock()
	t.wg.Add(1)
	go t.watch(pg)
	return pg.id, nil
}

// watch ends pg when its process exits (its pidfd turns readable) or
// the run's table closes.
func (t *PushTokens) watch(pg *pushGrant) {
	defer t.wg.Done()
	fds := []unix.PollFd{{Fd: int32(pg.pidfd), Events: unix.POLLIN}}
	for t.ctx.Err() == nil {
		n, err := unix.Poll(fds, 200)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			break
		}
	}
	why := "the push's process exited"
	if t.ctx.Err() != nil {
		why = "the run ended"
	}
	t.mu.Lock()
	if t.grants[pg.Pid] == pg {
		delete(t.grants, pg.Pid)
	}
	t.mu.Unlock()
	t.end(pg, why)
	unix.Close(pg.pidfd)
}

// end revokes pg's token, once.
func (t *PushTokens) end(pg *pushGrant, why string) {
	pg.mintMu.Lock()
	defer pg.mintMu.Unlock()
	if pg.ended {
		return
	}
	pg.ended = true
	if pg.token == "" {
		return
	}
	detail := pg.detail()
	detail["push_token"] = "revoked"
	reason := "push token revoked: " + why
	dec := ""
	if len(t.cfg.Revoke) == 0 {
		detail["push_token"] = "expires"
		reason = "push token left to expire (no revoke command): " + why
	} else if err := t.revoke(pg); err != nil {
		detail["push_token"] = "revoke_failed"
		reason = "push token revoke failed: " + auditText(err)
		dec = audit.DecisionDeny
	}
	pg.token = ""
	t.emit(audit.Event{Event: audit.EventNet, Action: "tool:git:push-token", Decision: dec, Reason: reason, Detail: detail})
}

// Close ends every grant (the run's end: tokens still out are revoked)
// and waits for the revocations.
func (t *PushTokens) Close() {
	t.cancel()
	t.wg.Wait()
}

// grantOf is the grant held by pid: its own or an ancestor's, each
// checked by start time (nil: none).
func (t *PushTokens) grantOf(pid int) *pushGrant {
	t.mu.Lock()
	empty := len(t.grants) == 0
	t.mu.Unlock()
	for depth := 0; pid > 1 && depth < 64 && !empty; depth++ {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return nil
		}
		t.mu.Lock()
		g := t.grants[pid]
		t.mu.Unlock()
		if g != nil && g.Start == st.StartTime {
			return g
		}
		pid = st.Ppid
	}
	return nil
}

// detail is the audit detail of pg (never the token).
func (pg *pushGrant) detail() map[string]string {
	d := map[string]string{"push": pg.id, "push_pid": strconv.Itoa(pg.Pid), "push_program": pg.Program, "remote": pg.Remote}
	if pg.URL != "" {
		d["repo"] = pg.URL
	}
	if len(pg.Refs) > 0 {
		d["refs"] = strings.Join(pg.Refs, " ")
	} else {
		d["refs"] = "one unprotected branch"
	}
	if pg.tokID != "" {
		d["token_id"] = pg.tokID
	}
	if pg.expiry != "" {
		d["token_expiry"] = pg.expiry
	}
	if pg.Approver != "" {
		d["approver"] = pg.Approver
	}
	return d
}

func (t *PushTokens) emit(e audit.Event) {
	if t.cfg.Audit != nil {
		_ = t.cfg.Audit.Emit(e)
	}
}

// mintRequest is what the mint command reads on stdin.
type mintRequest struct {
	Run        string   `json:"run"`
	Push       string   `json:"push"`
	Host       string   `json:"host"`
	Repository string   `json:"repository"`
	Refs       []string `json:"refs"`
	AnyBranch  bool     `json:"any_branch,omitempty"`
	Protected  []string `json:"protected,omitempty"`
	Pid        int      `json:"pid"`
}

// mintAnswer is the mint command's JSON answer (a bare token is taken
// too).
type mintAnswer struct {
	Token   string `json:"token"`
	ID      string `json:"id"`
	Expires string `json:"expires"`
}

// tokenFor mints pg's token once (later calls return the first's
// outcome); req is the request that asked.
func (t *PushTokens) tokenFor(pg *pushGrant, req Request) (string, error) {
	pg.mintMu.Lock()
	defer pg.mintMu.Unlock()
	if pg.ended {
		return "", errors.New("the push is over (its process exited)")
	}
	if pg.minted {
		return pg.token, pg.err
	}
	pg.minted = true
	in := mintRequest{Run: t.cfg.RunID, Push: pg.id, Host: req.Host, Repository: pg.URL, Refs: pg.Refs, Pid: pg.Pid}
	if len(in.Refs) == 0 {
		in.Refs, in.AnyBranch, in.Protected = []string{}, true, t.cfg.Protected
	}
	body, _ := json.Marshal(in)
	out, err := t.command(t.ctx, t.cfg.Mint, body)
	if err == nil {
		pg.token, pg.tokID, pg.expiry, err = parseMinted(out)
	}
	detail := pg.detail()
	req.Origin.detail(detail)
	detail["host"] = req.Host
	if err != nil {
		pg.err = fmt.Errorf("the push token could not be minted: %w", err)
		detail["push_token"] = "mint_failed"
		t.emit(audit.Event{Event: audit.EventNet, Action: "tool:git:push-token", Decision: audit.DecisionDeny, Reason: auditText(pg.err), Detail: detail})
		return "", pg.err
	}
	if pg.tokID == "" {
		pg.tokID = Fingerprint(pg.token)
		detail["token_id"] = pg.tokID
	}
	detail["push_token"] = "minted"
	t.emit(audit.Event{Event: audit.EventNet, Action: "tool:git:push-token", Decision: audit.DecisionAllow, Reason: "push token minted for " + pg.id, Detail: detail})
	if t.minted != nil {
		t.minted("push token "+pg.id, pg.token)
	}
	return pg.token, nil
}

// Fingerprint names a token in the audit log without its value: the
// first 12 hex digits of its SHA-256.
func Fingerprint(token string) string {
	s := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(s[:6])
}

// maxMintOutput bounds what a mint command prints.
const maxMintOutput = 64 << 10

// parseMinted reads a mint command's output: JSON {token, id, expires}
// or the token alone on its first line.
func parseMinted(out []byte) (token, id, expiry string, err error) {
	s := strings.TrimSpace(string(out))
	if strings.HasPrefix(s, "{") {
		var a mintAnswer
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			return "", "", "", fmt.Errorf("its JSON answer: %v", err)
		}
		token, id, expiry = strings.TrimSpace(a.Token), a.ID, a.Expires
	} else {
		token, _, _ = strings.Cut(s, "\n")
		token = strings.TrimSpace(token)
	}
	if token == "" {
		return "", "", "", errors.New("the mint command printed no token")
	}
	if strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || r < 0x20 || r == 0x7f || r == ':' }) || len(token) > 4096 {
		return "", "", "", errors.New("the mint command printed something that is not a token (spaces, control characters or a colon in it)")
	}
	if len(id) > 200 || strings.ContainsFunc(id, unicode.IsControl) {
		id = ""
	}
	if len(expiry) > 100 || strings.ContainsFunc(expiry, unicode.IsControl) {
		expiry = ""
	}
	return token, id, expiry, nil
}

// command runs argv with stdin, bounded by the timeout (and parent); its output, or
// an error naming the command and what went wrong (its stderr's first
// line: never the output, which may hold a token).
func (t *PushTokens) command(parent context.Context, argv []string, stdin []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, t.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = t.cfg.Env
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb limitedBuffer
	out.max, errb.max = maxMintOutput, 4<<10
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The command's whole process group: a script's children too.
		return unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%s did not finish within %s", filepath.Base(argv[0]), t.cfg.Timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, &commandError{cmd: filepath.Base(argv[0]), err: err, stderr: capfield.Line(msg, 200)}
	}
	return out.Bytes(), nil
}

// commandError is a mint or revoke command that failed. Its message,
// which the sandbox may see (git prints it), names the command's file and
// its exit; its stderr's first line goes only to the audit log.
type commandError struct {
	cmd    string
	err    error
	stderr string
}

func (e *commandError) Error() string { return fmt.Sprintf("%s failed (%v)", e.cmd, e.err) }

func (e *commandError) Unwrap() error { return e.err }

// auditText is err with a failed command's stderr, for the audit log.
func auditText(err error) string {
	var ce *commandError
	if errors.As(err, &ce) && ce.stderr != "" {
		return err.Error() + "; its stderr: " + ce.stderr
	}
	return err.Error()
}

// revoke tells the revoke command of pg's token: JSON {run, push, id,
// token} on stdin.
func (t *PushTokens) revoke(pg *pushGrant) error {
	body, _ := json.Marshal(map[string]string{"run": t.cfg.RunID, "push": pg.id, "id": pg.tokID, "token": pg.token})
	// Not bound to the table's context: at the run's end the revocation
	// still runs, bounded by the timeout.
	_, err := t.command(context.Background(), t.cfg.Revoke, body)
	return err
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// sameRepo reports whether two repository URLs name one repository:
// scheme and host without case, the path without a trailing / or .git,
// no credentials, the default port dropped.
func sameRepo(a, b string) bool {
	na, nb := normRepo(a), normRepo(b)
	return na != "" && na == nb
}

func normRepo(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	scheme := strings.ToLower(u.Scheme)
	if port == "" || scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		port = ""
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	hp := host
	if port != "" {
		hp += ":" + port
	}
	return scheme + "://" + hp + p
}

// pushDecision is what the proxy does with a receive-pack request to a
// push host: the token to put in it, or why it is refused.
func (t *PushTokens) decide(req Request) (pg *pushGrant, token, why string) {
	if req.Origin == nil || req.Origin.Pid == 0 {
		return nil, "", "no approved git push: the request's process is not known, so no push token is given"
	}
	pg = t.grantOf(req.Origin.Pid)
	if pg == nil {
		return nil, "", fmt.Sprintf("no approved git push: %s is no approved `git push` nor started by one, so it gets no push token", req.Origin.Who())
	}
	if !sameRepo(pg.URL, req.Repo) {
		return pg, "", fmt.Sprintf("%s is approved to push to %s (remote %s), not to %s", pg.id, orUnknown(pg.URL), pg.Remote, req.Repo)
	}
	tok, err := t.tokenFor(pg, req)
	if err != nil {
		return pg, "", err.Error()
	}
	return pg, tok, ""
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown URL"
	}
	return s
}

// refsAllowed checks the ref updates a push carries against pg: each
// updated ref approved (or, without refs, one branch that is not
// protected), no force, no deletion. Used with the wire reader's result.
func (pg *pushGrant) refAllowed(ref string, protected []string) string {
	if len(pg.Refs) > 0 {
		if !slices.Contains(pg.Refs, ref) {
			return fmt.Sprintf("%s updates %s; the approved refs are %s", pg.id, ref, strings.Join(pg.Refs, " "))
		}
		return ""
	}
	if !strings.HasPrefix(ref, "refs/heads/") {
		return fmt.Sprintf("%s updates %s; a push without a refspec may update one branch", pg.id, ref)
	}
	if isProtected(ref, protected) {
		return fmt.Sprintf("%s updates %s, a protected branch; a push without a refspec may update one unprotected branch", pg.id, ref)
	}
	return ""
}

// isProtected reports whether ref (refs/heads/x) is one of protected
// (branch names or refs/ names).
func isProtected(ref string, protected []string) bool {
	for _, p := range protected {
		if p == ref || "refs/heads/"+p == ref {
			return true
		}
	}
	return false
}

// approval is what the wire check holds pg's POST to: the approved refs
// (created or updated, fast-forward only), no deletion; without refs, any
// branch, narrowed to one unprotected branch by oneBranch.
func (t *PushTokens) approval(pg *pushGrant) gitwire.Approval {
	ap := gitwire.Approval{Refs: slices.Clone(pg.Refs), Create: true, Protected: []string{"refs/tags/*"}}
	if len(ap.Refs) == 0 {
		ap.Refs = []string{"refs/heads/*"}
	}
	for _, p := range t.cfg.Protected {
		if !strings.HasPrefix(p, "refs/") {
			p = "refs/heads/" + p
		}
		ap.Protected = append(ap.Protected, p)
	}
	return ap
}

// oneBranch refuses, for a push approved without refs, a request that
// updates more than one ref or a protected branch.
func (t *PushTokens) oneBranch(pg *pushGrant, req *gitwire.Request) error {
	if len(pg.Refs) > 0 || req == nil {
		return nil
	}
	if len(req.Commands) > 1 {
		return &gitwire.RefusedError{Ref: req.Commands[1].Ref, Reason: gitwire.ReasonNotApproved, Offset: -1,
			Detail: fmt.Sprintf("%s was approved without a refspec: one branch, and this push updates %d refs", pg.id, len(req.Commands))}
	}
	for _, c := range req.Commands {
		if why := pg.refAllowed(c.Ref, t.cfg.Protected); why != "" {
			return &gitwire.RefusedError{Ref: c.Ref, Reason: gitwire.ReasonNotApproved, Detail: why, Offset: -1}
		}
	}
	return nil
}

// maxDrain bounds what the proxy reads of a refused push's body before it
// answers (git reads the answer only once it has sent the whole body).
const maxDrain = 256 << 20

// guardPush starts the wire check of an approved push's POST (r's body):
// the commands are read and checked before anything goes upstream. A
// refusal is answered as receive-pack refuses (git prints "! [remote
// rejected] ref (reason)") and audited; ok is false then.
func (p *Proxy) guardPush(w http.ResponseWriter, r *http.Request, req Request, pg *pushGrant, detail map[string]string) (g *gitwire.Guard, ok bool) {
	t := p.cfg.PushTokens
	g = gitwire.NewGuard(r.Body, t.approval(pg), gitwire.Limits{})
	wreq, err := g.Commands()
	if err == nil {
		err = t.oneBranch(pg, wreq)
	}
	if err != nil {
		g.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain))
		p.refusePush(w, req, wreq, err, detail)
		return nil, false
	}
	return g, true
}

// refusePush answers a push the wire check refused and audits it.
func (p *Proxy) refusePush(w http.ResponseWriter, req Request, wreq *gitwire.Request, err error, detail map[string]string) {
	detail["push_token"] = "wire_refused"
	if wreq != nil {
		detail["updates"] = updates(wreq)
	}
	var re *gitwire.RefusedError
	if errors.As(err, &re) && re.Ref != "" {
		detail["ref"] = re.Ref
	}
	v := Verdict{Decision: audit.DecisionDeny, Rule: "push-token", Reason: err.Error()}
	p.emitRequest(req, v, detail)
	w.Header().Set("Content-Type", gitwire.ResultContentType)
	w.Header().Set("X-Agentbox", strings.ReplaceAll("agentbox: "+err.Error(), "\n", " "))
	w.WriteHeader(http.StatusOK)
	_ = gitwire.WriteRefusal(w, wreq, err)
}

// pushed closes a push's wire check (nil: none) and audits the ref
// updates it carried to the host (none unless it passed to its end).
func (p *Proxy) pushed(req Request, g *gitwire.Guard, detail map[string]string) {
	if g == nil {
		return
	}
	defer g.Close()
	if g.Err() != nil {
		return
	}
	s := g.Summary()
	d := map[string]string{}
	for k, v := range detail {
		d[k] = v
	}
	d["push_token"] = "pushed"
	if s.Request != nil {
		d["updates"] = updates(s.Request)
	}
	d["objects"] = strconv.FormatUint(uint64(s.Objects), 10)
	d["pack_bytes"] = strconv.FormatInt(s.PackBytes, 10)
	p.emitRequest(req, Verdict{Allow: true, Decision: audit.DecisionAllow, Reason: "the ref updates the wire carried, checked against the approval"}, d)
}

// updates lists a request's ref updates: "ref old..new", deletions and
// creations as such.
func updates(r *gitwire.Request) string {
	var parts []string
	for _, c := range r.Commands {
		switch {
		case c.IsDelete():
			parts = append(parts, c.Ref+" delete")
		case c.IsCreate():
			parts = append(parts, c.Ref+" create "+shortOID(c.New))
		default:
			parts = append(parts, c.Ref+" "+shortOID(c.Old)+".."+shortOID(c.New))
		}
	}
	return strings.Join(parts, ", ")
}

func shortOID(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// tokenPush decides a receive-pack request to a push host: the approved
// push's tree gets its token (minted at its first request), a POST the
// wire check (guard, which pushed closes); anyone else is refused.
// ok is false when the request was answered (refused).
func (p *Proxy) tokenPush(w http.ResponseWriter, r *http.Request, req Request, detail map[string]string) (v Verdict, token string, guard *gitwire.Guard, ok bool) {
	pg, token, why := p.cfg.PushTokens.decide(req)
	if pg != nil {
		detail["push"] = pg.id
	}
	if why != "" {
		detail["push_token"] = "refused"
		v = Verdict{Decision: audit.DecisionDeny, Rule: "push-token", Reason: why}
		p.emitRequest(req, v, detail)
		p.refuseRequest(w, req, v)
		return v, "", nil, false
	}
	v = Verdict{Allow: true, Decision: audit.DecisionAllow, Reason: "the approved push " + pg.id + " with its token"}
	if pg.tokID != "" {
		detail["token_id"] = pg.tokID
	}
	if r.Method == http.MethodPost {
		// The ref updates are checked on the wire before the host gets
		// a whole push (internal/gitwire).
		if guard, ok = p.guardPush(w, r, req, pg, detail); !ok {
			return v, "", nil, false
		}
	}
	return v, token, guard, true
}

// withPushToken puts token in out as git's credential for a forge's
// smart HTTP (Basic x-access-token:TOKEN: GitHub, git-http-backend behind
// Basic auth), in place of whatever the client sent; a checked POST's
// body goes through guard.
func withPushToken(out *http.Request, token string, guard *gitwire.Guard) {
	out.Header.Del("Authorization")
	out.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token)))
	if guard != nil {
		out.Body = io.NopCloser(guard)
	}
}

// wireRefused answers, when guard refused the push after its commands
// (the pack failed the check: a force push), as receive-pack refuses; it
// reports whether it did. The host never got the pack's end.
func (p *Proxy) wireRefused(w http.ResponseWriter, guard *gitwire.Guard, req Request, detail map[string]string) bool {
	if guard == nil {
		return false
	}
	err := guard.Err()
	if err == nil || !errors.As(err, new(*gitwire.RefusedError)) {
		return false
	}
	wreq, _ := guard.Commands()
	p.refusePush(w, req, wreq, err, detail)
	return true
}
