package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Options tune a Writer opened with OpenWith.
type Options struct {
	// Sync makes every Write call fdatasync(2) on the log and its head file
	// before returning, so an event survives a power loss or kernel crash,
	// not only a killed agentbox. It costs one disk flush per event (see
	// BenchmarkWrite); without it a line reaches the page cache in one
	// write(2) and survives any process death.
	Sync bool
	// Key, when set, signs every line (see key.go).
	Key *Key
}

// Writer appends events to an audit log. It is safe for concurrent use by
// goroutines, and any number of processes may write the same file at once:
// each Write takes an exclusive flock(2) on the log, reads the last line to
// continue the sequence number and hash chain (unless one stat(2) shows the
// file as this writer left it: the chain then continues from memory, see
// appendFast), appends the new line with a single write(2), updates the
// head file and releases the lock. Lines are therefore never interleaved,
// lost or mis-chained across processes.
type Writer struct {
	mu     sync.Mutex
	f      *os.File // the log; O_APPEND|O_CLOEXEC
	head   *os.File // "<log>.head"; nil for stdout
	path   string
	stdout bool
	sync   bool
	closed bool
	key    *Key

	// stdout state: there is no file to read the chain back from, so the
	// chain continues in process only.
	seq  uint64
	prev string

	// After a write: the log's size, last seq and last line hash. When the
	// log still has that size and the head file still records that line,
	// the next write skips reading the tail back (no other writer came in
	// between; an in-place edit of the same size is found by Verify).
	lastSize int64
	lastSeq  uint64
	lastHash string

	// The log file's identity (device and inode) as opened: a write whose
	// stat(2) of the path finds this file at the size it left it takes the
	// fast path (appendFast): no fstat, no head read, no allocation but
	// the chain hash.
	dev, ino uint64
	hfd      int           // w.head's descriptor
	wbuf     []byte        // the fast path's line buffer, reused
	mac      hash.Hash     // HMAC-SHA-256 under key, reset per line
	headRec  [headLen]byte // the head record buffer
	// lastSeqFast is lastSeq while a fast write is under way (which
	// clears lastSeq until it completes); fastWrites counts fast writes.
	lastSeqFast uint64
	fastWrites  int

	// Group commit (WriteBatch): callers that arrive while another one
	// writes queue here; one of them then writes the whole queue under one
	// lock with one write(2) and one head update.
	qmu     sync.Mutex
	queue   []*writeReq
	leading bool // a caller is writing the queue
	writes  int  // writes made (under mu), for tests
}

// writeReq is one caller's events waiting in the group-commit queue.
type writeReq struct {
	events []Event
	done   chan writeResult
}

// writeResult answers a queued caller: its events' write error, or that
// it now leads and writes the queue itself.
type writeResult struct {
	err  error
	lead bool
}

// HeadSuffix is appended to the log's path to name its head file.
const HeadSuffix = ".head"

// Open opens (creating it if needed) the audit log at path for appending,
// with default Options. "-" writes to standard output: sequence numbers and
// the hash chain then continue only within this process and there is no
// head file. Parent directories are created 0700, the log and head file
// 0600; a symlink in the last path component is refused, so a log path
// cannot be redirected.
func Open(path string) (*Writer, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with explicit Options.
func OpenWith(path string, opt Options) (*Writer, error) {
	if path == "" {
		return nil, errors.New("audit: empty log path")
	}
	if path == "-" {
		return &Writer{f: os.Stdout, path: "-", stdout: true, sync: false, key: opt.Key}, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("audit: create log directory %s: %w", dir, err)
		}
	}
	f, err := openRegular(path, os.O_APPEND)
	if err != nil {
		return nil, err
	}
	h, err := openRegular(path+HeadSuffix, 0)
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &Writer{f: f, head: h, path: path, sync: opt.Sync, key: opt.Key}
	w.noteFiles()
	return w, nil
}

// noteFiles records the open log's identity and the head's descriptor
// (after Open and after a rotation reopened both).
func (w *Writer) noteFiles() {
	var st unix.Stat_t
	w.dev, w.ino = 0, 0
	if unix.Fstat(int(w.f.Fd()), &st) == nil {
		w.dev, w.ino = st.Dev, st.Ino
	}
	w.hfd = int(w.head.Fd())
}

