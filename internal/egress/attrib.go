package egress

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/agentbox/agentbox/internal/procfs"
	"golang.org/x/sys/unix"
)

// Connections attributed to programs. The proxy's listener sits in the
// sandbox's network namespace, so the client end of each accepted
// connection is a socket of that namespace: its inode is read from the
// namespace's /proc/PID/net/tcp (the line whose local address is the
// accepted connection's remote one), and the process holding it is found
// by its file descriptors (/proc/PID/fd → socket:[INODE]). Which program
// that process is comes from the exec supervisor, not from /proc: every
// allowed program start is recorded (Processes.Exec) while its process
// is still stopped, so argv rewritten later (process.title) changes
// nothing. A process that forked without exec runs its parent's program.

// Origin is the process a connection came from, as the run knows it.
type Origin struct {
	// Pid is the process holding the client socket (0: not found).
	Pid int
	// Program is the program that process runs, as the exec policy
	// decided it (a #! script, or a script an interpreter runs, by the
	// script's name); "" when no program start of the run names it.
	Program string
	// Path is the program's file (the script's, for a script).
	Path string
	// ExecPid is the process whose program start Program is: Pid, or the
	// ancestor it forked from without an exec of its own.
	ExecPid int
	// Ancestry is the chain of program starts above it, nearest first,
	// each "program[pid]", up to the run's first.
	Ancestry []string
	// Err says why the process or its program is not known.
	Err string

	// chain is the program starts from the process's own up, for the
	// rights that follow a program down its tree (programs.go).
	chain []link
	// start is the holder's start time, read through the /proc/PID
	// directory its socket was found under (0: not read); ppid and
	// pstart, its parent and the parent's start time then (0: not read),
	// so a holder that exits (and its parent) once it has its answer is
	// still named with its program.
	start  uint64
	ppid   int
	pstart uint64
}

// link is one program start of an Origin's chain.
type link struct{ name, path string }

// detail puts o on an audit event's detail map.
func (o *Origin) detail(d map[string]string) {
	if o == nil {
		return
	}
	if o.Pid != 0 {
		d["pid"] = strconv.Itoa(o.Pid)
	}
	if o.Program != "" {
		d["program"] = o.Program
	} else if o.Err != "" {
		d["program"] = "unknown"
	}
	if o.Path != "" {
		d["program_path"] = o.Path
	}
	if len(o.Ancestry) > 0 {
		d["ancestry"] = strings.Join(o.Ancestry, " < ")
	}
	if o.Err != "" {
		d["attribution"] = o.Err
	}
}

// Who names o for a refusal: "program[pid]", or "an unknown process".
func (o *Origin) Who() string {
	switch {
	case o == nil || o.Pid == 0:
		return "an unknown process"
	case o.Program == "":
		return "process " + strconv.Itoa(o.Pid) + " (no program start of the run names it)"
	}
	return o.Program + "[" + strconv.Itoa(o.Pid) + "]"
}

// proc is one recorded program start.
type proc struct {
	start         uint64
	ppid          int
	program, path string
	// outside is the start time of the process that ended the last walk
	// up from this one, started before the run's first program start (0:
	// not walked); between, the processes without a program start of
	// their own passed on the way (from ppid up). While none of them has
	// one since, the ancestry ends there without reading /proc again (a
	// pid used again later is not this process's ancestor either).
	outside uint64
	between []int
}

