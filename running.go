package agentbox

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/redact"
)

// AuditFailure says what a run does when its audit log cannot be written
// (a full or failing file system): the reference is the Linux audit
// daemon's disk_full_action / disk_error_action.
type AuditFailure int

const (
	// AuditFailClosed (the default): the program whose event could not be
	// written, and every later program start, is denied with a reason
	// naming the audit failure; the command's tree otherwise runs to its
	// end, and the run ends with ExitFailure and one line saying why.
	AuditFailClosed AuditFailure = iota
	// AuditFailStop ends the whole run at once (Stop), then as
	// AuditFailClosed.
	AuditFailStop
	// AuditFailContinue keeps running unaudited, with one warning line
	// and the number of events lost at the end. Explicit opt-in only.
	AuditFailContinue
)

// ParseAuditFailure parses the --audit-failure values deny, stop, continue.
func ParseAuditFailure(s string) (AuditFailure, bool) {
	switch s {
	case "deny", "":
		return AuditFailClosed, true
	case "stop":
		return AuditFailStop, true
	case "continue":
		return AuditFailContinue, true
	}
	return 0, false
}

// lowSpaceBytes is when the audit log's file system counts as nearly full
// (auditd's space_left default is 75 MB): one warning, ahead of failure.
const lowSpaceBytes = 64 << 20

// auditSink writes a run's events: it stamps agent, role and run, writes,
// passes each event to the WithEvents callback, and keeps the run's audit
// health: the first write error, the number of events lost after it, and
// whether the low-space warning was given. It never prints a line per
// event.
type auditSink struct {
	w                 *audit.Writer // nil: no log
	agent, role, run  string
	events            func(audit.Event)
	warn              io.Writer
	onFail            func(error) // called once, at the first failure
	mu                sync.Mutex
	err               error
	lost, written     int
	lowWarned, failed bool
	warnFirst         bool // print a line at the first failure (continue mode)
	// quota bounds the decision events (exec, git, net, tool) one run may
	// write (0: DefaultAuditQuota): a run that floods the shared log with
	// program starts would fill its disk, and then every run writing
	// there is denied. Past it the run fails as on a write failure; its
	// limit, violation and exit events are still written.
	quota     int
	decisions int
	// recent are the run's last decided commands, for the approval
	// inbox, oldest first (redacted when read: Recent).
	recent []recentCmd
	// refused counts the run's decisions that refused something (a
	// program, a connection, a request, a tool call), firstRefused says
	// the first: the end line's "2 refused (first: ...)".
	refused      int
	firstRefused string
}

type recentCmd struct{ decision, action string }

// refusal is the count of refused decisions and the first one named
// (action and rule, redacted as in the log).
func (s *auditSink) refusal() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, s.firstRefused
}

// refusedDecision reports an audit decision that kept something from
// happening: a denial, or an ask nobody could answer or answered no.
func refusedDecision(d string) bool {
	switch d {
	case audit.DecisionDeny, audit.DecisionAskDenied, audit.DecisionAskTimeout, audit.DecisionAskUnavailable:
		return true
	}
	return false
}

// recentKept is how many of the run's last commands the inbox is shown.
const recentKept = 10

// Recent returns the run's last decided commands, oldest first, as
// "decision: action", redacted as in the audit log.
func (s *auditSink) Recent() []string {
	s.mu.Lock()
	kept := append([]recentCmd(nil), s.recent...)
	s.mu.Unlock()
	out := make([]string, len(kept))
	for i, c := range kept {
		a, _ := redact.Text(c.action)
		out[i] = c.decision + ": " + capfield.Value(a, 400)
	}
	return out
}

// DefaultAuditQuota is the number of decision events one run may write
// to the audit log (about 300-500 MB): far above any build's program
// starts, far below a disk.
const DefaultAuditQuota = 1_000_000

// ErrAuditQuota is the audit failure of a run that used up its quota of
// decision events (WithAuditQuota).
var ErrAuditQuota = errors.New("the run wrote its quota of decision events to the audit log (WithAuditQuota, --audit-quota)")

func (s *auditSink) emit(e audit.Event) error {
	_, err := s.EmitSeq(e)
	return err
}

// Emit writes e (audit.Sink).
func (s *auditSink) Emit(e audit.Event) error { return s.emit(e) }

// EmitSeq writes e and returns the seq it got (audit.SeqSink; 0 when
// there is no log or the write failed).
func (s *auditSink) EmitSeq(e audit.Event) (uint64, error) {
	e.Agent, e.Run = s.agent, s.run
	if e.Role == "" {
		e.Role = s.role // a run's role, unless a granted role change says otherwise (the judge's)
	}
	var err error
	switch e.Event {
	case audit.EventExec, audit.EventGit, audit.EventNet, audit.EventTool:
		if s.w == nil {
			break
		}
		quota := s.quota
		if quota == 0 {
			quota = DefaultAuditQuota
		}
		s.mu.Lock()
		s.decisions++
		over := quota > 0 && s.decisions > quota
		s.mu.Unlock()
		if over {
			err = ErrAuditQuota
		}
	}
	if s.w != nil && err == nil {
		e.Seq, err = s.w.WriteSeq(e)
	}
	s.mu.Lock()
	switch e.Event {
	case audit.EventExec, audit.EventGit, audit.EventNet, audit.EventTool:
		if refusedDecision(e.Decision) {
			s.refused++
			if s.firstRefused == "" {
				what := e.Action
				if part := e.Detail["decided"]; part != "" {
					what = part // the part of a line that decided (git push in sh -c '...; git push')
				}
				if what == "" {
					what = strings.Join(e.Argv, " ")
				}
				if e.Rule != "" {
					what += " (rule " + e.Rule + ")"
				}
				red, _ := redact.Text(what)
				s.firstRefused = capfield.Value(red, 200)
			}
		}
	}
	switch e.Event {
	case audit.EventExec, audit.EventGit:
		what := e.Action
		if what == "" {
			what = strings.Join(e.Argv, " ")
		}
		if len(s.recent) == recentKept {
			s.recent = append(s.recent[:0], s.recent[1:]...)
		}
		s.recent = append(s.recent, recentCmd{e.Decision, what})
	}
	var first error
	if err != nil {
		s.lost++
		if s.err == nil {
			s.err = err
			first = err
			if s.warnFirst {
				// --audit-failure continue: say so now, not only at the end.
				fmt.Fprintf(s.warn, "agentbox: warning: audit log %s cannot be written (%v); running on unaudited\n", s.w.Path(), err)
			}
		}
	} else if s.w != nil {
		s.written++
		if !s.lowWarned && s.written%256 == 1 && s.w.Path() != "-" {
			var st unix.Statfs_t
			if unix.Statfs(filepath.Dir(s.w.Path()), &st) == nil {
				if free := st.Bavail * uint64(st.Bsize); free < lowSpaceBytes {
					s.lowWarned = true
					fmt.Fprintf(s.warn, "agentbox: warning: audit log %s: only %d MiB left on its file system\n", s.w.Path(), free>>20)
				}
			}
		}
	}
	s.mu.Unlock()
	if first != nil && s.onFail != nil {
		s.onFail(first)
	}
	if s.events != nil {
		s.events(e)
	}
	return e.Seq, err
}

// health returns the first write error and the number of events lost.
func (s *auditSink) health() (error, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err, s.lost
}
