package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// MaxLineBytes bounds one log line when reading. Longer lines are reported as
// malformed rather than buffered without limit.
const MaxLineBytes = 16 << 20

// Filter selects events. A zero field matches everything.
type Filter struct {
	Agent string // exact agent id
	Role  string // exact role name
	Run   string // exact run id
	Event string // exact event kind (launch, exec, ...)
	// Decision selects decisions: "deny" is every refusal (deny and the
	// ask_* outcomes that denied: ask_denied, ask_timeout,
	// ask_unavailable); "ask" every ask*; "=VALUE" exactly VALUE.
	Decision string
	Since    time.Time      // events at or after this time
	Until    time.Time      // events before this time
	Rule     string         // exact rule id
	Action   *regexp.Regexp // matches the action (or, without one, the argv joined)
	// Workspace selects the runs whose launch event names this workspace
	// (Scan follows the runs; Match alone cannot, and passes every event).
	Workspace string
}

// Refused reports whether a decision kept the program from running.
func Refused(d string) bool {
	switch d {
	case DecisionDeny, DecisionAskDenied, DecisionAskTimeout, DecisionAskUnavailable:
		return true
	}
	return false
}

// Match reports whether e passes the filter.
func (f Filter) Match(e *Event) bool {
	switch {
	case f.Agent != "" && e.Agent != f.Agent,
		f.Role != "" && e.Role != f.Role,
		f.Run != "" && e.Run != f.Run,
		f.Event != "" && e.Event != f.Event,
		!f.Since.IsZero() && e.Time.Before(f.Since),
		!f.Until.IsZero() && !e.Time.Before(f.Until),
		f.Rule != "" && e.Rule != f.Rule:
		return false
	}
	if f.Action != nil {
		a := e.Action
		if a == "" {
			a = strings.Join(e.Argv, " ")
		}
		if !f.Action.MatchString(a) {
			return false
		}
	}
	switch d := f.Decision; {
	case d == "":
		return true
	case d == "ask":
		return strings.HasPrefix(e.Decision, "ask")
	case d == DecisionDeny:
		return Refused(e.Decision)
	case strings.HasPrefix(d, "="):
		return e.Decision == d[1:]
	}
	return e.Decision == f.Decision
}

// ErrTornLine is wrapped by the LineError of a last line without its
// terminating newline.
var ErrTornLine = errors.New("torn last line")

// LineError is a malformed log line: it names the line (1-based) and, when
// the caller set it, the file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ParseLine decodes one log line (without its newline). It is strict: the
// line must be a single JSON object with a "seq" and an "event" field, and
// nothing may follow the object.
func ParseLine(line []byte) (Event, error) {
	var e Event
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		return e, errors.New("empty line")
	}
	if err := decodeEvent(line, &e); err != nil {
		return Event{}, fmt.Errorf("not a JSON event: %w", err)
	}
	if e.Event == "" {
		return e, errors.New(`missing "event" field`)
	}
	if e.Seq == 0 {
		return e, errors.New(`missing or zero "seq" field`)
	}
	return e, nil
}

// Read streams the events in r that pass filter to fn, in file order. It
// stops at the first malformed line with a *LineError, or at the first error
// fn returns.
func Read(r io.Reader, filter Filter, fn func(Event) error) error {
	return Scan(r, filter, fn, func(le *LineError) error { return le })
}

// Scan is Read with a handler for malformed lines: bad is called with each
// one; when it returns nil, scanning continues with the next line (so a
// query can report every bad line and still show the rest).
func Scan(r io.Reader, filter Filter, fn func(Event) error, bad func(*LineError) error) error {
	lr := newLineReader(r)
	inWS := map[string]bool{} // runs of filter.Workspace, from their launch events
	for {
		line, n, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var le *LineError
			if errors.As(err, &le) {
				if berr := bad(le); berr != nil {
					return berr
				}
				continue
			}
			return err
		}
		e, perr := ParseLine(line)
		if perr != nil {
			if berr := bad(&LineError{Line: n, Err: perr}); berr != nil {
				return berr
			}
			continue
		}
		if filter.Workspace != "" {
			if e.Event == EventLaunch && e.Detail["workspace"] == filter.Workspace {
				inWS[e.Run] = true
			}
			if !inWS[e.Run] {
				continue
			}
		}
		if filter.Match(&e) {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// lineReader splits a stream into lines of at most MaxLineBytes, reporting
// an overlong line or an unterminated last line as a *LineError.
type lineReader struct {
	br   *bufio.Reader
	n    int
	buf  []byte
	done bool
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its newline and its 1-based number.
// The returned slice is valid until the following call.
func (lr *lineReader) next() ([]byte, int, error) {
	if lr.done {
		return nil, lr.n, io.EOF
	}
	lr.buf = lr.buf[:0]
	lr.n++
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > MaxLineBytes+1 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			lr.done = true
			if len(lr.buf) == 0 && !tooLong {
				return nil, lr.n, io.EOF
			}
			if tooLong {
				return nil, lr.n, &LineError{Line: lr.n, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
			}
			return lr.buf, lr.n, &LineError{Line: lr.n, Err: fmt.Errorf("%w: %d bytes without a terminating newline", ErrTornLine, len(lr.buf))}
		case err != nil:
			return nil, lr.n, fmt.Errorf("read line %d: %w", lr.n, err)
		}
		if tooLong {
			return nil, lr.n, &LineError{Line: lr.n, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
		}
		return lr.buf[:len(lr.buf)-1], lr.n, nil
	}
}

// ReadFile returns every event of the audit log at path, in file order. It
// is for tests and small logs; large logs stream through Read or Scan.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	err = Read(f, Filter{}, func(e Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}