// Processes is a run's table of program starts, fed by the exec
// supervisor (Exec) and read by the proxy (Attribute). The zero value is
// not usable: NewProcesses.
type Processes struct {
	mu    sync.RWMutex
	procs map[int]proc
	// netPid is a process of the sandbox's network namespace whose
	// /proc/PID/net is read (0: the first recorded one that is alive).
	netPid int
	// self, for tests and benchmarks: the proxy's own namespace
	// (/proc/self/net) and every process of it are searched.
	self bool
	// diag looks sockets up in the namespace (nil: not opened yet, or
	// diagErr says why it cannot be: /proc/PID/net/tcp is read instead).
	diag    *sockDiag
	diagErr error
	// firstStart is the earliest start time recorded: a process that
	// started before it is not the run's (the launcher's side).
	firstStart uint64
	// hmu guards recent (and the hints' directories: one is closed only
	// with hmu held for writing, so a search holding it for reading never
	// reads through a number the process gave to another file).
	hmu sync.RWMutex
	// recent are the processes that held the latest connections' client
	// sockets, most recent first: searched before the others (an agent's
	// connections come from few processes, and a process gives a new
	// socket the lowest free descriptor, often the one its last socket
	// had: one readlink instead of reading every descriptor of every
	// process, tens of microseconds each).
	recent []*holderHint
}

// holderHint is a process that held a recent connection's client socket.
type holderHint struct {
	pid   int
	start uint64
	// dir is /proc/PID opened: it names this process, not the pid —
	// once the process is gone every lookup under it fails, so a pid used
	// again by another process is never searched as this one.
	dir int
	// fds are the descriptors its latest client sockets had, most
	// recent first.
	fds []int
	// ppid and pstart are the parent and its start time when the hint
	// was made (0: not read), for the attribution that made it only.
	ppid   int
	pstart uint64
}

// maxRecent bounds Processes.recent; maxHintFds a hint's descriptors.
const (
	maxRecent  = 8
	maxHintFds = 4
)

// Close releases the table's netlink socket and the recent holders'
// directories.
func (t *Processes) Close() error {
	t.mu.Lock()
	if t.diag != nil {
		t.diag.Close()
		t.diag = nil
	}
	t.mu.Unlock()
	t.hmu.Lock()
	for _, h := range t.recent {
		unix.Close(h.dir)
	}
	t.recent = nil
	t.hmu.Unlock()
	return nil
}

// NewProcesses returns an empty table.
func NewProcesses() *Processes { return &Processes{procs: map[int]proc{}} }

// Exec records that pid (started at start, clock ticks since boot; 0 to
// read it now) with parent ppid now runs program (its file path), as the
// exec policy decided it. Called while the process is stopped at its exec.
func (t *Processes) Exec(pid int, start uint64, ppid int, program, path string) {
	if start == 0 {
		if st, err := procfs.ReadStat(pid); err == nil {
			start = st.StartTime
			if ppid == 0 {
				ppid = st.Ppid
			}
		}
	}
	t.mu.Lock()
	if len(t.procs) >= maxProcs {
		t.prune()
	}
	t.procs[pid] = proc{start: start, ppid: ppid, program: program, path: path}
	if start != 0 && (t.firstStart == 0 || start < t.firstStart) {
		t.firstStart = start
	}
	t.mu.Unlock()
}

// maxProcs bounds the table: past it, the entries of processes that are
// gone are dropped.
const maxProcs = 4096

// prune drops the entries of processes that are gone (t.mu held).
func (t *Processes) prune() {
	for pid, p := range t.procs {
		if !procfs.Alive(pid, p.start) {
			delete(t.procs, pid)
		}
	}
}

// SetNetPid names a process of the sandbox's network namespace (its first
// process), whose /proc/PID/net/tcp lists the namespace's sockets.
func (t *Processes) SetNetPid(pid int) {
	t.mu.Lock()
	t.netPid = pid
	t.mu.Unlock()
}

// lookup returns pid's recorded program start if pid is still that process.
func (t *Processes) lookup(pid int, st procfs.Stat) (proc, bool) {
	t.mu.RLock()
	p, ok := t.procs[pid]
	t.mu.RUnlock()
	return p, ok && p.start == st.StartTime
}

