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
	// recent are the processes that held the latest connections, most
	// recent first: searched before the others (an agent's connections
	// come from few processes; reading a process's descriptors costs
	// tens of microseconds).
	recent []int
}

// maxRecent bounds Processes.recent.
const maxRecent = 8

// Close releases the table's netlink socket.
func (t *Processes) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.diag != nil {
		t.diag.Close()
		t.diag = nil
	}
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

// socketHolder is Attribute's first half, the one that needs the client
// socket still open: the process holding it (o.Pid, or o.Err why not).
func (t *Processes) socketHolder(c net.Conn) *Origin {
	o := &Origin{}
	ino, err := t.peerInode(c)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	pid, err := t.holder(ino)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	o.Pid = pid
	return o
}

// program fills in o's program and ancestry: the process's own program
// start, else the nearest ancestor's (it forked without exec), each
// checked by start time against /proc; the ancestry above it is the
// chain of parents the program starts recorded.
func (t *Processes) program(o *Origin) {
	pid := o.Pid
	for depth := 0; pid > 1 && depth < 64; depth++ {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			break
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
	for depth := 0; pid > 1 && depth < 64; depth++ {
		t.mu.RLock()
		p, ok := t.procs[pid]
		first := t.firstStart
		t.mu.RUnlock()
		if ok {
			o.Ancestry = append(o.Ancestry, p.program+"["+strconv.Itoa(pid)+"]")
			o.chain = append(o.chain, link{p.program, p.path})
			pid = p.ppid
			continue
		}
		st, err := procfs.ReadStat(pid)
		if err != nil || st.StartTime < first {
			return
		}
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

// holder returns the process holding socket inode ino: the recorded
// processes first (newest descriptors first: the socket was just made),
// then every process of the namespace (one that forked without exec).
func (t *Processes) holder(ino uint64) (int, error) {
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	t.mu.RLock()
	pids := make([]int, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	t.mu.RUnlock()
	if t.self {
		pids = append(pids, os.Getpid())
	}
	// The latest holders first, then the newest processes.
	slices.Sort(pids)
	slices.Reverse(pids)
	t.mu.RLock()
	pids = append(slices.Clone(t.recent), pids...)
	t.mu.RUnlock()
	tried := make(map[int]bool, len(pids))
	var gone []int
	for _, pid := range pids {
		if tried[pid] {
			continue
		}
		tried[pid] = true
		found, err := holds(pid, want)
		if found {
			t.held(pid)
			return pid, nil
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
			t.recent = slices.DeleteFunc(t.recent, func(p int) bool { return p == pid })
		}
		t.mu.Unlock()
	}
	netns, err := t.netns()
	if err != nil {
		return 0, err
	}
	d, err := os.Open("/proc")
	if err != nil {
		return 0, err
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
		if found, _ := holds(pid, want); found {
			t.held(pid)
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process of the run holds the client socket (inode %d)", ino)
}

// held puts pid first among the recent holders.
func (t *Processes) held(pid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recent) > 0 && t.recent[0] == pid {
		return
	}
	t.recent = slices.DeleteFunc(t.recent, func(p int) bool { return p == pid })
	t.recent = slices.Insert(t.recent, 0, pid)
	if len(t.recent) > maxRecent {
		t.recent = t.recent[:maxRecent]
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

// holds reports whether pid has a descriptor that is want
// ("socket:[INODE]"), trying the highest-numbered descriptors first; the
// error says why its descriptors could not be read.
func holds(pid int, want string) (bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var fds []int
	var dents [8192]byte
	for {
		n, err := unix.Getdents(dfd, dents[:])
		if err != nil || n <= 0 {
			break
		}
		_, _, names := unix.ParseDirent(dents[:n], -1, nil)
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil {
				fds = append(fds, fd)
			}
		}
	}
	var buf [64]byte
	found := false
	// The newest descriptors first (the socket was just made; a process
	// that closed others reuses lower numbers, so all are tried).
	for i := len(fds) - 1; i >= 0 && !found; i-- {
		n, err := unix.Readlinkat(dfd, strconv.Itoa(fds[i]), buf[:])
		found = err == nil && string(buf[:n]) == want
	}
	unix.Close(dfd)
	return found, nil
}
