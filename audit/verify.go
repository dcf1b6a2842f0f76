package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// VerifyError is the first place the log's integrity fails.
type VerifyError struct {
	Line   int    // 1-based line number; 0 for a problem with the log as a whole
	Reason string // what is wrong and what probably happened
	cause  error  // a sentinel such as ErrHeadMissing, for errors.Is
}

// ErrHeadMissing is the cause of a VerifyError (errors.Is) for a log file
// that holds lines but whose head file is missing or empty: nothing then
// vouches for the log's end, and lines cut off it would not show.
var ErrHeadMissing = errors.New("head file missing")

// Unwrap returns the sentinel cause, if any (ErrHeadMissing).
func (e *VerifyError) Unwrap() error { return e.cause }

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
	// Unkeyed is set when no line carries a MAC: anyone who can write the
	// file could recompute a chain that verifies (callers say so).
	Unkeyed bool
	// MACsChecked counts lines whose MAC was verified with a given key.
	MACsChecked int
	// KeyMissing is set when lines carry MACs but no key was given: the
	// chain was checked, the MACs were not, so a log recomputed without
	// the key would pass (callers fail unless asked for the chain alone).
	KeyMissing bool
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
func Verify(r io.Reader, head *Head) (VerifyResult, error) { return verifyFrom(r, head, nil, nil) }

// VerifyKeyed is Verify with the keys of a keyed log (key.go): every line
// must carry a MAC made with one of them. With no keys a keyed log's MACs
// are not checked (a warning says so).
func VerifyKeyed(r io.Reader, head *Head, keys []Key) (VerifyResult, error) {
	return verifyFrom(r, head, nil, keys)
}

// verifyFrom verifies one file of a rotated set: prev is the result of the
// file before it (nil for the first), whose last line this file's first
// line must chain onto.
func verifyFrom(r io.Reader, head *Head, prev *VerifyResult, keys []Key) (VerifyResult, error) {
	if runtime.GOMAXPROCS(0) > 1 {
		return verifyParallel(r, head, prev, keys)
	}
	return verifySequential(r, head, prev, keys)
}

// verifySequential is verifyFrom on one goroutine (one CPU, and the
// reference verifyParallel is held to: FuzzVerifyParallel).
func verifySequential(r io.Reader, head *Head, prev *VerifyResult, keys []Key) (VerifyResult, error) {
	v := &chainVerifier{head: head, prev: prev, keys: keys}
	lr := newLineReader(r)
	for {
		line, n, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if v.unfinishedTail(err, line) {
				break
			}
			return v.result(), v.lineError(err)
		}
		if err := v.line(line, n); err != nil {
			return v.result(), err
		}
	}
	return v.finish()
}

// chainVerifier checks a log line by line (Verify, and the one pass of
// SummarizeVerify).
type chainVerifier struct {
	res              VerifyResult
	head             *Head
	prev             *VerifyResult
	keys             []Key
	signed, unsigned int
	headHashAt       string // hash of the line whose seq is head.Seq
	// last is the hash of the last line checked (res.LastHash, which
	// result sets: a string per line cost verify an allocation each)
	last    [64]byte
	hasLast bool
	h       lineHasher // the sequential path's
}

// lastHash is the hash of the last line checked ("" before the first).
func (v *chainVerifier) lastHash() []byte {
	if !v.hasLast {
		return nil
	}
	return v.last[:]
}

// result is res with LastHash set.
func (v *chainVerifier) result() VerifyResult {
	v.res.LastHash = string(v.lastHash())
	return v.res
}

// unfinishedTail reports whether err is a torn last line (frag) after the
// last line the head file vouches for — a writer killed inside its write;
// the next write drops it — and records it as a warning. finish still
// checks the head against the complete lines.
func (v *chainVerifier) unfinishedTail(err error, frag []byte) bool {
	le, ok := err.(*LineError)
	if !ok || !errors.Is(le.Err, ErrTornLine) || v.head == nil || v.head.Seq > v.res.LastSeq {
		return false
	}
	v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("the log ends in an unfinished line of %d bytes after seq %d: a writer was killed mid-write (the next write drops it and records that)", len(frag), v.res.LastSeq))
	return true
}

// lineError turns a line reader's error into the verify error.
func (v *chainVerifier) lineError(err error) error {
	if le, ok := err.(*LineError); ok {
		return &VerifyError{Line: le.Line, Reason: le.Err.Error() + " (a writer died mid-write, or the log was cut)"}
	}
	return err
}