// Attribute finds the process at the other end of c, a connection
// accepted by a listener of the sandbox's namespace, and the program it
// runs. It never fails: what it could not learn is said in Origin.Err
// (the proxy then treats the connection as any process's: no program's
// own rights).
func (t *Processes) Attribute(c net.Conn) *Origin {
	o := t.socketHolder(c)
	if o.Pid != 0 {
		t.program(o)
	}
	return o
}

// quickHolder is socketHolder as far as a few system calls go: the
// socket's inode, and its holder when it is at a recent holder's latest
// descriptors (ok). Otherwise ok is false and rest searches on (in the
// background) from where it stopped.
func (t *Processes) quickHolder(c net.Conn) (o *Origin, ok bool, rest func() *Origin) {
	ino, err := t.peerInode(c)
	if err != nil {
		return &Origin{Err: err.Error()}, true, nil
	}
	s := newFdSearch(t, socketLink(ino))
	if h, fd, ok := t.hinted(s); ok {
		t.held(h, fd, -1)
		return &Origin{Pid: h.pid, start: h.start}, true, nil
	}
	return nil, false, func() *Origin { return t.holderOrigin(s, ino) }
}

// socketHolder is Attribute's first half, the one that needs the client
// socket still open: the process holding it (o.Pid, or o.Err why not).
func (t *Processes) socketHolder(c net.Conn) *Origin {
	ino, err := t.peerInode(c)
	if err != nil {
		return &Origin{Err: err.Error()}
	}
	s := newFdSearch(t, socketLink(ino))
	if h, fd, ok := t.hinted(s); ok {
		t.held(h, fd, -1)
		return &Origin{Pid: h.pid, start: h.start}
	}
	return t.holderOrigin(s, ino)
}

// holderOrigin is the Origin of holder's answer.
func (t *Processes) holderOrigin(s *fdSearch, ino uint64) *Origin {
	o := &Origin{}
	h, err := t.holder(s, ino)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	o.Pid, o.start, o.ppid, o.pstart = h.pid, h.start, h.ppid, h.pstart
	return o
}

// program fills in o's program and ancestry: the process's own program
// start, else the nearest ancestor's (it forked without exec), each
// checked by start time against /proc; the ancestry above it is the
// chain of parents the program starts recorded.
func (t *Processes) program(o *Origin) {
	pid := o.Pid
	if o.start != 0 {
		// The holder's start time was read where its socket was found:
		// a recorded program start of that process needs no other read.
		t.mu.RLock()
		p, ok := t.procs[pid]
		t.mu.RUnlock()
		if ok && p.start == o.start {
			o.Program, o.Path, o.ExecPid = p.program, p.path, pid
			o.chain = append(o.chain, link{p.program, p.path})
			t.ancestry(o, p.ppid)
			return
		}
	}
	for depth := 0; pid > 1 && depth < 64; depth++ {
		var st procfs.Stat
		var err error
		switch {
		case depth == 0 && o.ppid != 0:
			st = procfs.Stat{StartTime: o.start, Ppid: o.ppid} // read where the socket was
		case depth == 1 && o.pstart != 0:
			if p, ok := t.lookup(pid, procfs.Stat{StartTime: o.pstart}); ok {
				o.Program, o.Path, o.ExecPid = p.program, p.path, pid
				o.chain = append(o.chain, link{p.program, p.path})
				t.ancestry(o, p.ppid)
				return
			}
			if st, err = procfs.ReadStat(pid); err == nil && st.StartTime != o.pstart {
				err = errors.New("the parent is gone")
			}
		default:
			if st, err = procfs.ReadStat(pid); err == nil && depth == 0 && o.start != 0 && st.StartTime != o.start {
				err = errors.New("the holder is gone")
			}
		}
		if err != nil {
			break // gone (its pid perhaps another process's now)
		}
		if p, ok := t.lookup(pid, st); ok {
			o.Program, o.Path, o.ExecPid = p.program, p.path, pid
			o.chain = append(o.chain, link{p.program, p.path})
			t.ancestry(o, p.ppid)
			return
		}
		pid = st.Ppid
	}
	o.Err = "no program start of the run names process " + strconv.Itoa(o.Pid) + " or its parents"
}

