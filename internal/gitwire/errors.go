package gitwire

import "fmt"

// Reason is why a push, or one of its ref updates, was refused. Its value
// is the short text git shows the user after "[remote rejected] ref".
type Reason string

// The reasons a push is refused.
const (
	// ReasonNotApproved: the ref is not among the approved ones.
	ReasonNotApproved Reason = "ref not approved"
	// ReasonCreate: the update creates a ref and the approval allows no
	// creation.
	ReasonCreate Reason = "creating a ref not approved"
	// ReasonDeleteProtected: the update deletes a protected ref.
	ReasonDeleteProtected Reason = "delete of a protected ref"
	// ReasonDelete: the update deletes a ref and the approval allows no
	// deletion of it.
	ReasonDelete Reason = "delete not approved"
	// ReasonNotFastForward: the update is not a fast-forward as far as the
	// pack proves (a force push, a rewind, or a history the pack does not
	// carry): no force.
	ReasonNotFastForward Reason = "non-fast-forward (no force)"
	// ReasonTooLarge: a section of the request is over its cap in Limits.
	ReasonTooLarge Reason = "push too large"
	// ReasonMalformed: the bytes are not a receive-pack request or pack.
	ReasonMalformed Reason = "malformed push"
	// ReasonUnsupported: a well-formed request this package does not
	// check (a signed push, an unknown object format).
	ReasonUnsupported Reason = "push form not supported"
	// ReasonOtherRef: this update was fine but another update of the same
	// push was refused; receive-pack applies a push whole or not at all
	// here.
	ReasonOtherRef Reason = "another ref of this push was refused"
)

// RefusedError is a refused push: which ref (empty when the refusal is of
// the whole request, such as malformed bytes), why, and where in the body.
type RefusedError struct {
	// Ref is the ref the refusal is about, "" for the whole request.
	Ref string
	// Reason is the kind of refusal, shown to git users.
	Reason Reason
	// Detail says what exactly was seen ("walk from 1a2b.. left the pack at
	// 3c4d.. without reaching 5e6f..").
	Detail string
	// Offset is the byte offset in the request body where the refusal was
	// found, -1 when it is not about a place in the bytes.
	Offset int64
}

// Error says the ref, the reason, the detail and the byte offset.
func (e *RefusedError) Error() string {
	s := "git push refused"
	if e.Ref != "" {
		s += ": " + e.Ref
	}
	s += ": " + string(e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return s
}

// Short is the one-line reason for git's report-status ("ng ref reason"):
// the reason and the detail, without newlines.
func (e *RefusedError) Short() string {
	s := string(e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return oneLine(s)
}

func malformed(off int64, format string, args ...any) *RefusedError {
	return &RefusedError{Reason: ReasonMalformed, Detail: fmt.Sprintf(format, args...), Offset: off}
}

func tooLarge(off int64, format string, args ...any) *RefusedError {
	return &RefusedError{Reason: ReasonTooLarge, Detail: fmt.Sprintf(format, args...), Offset: off}
}

// oneLine keeps s printable on one pkt-line: control bytes become spaces,
// and it is cut to 512 bytes.
func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = ' '
		}
	}
	if len(b) > 512 {
		b = append(b[:509], "..."...)
	}
	return string(b)
}