func openRegular(path string, extra int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|extra|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("audit: refusing log file %s: it is a symlink", path)
		}
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: stat %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("audit: refusing log file %s: not a regular file (%s)", path, st.Mode().Type())
	}
	return f, nil
}

// DefaultPath is where the log lives when no --audit flag is given:
// $XDG_STATE_HOME/agentbox/audit.jsonl, else ~/.local/state/agentbox/audit.jsonl
// (and /var/lib/agentbox/audit.jsonl when there is no home directory).
func DefaultPath() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", "audit.jsonl")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "agentbox", "audit.jsonl")
	}
	return "/var/lib/agentbox/audit.jsonl"
}

// Path returns the path the writer was opened with ("-" for stdout).
func (w *Writer) Path() string { return w.path }

// Fd returns the log's file descriptor, so a launcher can check it is not
// inherited by the sandbox (it is opened O_CLOEXEC in any case).
func (w *Writer) Fd() uintptr { return w.f.Fd() }

// Fds returns every descriptor the writer holds (log and head file).
func (w *Writer) Fds() []uintptr {
	if w.head == nil {
		return []uintptr{w.f.Fd()}
	}
	return []uintptr{w.f.Fd(), w.head.Fd()}
}

// Close releases the files. Writes after Close fail. Closing a stdout writer
// does not close standard output.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.stdout {
		return nil
	}
	err := w.f.Close()
	if herr := w.head.Close(); err == nil {
		err = herr
	}
	return err
}

// Write appends e to the log. It sets e.Time to now (UTC) when zero, and
// always sets e.Seq and e.Prev to continue the chain; the caller's values
// of Seq and Prev are ignored.
//
// If the log's tail does not match the head file (lines cut off the end, the
// last line edited, a torn last line, the head file deleted), Write first
// appends a "violation" event describing what it found (Detail
// "audit_tamper"), then e, in the same write(2). It never repairs or hides
// what it found; Verify reports those events.
func (w *Writer) Write(e Event) error {
	return w.WriteBatch([]Event{e})
}

// WriteBatch appends events in order as Write does, under one lock with
// one write(2) and one head update: a batch is never torn and never
// interleaved with another writer's lines.
//
// Calls from several goroutines are group-committed: while one writes,
// the others queue, and the next write carries every queued caller's
// events (each caller's events stay together and in order). A call still
// returns only once its events are written (or failed, with the error of
// the write that carried them), so "written before the program runs"
// holds as for a single writer.
func (w *Writer) WriteBatch(events []Event) error {
	if len(events) == 0 {
		return nil
	}
	for i := range events {
		quoteInvalidArgv(&events[i])
		redactEvent(&events[i])
		capEvent(&events[i])
	}
	if !handEncodable(events) {
		// Such an event can fail to encode: never let it fail other
		// callers' events in a shared write.
		return w.writeOnce(events)
	}
	w.qmu.Lock()
	if !w.leading {
		// Nobody writing: write at once (no queue entry, no channel).
		w.leading = true
		w.qmu.Unlock()
		defer w.passLead()
		return w.writeOnce(events)
	}
	req := &writeReq{events: events, done: make(chan writeResult, 1)}
	w.queue = append(w.queue, req)
	w.qmu.Unlock()
	if r := <-req.done; !r.lead {
		return r.err
	}
	// Handed the lead: req is first in the queue; write all of it.
	w.qmu.Lock()
	batch := w.queue
	w.queue = nil
	w.qmu.Unlock()
	all := req.events
	if len(batch) > 1 {
		n := 0
		for _, r := range batch {
			n += len(r.events)
		}
		all = make([]Event, 0, n)
		for _, r := range batch {
			all = append(all, r.events...)
		}
	}
	// Deferred, so that even a panic in the write answers every queued
	// caller and passes the lead on: nobody waits forever.
	err := errWriteAborted
	defer func() {
		for _, r := range batch {
			if r != req {
				r.done <- writeResult{err: err}
			}
		}
		w.passLead()
	}()
	err = w.writeOnce(all)
	if len(batch) > 1 {
		// each caller's events get the seq they were written with
		k := 0
		for _, r := range batch {
			for j := range r.events {
				r.events[j].Seq, r.events[j].Prev = all[k].Seq, all[k].Prev
				k++
			}
		}
	}
	return err
}