// line checks line n. The chain fields come from an allocation-free field
// scan; a line it cannot vouch for, and every violation event, is decoded
// whole.
func (v *chainVerifier) line(line []byte, n int) error {
	var p pre
	precomputeInto(&p, line, v.keys, &v.h, true)
	return v.check(line, n, p.li, p.fast, &p)
}

func (v *chainVerifier) lineInfo(line []byte, n int, li lineInfo, fast bool) error {
	return v.check(line, n, li, fast, nil)
}

// lineInfoPre is lineInfo with what a worker of verifyParallel found.
func (v *chainVerifier) lineInfoPre(line []byte, n int, p *pre) error {
	return v.check(line, n, p.li, p.fast, p)
}

// check checks line n (p, when set, carries its hash and MAC check).
func (v *chainVerifier) check(line []byte, n int, li lineInfo, fast bool, p *pre) error {
	var e Event
	if !fast {
		var perr error
		if e, perr = ParseLine(line); perr != nil {
			return &VerifyError{Line: n, Reason: perr.Error()}
		}
		li = lineInfo{seq: e.Seq, prev: []byte(e.Prev), event: []byte(e.Event), kid: []byte(e.Kid), mac: []byte(e.Mac)}
	}
	if n == 1 {
		switch {
		case v.prev != nil:
			if li.seq != v.prev.LastSeq+1 || string(li.prev) != v.prev.LastHash {
				return &VerifyError{Line: n, Reason: fmt.Sprintf("does not continue the previous file (seq %d after %d): lines are missing between the files, or the files are out of order", li.seq, v.prev.LastSeq)}
			}
		case string(li.event) == EventRotate && rotatedFrom(line, fast, &e) != "":
			v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("continues %s (seq %d), which was not given: verify it together with this file to prove continuity", rotatedFrom(line, fast, &e), li.seq-1))
		case li.seq != 1 || len(li.prev) != 0:
			return &VerifyError{Line: n, Reason: fmt.Sprintf("chain does not start at seq 1 with an empty prev (seq %d): lines were removed from the start", li.seq)}
		}
	} else {
		if li.seq != v.res.LastSeq+1 {
			return &VerifyError{Line: n, Reason: fmt.Sprintf("seq %d follows seq %d: lines were deleted, inserted or reordered", li.seq, v.res.LastSeq)}
		}
		prevOK := p != nil && p.prevKnown && fast && p.prevOK
		if !(p != nil && p.prevKnown && fast) {
			prevOK = string(li.prev) == string(v.lastHash())
		}
		if !prevOK {
			return &VerifyError{Line: n, Reason: fmt.Sprintf("prev hash does not match line %d: that line was edited, or lines were replaced", n-1)}
		}
	}
	if len(li.mac) != 0 {
		v.signed++
		if len(v.keys) > 0 {
			var k *Key
			if p != nil && p.fast && fast && p.macKnown {
				k = &v.keys[p.key] // the worker found it by li.kid
			} else {
				for i := range v.keys {
					if v.keys[i].ID == string(li.kid) {
						k = &v.keys[i]
					}
				}
			}
			switch {
			case k == nil:
				return &VerifyError{Line: n, Reason: fmt.Sprintf("signed with key %s, which was not given (give every key the log was written with)", li.kid)}
			case p != nil && p.fast && fast && p.macKnown && !p.macOK, !(p != nil && p.fast && fast && p.macKnown) && !k.checkMAC(line):
				return &VerifyError{Line: n, Reason: fmt.Sprintf("MAC does not match (key %s): the line was changed, or the log was recomputed without the key", li.kid)}
			}
		}
	} else {
		v.unsigned++
		if len(v.keys) > 0 {
			return &VerifyError{Line: n, Reason: "no MAC although the log is verified with a key: the line was forged, or written before the log was keyed"}
		}
	}
	if !fast && e.Event == EventViolation && e.Detail[DetailTamper] != "" {
		return &VerifyError{Line: n, Reason: fmt.Sprintf("a writer found the log tampered with and recorded it (%s): %s", e.Detail[DetailTamper], e.Reason)}
	}
	v.res.Lines = n
	v.res.LastSeq = li.seq
	if p != nil {
		v.last = p.hash
	} else {
		copy(v.last[:], LineHash(line))
	}
	v.hasLast = true
	if v.head != nil && li.seq == v.head.Seq {
		v.headHashAt = string(v.last[:])
	}
	return nil
}

