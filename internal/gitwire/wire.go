package gitwire

import (
	"errors"
	"hash"
	"io"
)

// wire is the buffered reader every parser here reads through. Each byte a
// parser consumes is handed on (to out, or to held while holding), and,
// while hashing, fed to the pack checksum: both are done a buffer at a
// time, not a byte at a time. It implements io.ByteReader so that flate
// reads no further than the end of a zlib stream.
type wire struct {
	src  io.Reader
	buf  []byte
	r, w int
	base int64 // body offset of buf[0]

	out     func([]byte) error // where consumed bytes go on; nil: nowhere
	fwd     int                // buf index up to which bytes were handed on
	hold    bool               // hand on into held instead of out
	held    []byte
	holdCap int

	sum    hash.Hash // the pack checksum while non-nil
	hashed int       // buf index up to which bytes were hashed

	limit  int64 // body offset no read goes past (0: none); see setLimit
	limErr error

	err error // sticky error of src
}

// setLimit makes every read past body offset end stop there with err: a
// cap on the bytes consumed, however a parser above asks for them (an
// endless zlib stream of empty blocks asks for bytes and gives none).
func (w *wire) setLimit(end int64, err error) {
	w.limit, w.limErr = end, err
}

func newWire(src io.Reader, size int) *wire {
	return &wire{src: src, buf: make([]byte, size)}
}

// offset is the body offset of the next byte to be consumed.
func (w *wire) offset() int64 { return w.base + int64(w.r) }

// settle hands on and hashes every consumed byte not yet handed on.
func (w *wire) settle() error {
	if w.sum != nil && w.hashed < w.r {
		w.sum.Write(w.buf[w.hashed:w.r])
	}
	w.hashed = w.r
	if w.fwd < w.r {
		b := w.buf[w.fwd:w.r]
		w.fwd = w.r
		if w.hold {
			if len(w.held)+len(b) > w.holdCap {
				return tooLarge(w.offset(), "more than %d bytes held before the check", w.holdCap)
			}
			w.held = append(w.held, b...)
		} else if w.out != nil {
			if err := w.out(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// fill reads more of src once the buffer is consumed.
func (w *wire) fill() error {
	if w.r < w.w {
		return nil
	}
	if err := w.settle(); err != nil {
		return err
	}
	if w.err != nil {
		return w.err
	}
	w.base += int64(w.w)
	w.r, w.w, w.fwd, w.hashed = 0, 0, 0, 0
	for i := 0; i < 100; i++ {
		buf := w.buf
		if w.limit > 0 {
			room := w.limit - w.base
			if room <= 0 {
				w.err = w.limErr
				return w.err
			}
			if room < int64(len(buf)) {
				buf = buf[:room]
			}
		}
		n, err := w.src.Read(buf)
		w.w = n
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			w.err = err
		}
		if n > 0 {
			return nil
		}
		if w.err != nil {
			return w.err
		}
	}
	w.err = io.ErrNoProgress
	return w.err
}

// ReadByte consumes one byte.
func (w *wire) ReadByte() (byte, error) {
	if w.r == w.w {
		if err := w.fill(); err != nil {
			return 0, err
		}
	}
	c := w.buf[w.r]
	w.r++
	return c, nil
}

// Read consumes up to len(p) bytes.
func (w *wire) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.r == w.w {
		if err := w.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, w.buf[w.r:w.w])
	w.r += n
	return n, nil
}

// readFull consumes exactly len(p) bytes; a short body is io.ErrUnexpectedEOF.
func (w *wire) readFull(p []byte) error {
	_, err := io.ReadFull(w, p)
	return err
}

// startHold makes the bytes consumed from now on wait in held.
func (w *wire) startHold(limit int) error {
	if err := w.settle(); err != nil {
		return err
	}
	w.hold, w.holdCap = true, limit
	return nil
}

// release hands on what was held and stops holding.
func (w *wire) release() error {
	if err := w.settle(); err != nil {
		return err
	}
	w.hold = false
	b := w.held
	w.held = nil
	if len(b) > 0 && w.out != nil {
		return w.out(b)
	}
	return nil
}

// startSum starts the pack checksum at the next byte.
func (w *wire) startSum(h hash.Hash) error {
	if err := w.settle(); err != nil {
		return err
	}
	w.sum = h
	return nil
}

// stopSum ends the checksum before the next byte and returns it.
func (w *wire) stopSum() ([]byte, error) {
	if err := w.settle(); err != nil {
		return nil, err
	}
	h := w.sum
	w.sum = nil
	return h.Sum(nil), nil
}

// atEOF reports whether the body has no byte left to consume.
func (w *wire) atEOF() (bool, error) {
	if w.r < w.w {
		return false, nil
	}
	err := w.fill()
	if err == io.EOF {
		return true, nil
	}
	return false, err
}
