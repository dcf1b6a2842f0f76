package audit

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// VerifyError is the first place the log's integrity fails.
type VerifyError struct {
	Line   int    // 1-based line number; 0 for a problem with the log as a whole
	Reason string // what is wrong and what probably happened
}

func (e *VerifyError) Error() string {
	if e.Line == 0 {
		return e.Reason
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// VerifyResult describes a log that verified.
type VerifyResult struct {
	Lines    int      // lines (events) checked
	LastSeq  uint64   // seq of the last line
	LastHash string   // LineHash of the last line
	HeadUsed bool     // a head file was compared against the log's end
	Warnings []string // weaker findings that do not fail verification
}

// Verify checks a whole log read from r: every line is a complete JSON event,
// sequence numbers run 1, 2, 3... without gaps, every Prev is the hash of
// the line before it, and no writer recorded tampering (see DetailTamper).
// With head (the parsed head file) it also checks the log's end: a log
// shorter than the head records was truncated, and a last line whose hash
// differs from the head's was edited. Without head, lines cut off the end
// cannot be detected; Verify says so in a warning.
//
// What this proves, and what not: the chain is unkeyed, so it detects
// changes by anyone who cannot also rewrite the rest of the log and the head
// file; it is evidence against a sandboxed agent (which cannot write either)
// and against careless edits, not against root on the host.
func Verify(r io.Reader, head *Head) (VerifyResult, error) {
	var res VerifyResult
	lr := newLineReader(r)
	headHashAt := "" // hash of the line whose seq is head.Seq
	for {
		line, n, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if le, ok := err.(*LineError); ok {
				return res, &VerifyError{Line: le.Line, Reason: le.Err.Error() + " (a writer died mid-write, or the log was cut)"}
			}
			return res, err
		}
		e, perr := ParseLine(line)
		if perr != nil {
			return res, &VerifyError{Line: n, Reason: perr.Error()}
		}
		if n == 1 {
			if e.Seq != 1 || e.Prev != "" {
				return res, &VerifyError{Line: n, Reason: fmt.Sprintf("chain does not start at seq 1 with an empty prev (seq %d): lines were removed from the start", e.Seq)}
			}
		} else {
			if e.Seq != res.LastSeq+1 {
				return res, &VerifyError{Line: n, Reason: fmt.Sprintf("seq %d follows seq %d: lines were deleted, inserted or reordered", e.Seq, res.LastSeq)}
			}
			if e.Prev != res.LastHash {
				return res, &VerifyError{Line: n, Reason: fmt.Sprintf("prev hash does not match line %d: that line was edited, or lines were replaced", n-1)}
			}
		}
		if e.Event == EventViolation && e.Detail[DetailTamper] != "" {
			return res, &VerifyError{Line: n, Reason: fmt.Sprintf("a writer found the log tampered with and recorded it (%s): %s", e.Detail[DetailTamper], e.Reason)}
		}
		res.Lines = n
		res.LastSeq = e.Seq
		res.LastHash = LineHash(line)
		if head != nil && e.Seq == head.Seq {
			headHashAt = res.LastHash
		}
	}
	if head == nil {
		if res.Lines > 0 {
			res.Warnings = append(res.Warnings, "no head file: lines cut off the end of the log cannot be detected")
		}
		return res, nil
	}
	res.HeadUsed = true
	switch {
	case head.Seq > res.LastSeq:
		return res, &VerifyError{Reason: fmt.Sprintf("log truncated: the head file records seq %d but the log ends at seq %d (line %d)", head.Seq, res.LastSeq, res.Lines)}
	case head.Seq == res.LastSeq && head.Hash != res.LastHash:
		return res, &VerifyError{Line: res.Lines, Reason: fmt.Sprintf("last line (seq %d) differs from the one the head file records: it was edited or replaced", head.Seq)}
	case head.Seq < res.LastSeq:
		if headHashAt != head.Hash {
			return res, &VerifyError{Reason: fmt.Sprintf("line with seq %d differs from the one the head file records", head.Seq)}
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("head file lags the log by %d lines (a writer was stopped between appending and updating the head)", res.LastSeq-head.Seq))
	}
	return res, nil
}

// VerifyFile verifies the log at path against its head file, if any.
func VerifyFile(path string) (VerifyResult, error) {
	head, err := ReadHeadFile(path)
	if err != nil {
		return VerifyResult{}, &VerifyError{Reason: fmt.Sprintf("head file: %v", err)}
	}
	f, err := os.Open(path)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("audit: open log: %w", err)
	}
	defer f.Close()
	res, err := Verify(f, head)
	if err == nil {
		res.Warnings = append(res.Warnings, permissionWarnings(path, path+HeadSuffix)...)
	}
	return res, err
}

// permissionWarnings flags log files that others could have rewritten: the
// chain cannot tell their edits from the writer's.
func permissionWarnings(paths ...string) []string {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if st.Mode().Perm()&0o022 != 0 {
			out = append(out, fmt.Sprintf("%s is writable by group or others (mode %04o): anyone with that access could rewrite the log and its head consistently", p, st.Mode().Perm()))
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() && sys.Uid != 0 {
			out = append(out, fmt.Sprintf("%s is owned by uid %d, not by you (uid %d) or root", p, sys.Uid, os.Getuid()))
		}
	}
	return out
}