// finish checks the log's end against the head file.
func (v *chainVerifier) finish() (VerifyResult, error) {
	v.result()
	switch {
	case v.signed > 0 && len(v.keys) == 0:
		v.res.KeyMissing = true
	case v.signed == 0 && v.res.Lines > 0:
		v.res.Unkeyed = true
	}
	if len(v.keys) > 0 {
		v.res.MACsChecked = v.signed
	}
	if v.signed > 0 && v.unsigned > 0 && len(v.keys) == 0 {
		v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("%d lines carry no MAC", v.unsigned))
	}
	if v.head == nil {
		if v.res.Lines > 0 {
			v.res.Warnings = append(v.res.Warnings, "no head file: lines cut off the end of the log cannot be detected")
		}
		return v.res, nil
	}
	v.res.HeadUsed = true
	switch {
	case v.head.Seq > v.res.LastSeq:
		return v.res, &VerifyError{Reason: fmt.Sprintf("log truncated: the head file records seq %d but the log ends at seq %d (line %d)", v.head.Seq, v.res.LastSeq, v.res.Lines)}
	case v.head.Seq == v.res.LastSeq && v.head.Hash != v.res.LastHash:
		return v.res, &VerifyError{Line: v.res.Lines, Reason: fmt.Sprintf("last line (seq %d) differs from the one the head file records: it was edited or replaced", v.head.Seq)}
	case v.head.Seq < v.res.LastSeq:
		if v.headHashAt != v.head.Hash {
			return v.res, &VerifyError{Reason: fmt.Sprintf("line with seq %d differs from the one the head file records", v.head.Seq)}
		}
		v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("head file lags the log by %d lines (a writer was stopped between appending and updating the head)", v.res.LastSeq-v.head.Seq))
	}
	return v.res, nil
}

// rotatedFrom is a rotate event's Detail[DetailRotatedFrom].
func rotatedFrom(line []byte, fast bool, e *Event) string {
	if fast {
		if ev, err := ParseLine(line); err == nil {
			*e = ev
		}
	}
	return e.Detail[DetailRotatedFrom]
}

// VerifyFile verifies the log at path against its head file. A log that
// holds lines but has no head file fails with ErrHeadMissing: only the head
// file vouches for where the log ends (VerifyFilesWith with NoHead accepts
// such a log, with a warning).
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
	keys, err := defaultKeys(path)
	if err != nil {
		return VerifyResult{}, err
	}
	res, err := verifyFrom(f, head, nil, keys)
	if err == nil {
		err = requireHead(path, head, &res)
	}
	if err == nil {
		res.Warnings = append(res.Warnings, permissionWarnings(path, path+HeadSuffix)...)
	}
	return res, err
}

// requireHead fails a verified log file that holds lines but had no head
// file (ReadHeadFile gave nil: missing or empty). The chain proves every
// line follows the one before; only the head file says the last line is
// the last one written, so without it a log cut short verifies as whole.
func requireHead(path string, head *Head, res *VerifyResult) error {
	if head != nil || res.Lines == 0 {
		return nil
	}
	return &VerifyError{cause: ErrHeadMissing, Reason: fmt.Sprintf("head file %s is missing or empty: nothing vouches for the end of the log (%d lines, last seq %d), so lines cut off it would not show", path+HeadSuffix, res.Lines, res.LastSeq)}
}

