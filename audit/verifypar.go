package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Parallel verification. A line's hash and MAC depend on the line alone,
// and they are nearly all of verify's work, so they are computed on every
// CPU: a reader cuts the log into chunks of whole lines, workers scan,
// hash and check the MACs of a chunk's lines, and the chain — each line's
// seq and prev against the line before — is then checked in file order,
// by the same chainVerifier as the sequential path, from what the workers
// found. Memory stays flat: a fixed number of chunk buffers circulate.

// parChunk is the size the reader aims for (a chunk holds whole lines;
// one longer line grows its buffer up to MaxLineBytes).
const parChunk = 1 << 20

// pre is what a worker found for one line.
type pre struct {
	li       lineInfo
	fast     bool
	hash     [64]byte // hex SHA-256 of the line
	macKnown bool     // the MAC was checked (a key for its kid was given)
	macOK    bool
	key      int // with macKnown: the index of that key (the last with the id)
	// prevKnown: the worker compared prev with the hash of the line before
	// in the same chunk (prevOK), while both were in its cache
	prevKnown, prevOK bool
}

type chunk struct {
	buf   []byte
	lines [][]byte // the lines, without newlines, as slices of buf
	pres  []pre
	err   error // set on the last chunk: a line error or a read error
	errAt int   // the 1-based number of the line err is about
	frag  []byte
	done  chan struct{}
}

// verifyParallel is verifyFrom on every CPU. It gives exactly the result
// and the error verifyFrom would.
func verifyParallel(r io.Reader, head *Head, prev *VerifyResult, keys []Key) (VerifyResult, error) {
	v := &chainVerifier{head: head, prev: prev, keys: keys}
	var verr error
	err := scanParallel(r, keys, true, func(line []byte, n int, p *pre) bool {
		if err := v.lineInfoPre(line, n, p); err != nil {
			verr = err
			return false
		}
		return true
	}, func(err error, frag []byte) bool {
		if v.unfinishedTail(err, frag) {
			return false
		}
		verr = v.lineError(err)
		return false
	})
	switch {
	case err != nil:
		return v.result(), err
	case verr != nil:
		return v.result(), verr
	}
	return v.finish()
}

// scanParallel reads a log in chunks, precomputes every line on all CPUs,
// and calls line for each line in file order (n is its number), and bad
// for a *LineError (a torn last line, with its fragment; an overlong
// line, after which reading goes on). Either returning false stops the
// scan. The error is a failure to read the log. chainOnly: see
// precomputeInto.
func scanParallel(r io.Reader, keys []Key, chainOnly bool, line func(line []byte, n int, p *pre) bool, bad func(err error, frag []byte) bool) error {
	workers := runtime.GOMAXPROCS(0)
	inflight := 2*workers + 2
	free := make(chan []byte, inflight)
	for i := 0; i < inflight; i++ {
		free <- make([]byte, 0, parChunk+64<<10)
	}
	freePres := make(chan []pre, inflight)
	order := make(chan *chunk, inflight)
	work := make(chan *chunk, inflight)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h lineHasher
			for c := range work {
				if c.pres == nil {
					select {
					case c.pres = <-freePres:
					default:
					}
				}
				if cap(c.pres) < len(c.lines) {
					c.pres = make([]pre, len(c.lines))
				}
				c.pres = c.pres[:len(c.lines)]
				for i, l := range c.lines {
					p := &c.pres[i]
					precomputeInto(p, l, keys, &h, chainOnly)
					if i > 0 && p.fast {
						p.prevKnown, p.prevOK = true, string(p.li.prev) == string(c.pres[i-1].hash[:])
					}
				}
				close(c.done)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(work)
		readChunks(r, free, stop, func(c *chunk) bool {
			select {
			case order <- c:
			case <-stop:
				return false
			}
			if len(c.lines) > 0 {
				work <- c
			} else {
				close(c.done)
			}
			return true
		})
	}()
	finish := func() {
		close(stop)
		for c := range order { // drain: the reader and workers end
			<-c.done
		}
		wg.Wait()
	}
	n := 0
	for c := range order {
		<-c.done
		for i, l := range c.lines {
			n++
			if !line(l, n, &c.pres[i]) {
				finish()
				return nil
			}
		}
		if c.err != nil {
			var re *readError
			if errors.As(c.err, &re) {
				finish()
				return fmt.Errorf("read line %d: %w", n+1, re.err)
			}
			n++
			le := c.err.(*LineError)
			le.Line = n
			if !bad(le, c.frag) {
				finish()
				return nil
			}
		}
		if c.buf != nil {
			select {
			case free <- c.buf[:0]:
			default:
			}
		}
		if c.pres != nil {
			select {
			case freePres <- c.pres[:0]:
			default:
			}
		}
	}
	finish()
	return nil
}

