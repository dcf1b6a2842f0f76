// Package export sends an agentbox audit log to an OpenTelemetry
// Collector (or any OTLP logs endpoint) with the OpenTelemetry Go SDK's
// OTLP exporters, over HTTP/protobuf or gRPC.
//
// The local log stays the source of truth and the spool: a Follower reads
// it from a cursor (a small file beside the log naming the last line the
// receiver acknowledged), sends what follows in batches, and moves the
// cursor only when a batch was acknowledged. While the receiver is down
// it retries the same batch with backoff; memory holds one batch, the
// disk holds nothing beyond the log and the fixed-size cursor. After a
// restart it resumes at the cursor, so nothing is lost; a batch is sent
// again only when the process died between the receiver's acknowledgement
// and the cursor's update (a cancelled Run first finishes the request under
// way and records it) (the records carry host, log, seq and chain
// hash, so the receiver drops such a repeat: VerifyFleet reports it as a
// duplicate, not as a gap or forgery).
//
// Each record's body is the log line byte for byte (secrets are redacted
// in the local log before it is written, so they are in the export too);
// its attributes name the event's fields (Format) and carry run, seq, prev
// hash, key id and MAC, so the receiving side can re-verify the chain
// with the host's key.
package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
)

// CursorPath is the cursor file of the export of the log at logPath to
// endpoint: one per (log, endpoint), so exports to two receivers keep
// their own positions.
func CursorPath(logPath, endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return logPath + ".export-" + hex.EncodeToString(sum[:6])
}

// ErrBusy is returned by Run when another process already exports this
// log to this endpoint (it holds the cursor's lock) and the Follower was
// not told to wait for it. That process sends every line, this run's too.
var ErrBusy = errors.New("another agentbox exports this log to this endpoint")

// Follower sends a local audit log's lines, from its cursor on, to an
// OTLP exporter.
type Follower struct {
	Log      string          // the local audit log
	Cursor   string          // cursor file (default CursorPath(Log, Source.Log))
	Exporter sdklog.Exporter // e.g. NewExporter's
	Source   Source          // host and log path named in every record
	Format   Format
	// BatchLines and BatchBytes bound one export request (defaults 512
	// lines, 512 KiB of lines): the memory a Follower holds.
	BatchLines, BatchBytes int
	// Poll is how often a caught-up Follower looks for new lines (default
	// 200ms); MaxBackoff bounds the wait between failed attempts
	// (default 5s; it starts at 100ms and doubles).
	Poll, MaxBackoff time.Duration
	// WaitLock makes Run wait for another exporter of the same log and
	// endpoint to finish instead of returning ErrBusy.
	WaitLock bool
	// OnError, when set, is told of each failed attempt (the batch is
	// kept and retried).
	OnError func(error)

	mu    sync.Mutex
	stats Stats
}

// Stats counts what a Follower did.
type Stats struct {
	Sent      uint64 // records acknowledged by the receiver
	Batches   uint64 // export requests acknowledged
	Failures  uint64 // export requests that failed (and were retried)
	LastSeq   uint64 // seq of the last acknowledged line
	Malformed uint64 // lines sent marked agentbox.malformed
}

// Stats returns the counts so far.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// state is where the Follower reads: the open log file and the position
// in it that the cursor records.
type state struct {
	file     *os.File
	dev, ino uint64
	offset   int64
	seq      uint64
	hash     string
	// next is the path to continue with once file is read to its end
	// (file is a rotated-away log); "" when file is the log itself.
	next string
	// check: the first line read must carry hash as its prev (resuming
	// from a cursor), or the log changed beneath the cursor.
	check bool
}

// Run follows the log until ctx is done (then it returns ctx's error) or
// until stop is closed and every line then in the log was acknowledged
// (then nil). A failed export never ends Run: the batch is retried. Run
// fails on what retrying cannot mend: a damaged cursor, a log cut below
// the cursor, a cursor naming a file that is gone.
func (f *Follower) Run(ctx context.Context, stop <-chan struct{}) error {
	if f.Cursor == "" {
		f.Cursor = CursorPath(f.Log, f.Source.Log)
	}
	lock, err := f.lock(ctx, stop)
	if err != nil {
		return err
	}
	defer lock.Close()
	st, err := f.open()
	if err != nil {
		return err
	}
	defer func() { st.file.Close() }()
	f.mu.Lock()
	f.stats.LastSeq = st.seq
	f.mu.Unlock()
	rec := newRecorder(f.Source, f.Format)
	buf := make([]byte, 0, f.batchBytes())
	backoff := 100 * time.Millisecond
	stopping := false
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n, err := f.step(ctx, st, rec, &buf)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return fatal.err
			}
			f.mu.Lock()
			f.stats.Failures++
			f.mu.Unlock()
			if f.OnError != nil {
				f.OnError(err)
			}
			if !sleep(ctx, backoff) {
				return ctx.Err()
			}
			backoff = min(2*backoff, f.maxBackoff())
			continue
		case n > 0:
			backoff = 100 * time.Millisecond
			continue
		}
		// Caught up with the file as it is now.
		if st.next != "" {
			if err := f.switchTo(st, st.next); err != nil {
				return err
			}
			continue
		}
		if moved, err := f.rotated(st); err != nil {
			return err
		} else if moved {
			continue
		}
		if stopping {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			stopping = true // one more pass reads what was written up to now
		case <-time.After(f.poll()):
		}
	}
}