// WriteSeq writes e as Write does and returns the seq it was written
// with: a checkpoint records the seq of the event of the program it
// precedes.
func (w *Writer) WriteSeq(e Event) (uint64, error) {
	ev := []Event{e}
	err := w.WriteBatch(ev)
	return ev[0].Seq, err
}

// errWriteAborted answers the callers of a group-committed write that
// ended in a panic.
var errWriteAborted = errors.New("audit: the write carrying these events was aborted")

// writeOnce is one write under the file mutex (released even on a panic).
func (w *Writer) writeOnce(events []Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(events)
}

// passLead ends a write: the first caller that queued meanwhile writes
// the queue next; with none, nobody leads.
func (w *Writer) passLead() {
	w.qmu.Lock()
	if len(w.queue) > 0 {
		w.queue[0].done <- writeResult{lead: true}
	} else {
		w.leading = false
	}
	w.qmu.Unlock()
}

// handEncodable reports whether every event's time is one the line encoder
// writes without encoding/json (which refuses some, see marshalLine); a
// zero time becomes now.
func handEncodable(events []Event) bool {
	for i := range events {
		if t := events[i].Time; !t.IsZero() && !handEncodableTime(t) {
			return false
		}
	}
	return true
}

// handEncodableTime reports whether appendEventLine writes t (a year of
// four digits, a zone offset of whole minutes).
func handEncodableTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999 && zoneWholeMinutes(t)
}

// writeHook, set by tests, runs at the start of every write.
var writeHook func(events []Event)

// writeLocked is WriteBatch's write; w.mu is held.
func (w *Writer) writeLocked(events []Event) error {
	w.writes++
	if writeHook != nil {
		writeHook(events)
	}
	if w.closed {
		return fmt.Errorf("audit: write to closed log %s", w.path)
	}
	if w.stdout {
		return w.writeStdout(events)
	}

	fd := int(w.f.Fd())
	if err := flock(fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("audit: lock %s: %w", w.path, err)
	}
	if w.lastSeq > 0 && w.ino != 0 {
		// One stat of the path says both that it still names the open
		// file (not rotated, removed or replaced) and, the file being
		// the same, its size: at the size this writer left it, no other
		// writer came in between and the head file holds this writer's
		// record (an edit of the head alone is overwritten below; one of
		// the log that keeps its size is found by Verify).
		var cur unix.Stat_t
		if unix.Stat(w.path, &cur) == nil && cur.Dev == w.dev && cur.Ino == w.ino && cur.Size == w.lastSize && handEncodable(events) {
			w.lastSeqFast = w.lastSeq
			return func() error {
				defer flock(fd, unix.LOCK_UN)
				return w.appendFast(fd, events)
			}()
		}
	}
	var rot *rotation
	var st unix.Stat_t // the open file's, for replaced and the size check below
	fstatErr := unix.Fstat(fd, &st)
	if why := w.replaced(&st, fstatErr); why != "" {
		// The file was rotated (renamed), removed or replaced under us:
		// continue in a new file at the configured path, whose first
		// event names the old one and carries its last hash.
		r, err := w.reopen(why)
		flock(fd, unix.LOCK_UN)
		if err != nil {
			return err
		}
		rot = r
		fd = int(w.f.Fd())
		if err := flock(fd, unix.LOCK_EX); err != nil {
			return fmt.Errorf("audit: lock %s: %w", w.path, err)
		}
	}
	defer flock(fd, unix.LOCK_UN)

	h, herr := readHead(w.head)
	var t tail
	var err error
	// st was taken under the lock (and a rotation does not take this path).
	if rot == nil && w.lastSeq > 0 && herr == nil && h.ok && h.seq == w.lastSeq && h.hash == w.lastHash &&
		fstatErr == nil && st.Size == w.lastSize {
		t = tail{size: st.Size, known: true, seq: w.lastSeq, hash: w.lastHash}
	} else if t, err = readTail(w.f); err != nil {
		w.lastSeq = 0
		return fmt.Errorf("audit: read tail of %s: %w", w.path, err)
	}
	w.lastSeq = 0 // set again once this write is complete

	var buf bytes.Buffer
	seq, prev, h, err := w.chainStart(fd, &t, h, herr, rot, &buf)
	if err != nil {
		return err
	}
	return w.appendEvents(fd, events, &buf, t.size, h.size, seq, prev)
}

