package approval

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The socket approver (clients connect to agentbox) and the inbox
// approver (agentbox connects to an inbox) hold a request the same way
// while its answer is awaited: by id, until the first valid answer, the
// deadline or Close. The approver's mutex guards its pendingSet; the
// approver says how a line reaches the other side.

// pending is one request waiting for an answer.
type pending struct {
	seq    uint64
	req    Request
	line   []byte      // encoded request message
	result chan result // buffered 1; written once, by whoever removes the entry from the map
}

type result struct {
	resp Response
	err  error
}

// pendingSet is an approver's requests waiting for an answer, by id.
type pendingSet map[string]*pending

// addLocked holds req as request number seq, naming it "r<seq>" when it
// has no id; line encodes it for the other side. An id already pending
// is refused.
func (ps pendingSet) addLocked(seq uint64, req Request, line func(Request) []byte) (*pending, error) {
	if req.ID == "" {
		req.ID = fmt.Sprintf("r%d", seq)
	}
	if _, dup := ps[req.ID]; dup {
		return nil, fmt.Errorf("approval request id %q is already pending", req.ID)
	}
	p := &pending{seq: seq, req: req, line: line(req), result: make(chan result, 1)}
	ps[req.ID] = p
	return p, nil
}

// wait returns p's answer, or at the end of ctx withdraws p, telling the
// other side with cancel (called with mu held) and returning ctxError.
// An answer that removed p from the set just as ctx ended wins: its
// result was written before it did.
func (ps pendingSet) wait(ctx context.Context, mu *sync.Mutex, p *pending, cancel func(cancelMsg)) (Response, error) {
	select {
	case r := <-p.result:
		return r.resp, r.err
	case <-ctx.Done():
	}
	mu.Lock()
	if ps[p.req.ID] == p {
		delete(ps, p.req.ID)
		reason := "timeout"
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "canceled"
		}
		cancel(cancelMsg{Type: "cancel", ID: p.req.ID, Reason: reason})
		mu.Unlock()
		return Response{}, ctxError(ctx, p.req.ID)
	}
	mu.Unlock()
	r := <-p.result
	return r.resp, r.err
}

// answerLocked settles the request m answers, approved by who (whose uid
// the kernel reported), and returns the line for who: an ack, or an error
// line for an unknown id or a prefix that is not the request's (ok false:
// nothing settled).
func (ps pendingSet) answerLocked(m clientMessage, who string, uid int) (line []byte, ok bool) {
	p := ps[m.ID]
	if p == nil {
		return encodeLine(errorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("unknown request id %q (already answered, timed out, or never sent)", m.ID)}), false
	}
	if m.Prefix != "" {
		if err := checkPrefix(m.Prefix, p.req); err != nil {
			return encodeLine(errorMsg{Type: "error", ID: m.ID, Message: err.Error()}), false
		}
	}
	delete(ps, m.ID)
	p.result <- result{resp: Response{Answer: m.Answer, Approver: who, Prefix: m.Prefix, UID: uid, UIDKnown: true}}
	return encodeLine(ackMsg{Type: "ack", ID: m.ID, Answer: m.Answer.String()}), true
}

// closeLocked fails every request with err and tells the other side
// with cancel.
func (ps pendingSet) closeLocked(err error, cancel func(cancelMsg)) {
	for id, p := range ps {
		delete(ps, id)
		p.result <- result{err: err}
		cancel(cancelMsg{Type: "cancel", ID: id, Reason: "closed"})
	}
}