type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (f *Follower) batchBytes() int {
	if f.BatchBytes > 0 {
		return f.BatchBytes
	}
	return 512 << 10
}

func (f *Follower) batchLines() int {
	if f.BatchLines > 0 {
		return f.BatchLines
	}
	return 512
}

func (f *Follower) poll() time.Duration {
	if f.Poll > 0 {
		return f.Poll
	}
	return 200 * time.Millisecond
}

func (f *Follower) maxBackoff() time.Duration {
	if f.MaxBackoff > 0 {
		return f.MaxBackoff
	}
	return 5 * time.Second
}

// lock takes the cursor's lock (flock on "<cursor>.lock"): one exporter
// per log and endpoint, so two never send the same lines.
func (f *Follower) lock(ctx context.Context, stop <-chan struct{}) (*os.File, error) {
	lf, err := os.OpenFile(f.Cursor+".lock", os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("export lock: %w", err)
	}
	for {
		err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return lf, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			lf.Close()
			return nil, fmt.Errorf("export lock %s: %w", lf.Name(), err)
		}
		if !f.WaitLock {
			lf.Close()
			return nil, fmt.Errorf("%s: %w", f.Log, ErrBusy)
		}
		select {
		case <-ctx.Done():
			lf.Close()
			return nil, ctx.Err()
		case <-stop:
			lf.Close()
			return nil, fmt.Errorf("%s: %w", f.Log, ErrBusy)
		case <-time.After(f.poll()):
		}
	}
}

