// Package audit records what happened inside agentbox sandboxes as an
// append-only, hash-chained JSON Lines log, and reads, queries, summarises
// and verifies that log (docs/architecture.md).
//
// Every line is one JSON object (an Event). Each line carries the SHA-256 of
// the previous line (Prev) and a sequence number (Seq), so editing, deleting,
// reordering or inserting a line breaks the chain. A small sidecar file
// "<log>.head" holds the sequence number and hash of the last line; it lets
// Verify detect lines cut off the end of the log, which a chain alone cannot.
//
// Limits, stated plainly: the chain is not a signature. Anyone who can write
// both the log and its head file can rewrite history consistently. The log
// therefore must live outside every area a sandbox can write (the launcher
// guarantees that), and a reviewer who needs more than tamper evidence should
// ship lines off the machine as they are written.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Event kinds (Event.Event).
const (
	EventLaunch    = "launch"    // a sandbox started (one per agentbox run)
	EventExec      = "exec"      // a program start was decided
	EventGit       = "git"       // a git invocation was decided
	EventAsk       = "ask"       // an approval was requested or answered
	EventLimit     = "limit"     // a resource limit was hit (memory, pids, timeout, fsize)
	EventExit      = "exit"      // the sandboxed command ended
	EventViolation = "violation" // the boundary or the audit log itself saw tampering
	EventTool      = "tool"      // an agent's own tool call decided by a hook (agentbox hook claude-code)
	EventRotate    = "rotate"    // first event of a log file that continues a rotated one
	EventNet       = "net"       // a connection through the egress proxy was decided (and, when it closes, its bytes)
	EventApply     = "apply"     // a review run's layer (or part of it) was applied to target/
	EventDiscard   = "discard"   // a review run's layer was discarded
	EventRole      = "role"      // the run's role changed (agentbox escalate), with who granted it
	EventRevoke    = "revoke"    // a session or project rule was revoked in the approval inbox, by whom
)

// Decisions (Event.Decision).
const (
	DecisionAllow = "allow"
	// DecisionAnswerRefused: an approver's answer was refused (its giver
	// lacks the grant it needs); the question stays open.
	DecisionAnswerRefused  = "answer_refused"
	DecisionDeny           = "deny"
	DecisionAskApproved    = "ask_approved"
	DecisionAskDenied      = "ask_denied"
	DecisionAskTimeout     = "ask_timeout"
	DecisionAskUnavailable = "ask_unavailable"
	// DecisionAsk means the question was handed to the agent's own approver
	// (agentbox hook answered "ask" to Claude Code); agentbox does not see
	// the answer.
	DecisionAsk = "ask"
)

// Event is one line of the audit log. The writer fills Time (when zero), Seq
// and Prev; every other field is the caller's. Optional fields are omitted
// from the JSON when empty so lines stay short.
type Event struct {
	Time     time.Time         `json:"time"`
	Seq      uint64            `json:"seq"`
	Prev     string            `json:"prev"` // hex SHA-256 of the previous line (without its newline); "" for the first
	Agent    string            `json:"agent,omitempty"`
	Role     string            `json:"role,omitempty"`
	Run      string            `json:"run,omitempty"` // run id (one per agentbox run)
	Event    string            `json:"event"`         // launch|exec|git|ask|limit|exit|violation|tool
	Pid      int               `json:"pid,omitempty"`
	Ppid     int               `json:"ppid,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Action   string            `json:"action,omitempty"`
	Argv     []string          `json:"argv,omitempty"`
	Exe      string            `json:"exe,omitempty"`
	Decision string            `json:"decision,omitempty"` // allow|deny|ask_approved|ask_denied|ask_timeout|ask_unavailable|ask
	Rule     string            `json:"rule,omitempty"`
	Layer    string            `json:"layer,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Approver string            `json:"approver,omitempty"`
	Exit     *int              `json:"exit,omitempty"`   // exit events: the exit status
	Signal   string            `json:"signal,omitempty"` // exit events: the killing signal, if any
	Limit    string            `json:"limit,omitempty"`  // limit events: memory|pids|timeout|fsize...
	Detail   map[string]string `json:"detail,omitempty"`
	// Kid and Mac make a keyed log (key.go): the key's id and an HMAC of
	// the line before them. Written last; set by the writer.
	Kid string `json:"kid,omitempty"`
	Mac string `json:"mac,omitempty"`
}

// LineHash returns the hex SHA-256 of one log line given without its
// trailing newline: the value the next line stores in Prev.
func LineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// DetailTamper is the Detail key the writer sets on the violation events it
// appends itself when it finds the log's tail inconsistent with the head file
// (truncated, torn, or head missing). Verify reports such events as failures,
// so the evidence survives even though the writer carries on appending.
const DetailTamper = "audit_tamper"

// DetailRecovered is the detail key of a violation event a writer appends
// when it repaired what a killed writer left ("unfinished_line": the
// fragment of a write cut short, after the last line the head file
// vouches for, was dropped). Not tampering: Verify passes it.
const DetailRecovered = "audit_recovered"

// Detail keys of a rotate event: the file it continues (as it was named when
// the writer noticed) and why the writer started a new file.
const (
	DetailRotatedFrom = "rotated_from"
	DetailRotateWhy   = "rotate_reason"
)