// writeStdout is writeLocked for standard output: no lock, tail or head
// file; the chain is this process's.
func (w *Writer) writeStdout(events []Event) error {
	var out []byte
	for i := range events {
		e := &events[i]
		if e.Time.IsZero() {
			e.Time = time.Now().UTC()
		}
		e.Seq, e.Prev = w.seq+1, w.prev
		line, err := w.line(e)
		if err != nil {
			return err
		}
		out = append(out, line...)
		w.seq, w.prev = e.Seq, LineHash(line[:len(line)-1])
	}
	if _, err := w.f.Write(out); err != nil {
		return fmt.Errorf("audit: write to stdout: %w", err)
	}
	return nil
}

// chainStart works out where this write's lines chain on (seq and prev)
// from the log's tail t and head file h (herr: reading it failed) under
// the lock, after a rotation rot if any, and writes into buf what goes
// before the events: a rotated file's first line, the newline that ends a
// torn line, and the writer's own findings (tampering, a dropped
// unfinished line) as violation events. It returns the head as it now
// describes the file; t's size and fragment are updated when an
// unfinished line is dropped.
func (w *Writer) chainStart(fd int, t *tail, h head, herr error, rot *rotation, buf *bytes.Buffer) (seq uint64, prev string, _ head, _ error) {
	var note, kind string
	if rot == nil && t.size == 0 && herr == nil && h.ok && h.seq > 0 {
		// An empty log whose head file names a last line: the log was
		// rotated while no agentbox had it open (logrotate's create mode
		// between runs) when a file beside it ends with exactly that line;
		// otherwise it was emptied, which the "truncated" note says below.
		rot = w.rotatedAway(h)
	}
	if rot != nil && t.size == 0 {
		// First in the new file (another writer may have been first).
		line, err := w.rotateLine(rot)
		if err != nil {
			return 0, "", h, err
		}
		buf.Write(line)
		seq, prev = rot.seq+1, LineHash(line[:len(line)-1])
		h = head{size: h.size, ok: true, seq: seq, hash: prev} // the head now describes this file
		herr = nil
	}
	if t.known {
		seq, prev = t.seq, t.hash
	}
	if t.last != nil {
		prev = LineHash(t.last)
		if s, err := lineSeq(t.last); err == nil {
			seq = s
		} else {
			note, kind = fmt.Sprintf("last line of the log is not a valid event (%v)", err), "bad_tail"
			if herr == nil && h.ok && h.seq > seq {
				seq = h.seq
			}
		}
	}
	dropped := 0
	if len(t.frag) > 0 && note == "" && herr == nil && h.ok && (h.seq < seq || h.seq == seq && h.hash == prev) {
		// An unfinished line after the last line the head file vouches
		// for: a writer killed inside its write(2) (a fatal signal ends
		// a write between page-cache folios). Its head update never
		// happened, so nothing was told the event was written: drop the
		// fragment and say so in the log.
		if err := unix.Ftruncate(fd, t.size-int64(len(t.frag))); err != nil {
			return 0, "", h, fmt.Errorf("audit: drop the unfinished last line of %s: %w", w.path, err)
		}
		dropped = len(t.frag)
		t.size -= int64(dropped)
		t.frag = nil
	}
	if len(t.frag) > 0 {
		// A torn line (a writer died mid-write, or an edit): terminate it
		// so our line starts on its own, and chain onto it as it is.
		buf.WriteByte('\n')
		prev = LineHash(t.frag)
		note = fmt.Sprintf("log ended in a torn line of %d bytes at offset %d; it was terminated and left in place", len(t.frag), t.size-int64(len(t.frag)))
		kind = "torn_tail"
	}
	if note == "" {
		switch {
		case herr != nil:
			note, kind = fmt.Sprintf("head file %s is unreadable: %v", w.path+HeadSuffix, herr), "bad_head"
		case !h.ok && t.size > 0:
			note, kind = fmt.Sprintf("head file %s is missing or empty but the log holds data", w.path+HeadSuffix), "no_head"
		case h.ok && h.seq > seq:
			note, kind = fmt.Sprintf("log truncated: head file records seq %d, log ends at seq %d", h.seq, seq), "truncated"
		case h.ok && h.seq == seq && h.hash != prev:
			note, kind = fmt.Sprintf("last line (seq %d) differs from the one the head file recorded", seq), "tail_edited"
		}
	}
	// The writer's own findings go first, chained like any event.
	logEvent := func(reason string, detail map[string]string) error {
		v := Event{Time: time.Now().UTC(), Event: EventViolation, Pid: os.Getpid(), Action: "audit:log", Reason: reason, Detail: detail}
		v.Seq, v.Prev = seq+1, prev
		line, err := w.line(&v)
		if err != nil {
			return err
		}
		buf.Write(line)
		seq, prev = v.Seq, LineHash(line[:len(line)-1])
		return nil
	}
	if note != "" {
		d := map[string]string{DetailTamper: kind}
		if h.ok {
			d["head_seq"] = strconv.FormatUint(h.seq, 10)
			d["head_hash"] = h.hash
		}
		if err := logEvent(note, d); err != nil {
			return 0, "", h, err
		}
	}
	if dropped > 0 {
		why := fmt.Sprintf("a writer was killed in the middle of writing an event: the %d bytes it left after seq %d were dropped", dropped, seq)
		if err := logEvent(why, map[string]string{DetailRecovered: "unfinished_line"}); err != nil {
			return 0, "", h, err
		}
	}
	return seq, prev, h, nil
}