// ancestry adds to o the recorded chain of program starts from pid up
// (Ancestry: each "program[pid]"). A process between them that forked
// without exec (a shell's subshell) is passed through by its parent in
// /proc; the walk ends at the first process that started before the
// run's first program start (the launcher's side).
func (t *Processes) ancestry(o *Origin, pid int) {
	// from is the latest recorded process of the walk, between the
	// processes without a program start passed since.
	from := o.ExecPid
	var between []int
	for depth := 0; pid > 1 && depth < 64; depth++ {
		t.mu.RLock()
		p, ok := t.procs[pid]
		first := t.firstStart
		end := false
		if f, fok := t.procs[from]; fok && len(between) == 0 && f.ppid == pid && f.outside != 0 && f.outside < first {
			end = true
			for _, b := range f.between {
				if _, rec := t.procs[b]; rec {
					end = false
				}
			}
		}
		t.mu.RUnlock()
		if end {
			return
		}
		if ok {
			o.Ancestry = append(o.Ancestry, p.program+"["+strconv.Itoa(pid)+"]")
			o.chain = append(o.chain, link{p.program, p.path})
			from, pid, between = pid, p.ppid, nil
			continue
		}
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return
		}
		if st.StartTime < first {
			t.mu.Lock()
			if f, ok := t.procs[from]; ok && (len(between) > 0 && f.ppid == between[0] || len(between) == 0 && f.ppid == pid) {
				f.outside, f.between = st.StartTime, between
				t.procs[from] = f
			}
			t.mu.Unlock()
			return
		}
		between = append(between, pid)
		pid = st.Ppid
	}
}

// peerInode returns the inode of the socket at the other end of c, read
// from the sandbox's namespace's TCP tables.
func (t *Processes) peerInode(c net.Conn) (uint64, error) {
	ra, ok1 := c.RemoteAddr().(*net.TCPAddr)
	la, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("not a TCP connection (%T)", c.RemoteAddr())
	}
	dir, err := t.netDir()
	if err != nil {
		return 0, err
	}
	if d := t.sockDiag(dir); d != nil {
		ino, err := d.inode(ra, la)
		if err == nil && ino == 0 {
			err = errors.New("the client socket is gone (closed before it was attributed)")
		}
		if err != nil {
			return 0, fmt.Errorf("the client socket of %s → %s: %w", ra, la, err)
		}
		return ino, nil
	}
	if ra.IP.To4() != nil && la.IP.To4() != nil {
		if ino, err := findSocket(dir+"/tcp", hexAddr4(ra), hexAddr4(la)); err == nil {
			return ino, nil
		}
	}
	// A dual-stack socket's IPv4 connection is listed in tcp6 with its
	// address mapped (::ffff:a.b.c.d).
	ino, err := findSocket(dir+"/tcp6", hexAddr6(ra), hexAddr6(la))
	if err != nil {
		return 0, fmt.Errorf("the client socket of %s → %s: %w", ra, la, err)
	}
	return ino, nil
}

// sockDiag returns the namespace's sock_diag socket, opening it the first
// time (dir: the namespace's /proc/PID/net); nil when it cannot be had.
func (t *Processes) sockDiag(dir string) *sockDiag {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.diag == nil && t.diagErr == nil {
		ns := ""
		if !t.self {
			ns = strings.TrimSuffix(dir, "/net") + "/ns/net"
		}
		t.diag, t.diagErr = newSockDiag(ns)
	}
	return t.diag
}

