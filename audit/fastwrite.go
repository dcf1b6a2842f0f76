package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// appendFast is writeLocked's path when the log is as this writer left it
// (the caller holds the lock and has checked, with one stat of the path,
// that the file is the one it has open and has the size it left): the
// chain continues from memory, the lines are encoded and signed into a
// reused buffer and appended with one write(2), and the head record is
// replaced with one pwrite(2). Together with the lock, its release and the
// stat, that is five system calls an event, against seven on the full path
// (which also fstats the file and reads the head back).
func (w *Writer) appendFast(fd int, events []Event) (err error) {
	w.fastWrites++
	w.lastSeq = 0 // set again once this write is complete
	buf := w.wbuf[:0]
	seq, prev := w.lastSeqFast, w.lastHash
	for i := range events {
		e := &events[i]
		if e.Time.IsZero() {
			e.Time = time.Now().UTC()
		}
		e.Seq, e.Prev = seq+1, prev
		e.Kid, e.Mac = "", ""
		start := len(buf)
		buf = appendEventLine(buf, e)
		if w.key != nil {
			buf = w.signAppended(buf, start)
		}
		sum := sha256.Sum256(buf[start : len(buf)-1])
		prev = hex.EncodeToString(sum[:])
		seq = e.Seq
	}
	if cap(buf) <= 64<<10 {
		w.wbuf = buf // keep the buffer, unless one large event grew it
	} else {
		w.wbuf = nil
	}
	if _, err := w.f.Write(buf); err != nil {
		return fmt.Errorf("audit: append to %s: %w", w.path, err)
	}
	if err := w.putHead(seq, prev); err != nil {
		return fmt.Errorf("audit: update head file %s: %w", w.path+HeadSuffix, err)
	}
	if w.sync {
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("audit: fdatasync %s: %w", w.path, err)
		}
		if err := unix.Fdatasync(w.hfd); err != nil {
			return fmt.Errorf("audit: fdatasync %s: %w", w.path+HeadSuffix, err)
		}
	}
	w.lastSize += int64(len(buf))
	w.lastSeq, w.lastSeqFast, w.lastHash = seq, seq, prev
	return nil
}

// signAppended signs the line buf[start:] ("{...}\n") in place: the same
// bytes Key.sign returns, without allocating.
func (w *Writer) signAppended(buf []byte, start int) []byte {
	buf = buf[:len(buf)-2] // the closing "}\n"
	buf = append(buf, `,"kid":"`...)
	buf = append(buf, w.key.ID...)
	buf = append(buf, '"')
	d := sha256.Sum256(buf[start:])
	if w.mac == nil {
		w.mac = hmac.New(sha256.New, w.key.Bytes)
	}
	w.mac.Reset()
	w.mac.Write(d[:])
	var m [sha256.Size]byte
	buf = append(buf, `,"mac":"`+macDigestPrefix...)
	buf = hex.AppendEncode(buf, w.mac.Sum(m[:0]))
	return append(buf, "\"}\n"...)
}

// putHead replaces the head record with one pwrite(2), formatted into the
// writer's buffer (the record formatHead makes).
func (w *Writer) putHead(seq uint64, hash string) error {
	if len(hash) != 64 {
		return fmt.Errorf("head hash of %d characters", len(hash))
	}
	rec := append(w.headRec[:0], headMagic+" seq="...)
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], seq, 10)
	for range 20 - len(d) {
		rec = append(rec, '0')
	}
	rec = append(rec, d...)
	rec = append(rec, " hash="...)
	rec = append(rec, hash...)
	rec = append(rec, '\n')
	n, err := unix.Pwrite(w.hfd, rec, 0)
	if err == nil && n != len(rec) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(rec))
	}
	return err
}