// appendEvents chains events onto seq and prev after what buf holds,
// appends it all to the log (whose size was size) in one write, and
// records the new end in the head file (size: the head's recorded size)
// and in w.
func (w *Writer) appendEvents(fd int, events []Event, buf *bytes.Buffer, size, headSize int64, seq uint64, prev string) error {
	var lastHash string
	for i := range events {
		e := &events[i]
		if e.Time.IsZero() {
			e.Time = time.Now().UTC()
		}
		e.Seq, e.Prev = seq+1, prev
		line, err := w.line(e)
		if err != nil {
			return err
		}
		buf.Write(line)
		lastHash = LineHash(line[:len(line)-1])
		seq, prev = e.Seq, lastHash
	}
	if _, err := w.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("audit: append to %s: %w", w.path, err)
	}
	if err := writeHead(w.head, headSize, seq, lastHash); err != nil {
		return fmt.Errorf("audit: update head file %s: %w", w.path+HeadSuffix, err)
	}
	w.lastSize, w.lastSeq, w.lastHash = size+int64(buf.Len()), seq, lastHash
	if w.sync {
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("audit: fdatasync %s: %w", w.path, err)
		}
		if err := unix.Fdatasync(int(w.head.Fd())); err != nil {
			return fmt.Errorf("audit: fdatasync %s: %w", w.path+HeadSuffix, err)
		}
	}
	return nil
}

// marshalLine encodes e as one JSON line ending in '\n'. HTML characters are
// not escaped, so argv and actions stay readable.
func marshalLine(e *Event) ([]byte, error) {
	if handEncodableTime(e.Time) {
		return appendEventLine(make([]byte, 0, 1024), e), nil
	}
	// encoding/json refuses such a time; say so the same way
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("audit: encode %s event: %w", e.Event, err)
	}
	return b.Bytes(), nil
}

// zoneWholeMinutes reports whether t's zone offset is whole minutes (RFC
// 3339 cannot say anything else; encoding/json refuses other offsets).
func zoneWholeMinutes(t time.Time) bool {
	_, off := t.Zone()
	return off%60 == 0
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// tail is the end of a log file.
type tail struct {
	size int64
	// known: the last line is the one this writer wrote (seq, hash), not
	// read back (see Writer.lastSize).
	known bool
	seq   uint64
	hash  string
	last  []byte // last complete line without its '\n'; nil if there is none
	frag  []byte // bytes after the last '\n' (a torn line); empty if the file ends cleanly
}

// readTail reads the last complete line and any unterminated fragment after
// it, reading backwards from the end in growing chunks.
func readTail(f *os.File) (tail, error) {
	st, err := f.Stat()
	if err != nil {
		return tail{}, err
	}
	t := tail{size: st.Size()}
	if t.size == 0 {
		return t, nil
	}
	n := int64(4096)
	for {
		if n > t.size {
			n = t.size
		}
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, t.size-n); err != nil && err != io.EOF {
			return t, err
		}
		whole := n == t.size
		i := bytes.LastIndexByte(buf, '\n')
		if i < 0 {
			if whole {
				t.frag = buf
				return t, nil
			}
			n *= 2
			continue
		}
		j := bytes.LastIndexByte(buf[:i], '\n')
		if j < 0 && !whole {
			n *= 2
			continue
		}
		t.frag = buf[i+1:]
		t.last = buf[j+1 : i]
		return t, nil
	}
}

