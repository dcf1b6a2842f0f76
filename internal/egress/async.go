package egress

import (
	"net"
	"sync"
	"time"
)

// Attribution off the connection's path when it is slow. Most
// connections come from a recent holder, at the descriptor its last
// socket had: found in a few system calls (the sock_diag lookup and one
// readlink, ~13 µs of CPU), the attribution is done when the connection
// is accepted. Otherwise finding the process reads whole descriptor
// tables (hundreds of microseconds, more on a loaded machine), and most
// connections' decisions do not depend on it: only a host some programs:
// block governs, or a request that may carry a program's placeholder,
// does. So that search runs alongside the connection; a decision that
// depends on it waits for it (get), and the audit events of the
// connection are written once it is known (after), in order, each
// exactly once, even when the connection has ended first.

// attribBound bounds how long a connection's events wait for its
// attribution: past it they are written with the program unknown and why.
const attribBound = 2 * time.Second

// attribution is one connection's Origin as it is found in the
// background (nil: the proxy attributes nothing, Config.Processes unset).
type attribution struct {
	// held is closed when the client socket's holder is found (or not):
	// the part that needs the client's socket open.
	held     chan struct{}
	done     chan struct{}
	o        *Origin // set before done is closed
	deadline time.Time

	mu sync.Mutex
	// tail is closed when the latest event waiting for o is written.
	tail chan struct{}
}

// attribute starts attributing c, a connection just accepted (nil
// without Config.Processes).
func (p *Proxy) attribute(c net.Conn) *attribution {
	if p.cfg.Processes == nil {
		return nil
	}
	a := &attribution{held: make(chan struct{}), done: make(chan struct{}), deadline: time.Now().Add(attribBound)}
	search := func() *Origin { return p.cfg.Processes.socketHolder(c) }
	if attribHeld == nil {
		o, ok, rest := p.cfg.Processes.quickHolder(c)
		if ok {
			// At a recent holder's latest descriptor (most connections:
			// a few system calls, less than handing the work to a
			// goroutine), or the socket not found at all: done now.
			close(a.held)
			if o.Pid != 0 {
				p.cfg.Processes.program(o)
			}
			a.o = o
			close(a.done)
			return a
		}
		search = rest
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		o := search()
		close(a.held)
		if o.Pid != 0 {
			if attribHeld != nil {
				attribHeld()
			}
			p.cfg.Processes.program(o)
		}
		a.o = o
		close(a.done)
	}()
	return a
}

// attribHeld, for tests, runs between an attribution's two halves.
var attribHeld func()

// hold waits, up to the bound, until the client socket's holder is known:
// called before the client gets its first byte, so a client that closes
// its socket on the answer does so after its process was found (once the
// socket is gone no process holds it). The program and its ancestry are
// read after, in the background.
func (a *attribution) hold() {
	if a == nil {
		return
	}
	t := time.NewTimer(time.Until(a.deadline))
	defer t.Stop()
	select {
	case <-a.held:
	case <-t.C:
	}
}

// get waits for the attribution, up to its bound: past it, an Origin
// saying the process is unknown and why (fail closed: no program's
// rights).
func (a *attribution) get() *Origin {
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
		return a.o
	default:
	}
	t := time.NewTimer(time.Until(a.deadline))
	defer t.Stop()
	select {
	case <-a.done:
		return a.o
	case <-t.C:
		return &Origin{Err: "the process was not found within " + attribBound.String() + " (attribution still running)"}
	}
}

// when is get when the decision depends on the attribution (governed),
// nil otherwise: the connection is decided as any process's.
func (a *attribution) when(governed bool) *Origin {
	if !governed {
		return nil
	}
	return a.get()
}

// ready reports whether the attribution is done.
func (a *attribution) ready() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// after calls write with the attribution: now when it is known and no
// earlier event of the connection waits, otherwise in the background
// after the earlier ones (Proxy.Close waits for it).
func (a *attribution) after(p *Proxy, write func(*Origin)) {
	if a == nil {
		write(nil)
		return
	}
	a.mu.Lock()
	prev := a.tail
	if prev == nil && a.ready() {
		a.mu.Unlock()
		write(a.o)
		return
	}
	next := make(chan struct{})
	a.tail = next
	a.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(next)
		if prev != nil {
			<-prev
		}
		write(a.get())
	}()
}

// governs reports whether a connection's decision to host:port depends on
// its program: some programs: block grants the host, or reaches only its
// own hosts (mode only: any connection may be that program's).
func (p *Proxy) governs(host string, port int) bool {
	for i := range p.cfg.Programs {
		if g := &p.cfg.Programs[i]; g.Only || g.Hosts != nil && g.Hosts(host, port) {
			return true
		}
	}
	return false
}
