package gitwire

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// Limits bound what checking one push may cost. A zero field takes its
// default; going over any of them refuses the push (ReasonTooLarge).
type Limits struct {
	// Commands caps the command section (shallow lines, commands, push
	// options), which is held whole until checked. Default 1 MiB.
	Commands int
	// Pack caps the pack's length in bytes. Default 2 GiB.
	Pack int64
	// Inflated caps the sum of the pack's objects' inflated sizes: the
	// work a small pack of zlib bombs could cost. Default 8 GiB.
	Inflated int64
	// Commits caps the commits and tags kept for the fast-forward walk
	// (their parents: about 100 bytes each; their contents, for resolving
	// deltas, up to 64 MiB in all). Default 1,000,000.
	Commits int
}

func (l Limits) maxCommands() int {
	if l.Commands > 0 {
		return l.Commands
	}
	return 1 << 20
}

func (l Limits) maxPack() int64 {
	if l.Pack > 0 {
		return l.Pack
	}
	return 2 << 30
}

func (l Limits) maxInflated() int64 {
	if l.Inflated > 0 {
		return l.Inflated
	}
	return 8 << 30
}

func (l Limits) maxCommits() int {
	if l.Commits > 0 {
		return l.Commits
	}
	return 1_000_000
}

// Summary is what a checked push carried, for the audit log.
type Summary struct {
	// Request is the command section.
	Request *Request
	// Objects and Deltas count the pack's objects (Deltas of them sent as
	// OFS_DELTA or REF_DELTA).
	Objects, Deltas uint32
	// Commits is how many commits and tags the pack carried whole.
	Commits int
	// PackBytes is the pack's length, trailer included; 0 with no pack.
	PackBytes int64
	// Inflated is the sum of the objects' inflated sizes (deltas as sent).
	Inflated int64
}

// Guard reads a receive-pack request body and hands the same bytes on
// through Read while checking them against an Approval. The command
// section is held until its commands are checked, and the pack's trailer
// until the pack is read and every update proven a fast-forward, so a
// reader of the Guard (the request to the real server) never gets a whole
// refused push: on a refusal Read returns the *RefusedError instead of the
// held bytes. Read is for one goroutine at a time; Close may be called
// from any, and must be.
//
// Send it on as a body of unknown length (http.Request.ContentLength -1,
// no Content-Length header): a refusal then ends the body without its
// last chunk, which a server takes as an aborted request, whereas a body
// shorter than its declared length can hang a CGI git-http-backend (it
// loops reading at EOF). The proof rests on receive-pack's own
// compare-and-swap: it updates a ref only if its value is the command's
// old id, the one the walk reached.
type Guard struct {
	ap  Approval
	lim Limits
	w   *wire

	once    sync.Once
	finOnce sync.Once
	req     *Request
	cmdErr  error
	pr      *io.PipeReader // Read's side of what is handed on
	pw      *io.PipeWriter // the check's side
	done    chan struct{}
	sum     Summary
	err     error // the final verdict, set before done closes
	started bool
}

// NewGuard returns a Guard over body (the request body as it arrives,
// without Content-Encoding) for a push approved as ap.
func NewGuard(body io.Reader, ap Approval, lim Limits) *Guard {
	pr, pw := io.Pipe()
	return &Guard{ap: ap, lim: lim, w: newWire(body, 64<<10), done: make(chan struct{}), pr: pr, pw: pw}
}

// Commands reads the command section (held, not yet handed on) and checks
// it against the approval: which refs, creation, deletion. It returns the
// request (nil if it could not be parsed) and the refusal, if any; calling
// it again returns the same. Read calls it first.
func (g *Guard) Commands() (*Request, error) {
	g.once.Do(func() {
		if err := g.w.startHold(g.lim.maxCommands()); err != nil {
			g.cmdErr = err
			return
		}
		req, err := readRequest(g.w)
		if err == nil {
			err = g.w.settle() // counts the section against its cap
		}
		if err != nil {
			g.cmdErr = wrapRead(err)
			return
		}
		g.req = req
		g.sum.Request = req
		g.cmdErr = g.ap.CheckCommands(req)
	})
	return g.req, g.cmdErr
}