// lineSeq extracts the seq of one encoded event.
func lineSeq(line []byte) (uint64, error) {
	// The field scanner first (it is what verify reads lines with); a
	// line it does not take, or one without a seq, goes to encoding/json,
	// which says what is wrong.
	var e Event
	if decodeLine(line, &e) && e.Seq > 0 {
		return e.Seq, nil
	}
	var s struct {
		Seq *uint64 `json:"seq"`
	}
	if err := json.Unmarshal(line, &s); err != nil {
		return 0, err
	}
	if s.Seq == nil {
		return 0, errors.New("no seq field")
	}
	return *s.Seq, nil
}

// rotation is what a writer knew of the file it was appending to when it
// found that file rotated away.
type rotation struct {
	from, why string
	seq       uint64
	hash      string
}

// replaced reports whether the log's path no longer names the file this
// writer has open: renamed away (rotated), removed, or replaced by another
// file. "" when it still does. open is the open file's fstat (taken under
// the lock by the caller, which reuses it), fstatErr its error.
func (w *Writer) replaced(open *unix.Stat_t, fstatErr error) string {
	var cur unix.Stat_t
	if fstatErr != nil {
		return ""
	}
	if err := unix.Stat(w.path, &cur); err != nil {
		if open.Nlink == 0 {
			return "removed"
		}
		return "renamed"
	}
	if cur.Dev != open.Dev || cur.Ino != open.Ino {
		if open.Nlink == 0 {
			return "removed and replaced"
		}
		return "rotated"
	}
	return ""
}

// rotatedAway looks beside the log for the file it was renamed to
// (<log>.N, <log>-DATE, ...: logrotate's names, uncompressed) whose last
// line is the one the head file h records.
func (w *Writer) rotatedAway(h head) *rotation {
	var names []string
	for _, pat := range []string{w.path + ".*", w.path + "-*"} {
		m, _ := filepath.Glob(pat)
		names = append(names, m...)
	}
	for _, name := range names {
		if strings.HasSuffix(name, HeadSuffix) || strings.HasSuffix(name, ".key") {
			continue
		}
		f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			continue
		}
		r := rotationOf(f, name, "renamed while no agentbox had it open")
		f.Close()
		if r.seq == h.seq && r.hash == h.hash {
			return r
		}
	}
	return nil
}

// rotationOf reads what the rotated file f (now named name) ends with.
func rotationOf(f *os.File, name, why string) *rotation {
	r := &rotation{why: why, from: name}
	if t, err := readTail(f); err == nil {
		switch {
		case len(t.frag) > 0:
			r.hash = LineHash(t.frag)
		case t.last != nil:
			r.hash = LineHash(t.last)
		}
		if t.last != nil {
			r.seq, _ = lineSeq(t.last)
		}
	}
	return r
}

// reopen switches the writer to the file now at its path (created if
// missing), returning what it knew of the old one. Called with the old
// file locked, so its tail is final.
func (w *Writer) reopen(why string) (*rotation, error) {
	name := w.path + " (" + why + ")"
	if n, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(w.f.Fd()))); err == nil {
		name = n
	}
	r := rotationOf(w.f, name, why)
	f, err := openRegular(w.path, os.O_APPEND)
	if err != nil {
		return nil, err
	}
	h, err := openRegular(w.path+HeadSuffix, 0)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.f.Close()
	w.head.Close()
	w.f, w.head = f, h
	w.noteFiles()
	return r, nil
}

// writeRotate writes the rotate event that starts a new file (if it is
// still empty) and its head record.
func (w *Writer) writeRotate(r *rotation) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fd := int(w.f.Fd())
	if err := flock(fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("audit: lock %s: %w", w.path, err)
	}
	defer flock(fd, unix.LOCK_UN)
	t, err := readTail(w.f)
	if err != nil || t.size != 0 {
		return err
	}
	line, err := w.rotateLine(r)
	if err != nil {
		return err
	}
	if _, err := w.f.Write(line); err != nil {
		return fmt.Errorf("audit: append to %s: %w", w.path, err)
	}
	h, _ := readHead(w.head)
	return writeHead(w.head, h.size, r.seq+1, LineHash(line[:len(line)-1]))
}

// rotateLine encodes the first event of a file continuing rotation r.
func (w *Writer) rotateLine(r *rotation) ([]byte, error) {
	v := Event{Time: time.Now().UTC(), Event: EventRotate, Pid: os.Getpid(), Action: "audit:log",
		Reason: "continues " + r.from + " (" + r.why + ")",
		Detail: map[string]string{DetailRotatedFrom: r.from, DetailRotateWhy: r.why}}
	v.Seq, v.Prev = r.seq+1, r.hash
	return w.line(&v)
}

// line encodes e, signed when the writer has a key.
func (w *Writer) line(e *Event) ([]byte, error) {
	e.Kid, e.Mac = "", ""
	b, err := marshalLine(e)
	if err != nil || w.key == nil {
		return b, err
	}
	return w.key.sign(b), nil
}

// Synthesize appends n realistic events (launches, program starts allowed
// and denied, asks, network connections, exits) across a few agents and
// runs, in batches: a large log for benchmarks of Verify and Summarize.
func Synthesize(w *Writer, n int) error { return SynthesizeSized(w, n, 0) }

// synthReason is the text a long reason repeats: a real rule's
// description, as exec events carry them.
const synthReason = "allowed by developer/read-only (kind read-only): reads files and prints (cat, grep, base64, tac, jq...); options that write files or run programs (sort -o, rg --pre, xxd's output operand) are judged by the command parser. "

// SynthesizeSized is Synthesize with exec events of about lineBytes bytes
// (their reasons lengthened with real rule text; 0: the usual size).
func SynthesizeSized(w *Writer, n, lineBytes int) error {
	agents := []string{"main", "a1", "a2", "reviewer"}
	actions := []string{"tool:exec:make test", "tool:git:status", "tool:exec:go build ./...", "tool:git:push origin main",
		"tool:exec:curl https://example.com", "tool:exec:rm -rf build", "tool:net:proxy.golang.org:443", "tool:exec:ls -la"}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]Event, 0, 4096)
	for i := 0; i < n; i++ {
		a := agents[i%len(agents)]
		act := actions[(i*7)%len(actions)]
		e := Event{Time: t0.Add(time.Duration(i) * 37 * time.Millisecond), Agent: a, Role: "developer", Run: fmt.Sprintf("run%04d", i/500),
			Event: EventExec, Pid: 1000 + i%30000, Ppid: 999, Cwd: "/ws/target/proj", Action: act, Decision: DecisionAllow,
			Rule: "developer/read-only", Layer: "role", Reason: "allowed by developer/read-only (kind read-only)"}
		switch {
		case i%500 == 0:
			e.Event, e.Action, e.Decision, e.Rule, e.Layer, e.Reason = EventLaunch, "", "", "", "", ""
			e.Detail = map[string]string{"version": "dev", "policy_digest": "0123456789abcdef"}
		case i%500 == 499:
			x := 0
			e.Event, e.Action, e.Decision, e.Rule, e.Layer, e.Reason, e.Exit = EventExit, "", "", "", "", "", &x
		case strings.HasPrefix(act, "tool:git:push"):
			e.Event, e.Decision, e.Rule, e.Reason = EventGit, DecisionDeny, "developer/git.push", "denied by developer/git.push: agents never push"
		case strings.HasPrefix(act, "tool:exec:curl"):
			e.Decision, e.Rule, e.Reason = DecisionAskUnavailable, "developer/curl", "needs approval; no approver"
		case strings.HasPrefix(act, "tool:net:"):
			e.Event, e.Decision = EventNet, DecisionAllow
			e.Detail = map[string]string{"bytes_up": "512", "bytes_down": "20480"}
		default:
			e.Argv = strings.Fields(strings.SplitN(act, ":", 3)[2])
			e.Exe = "/usr/bin/" + e.Argv[0]
			if lineBytes > 450 {
				r := strings.Repeat(synthReason, (lineBytes-450)/len(synthReason)+1)
				e.Reason = r[:lineBytes-450]
				e.Detail = map[string]string{"identified_by": "file", "rule_source": "builtin:developer", "checkpoint": fmt.Sprintf("run%04d.%d", i/500, i%500)}
			}
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteBatch(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}