func openLog(path string) (*os.File, uint64, uint64, error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("export: open audit log: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(fd.Fd()), &st); err != nil {
		fd.Close()
		return nil, 0, 0, fmt.Errorf("export: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		fd.Close()
		return nil, 0, 0, fmt.Errorf("export: %s is not a regular file", path)
	}
	return fd, uint64(st.Dev), st.Ino, nil
}

// open positions the Follower at its cursor: in the log itself, or in the
// rotated file the cursor names (then the log follows it).
func (f *Follower) open() (*state, error) {
	c, err := readCursor(f.Cursor)
	if err != nil {
		return nil, err
	}
	fd, dev, ino, err := openLog(f.Log)
	if err != nil {
		return nil, err
	}
	st := &state{file: fd, dev: dev, ino: ino}
	if c.Ino == 0 && c.Offset == 0 {
		return st, nil // a first export: from the log's start
	}
	if c.Dev != dev || c.Ino != ino {
		// Rotated since: finish the file the cursor names, if it is
		// still beside the log, then go on with the log.
		old := findRotated(f.Log, c.Dev, c.Ino)
		if old == "" {
			fd.Close()
			return nil, fmt.Errorf("export cursor %s names file %d:%d at offset %d (seq %d), no longer %s nor beside it: lines after seq %d may be unsent; move the cursor away to send %s from its start (the receiver then gets repeats)", f.Cursor, c.Dev, c.Ino, c.Offset, c.Seq, f.Log, c.Seq, f.Log)
		}
		fd.Close()
		if fd, _, _, err = openLog(old); err != nil {
			return nil, err
		}
		st = &state{file: fd, dev: c.Dev, ino: c.Ino, next: f.Log}
	}
	size, err := st.file.Seek(0, io.SeekEnd)
	if err != nil {
		st.file.Close()
		return nil, fmt.Errorf("export: %w", err)
	}
	if size < c.Offset {
		st.file.Close()
		return nil, fmt.Errorf("export: %s is %d bytes, shorter than the cursor's offset %d (seq %d): the log was cut", st.file.Name(), size, c.Offset, c.Seq)
	}
	st.offset, st.seq, st.hash, st.check = c.Offset, c.Seq, c.Hash, true
	return st, nil
}

// findRotated looks beside the log for the file with the given identity
// (logrotate's and `agentbox audit rotate`'s names: <log>.N, <log>-DATE).
func findRotated(log string, dev, ino uint64) string {
	var names []string
	for _, pat := range []string{log + ".*", log + "-*"} {
		m, _ := filepath.Glob(pat)
		names = append(names, m...)
	}
	for _, n := range names {
		var st unix.Stat_t
		if unix.Lstat(n, &st) == nil && uint64(st.Dev) == dev && st.Ino == ino && st.Mode&unix.S_IFMT == unix.S_IFREG {
			return n
		}
	}
	return ""
}

// rotated reports whether the log's path now names another file than the
// one read (after the caller read it to its end): the Follower reads the
// old file once more to its end, then switches.
func (f *Follower) rotated(st *state) (bool, error) {
	var cur unix.Stat_t
	if err := unix.Stat(f.Log, &cur); err != nil || (uint64(cur.Dev) == st.dev && cur.Ino == st.ino) {
		return false, nil // gone (not yet recreated) or unchanged
	}
	st.next = f.Log // step reads the rest of the old file first
	return true, nil
}

func (f *Follower) switchTo(st *state, path string) error {
	fd, dev, ino, err := openLog(path)
	if err != nil {
		return err
	}
	st.file.Close()
	st.file, st.dev, st.ino, st.offset, st.next = fd, dev, ino, 0, ""
	return nil
}

// step reads the next batch of whole lines after the cursor, exports it,
// and on acknowledgement moves the cursor. It returns how many lines it
// sent (0: none were waiting).
func (f *Follower) step(ctx context.Context, st *state, rec *recorder, buf *[]byte) (int, error) {
	b := (*buf)[:cap(*buf)]
	n, err := st.file.ReadAt(b, st.offset)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("export: read %s: %w", st.file.Name(), err)
	}
	b = b[:n]
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		if n == len(b) && n == cap(*buf) {
			// One line longer than the buffer: grow it, up to the
			// reader's bound on a line.
			if cap(*buf) > audit.MaxLineBytes {
				return 0, &fatalError{fmt.Errorf("export: %s: line at offset %d is longer than %d bytes", st.file.Name(), st.offset, audit.MaxLineBytes)}
			}
			*buf = make([]byte, 0, 2*cap(*buf))
			return f.step(ctx, st, rec, buf)
		}
		return 0, nil // nothing, or only an unfinished line
	}
	b = b[:end+1]
	var lines [][]byte
	for len(b) > 0 && len(lines) < f.batchLines() {
		i := bytes.IndexByte(b, '\n')
		lines = append(lines, b[:i])
		b = b[i+1:]
	}
	if st.check {
		if first, err := audit.ParseLine(lines[0]); err == nil && first.Prev != st.hash {
			return 0, &fatalError{fmt.Errorf("export: %s at offset %d: the line there (seq %d) does not follow the cursor's (seq %d): the log was rewritten beneath the cursor %s", st.file.Name(), st.offset, first.Seq, st.seq, f.Cursor)}
		}
	}
	var malformed uint64
	var lastSeq uint64
	for _, l := range lines {
		seq, ok := rec.add(l)
		if !ok {
			malformed++
		} else {
			lastSeq = seq
		}
	}
	recs := rec.take()
	// A request under way is not abandoned when ctx ends: the receiver
	// may already hold it, and the cursor must then say so, or the next
	// start sends the batch again. The exporter's timeout bounds it.
	if err := f.Exporter.Export(context.WithoutCancel(ctx), recs); err != nil {
		return 0, fmt.Errorf("export %d records after seq %d: %w", len(recs), st.seq, err)
	}
	last := lines[len(lines)-1]
	next := cursorRecord{Dev: st.dev, Ino: st.ino, Offset: st.offset + linesLen(lines), Seq: lastSeq, Hash: audit.LineHash(last)}
	if next.Seq == 0 {
		next.Seq = st.seq // a malformed last line: keep the last seq known
		if next.Seq == 0 {
			next.Seq = 1
		}
	}
	if err := writeCursor(f.Cursor, next); err != nil {
		return 0, &fatalError{err}
	}
	st.offset, st.seq, st.hash, st.check = next.Offset, next.Seq, next.Hash, false
	f.mu.Lock()
	f.stats.Sent += uint64(len(recs))
	f.stats.Batches++
	f.stats.LastSeq = next.Seq
	f.stats.Malformed += malformed
	f.mu.Unlock()
	return len(lines), nil
}

// linesLen is the bytes lines take in the file, newlines included.
func linesLen(lines [][]byte) int64 {
	var n int64
	for _, l := range lines {
		n += int64(len(l)) + 1
	}
	return n
}

// String describes the follower for messages.
func (f *Follower) String() string {
	return fmt.Sprintf("export of %s (cursor %s)", f.Log, strings.TrimPrefix(f.Cursor, filepath.Dir(f.Log)+"/"))
}
