// Package approval asks a human whether a held program may run.
//
// When the exec supervisor stops a program whose policy decision is "ask", it
// calls an Approver with a Request describing the program (argv, cwd, the rule
// that asked and why) and a context carrying the approval timeout. The
// Approver answers with a Response: allow once, allow always, deny once, deny
// always, or remember (allow and persist a command prefix to the project
// policy). Every failure mode is a deny for the caller: a timeout returns
// ErrTimeout, no reachable human returns ErrUnavailable, and the zero Answer
// is not an allow.
//
// Three approvers exist, chosen by the --approve flag through New:
//
//	none         no human: every request fails with ErrUnavailable at once
//	tty          prompt on the controlling terminal (/dev/tty)
//	socket:PATH  listen on a unix socket; orchestrators answer with the JSON
//	             lines protocol in docs/approval-protocol.md
//	inbox[:PATH] connect to an approval inbox (agentbox inbox) that serves
//	             every run of its user on one web page (docs/inbox.md)
//
// Beside any of them, a Webhook (NewWebhook, --approve-webhook URL) posts
// each ask signed to a chat bot or on-call tool and takes one signed
// answer per ask (docs/operations.md); Any combines approvers.
//
// This package depends on no other agentbox package, so the supervisor in
// package sandbox can import it without a cycle.
package approval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultTimeout is how long a request waits for an answer when the caller's
// context carries no deadline (120 s, then deny: docs/approval-protocol.md).
const DefaultTimeout = 120 * time.Second

// Request describes one held program waiting for a human decision. All string
// fields may contain bytes chosen by the sandboxed program (argv, cwd, even the
// program path); approvers escape them before showing them to a human.
type Request struct {
	ID      string   // unique among outstanding requests; assigned by the approver if empty
	Agent   string   // agent id given to agentbox run --agent
	Role    string   // role the agent runs as
	Run     string   // id of this agentbox run
	Pid     int      // pid of the held process
	Program string   // resolved executable (what the program really is, e.g. /usr/bin/git)
	Argv    []string // argv as read at exec time
	Cwd     string   // working directory of the held process
	Action  string   // action string the policy decided on, e.g. "git push origin main"
	Rule    string   // id of the rule that asked, e.g. "developer/git.push"
	Layer   string   // layer of that rule: builtin, role, user, project, file, session
	Reason  string   // one-line reason from the policy
	// Env are the variables of the program's environment that change what
	// it runs or loads (LD_PRELOAD, PYTHONPATH, GIT_* ...), NAME=value.
	Env []string
	// Identified says how agentbox identified the program ("git (a copy:
	// same content as the installed binary)").
	Identified string
	// Parent is the command line of the process that started it (the
	// shell line a command came from), as that process shows it: the
	// sandbox can rewrite it, so it is context, never evidence.
	Parent []string
	// Remember is the exact rule a "remember" answer would save and
	// where, and a "remember deny" answer's (the run's judge fills it in;
	// nil when there is no project policy file). The terminal prompt
	// shows it and waits for Enter before answering so; a Remember
	// answer given after it carries its prefix, so what is saved is
	// what was shown.
	Remember *InboxRemember
}

// Answer is a human's decision. The zero value is invalid and is not an allow,
// so a forgotten or zeroed Response can never let a program through.
type Answer int

// Answers a human can give.
const (
	// AllowOnce lets this one execution run.
	AllowOnce Answer = iota + 1
	// AllowAlways lets it run and adds a session rule allowing the same action
	// until the run ends (Forge's "allow always").
	AllowAlways
	// DenyOnce refuses this one execution.
	DenyOnce
	// DenyAlways refuses it and adds a session rule denying the same action
	// until the run ends (Forge's "deny always").
	DenyAlways
	// Remember allows and asks the caller to persist Response.Prefix (or a
	// prefix the caller derives) to the project policy. The caller must refuse
	// prefixes that are unsafe to remember (bare shells, interpreters, env,
	// sudo, bare git) and treat such an answer as AllowOnce.
	Remember
	// RememberDeny refuses it, adds a session rule denying the same action
	// and persists a deny rule for its command prefix to the project policy
	// (Forge's "deny always", saved).
	RememberDeny
)

var answerNames = [...]string{
	AllowOnce:   "allow",
	AllowAlways: "allow_always",
	DenyOnce:    "deny",
	DenyAlways:  "deny_always",
	Remember:    "remember",
	// RememberDeny's name
	RememberDeny: "remember_deny",
}

// String returns the protocol name of the answer: "allow", "allow_always",
// "deny", "deny_always", "remember" or "remember_deny"; "invalid" for
// anything else.
func (a Answer) String() string {
	if a >= AllowOnce && a <= RememberDeny {
		return answerNames[a]
	}
	return "invalid"
}

// Allowed reports whether the answer lets the program run. Only the three
// allowing answers do; the zero value and unknown values do not.
func (a Answer) Allowed() bool {
	return a == AllowOnce || a == AllowAlways || a == Remember
}

// Always reports whether the answer should become a session rule.
func (a Answer) Always() bool {
	return a == AllowAlways || a == DenyAlways || a == RememberDeny
}