// netDir is the /proc/PID/net directory of the sandbox's namespace.
func (t *Processes) netDir() (string, error) {
	if t.self {
		return "/proc/self/net", nil
	}
	t.mu.RLock()
	pid := t.netPid
	t.mu.RUnlock()
	if pid > 0 && (t.diag != nil || unix.Access("/proc/"+strconv.Itoa(pid)+"/net/tcp", unix.R_OK) == nil) {
		// With the netlink socket open, the directory only names the
		// namespace for the search of its processes.
		return "/proc/" + strconv.Itoa(pid) + "/net", nil
	}
	// The first process is gone: any recorded live process of the run
	// shares its namespace (none can leave it: setns needs a capability
	// the sandbox does not have).
	t.mu.RLock()
	defer t.mu.RUnlock()
	for pid, p := range t.procs {
		if procfs.Alive(pid, p.start) {
			return "/proc/" + strconv.Itoa(pid) + "/net", nil
		}
	}
	return "", errors.New("no process of the run is left to read its network namespace's sockets from")
}

// hexAddr4 is a as /proc/net/tcp prints it: the address as a host-order
// 32-bit number and the port, in upper-case hex ("0100007F:D431").
func hexAddr4(a *net.TCPAddr) string {
	ip := a.IP.To4()
	return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip), a.Port)
}

// hexAddr6 is a as /proc/net/tcp6 prints it: four host-order 32-bit words.
func hexAddr6(a *net.TCPAddr) string {
	ip := a.IP.To16()
	var b strings.Builder
	for i := 0; i < 16; i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String()
}

// findSocket returns the inode of the socket in the TCP table file whose
// local address is local and remote address remote.
func findSocket(file, local, remote string) (uint64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	lb, rb := []byte(local), []byte(remote)
	for sc.Scan() {
		ino, ok := parseTCPLine(sc.Bytes(), lb, rb)
		if ok {
			if ino == 0 {
				return 0, errors.New("the client socket is gone (closed before it was attributed)")
			}
			return ino, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", file, err)
	}
	return 0, fmt.Errorf("no socket %s → %s in %s", local, remote, file)
}

// parseTCPLine reads one line of /proc/net/tcp{,6}: "sl: local remote st
// tx:rx tr:when retr uid timeout inode ...". It reports the inode when
// the line's local and remote addresses are the ones asked for.
func parseTCPLine(line, local, remote []byte) (uint64, bool) {
	f := fields(line, 10)
	if len(f) < 10 || !bytes.Equal(f[1], local) || !bytes.Equal(f[2], remote) {
		return 0, false
	}
	ino, err := strconv.ParseUint(string(f[9]), 10, 64)
	if err != nil {
		return 0, false
	}
	return ino, true
}

// fields splits b at spaces into at most n fields (the rest dropped).
func fields(b []byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	for len(out) < n {
		b = bytes.TrimLeft(b, " ")
		if len(b) == 0 {
			break
		}
		i := bytes.IndexByte(b, ' ')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i])
		b = b[i:]
	}
	return out
}