// defaultKeys loads <log>.key when it exists.
func defaultKeys(path string) ([]Key, error) {
	if _, err := os.Stat(path + KeySuffix); err != nil {
		return nil, nil
	}
	k, err := LoadKey(path+KeySuffix, false)
	if err != nil {
		return nil, err
	}
	return []Key{k}, nil
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

// VerifyFiles verifies a rotated set, oldest first (a.jsonl.2 a.jsonl.1
// a.jsonl): each file on its own, and each file's first line chained onto
// the last line of the one before, so nothing is missing between them. The
// head file is checked for the last (current) file only, and must exist
// when that file holds lines (ErrHeadMissing; VerifyFilesWith's NoHead
// accepts its absence). Errors name the file.
func VerifyFiles(paths ...string) (VerifyResult, error) {
	var keys []Key
	if len(paths) > 0 {
		k, err := defaultKeys(paths[len(paths)-1])
		if err != nil {
			return VerifyResult{}, err
		}
		keys = k
	}
	return VerifyFilesKeyed(keys, paths...)
}

// VerifyFilesKeyed is VerifyFiles with the keys of a keyed log.
func VerifyFilesKeyed(keys []Key, paths ...string) (VerifyResult, error) {
	return VerifyFilesWith(VerifyOptions{Keys: keys}, paths...)
}

// VerifyOptions say how VerifyFilesWith checks a log or a rotated set.
type VerifyOptions struct {
	Keys []Key // the keys of a keyed log (nil: its MACs are not checked; KeyMissing says so)
	// NoHead accepts a last (current) file that holds lines but has no
	// head file: the chain is checked and a warning says that lines cut
	// off the end cannot be detected. Without it such a file fails with
	// ErrHeadMissing (a deleted head file must not make a truncated log
	// verify).
	NoHead bool
}

// VerifyFilesWith is VerifyFiles with explicit options.
func VerifyFilesWith(o VerifyOptions, paths ...string) (VerifyResult, error) {
	keys := o.Keys
	var total VerifyResult
	var prev *VerifyResult
	for i, p := range paths {
		var head *Head
		if i == len(paths)-1 {
			h, err := ReadHeadFile(p)
			if err != nil {
				return total, &VerifyError{Reason: fmt.Sprintf("%s: head file: %v", p, err)}
			}
			head = h
		}
		f, err := os.Open(p)
		if err != nil {
			return total, fmt.Errorf("audit: open log: %w", err)
		}
		res, err := verifyFrom(f, head, prev, keys)
		f.Close()
		if err == nil && i == len(paths)-1 && !o.NoHead {
			err = requireHead(p, head, &res)
		}
		if err != nil {
			if len(paths) == 1 {
				return total, err
			}
			if ve, ok := err.(*VerifyError); ok {
				return total, &VerifyError{Line: ve.Line, Reason: p + ": " + ve.Reason, cause: ve.cause}
			}
			return total, fmt.Errorf("%s: %w", p, err)
		}
		if i < len(paths)-1 {
			// A rotated file ends where the next one continues: its end is
			// proven by the next file's first line, not by a head file.
			res.Warnings = slices.DeleteFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, "no head file") })
		}
		total.Lines += res.Lines
		total.LastSeq, total.LastHash, total.HeadUsed = res.LastSeq, res.LastHash, res.HeadUsed
		total.Unkeyed = total.Unkeyed || res.Unkeyed
		total.KeyMissing = total.KeyMissing || res.KeyMissing
		total.MACsChecked += res.MACsChecked
		for _, w := range res.Warnings {
			if len(paths) > 1 {
				w = p + ": " + w
			}
			total.Warnings = append(total.Warnings, w)
		}
		total.Warnings = append(total.Warnings, permissionWarnings(p)...)
		r := res
		prev = &r
	}
	return total, nil
}

// Rotate renames the log at path to the next free path.N (path.1, path.2,
// ...) under its lock and starts a new log at path whose first event names
// the rotated file and carries its last hash; writers that have the old
// file open notice at their next event and continue in the new file. It
// returns the rotated file's new name. (Like logrotate's default create
// mode; copytruncate would cut the chain.)
func Rotate(path string) (string, error) {
	f, err := openRegular(path, os.O_APPEND)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("audit: lock %s: %w", path, err)
	}
	defer flock(int(f.Fd()), unix.LOCK_UN)
	// A keyed log's new file is keyed too: its rotate line carries a MAC,
	// or the set would not verify with the key.
	var opt Options
	if kp := KeyPath(path, ""); kp != "" {
		if _, err := os.Stat(kp); err == nil {
			k, err := LoadKey(kp, false)
			if err != nil {
				return "", fmt.Errorf("audit: rotate %s: %w", path, err)
			}
			opt.Key = &k
		}
	}
	dst := ""
	for n := 1; n < 100000 && dst == ""; n++ {
		if _, err := os.Lstat(path + "." + strconv.Itoa(n)); errors.Is(err, os.ErrNotExist) {
			dst = path + "." + strconv.Itoa(n)
		}
	}
	if dst == "" {
		return "", fmt.Errorf("audit: rotate %s: no free %s.N name", path, path)
	}
	r := rotationOf(f, dst, "rotated by agentbox audit rotate")
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("audit: rotate %s: %w", path, err)
	}
	// The head file described the rotated log; the new one gets its own.
	os.Remove(path + HeadSuffix)
	nw, err := OpenWith(path, opt)
	if err != nil {
		return dst, err
	}
	defer nw.Close()
	return dst, nw.writeRotate(r)
}