// ParseAnswer parses a protocol answer name (exactly as String returns it).
// Anything else is an error; it never defaults to an allow.
func ParseAnswer(s string) (Answer, error) {
	for a := AllowOnce; a <= RememberDeny; a++ {
		if answerNames[a] == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("approval: unknown answer %q (want allow, allow_always, deny, deny_always, remember or remember_deny)", s)
}

// Response is an approver's answer to one Request.
type Response struct {
	Answer Answer
	// Approver says who answered, for the audit log: "tty:/dev/pts/3 uid=1000"
	// or "socket uid=1000 pid=42".
	Approver string
	// Prefix is the command prefix to persist for a Remember answer, when the
	// approver supplied one (the socket client may; the tty prompt does not).
	// It has been checked to be a word prefix of the request's argv.
	Prefix string
	// UID is who answered, when UIDKnown: the terminal's owner (tty), the
	// socket client's peer uid (SO_PEERCRED). An approval.Func answer
	// without it counts as the embedding program's own uid. Grants are
	// checked against it (policy's approvers).
	UID      int
	UIDKnown bool
}

// Approver asks a human about one request. The context carries the approval
// timeout: when its deadline passes Approve returns an error wrapping
// ErrTimeout; when no human can be reached it returns one wrapping
// ErrUnavailable. Any error means deny. Approve is safe for concurrent use.
//
// Approvers returned by New also implement io.Closer; Close removes the
// socket of a socket approver and fails its pending requests.
type Approver interface {
	Approve(ctx context.Context, req Request) (Response, error)
}

// Errors wrapped by Approve. The caller audits them as ask_timeout and
// ask_unavailable and denies.
var (
	ErrTimeout     = errors.New("approval timed out, denied")
	ErrUnavailable = errors.New("no approver available")
)

// Pauser pauses whatever else reads the user's terminal (the pty relay that
// forwards stdin to the sandboxed program) while the tty prompt owns it.
// Hold must return only once the relay no longer consumes terminal input.
type Pauser interface {
	Hold()
	Release()
}

// Options configure New.
type Options struct {
	// Pauser is held while a tty prompt is on screen. Optional.
	Pauser Pauser
	// TTYPath is the terminal the tty approver opens; default /dev/tty.
	TTYPath string
	// AllowedUIDs are the peer uids a socket approver accepts; default our own
	// uid and root.
	AllowedUIDs []int
	// Logger receives refused connections and protocol errors; default slog.Default().
	Logger *slog.Logger
	// Warnings receives the lines a user at the run's terminal reads
	// ("agentbox: waiting for an answer in the inbox: URL", an inbox that
	// is not there); default os.Stderr.
	Warnings io.Writer
	// Inbox is what an inbox approver tells the inbox about its run.
	Inbox InboxInfo
}

// RulesNotifier is implemented by approvers that show the run's session
// rules (the inbox approver): the run calls RulesChanged after they change.
type RulesNotifier interface{ RulesChanged() }

// New builds the approver named by spec, the value of --approve:
// "none", "tty" or "socket:PATH". A socket approver starts listening before
// New returns, so an orchestrator can connect at once. A bad spec is an error
// naming the value.
func New(spec string, opts Options) (Approver, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Warnings == nil {
		opts.Warnings = os.Stderr
	}
	switch {
	case spec == "none":
		return noneApprover{}, nil
	case spec == "tty":
		if opts.TTYPath == "" {
			opts.TTYPath = "/dev/tty"
		}
		return newTTY(opts), nil
	case strings.HasPrefix(spec, "socket:"):
		path := strings.TrimPrefix(spec, "socket:")
		if path == "" {
			return nil, fmt.Errorf("--approve %q: socket path is empty (want socket:PATH)", spec)
		}
		if len(opts.AllowedUIDs) == 0 {
			opts.AllowedUIDs = []int{os.Getuid(), 0}
		}
		return listenSocket(path, opts)
	case spec == "inbox" || strings.HasPrefix(spec, "inbox:"):
		if len(opts.AllowedUIDs) == 0 {
			opts.AllowedUIDs = []int{os.Getuid(), 0}
		}
		return newInbox(strings.TrimPrefix(strings.TrimPrefix(spec, "inbox"), ":"), opts)
	}
	return nil, fmt.Errorf("--approve %q: unknown approver (want tty, socket:PATH, inbox[:PATH] or none)", spec)
}

// CheckSpec reports whether spec names an approver New knows: tty, none,
// socket:PATH or inbox[:PATH] (PATH absolute). It opens nothing.
func CheckSpec(spec string) error {
	switch {
	case spec == "tty", spec == "none", spec == "inbox":
		return nil
	case strings.HasPrefix(spec, "socket:") && len(spec) > len("socket:"):
		return nil
	case strings.HasPrefix(spec, "inbox:") && filepath.IsAbs(spec[len("inbox:"):]):
		return nil
	}
	return fmt.Errorf("--approve %q: want tty, socket:PATH, inbox, inbox:/ABS/PATH or none", spec)
}

// noneApprover is --approve none: nobody can answer, so every ask is denied.
type noneApprover struct{}

func (noneApprover) Approve(context.Context, Request) (Response, error) {
	return Response{}, fmt.Errorf("--approve none: %w", ErrUnavailable)
}

func (noneApprover) Close() error { return nil }

var _ io.Closer = noneApprover{}

// withDefaultDeadline gives ctx the DefaultTimeout when it has no deadline,
// so a forgotten timeout never holds a program forever.
func withDefaultDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// ctxError turns the end of an approval context into the error Approve
// returns: the cancellation if it was canceled, ErrTimeout otherwise (also
// when a read deadline set from ctx fired a moment before ctx itself ended).
func ctxError(ctx context.Context, id string) error {
	if err := ctx.Err(); err == nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("approval request %s: %w", id, ErrTimeout)
	}
	return fmt.Errorf("approval request %s: %w", id, ctx.Err())
}

// Func adapts a function to the Approver interface, so an embedding
// program can answer a run's approvals in Go (see agentbox.WithApprover).
// The function must honour ctx's deadline; returning an error denies.
type Func func(ctx context.Context, req Request) (Response, error)

// Approve calls f.
func (f Func) Approve(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }
