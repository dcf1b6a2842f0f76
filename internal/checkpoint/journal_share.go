package checkpoint

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What the journal shares with a run, so that a run asks it nothing when
// nothing changed (issue 47: a shell's every command asked, ~0.2 ms of
// CPU each between the run and the journal, and the end of every run
// waited for an answer).
//
// The journal hands a run, with the answer to its start question, two
// descriptors (SCM_RIGHTS, received close-on-exec: they never reach a
// sandbox): a page of its memory (a memfd, which the run maps read-only)
// holding a sequence number, and its inotify descriptor. The sequence is
// a seqlock over the journal's reading of its queue: odd from before the
// journal reads events until it has applied them, even otherwise, and
// only bumped when there is something to read (drain). Every answer to a
// "dirty" question carries the sequence at which the journal had drained
// its queue (resp.Seq).
//
// A run that holds a checkpoint current as of the answer with sequence
// S asks nothing when (unchanged): the sequence is S, the inotify queue
// is empty (FIONREAD), the sequence is still S, and the connection is not
// hung up. Why that is enough: a change made under the areas after the
// journal drained at S queued its event before the system call that made
// it returned; at the FIONREAD the event is either still queued (not 0)
// or the journal has read it, and it made the sequence odd before that
// read, so the second load sees another sequence (it never goes back).
// A queue overflow is an event too. Several runs share one journal:
// another run's change moves the sequence, and everyone asks. The
// journal gone: the connection is hung up, and the run asks (and walks,
// as before). Events under excluded directories are not watched (the
// checkpoint leaves them out); an event that changes nothing checkpointed
// only makes the run ask. A counter the journal bumped after reading
// would not do alone: an event queued and not yet read moves no counter.

// jshare is the journal's side: the memfd and its page.
type jshare struct {
	fd  int
	mem []byte
	seq *uint64
}

// newJShare makes the shared page, the sequence at 2 (0 is "none" in an
// answer).
func newJShare() (*jshare, error) {
	fd, err := unix.MemfdCreate("agentbox-journal-seq", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(fd, 4096); err != nil {
		unix.Close(fd)
		return nil, err
	}
	mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	// a run maps it read-only; no one may make it shorter (a read past
	// its end would fault) or map it writable from now on
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_FUTURE_WRITE|unix.F_SEAL_SEAL)
	s := &jshare{fd: fd, mem: mem, seq: (*uint64)(unsafe.Pointer(&mem[0]))}
	atomic.StoreUint64(s.seq, 2)
	return s, nil
}

func (s *jshare) close() {
	unix.Munmap(s.mem)
	unix.Close(s.fd)
}

// now is the sequence (even while j.mu is held: drain bumps it back).
func (s *jshare) now() uint64 { return atomic.LoadUint64(s.seq) }

// jseen is a run's side: the journal's page, mapped read-only, and its
// inotify descriptor.
type jseen struct {
	mem  []byte
	seq  *uint64
	ifd  int
	conn int // the connection's descriptor (hung up: the journal went)
}

// adopt takes the descriptors of an answer's control message: the memfd
// (mapped, then closed) and the inotify descriptor. Anything else, and
// any failure, closes what came and shares nothing.
func adopt(oob []byte, conn int) *jseen {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if len(fds) != 2 {
		closeAll()
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil || st.Size < 4096 {
		closeAll()
		return nil
	}
	mem, err := unix.Mmap(fds[0], 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		closeAll()
		return nil
	}
	unix.Close(fds[0])
	return &jseen{mem: mem, seq: (*uint64)(unsafe.Pointer(&mem[0])), ifd: fds[1], conn: conn}
}

// unchanged reports whether nothing was queued or read by the journal
// since it drained its queue at sequence want (see above), and the
// journal is still there.
func (s *jseen) unchanged(want uint64) bool {
	if want == 0 || want&1 != 0 || atomic.LoadUint64(s.seq) != want {
		return false
	}
	if testBeforeFionread != nil {
		testBeforeFionread()
	}
	if n, err := unix.IoctlGetInt(s.ifd, fionread); err != nil || n != 0 {
		return false
	}
	if atomic.LoadUint64(s.seq) != want {
		return false
	}
	p := []unix.PollFd{{Fd: int32(s.conn), Events: unix.POLLRDHUP}}
	n, err := unix.Poll(p, 0)
	return err == nil && (n == 0 || p[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) == 0)
}

// testBeforeFionread, when set (tests), runs between the check's first
// load of the sequence and its FIONREAD.
var testBeforeFionread func()

// close releases them. The page is unmapped off the caller's path (a
// run's end: a munmap in a process of several threads waits for the
// others' TLBs to be flushed); nothing reads it once jc.seen is nil.
func (s *jseen) close() {
	unix.Close(s.ifd)
	go unix.Munmap(s.mem)
}

// askShare is ask for a run's first question, asking for the journal's
// descriptors as well (jc.seen; nil when the journal sent none: one of
// an earlier build).
func (jc *journalClient) askShare(q journalReq) (journalResp, error) {
	rc, ok := jc.c.(*rawConn)
	if !ok || jc.unread != 0 || jc.r.Buffered() != 0 || jc.seen != nil {
		return jc.ask(q)
	}
	q.Share = true
	if err := jc.send(q); err != nil {
		return journalResp{}, err
	}
	jc.unread = 0
	buf := make([]byte, 4<<10) // the rest of a longer answer: through jc.r
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, err := rc.recvmsg(buf, oob)
	if oobn > 0 {
		jc.seen = adopt(oob[:oobn], rc.fd)
	}
	if err != nil {
		return journalResp{}, err
	}
	line := buf[:n]
	if i := bytes.IndexByte(line, '\n'); i < 0 {
		rest, err := jc.r.ReadBytes('\n')
		if err != nil {
			return journalResp{}, err
		}
		line = append(line, rest...)
	} else if i != n-1 {
		return journalResp{}, fmt.Errorf("checkpoint journal: %d bytes after its answer", n-1-i)
	}
	return parseJournalResp(line) // jsonread.go
}

// unchanged reports whether nothing changed under the areas since the
// journal's answer of sequence seq, without asking it (false without
// its descriptors).
func (jc *journalClient) unchanged(seq uint64) bool {
	return jc.seen != nil && jc.seen.unchanged(seq)
}

// writeAnswer writes the answer b to q on c, with the shared descriptors
// when q asks for them.
func (j *journal) writeAnswer(c *net.UnixConn, q journalReq, b []byte) error {
	if q.Share && q.Op == "dirty" && j.share != nil {
		n, _, err := c.WriteMsgUnix(b, unix.UnixRights(j.share.fd, j.fd), nil)
		if err != nil || n == len(b) {
			return err
		}
		b = b[n:] // one sendmsg may take part of a long answer (a full socket buffer)
	}
	_, err := c.Write(b)
	return err
}

// fionread is FIONREAD (bytes queued on an inotify descriptor), which
// x/sys names TIOCINQ on Linux.
const fionread = unix.TIOCINQ