// precomputeInto scans, hashes and MAC-checks one line into *p: a digest
// MAC and the line's hash in one pass of SHA-256, with a worker's reusable
// hasher h (lineHasher). A line whose digest MAC checks is read with
// scanChain (scantrusted.go) with chainOnly (verify, which needs only the
// chain fields), else (report) with scanInfo trusting its strings; any
// other line with scanInfo.
func precomputeInto(p *pre, line []byte, keys []Key, h *lineHasher, chainOnly bool) {
	*p = pre{}
	hashed := false
	var macKey *Key
	var digest, macOK bool
	if len(keys) > 0 {
		if ki := suffixKey(line, keys); ki >= 0 {
			macKey = &keys[ki]
			p.key = ki
			p.hash, digest, macOK = h.hashAndMAC(*macKey, line)
			hashed = true
			if digest && macOK {
				var li lineInfo
				var ok bool
				if chainOnly {
					li, ok = scanChain(line)
				} else {
					li, ok = scanInfoWith(line, true)
				}
				if ok && string(li.kid) == macKey.ID && string(li.event) != EventViolation {
					p.li, p.fast, p.macKnown, p.macOK = li, true, true, true
					return
				}
			}
		}
	}
	p.li, p.fast = scanInfo(line)
	if p.fast && string(p.li.event) == EventViolation {
		p.fast = false
	}
	if p.fast && len(p.li.mac) != 0 && len(keys) > 0 {
		for i := len(keys) - 1; i >= 0; i-- {
			if keys[i].ID == string(p.li.kid) {
				p.key = i
				if !hashed || macKey.ID != keys[i].ID {
					p.hash, digest, macOK = h.hashAndMAC(keys[i], line)
					hashed = true
				}
				p.macOK = macOK
				if !digest {
					p.macOK = keys[i].checkMAC(line)
				}
				p.macKnown = true
				return
			}
		}
	}
	if !hashed {
		sum := sha256.Sum256(line)
		hex.Encode(p.hash[:], sum[:])
	}
}

// suffixKey returns the index of the key (the last of keys with that id)
// the line's kid field, the next to last of a signed line
// (`,"kid":"<id>","mac":"<mac>"}`), names; -1 when there is none.
func suffixKey(line []byte, keys []Key) int {
	signed, _, ok := macSuffixBytes(line)
	if !ok || len(signed) == 0 || signed[len(signed)-1] != '"' {
		return -1
	}
	for i := len(keys) - 1; i >= 0; i-- {
		id := keys[i].ID
		end := len(signed) - 1
		start := end - len(id) - len(`,"kid":"`)
		if start >= 0 && string(signed[end-len(id):end]) == id && string(signed[start:end-len(id)]) == `,"kid":"` {
			return i
		}
	}
	return -1
}

// readChunks cuts r into chunks of whole lines and hands each to emit, in
// order. A chunk's err ends it: a torn last line (frag) or a read error
// end the reading; an overlong line (its place: after the chunk's lines)
// is skipped and reading goes on. It stops when emit returns false or
// stop is closed.
func readChunks(r io.Reader, free chan []byte, stop chan struct{}, emit func(*chunk) bool) {
	var carry []byte
	skipping := false // inside an overlong line: drop bytes up to its newline
	eof := false
	for !eof {
		var buf []byte
		select {
		case buf = <-free:
		case <-stop:
			return
		}
		buf = append(buf[:0], carry...)
		carry = nil
		// fill to parChunk, and on until a newline
		for {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			m, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			if skipping {
				if i := bytes.IndexByte(buf, '\n'); i >= 0 {
					buf = append(buf[:0], buf[i+1:]...)
					skipping = false
				} else {
					buf = buf[:0]
				}
			}
			if err == io.EOF {
				eof = true
				break
			}
			if err != nil {
				c := &chunk{buf: buf, done: make(chan struct{}), err: &readError{err}}
				c.lines = splitLines(buf[:bytes.LastIndexByte(buf, '\n')+1])
				emit(c)
				return
			}
			if len(buf) >= parChunk && bytes.LastIndexByte(buf, '\n') >= 0 {
				break
			}
			if !skipping && len(buf) > MaxLineBytes+1 && bytes.IndexByte(buf, '\n') < 0 {
				// an overlong line: reported, then skipped to its end
				c := &chunk{buf: buf, done: make(chan struct{}), err: &LineError{Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}}
				if !emit(c) {
					return
				}
				skipping = true
				buf = nil
				select {
				case buf = <-free:
				case <-stop:
					return
				}
				buf = buf[:0]
			}
		}
		end := bytes.LastIndexByte(buf, '\n') + 1
		c := &chunk{buf: buf, done: make(chan struct{})}
		c.lines = splitLines(buf[:end])
		var rest []byte
		if end < len(buf) {
			rest = buf[end:]
			if !eof {
				carry = append([]byte(nil), rest...)
			}
		}
	overlong:
		for i, l := range c.lines {
			if len(l) > MaxLineBytes {
				// an overlong line in the middle: reported at its place,
				// then the lines after it (which keep the buffer: it is
				// recycled only once they are done)
				errc := &chunk{done: make(chan struct{}), lines: c.lines[:i],
					err: &LineError{Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}}
				if !emit(errc) {
					return
				}
				c.lines = c.lines[i+1:]
				goto overlong
			}
		}
		if eof && len(rest) > 0 {
			if len(rest) > MaxLineBytes+1 {
				c.err = &LineError{Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
			} else {
				c.frag = rest
				c.err = &LineError{Err: fmt.Errorf("%w: %d bytes without a terminating newline", ErrTornLine, len(rest))}
			}
		}
		if !emit(c) {
			return
		}
	}
}

// splitLines cuts b (whole lines) into lines without their newlines.
func splitLines(b []byte) [][]byte {
	out := make([][]byte, 0, len(b)/256+1)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		out = append(out, b[:i])
		b = b[i+1:]
	}
	return out
}

// readError is a read failure of the log itself (not a line's).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