// holder returns the process holding socket inode ino (s searches for
// it) and its start time, each found holder checked live: a descriptor of
// it is the socket now. After the recent holders' latest socket
// descriptors (hinted, one readlink each, tried by the caller): their
// whole descriptor tables, then the recorded processes (newest first) and
// last every process of the namespace (one that forked without exec).
func (t *Processes) holder(s *fdSearch, ino uint64) (holderHint, error) {
	// The recent holders' whole tables.
	t.hmu.RLock()
	var hit *holderHint
	fd := -1
	var dead []*holderHint
	tried := make(map[int]bool, len(t.recent)+len(t.procs))
	for _, h := range t.recent {
		tried[h.pid] = true
		var err error
		if fd, err = s.in(h.dir); fd >= 0 {
			hit = h
			break
		}
		if err != nil {
			dead = append(dead, h) // the process is gone
		}
	}
	t.hmu.RUnlock()
	if len(dead) > 0 {
		t.hmu.Lock()
		for _, h := range dead {
			if i := slices.Index(t.recent, h); i >= 0 {
				unix.Close(h.dir)
				t.recent = slices.Delete(t.recent, i, i+1)
			}
		}
		t.hmu.Unlock()
	}
	if hit != nil {
		t.held(hit, fd, -1)
		return holderHint{pid: hit.pid, start: hit.start}, nil
	}
	t.mu.RLock()
	pids := make([]int, 0, len(t.procs)+1)
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	t.mu.RUnlock()
	if t.self {
		pids = append(pids, os.Getpid())
	}
	// The newest processes first.
	slices.Sort(pids)
	slices.Reverse(pids)
	var gone []int
	for _, pid := range pids {
		if tried[pid] {
			continue
		}
		tried[pid] = true
		h, err := s.inPid(pid)
		if h != nil {
			return holderHint{pid: h.pid, start: h.start, ppid: h.ppid, pstart: h.pstart}, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			gone = append(gone, pid)
		}
	}
	if len(gone) > 0 {
		// Gone processes are not searched again (a pid used again is
		// another process: its start time would not match the entry).
		t.mu.Lock()
		for _, pid := range gone {
			delete(t.procs, pid)
		}
		t.mu.Unlock()
	}
	netns, err := t.netns()
	if err != nil {
		return holderHint{}, err
	}
	d, err := os.Open("/proc")
	if err != nil {
		return holderHint{}, err
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || tried[pid] {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+n+"/ns/net", &st) != nil || st.Ino != netns {
			continue
		}
		if h, _ := s.inPid(pid); h != nil {
			return holderHint{pid: h.pid, start: h.start, ppid: h.ppid, pstart: h.pstart}, nil
		}
	}
	return holderHint{}, fmt.Errorf("no process of the run holds the client socket (inode %d)", ino)
}

// socketLink is the link /proc/PID/fd/N of socket inode ino reads.
func socketLink(ino uint64) []byte {
	b := append(make([]byte, 0, 32), "socket:["...)
	b = strconv.AppendUint(b, ino, 10)
	return append(b, ']')
}

// hinted looks for s's socket at the recent holders' latest socket
// descriptors.
func (t *Processes) hinted(s *fdSearch) (*holderHint, int, bool) {
	t.hmu.RLock()
	defer t.hmu.RUnlock()
	for _, h := range t.recent {
		for _, fd := range h.fds {
			if s.at(h.dir, fd) {
				return h, fd, true
			}
		}
	}
	return nil, -1, false
}

// inPid searches pid's descriptors for the socket: found, the process
// becomes the most recent holder (its directory kept open, its start
// time read through it: both name the process that holds the socket).
func (s *fdSearch) inPid(pid int) (*holderHint, error) {
	path := "/proc/" + strconv.Itoa(pid)
	dir, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	fd, err := s.in(dir)
	if fd < 0 {
		unix.Close(dir)
		return nil, err
	}
	st, err := procfs.ReadStatAt(dir, path)
	if err != nil {
		unix.Close(dir)
		return nil, err
	}
	h := &holderHint{pid: pid, start: st.StartTime, dir: dir}
	if st.Ppid > 1 {
		// The parent now: read between two reads of the holder's
		// parent, so it is that process (a parent that exited in
		// between changes the holder's).
		pst, err1 := procfs.ReadStat(st.Ppid)
		st2, err2 := procfs.ReadStatAt(dir, path)
		if err1 == nil && err2 == nil && st2.Ppid == st.Ppid {
			h.ppid, h.pstart = st.Ppid, pst.StartTime
		}
	}
	s.t.held(h, fd, dir)
	return h, nil
}