// Read hands on the body's bytes once they are checked (see Guard). At the
// end it returns io.EOF if the push passed, else the refusal.
func (g *Guard) Read(p []byte) (int, error) {
	if !g.started {
		g.started = true
		_, err := g.Commands()
		if err != nil {
			g.finish(err)
			g.pw.CloseWithError(err)
		} else {
			pw := g.pw
			g.w.out = func(b []byte) error {
				_, err := pw.Write(b)
				return err
			}
			go func() {
				err := g.check()
				g.finish(err)
				pw.CloseWithError(err) // nil: io.EOF
			}()
		}
	}
	return g.pr.Read(p)
}

// check runs after the commands passed: releases them, reads the pack,
// proves the fast-forwards, releases the trailer.
//
// The verdict is set before the last bytes are handed on: a reader that
// has them (the server, which may answer at once) finds Err decided.
func (g *Guard) check() error {
	w := g.w
	req := g.req
	if !req.HasPack() {
		// Only commands (deletes, or git's probe): held until the body
		// is seen to end.
		end, err := w.atEOF()
		if err != nil {
			return wrapRead(err)
		}
		if !end {
			return malformed(w.offset(), "bytes after the command section of a push with no pack")
		}
		g.finish(nil)
		return w.release()
	}
	if err := w.release(); err != nil {
		return err
	}
	info, err := readPack(w, req.Format, g.lim)
	if err != nil {
		return wrapRead(err)
	}
	g.sum.Objects, g.sum.Deltas, g.sum.Commits = info.objects, info.deltas, len(info.nodes)
	g.sum.PackBytes, g.sum.Inflated = info.bytes, info.inflated
	end, err := w.atEOF()
	if err != nil {
		return wrapRead(err)
	}
	if !end {
		return malformed(w.offset(), "bytes after the pack trailer")
	}
	for _, c := range req.Commands {
		if r := fastForward(c, info.nodes, g.lim.maxCommits()); r != nil {
			return r
		}
	}
	g.finish(nil)
	return w.release()
}

// wrapRead gives a read error of the body context; refusals pass as they are.
func wrapRead(err error) error {
	var r *RefusedError
	if errors.As(err, &r) {
		return err
	}
	return fmt.Errorf("gitwire: reading the receive-pack body: %w", err)
}

// finish sets the verdict once: the check's own, or Close's.
func (g *Guard) finish(err error) {
	g.finOnce.Do(func() {
		g.err = err
		close(g.done)
	})
}

// Err returns the verdict: nil for a push that passed the check (decided
// before its last bytes are handed on, so a server that has them already
// finds it), the *RefusedError (or the body's read error) for one that did
// not. Before the check ends it returns an error saying so, so a caller
// never takes an unfinished check for a pass.
func (g *Guard) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return errors.New("gitwire: push not checked to its end")
	}
}

// Summary returns what the push carried once the check has ended (Err is
// no longer "not checked"); before that, the zero Summary.
func (g *Guard) Summary() Summary {
	select {
	case <-g.done:
		return g.sum
	default:
		return Summary{}
	}
}

// errClosed is the verdict of a Guard closed before its check ended.
var errClosed = errors.New("gitwire: guard closed before the push was checked to its end")

// Close stops the check without waiting for it: nothing more is handed
// on, and if the check had not ended, Err says so (never a pass). A read of
// the body in progress ends when the body does (the HTTP server closes it
// when the handler returns). It always returns nil.
func (g *Guard) Close() error {
	g.pr.CloseWithError(errClosed)
	g.finish(errClosed)
	return nil
}

// Check reads a whole receive-pack request body and checks it against ap,
// discarding the bytes: the Guard without a reader behind it.
func Check(body io.Reader, ap Approval, lim Limits) (Summary, error) {
	g := NewGuard(body, ap, lim)
	_, err := g.Commands()
	if err == nil {
		err = g.check()
	}
	g.finish(err)
	return g.sum, err
}