// held puts h first among the recent holders and fd first among its
// descriptors; a new hint (dir ≥ 0, its directory now the table's)
// replaces an older one of the same pid.
func (t *Processes) held(h *holderHint, fd int, dir int) {
	t.hmu.Lock()
	defer t.hmu.Unlock()
	if dir >= 0 {
		if i := slices.IndexFunc(t.recent, func(o *holderHint) bool { return o.pid == h.pid }); i >= 0 {
			unix.Close(t.recent[i].dir)
			t.recent = slices.Delete(t.recent, i, i+1)
		}
		t.recent = slices.Insert(t.recent, 0, h)
		if len(t.recent) > maxRecent {
			for _, o := range t.recent[maxRecent:] {
				unix.Close(o.dir)
			}
			t.recent = t.recent[:maxRecent]
		}
	} else if i := slices.Index(t.recent, h); i > 0 {
		t.recent = slices.Delete(t.recent, i, i+1)
		t.recent = slices.Insert(t.recent, 0, h)
	} else if i < 0 {
		return // dropped meanwhile
	}
	if i := slices.Index(h.fds, fd); i != 0 {
		if i > 0 {
			h.fds = slices.Delete(h.fds, i, i+1)
		}
		h.fds = slices.Insert(h.fds, 0, fd)
		if len(h.fds) > maxHintFds {
			h.fds = h.fds[:maxHintFds]
		}
	}
}

// netns is the inode of the sandbox's network namespace.
func (t *Processes) netns() (uint64, error) {
	dir, err := t.netDir()
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Stat(strings.TrimSuffix(dir, "/net")+"/ns/net", &st); err != nil {
		return 0, fmt.Errorf("the sandbox's network namespace: %w", err)
	}
	return st.Ino, nil
}

// fdSearch looks for one socket ("socket:[INODE]") among processes'
// descriptors, reading each link into a reused buffer.
type fdSearch struct {
	t    *Processes
	want []byte
	link [64]byte
	name [32]byte
	ents []byte
}

func newFdSearch(t *Processes, want []byte) *fdSearch { return &fdSearch{t: t, want: want} }

// at reports whether descriptor fd of the process whose /proc/PID
// directory is dir is the socket.
func (s *fdSearch) at(dir, fd int) bool {
	name := append(s.name[:0], "fd/"...)
	name = strconv.AppendInt(name, int64(fd), 10)
	name = append(name, 0)
	return s.linkIs(dir, name)
}

// linkIs reads the link name (NUL-terminated) under dir and compares it
// with the socket's.
func (s *fdSearch) linkIs(dir int, name []byte) bool {
	r, _, e := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dir), uintptr(unsafe.Pointer(&name[0])),
		uintptr(unsafe.Pointer(&s.link[0])), uintptr(len(s.link)), 0, 0)
	return e == 0 && bytes.Equal(s.link[:r], s.want)
}

// in returns the descriptor of the process whose /proc/PID directory is
// dir that is the socket (-1: none), trying the highest-numbered first;
// the error says why its descriptors could not be read.
func (s *fdSearch) in(dir int) (int, error) {
	dfd, err := unix.Openat(dir, "fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "fd", Err: err}
	}
	defer unix.Close(dfd)
	if s.ents == nil {
		s.ents = make([]byte, 8192)
	}
	var fds []int
	for {
		n, err := unix.Getdents(dfd, s.ents)
		if err != nil || n <= 0 {
			break
		}
		fds = appendDirentFds(fds, s.ents[:n])
	}
	// The newest descriptors first (the socket was just made; a process
	// that closed others reuses lower numbers, so all are tried).
	for i := len(fds) - 1; i >= 0; i-- {
		name := strconv.AppendInt(s.name[:0], int64(fds[i]), 10)
		if s.linkIs(dfd, append(name, 0)) {
			return fds[i], nil
		}
	}
	return -1, nil
}

// appendDirentFds appends to fds the numeric names of the linux_dirent64
// records in b (ino 8, off 8, reclen 2, type 1, name NUL-terminated).
func appendDirentFds(fds []int, b []byte) []int {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if fd, ok := atoi(name); ok {
			fds = append(fds, fd)
		}
		b = b[reclen:]
	}
	return fds
}

// atoi reads a descriptor number ("." and ".." are not).
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
