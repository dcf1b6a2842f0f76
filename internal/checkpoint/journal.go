package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The change journal: what lets a run's start and end checkpoints skip the
// walk of the workspace.
//
// A whole walk stats every file (29 ms for 12k files, seconds for a large
// monorepo), and it is the only way to know what changed under a tree
// that nothing followed. So something follows it between runs: the
// journal, a small process of agentbox's own (started by the first run's
// end in a workspace, with argv[0] JournalArgv0), which keeps one inotify
// watch on every directory of the checkpointed areas, from one run to the
// next, and answers on a unix socket in the store ("journal.sock") which
// directories changed since a checkpoint it vouches for. A run's start
// checkpoint is then the last checkpoint again when nothing changed (one
// record written, no walk), or a rescan of the directories that changed;
// its end checkpoint the same. The journal vouches only for what it saw
// whole: when it starts it compares the tree once with the store's stat
// cache (off every run's path), a queue overflow or a moved directory
// makes the next checkpoint walk, and it answers nothing for a checkpoint
// it was not told of (that run walks, as without a journal).
//
// What it costs (docs/decisions.md): a process per workspace in use, which
// exits after JournalIdle without a question, when an area is deleted or
// its socket is taken away; one inotify watch per directory
// (fs.inotify.max_user_watches: past it the journal gives up and runs
// walk); and the blind spot of every inotify feed, a write through a
// shared writable mmap(2), which the journal misses as the in-run feed
// does (a walk compares every file's mtime, ctime, size and inode).
// Processes in a sandbox cannot use it to hide a change: the journal
// answers only peers with no more seccomp filters and no more
// no_new_privs than its own (a sandboxed process has both), and the
// socket lives in the store, outside every sandbox's writable areas.

// JournalArgv0 is the argv[0] the journal process is started with;
// MaybeRunJournal reacts to it.
const JournalArgv0 = "agentbox-checkpoint-journal"

// JournalIdle is how long the journal waits for a question before it
// exits.
var JournalIdle = 20 * time.Minute

const journalSock = "journal.sock"

// journalSpec is what the journal follows: passed as its argument (JSON).
type journalSpec struct {
	Dir     string   `json:"dir"` // the store
	Areas   []Area   `json:"areas"`
	Exclude []string `json:"exclude,omitempty"`
	Idle    string   `json:"idle,omitempty"`
}

// journalReq is one question on the socket (one JSON line).
type journalReq struct {
	Op      string   `json:"op"` // "dirty", "rebase", "prune"
	Areas   []Area   `json:"areas"`
	Exclude []string `json:"exclude,omitempty"`
	// Roots: dirty: the checkpoint the asker holds, by root tree per area;
	// rebase: the checkpoint it took from the answer of Gen
	Roots []string `json:"roots"`
	From  []string `json:"from,omitempty"` // rebase: the roots it took it from (nil: a whole walk)
	Gen   uint64   `json:"gen,omitempty"`
	// Head (dirty): answer for the checkpoint the journal vouches for,
	// whatever Roots say (a run's start: the stat cache file on disk may
	// be older than the journal's)
	Head bool `json:"head,omitempty"`
	// Share (dirty): send the sequence page and the inotify descriptor
	// with the answer (journal_share.go)
	Share bool `json:"share,omitempty"`
	// Delta (rebase, per area): what the checkpoint taken from the
	// answer's Base found (journal_cache.go)
	Delta []*jdelta `json:"delta,omitempty"`
	// Budget (prune): each area's store's budget (journalPrune)
	Budget *Budget `json:"budget,omitempty"`
}

// journalResp answers it.
type journalResp struct {
	OK    bool          `json:"ok"`  // the journal vouches for Dirty
	Gen   uint64        `json:"gen"` // events up to Gen are in this answer
	Areas []journalArea `json:"areas,omitempty"`
	Why   string        `json:"why,omitempty"`
	// Pruned (dirty): what the journal's last prunes removed, told once
	// (the run's end line says it: Recorder.Finish)
	Pruned *Pruned `json:"pruned,omitempty"`
	// Seq (dirty): the sequence at which the journal had drained its
	// queue for this answer (journal_share.go; 0: none shared)
	Seq uint64 `json:"seq,omitempty"`
}

// journalArea is the answer for one area.
type journalArea struct {
	All   bool     `json:"all,omitempty"` // walk the whole area
	Dirty []string `json:"dirty,omitempty"`
	// Base: the stat cache of the checkpoint vouched for, its dirty
	// directories and those above them (nil: the journal holds none)
	Base *jbase `json:"base,omitempty"`
}

// MaybeRunJournal runs the journal and exits when the process was started
// as one (argv[0] == JournalArgv0); otherwise it returns false at once.
func MaybeRunJournal() bool {
	if len(os.Args) < 2 || os.Args[0] != JournalArgv0 {
		return false
	}
	var spec journalSpec
	if err := json.Unmarshal([]byte(os.Args[1]), &spec); err != nil {
		os.Exit(2)
	}
	closeInherited()
	if err := serveJournal(spec, nil, nil); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// closeInherited closes the pipes and sockets the journal inherited
// without close-on-exec beyond its standard streams (a test harness's, a
// shell's): the journal outlives the run that started it, and whoever
// waits for such a pipe's end would wait for the journal too. Files are
// left alone (the Go runtime keeps the cgroup's CPU limit files open).
func closeInherited() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && (strings.HasPrefix(l, "pipe:") || strings.HasPrefix(l, "socket:")) {
			unix.Close(fd)
		}
	}
}

// startJournal starts the journal of the store dir as a process of its own
// (exe, which must call MaybeRunJournal first), in a session of its own,
// its standard streams on /dev/null. It does not wait for it to be ready:
// the next run asks.
func startJournal(exe string, spec journalSpec) error {
	if len(filepath.Join(spec.Dir, journalSock)) >= 108 {
		return errors.New("checkpoint journal: store path too long for a unix socket")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := makeJournalLock(spec.Dir); err != nil {
		return err
	}
	cmd := exec.Command(exe, string(b))
	cmd.Args[0] = JournalArgv0
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("checkpoint journal: %w", err)
	}
	go cmd.Wait() // reaped if this process outlives it (a library user's)
	return nil
}

// makeJournalLock makes the store's journal lock file, which the journal
// itself only opens.
func makeJournalLock(dir string) error {
	lf, err := os.OpenFile(filepath.Join(dir, "journal.lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("checkpoint journal: %w", err)
	}
	return lf.Close()
}

// journal is the journal's state.
type journal struct {
	spec  journalSpec
	mu    sync.Mutex
	fd    int
	buf   []byte
	wds   map[int32]jwatch
	gen   uint64              // the generation events are marked with now
	dirty []map[string]uint64 // per area: directory -> last event's generation
	all   []uint64            // per area: generation of the last overflow or moved directory
	base  []string            // per area: the root tree it vouches for, "" none
	bgen  uint64              // generation base is complete up to
	quit  chan struct{}
	once  sync.Once
	// cache: per area, the stat cache of base (nil: none in memory);
	// unsaved: the areas whose file on disk is older than cache
	stores  []*Store
	cache   []*jcache
	unsaved map[int]bool
	saveT   *time.Timer
	// pending: the connections answered "dirty" with a base to take a
	// checkpoint from, whose rebase has not come yet (a run sends it
	// without waiting for the answer); a "dirty" question of another
	// waits for them (up to rebaseWait), so that a run started after
	// another ended is answered after that run's rebase
	pending map[*net.UnixConn]bool
	rebased *sync.Cond // on mu: a pending connection rebased, or one closed
	// conns: the connections being served; closing: the journal exits
	// and serves what they sent already (finishConns)
	conns   map[*net.UnixConn]bool
	closing bool
	// pruning: a prune runs (journalPrune; one at a time); pruneDone:
	// the journal exits and starts none; report: what prunes removed
	// that no run was told yet; pruneWG: the prune running
	pruning, pruneDone bool
	report             Pruned
	pruneWG            sync.WaitGroup
	// self: the journal's own no_new_privs and seccomp filter count,
	// read once when it starts (a read per connection was ~0.1 ms of
	// its CPU per launch): neither ever decreases, so a later read could
	// only make the check stricter, never weaker
	self [2]int
	// share: the sequence page shared with runs (nil: none could be
	// made; runs ask every time)
	share *jshare
}

// rebaseWait bounds how long a "dirty" question waits for another
// connection's rebase (a run stopped between the two).
const rebaseWait = time.Second

type jwatch struct {
	area int
	dir  string
}

// serveJournal runs the journal of spec until it is idle, its areas go or
// its socket is replaced, or stop (may be nil) is closed. ready (may be
// nil) is closed once it answers.
func serveJournal(spec journalSpec, ready chan<- struct{}, stop <-chan struct{}) error {
	idle := JournalIdle
	if d, err := time.ParseDuration(spec.Idle); err == nil && d > 0 {
		idle = d
	}
	// one journal per store; the lock file is made by the run that starts
	// the journal, so a store being deleted is not brought back
	lf, err := os.OpenFile(filepath.Join(spec.Dir, "journal.lock"), os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil // another journal follows this store
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	j := &journal{spec: spec, fd: fd, buf: make([]byte, 64<<10), wds: map[int32]jwatch{}, gen: 1,
		dirty: make([]map[string]uint64, len(spec.Areas)), all: make([]uint64, len(spec.Areas)),
		base: make([]string, len(spec.Areas)), quit: make(chan struct{}),
		stores: make([]*Store, len(spec.Areas)), cache: make([]*jcache, len(spec.Areas)), unsaved: map[int]bool{},
		pending: map[*net.UnixConn]bool{}, conns: map[*net.UnixConn]bool{}}
	j.rebased = sync.NewCond(&j.mu)
	if sh, err := newJShare(); err == nil {
		j.share = sh
		defer sh.close()
	}
	var ok bool
	if j.self, ok = confinement("self"); !ok {
		// a peer's confinement could not be compared: answer no one
		return errors.New("checkpoint journal: /proc/self/status has no NoNewPrivs or Seccomp_filters line")
	}
	defer j.flush()
	defer j.finishPrune()
	for i := range spec.Areas {
		j.dirty[i] = map[string]uint64{}
		if !j.watchTree(i, ".", false) {
			return errors.New("checkpoint journal: cannot watch every directory")
		}
	}
	// Compare the tree with the stat cache once, now that every change is
	// followed: what differs is dirty, and the stat cache's checkpoint is
	// what the journal vouches for.
	for i, a := range spec.Areas {
		s, err := openExisting(filepath.Join(spec.Dir, a.Name))
		if err != nil {
			return err
		}
		m := s.statCache()
		if m == nil {
			return errors.New("checkpoint journal: no stat cache to start from")
		}
		rec, err := s.record(m.ID)
		if err != nil {
			return err
		}
		m.Excluded = rec.Excluded
		for _, d := range compareTree(a.Dir, m, spec.Exclude) {
			j.dirty[i][d] = j.gen
		}
		j.base[i] = m.Root
		j.stores[i] = s
		j.cache[i] = newJCache(m)
	}
	sock := filepath.Join(spec.Dir, journalSock)
	os.Remove(sock)
	old := unix.Umask(0o077)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	defer j.finishConns()
	var sockIno uint64
	if fi, err := os.Lstat(sock); err == nil {
		sockIno = fi.Sys().(*syscall.Stat_t).Ino
	}
	if ready != nil {
		close(ready)
	}
	last := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				j.stop()
				return
			}
			select {
			case last <- struct{}{}:
			default:
			}
			j.mu.Lock()
			if j.closing {
				j.mu.Unlock()
				c.Close()
				continue
			}
			j.conns[c] = true
			j.mu.Unlock()
			go j.serve(c)
		}
	}()
	tick := time.NewTicker(min(idle, 10*time.Second))
	defer tick.Stop()
	seen := time.Now()
	madeTrees := false
	for {
		select {
		case <-j.quit:
			return nil
		case <-stop:
			return nil
		case <-last:
			seen = time.Now()
		case <-tick.C:
			// events are drained here too, so the queue does not overflow
			// between runs
			j.mu.Lock()
			j.drain()
			j.mu.Unlock()
			if !madeTrees {
				// at the first tick, not as it starts: the runs right
				// after its start are not slowed by the mkdirs
				madeTrees = true
				for _, s := range j.stores {
					s.makeTreeDirs()
				}
			}
			fi, err := os.Lstat(sock)
			if err != nil || fi.Sys().(*syscall.Stat_t).Ino != sockIno || time.Since(seen) > idle {
				j.stop()
			}
		}
	}
}

func (j *journal) stop() { j.once.Do(func() { close(j.quit) }) }

// allowed reports whether the peer of c may talk to the journal: the same
// user, and no more confined than the journal, whose own confinement is
// mine (a process in a sandbox has more seccomp filters, or no_new_privs
// where the journal has not).
func allowed(c *net.UnixConn, mine [2]int) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil || int(cred.Uid) != os.Getuid() {
		return false
	}
	theirs, ok := confinement(strconv.Itoa(int(cred.Pid)))
	return ok && theirs[0] <= mine[0] && theirs[1] <= mine[1]
}

// confinement reads NoNewPrivs and Seccomp_filters of /proc/PID/status.
func confinement(pid string) ([2]int, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return [2]int{}, false
	}
	var out [2]int
	found := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		idx := -1
		switch string(k) {
		case "NoNewPrivs":
			idx = 0
		case "Seccomp_filters":
			idx = 1
		}
		if idx < 0 {
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil {
			return out, false
		}
		out[idx] = n
		found++
	}
	return out, found == 2
}

// serve answers the questions of one connection.
func (j *journal) serve(c *net.UnixConn) {
	defer c.Close()
	// settled refused or not: finishConns waits for every connection it
	// holds (a refused one held the journal's exit 2 s)
	defer j.settle(c)
	if !allowed(c, j.self) {
		return
	}
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var q journalReq
		var resp journalResp
		if err := json.Unmarshal(line, &q); err != nil {
			resp.Why = "bad request"
		} else {
			resp = j.answer(c, q)
		}
		b, _ := json.Marshal(resp)
		if err := j.writeAnswer(c, q, append(b, '\n')); err != nil {
			return
		}
	}
}

// settle forgets c (its run went).
func (j *journal) settle(c *net.UnixConn) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.pending, c)
	delete(j.conns, c)
	j.rebased.Broadcast()
}

// finishConns, as the journal exits (the listener closed), serves what
// the open connections sent already (a run's last rebase, sent without
// waiting: the stat cache file written next is then its checkpoint's),
// waiting up to connDrain for each to go quiet.
func (j *journal) finishConns() {
	const connDrain = 100 * time.Millisecond
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closing = true
	for c := range j.conns {
		c.SetReadDeadline(time.Now().Add(connDrain))
	}
	deadline := time.Now().Add(2 * rebaseWait)
	t := time.AfterFunc(2*rebaseWait, func() {
		j.mu.Lock()
		j.rebased.Broadcast()
		j.mu.Unlock()
	})
	defer t.Stop()
	for len(j.conns) > 0 && time.Now().Before(deadline) {
		j.rebased.Wait()
	}
}

// waitRebases waits (j.mu held) until no connection but c is pending,
// or rebaseWait has passed.
func (j *journal) waitRebases(c *net.UnixConn) {
	others := func() bool {
		for p := range j.pending {
			if p != c {
				return true
			}
		}
		return false
	}
	if !others() {
		return
	}
	deadline := time.Now().Add(rebaseWait)
	t := time.AfterFunc(rebaseWait, func() {
		j.mu.Lock()
		j.rebased.Broadcast()
		j.mu.Unlock()
	})
	defer t.Stop()
	for others() && time.Now().Before(deadline) {
		j.rebased.Wait()
	}
}

// answer answers q, asked on connection c.
func (j *journal) answer(c *net.UnixConn, q journalReq) journalResp {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pending[c] {
		delete(j.pending, c) // its rebase, or a question instead
		j.rebased.Broadcast()
	}
	if len(q.Areas) != len(j.spec.Areas) || !slices.Equal(q.Areas, j.spec.Areas) || !slices.Equal(q.Exclude, j.spec.Exclude) || len(q.Roots) != len(q.Areas) {
		return journalResp{Why: "not the areas this journal follows"}
	}
	if q.Op == "dirty" {
		j.waitRebases(c)
	}
	j.drain()
	switch q.Op {
	case "prune":
		return j.startPrune(q.Budget)
	case "dirty":
		resp := j.dirtyAnswer(q)
		if j.share != nil {
			resp.Seq = j.share.now() // even: drained, j.mu held
		}
		if len(j.report.Removed) > 0 {
			p := j.report
			resp.Pruned, j.report = &p, Pruned{}
		}
		for _, a := range resp.Areas {
			if resp.OK && len(a.Dirty) > 0 && a.Base != nil {
				j.pending[c] = true // a checkpoint from Base, and its rebase, follow
				break
			}
		}
		return resp
	case "rebase":
		if q.Gen < j.bgen || q.Gen >= j.gen || q.From != nil && !slices.Equal(q.From, j.base) {
			return journalResp{Why: "stale"}
		}
		j.base, j.bgen = slices.Clone(q.Roots), q.Gen
		j.rebaseCache(q)
		for i := range j.dirty {
			for d, dg := range j.dirty[i] {
				if dg <= q.Gen {
					delete(j.dirty[i], d)
				}
			}
		}
		return journalResp{OK: true, Gen: q.Gen}
	}
	return journalResp{Why: "unknown op"}
}

// dirtyAnswer answers a "dirty" question (j.mu held, events drained).
func (j *journal) dirtyAnswer(q journalReq) journalResp {
	g := j.gen
	j.gen++ // what happens from now on is after this answer
	if !q.Head && !slices.Equal(q.Roots, j.base) {
		return journalResp{Gen: g, Why: "not the checkpoint this journal vouches for"}
	}
	resp := journalResp{OK: true, Gen: g}
	resp.Areas = make([]journalArea, len(j.base))
	for i := range j.base {
		if j.all[i] > j.bgen {
			resp.Areas[i].All = true
			continue
		}
		for d, dg := range j.dirty[i] {
			if dg > j.bgen {
				resp.Areas[i].Dirty = append(resp.Areas[i].Dirty, d)
			}
		}
		if c := j.cache[i]; c != nil && c.root == j.base[i] {
			resp.Areas[i].Base = c.base(resp.Areas[i].Dirty)
		} else if q.Head {
			return journalResp{Gen: g, Why: "no stat cache in memory"}
		}
	}
	return resp
}

// watchTree watches dir of area i and every directory below it; with
// mark, each is marked dirty (a new directory: what was created in it
// before its watch is seen at the rescan). It reports false when a watch
// could not be added.
func (j *journal) watchTree(i int, dir string, mark bool) bool {
	root := j.spec.Areas[i].Dir
	ok := true
	filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel := relOf(root, p)
		if rel != "." && slices.Contains(j.spec.Exclude, d.Name()) {
			return filepath.SkipDir
		}
		wd, err := unix.InotifyAddWatch(j.fd, p, watchMask)
		if err != nil {
			ok = false
			j.all[i] = j.gen
			return nil
		}
		j.wds[int32(wd)] = jwatch{i, rel}
		if mark {
			j.dirty[i][rel] = j.gen
		}
		return nil
	})
	return ok
}

// drain reads the queued events into the dirty sets (j.mu held). With
// a shared page, the sequence is odd from before the first read until
// what was read is applied, and not bumped when the queue is empty
// (journal_share.go).
func (j *journal) drain() {
	if j.share != nil {
		if n, err := unix.IoctlGetInt(j.fd, fionread); err == nil && n == 0 {
			return
		}
		atomic.AddUint64(j.share.seq, 1)
		defer atomic.AddUint64(j.share.seq, 1)
	}
	rewatch := map[int]bool{}
	for {
		n, err := unix.Read(j.fd, j.buf)
		if err != nil {
			break // EAGAIN: nothing more; anything else is seen as overflow below
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&j.buf[off]))
			name := ""
			if ev.Len > 0 {
				nb := j.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				name = string(bytes.TrimRight(nb, "\x00"))
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				for i := range j.all {
					j.all[i] = j.gen
					rewatch[i] = true
				}
				continue
			}
			w, ok := j.wds[ev.Wd]
			if !ok {
				continue
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(j.wds, ev.Wd)
				if w.dir == "." {
					j.stop() // an area is gone
				}
				continue
			}
			j.dirty[w.area][w.dir] = j.gen
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && w.dir != "." {
				j.dirty[w.area][path.Dir(w.dir)] = j.gen
			}
			if ev.Mask&unix.IN_ISDIR != 0 {
				switch {
				case ev.Mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0:
					// the watches below a moved directory name its old
					// path: follow the area afresh, and walk it
					j.all[w.area] = j.gen
					rewatch[w.area] = true
				case ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && !slices.Contains(j.spec.Exclude, name):
					if !j.watchTree(w.area, path.Join(w.dir, name), true) {
						rewatch[w.area] = true
					}
				}
			}
		}
	}
	for i := range rewatch {
		for wd, w := range j.wds {
			if w.area == i {
				unix.InotifyRmWatch(j.fd, uint32(wd))
				delete(j.wds, wd)
			}
		}
		j.watchTree(i, ".", false) // all[i] is set: the next checkpoint walks
	}
}

// compareTree lists the directories of the tree at root whose entries
// differ from m's (a stat cache, Excluded filled in): a path added or
// gone, or a file whose kind, mode, size, mtime, ctime or inode differ.
func compareTree(root string, m *Manifest, exclude []string) []string {
	want := make(map[string]*Entry, len(m.Entries))
	for i := range m.Entries {
		want[m.Entries[i].Path] = &m.Entries[i]
	}
	dirty := map[string]bool{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel := relOf(root, p)
		if err != nil {
			dirty[path.Dir(rel)] = true
			return nil
		}
		if rel == "." {
			return nil
		}
		if d.IsDir() && slices.Contains(exclude, d.Name()) {
			if !slices.Contains(m.Excluded, rel) {
				dirty[path.Dir(rel)] = true
			}
			return filepath.SkipDir
		}
		e := want[rel]
		delete(want, rel)
		if e == nil {
			dirty[path.Dir(rel)] = true
			if d.IsDir() {
				dirty[rel] = true
			}
			return nil
		}
		var sys unix.Stat_t
		if err := unix.Lstat(p, &sys); err != nil {
			dirty[path.Dir(rel)] = true
			return nil
		}
		same := permOf(sys.Mode) == e.Mode || e.Kind == Symlink
		switch sys.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			same = same && e.Kind == Dir
		case unix.S_IFLNK:
			l, err := os.Readlink(p)
			same = e.Kind == Symlink && err == nil && l == e.Link
		case unix.S_IFREG:
			same = same && e.Kind == File && e.Size == sys.Size && e.Mtime == sys.Mtim.Nano() && e.Ctime == sys.Ctim.Nano() && e.Ino == sys.Ino && e.Ino != 0
		default:
			same = false
		}
		if !same {
			dirty[path.Dir(rel)] = true
		}
		return nil
	})
	for p := range want {
		dirty[path.Dir(p)] = true
	}
	return slices.Collect(maps.Keys(dirty))
}

// journalClient is a run's connection to the journal of its store.
type journalClient struct {
	c   jconn // journal_conn.go
	r   *bufio.Reader
	req journalReq // Areas and Exclude of every question
	// unread: answers to questions sent without waiting (send), read
	// and dropped before the next answer
	unread int
	// seen: what the journal shares (journal_share.go; nil: none);
	// asks: the questions sent (tests)
	seen *jseen
	asks int
}

// dialJournal connects to the journal of the store dir; nil when none
// answers.
func dialJournal(dir string, areas []Area, exclude []string) *journalClient {
	c, err := dialRaw(filepath.Join(dir, journalSock), time.Second)
	if err != nil {
		return nil
	}
	return &journalClient{c: c, r: bufio.NewReader(c), req: journalReq{Areas: areas, Exclude: exclude}}
}

func (jc *journalClient) ask(q journalReq) (journalResp, error) {
	if err := jc.send(q); err != nil {
		return journalResp{}, err
	}
	for ; jc.unread > 1; jc.unread-- {
		if _, err := jc.r.ReadBytes('\n'); err != nil {
			return journalResp{}, err
		}
	}
	jc.unread = 0
	line, err := jc.r.ReadBytes('\n')
	if err != nil {
		return journalResp{}, err
	}
	return parseJournalResp(line) // jsonread.go
}

// send writes q and leaves its answer unread (the next ask drops it):
// for a rebase, which a run need not wait for (the journal answers a
// later run's question after it: pending).
func (jc *journalClient) send(q journalReq) error {
	q.Areas, q.Exclude = jc.req.Areas, jc.req.Exclude
	var b []byte
	if q.Delta == nil && q.Budget == nil {
		b = appendAsk(make([]byte, 0, 512), q) // jsonfast.go
	} else {
		var err error
		if b, err = json.Marshal(q); err != nil {
			return err
		}
	}
	jc.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := jc.c.Write(append(b, '\n')); err != nil {
		return err
	}
	jc.unread++
	jc.asks++
	return nil
}

func (jc *journalClient) close() {
	if jc.seen != nil {
		jc.seen.close()
		jc.seen = nil
	}
	jc.c.Close()
}

// rebaseCache follows a rebase to q.Roots in the stat caches in memory
// (j.mu held): a delta is applied and written later; after a whole walk
// (no delta) the file the walk wrote is read again, after the answer.
func (j *journal) rebaseCache(q journalReq) {
	var reload []int
	for i := range j.cache {
		var d *jdelta
		if q.From != nil && len(q.Delta) == len(j.cache) {
			d = q.Delta[i]
		}
		c := j.cache[i]
		switch {
		case c != nil && d != nil && c.root == q.From[i] && d.Root == q.Roots[i]:
			if d.Root != c.root {
				j.unsaved[i] = true
			}
			c.apply(d)
		case c != nil && c.root == q.Roots[i]:
			// the same checkpoint's trees: nothing to learn
		default:
			j.cache[i] = nil
			delete(j.unsaved, i) // a newer file than what the cache held
			reload = append(reload, i)
		}
	}
	if len(j.unsaved) > 0 {
		if j.saveT == nil {
			j.saveT = time.AfterFunc(journalPersistAfter, j.save)
		} else {
			j.saveT.Reset(journalPersistAfter)
		}
	}
	if len(reload) > 0 {
		go func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			for _, i := range reload {
				if j.cache[i] == nil && j.stores[i] != nil {
					j.cache[i] = loadJCache(j.stores[i], j.base[i])
				}
			}
		}()
	}
}

// loadJCache reads the stat cache file of s into the journal's form; nil
// unless it is the checkpoint of root tree root.
func loadJCache(s *Store, root string) *jcache {
	m := s.statCache()
	if m == nil || m.Root != root {
		return nil
	}
	rec, err := s.record(m.ID)
	if err != nil {
		return nil
	}
	m.Excluded = rec.Excluded
	return newJCache(m)
}

// save writes the stat cache file of every area whose cache is newer.
func (j *journal) save() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range j.unsaved {
		if c := j.cache[i]; c != nil && j.stores[i] != nil {
			_ = j.stores[i].saveStatCacheExisting(c.manifest())
		}
		delete(j.unsaved, i)
	}
}

// flush stops the timer and saves what is unsaved (the journal exits).
func (j *journal) flush() {
	j.mu.Lock()
	if j.saveT != nil {
		j.saveT.Stop()
	}
	j.mu.Unlock()
	j.save()
}

// saveStatCacheExisting is SaveStatCache for the journal: into the store
// only while its directory is there (a store being deleted is not
// brought back).
func (s *Store) saveStatCacheExisting(m *Manifest) error {
	b, err := encodeStatCache(&statCacheFile{ID: m.ID, Root: m.Root, Trees: m.trees, Entries: m.Entries})
	if err != nil {
		return err
	}
	return replaceFile(filepath.Join(s.dir, statCacheName), b, false)
}

// makeTreeDirs makes the store's 256 tree directories (trees/00 to
// trees/ff) that are missing, for the journal (once, soon after it
// starts): a run's end otherwise makes the one a new tree needs on its
// path, and on a busy ext4 a mkdir costs ~1 ms. Only while trees/ is there (Mkdir, never
// MkdirAll: a store being deleted is not brought back).
func (s *Store) makeTreeDirs() {
	ents, err := os.ReadDir(filepath.Join(s.dir, "trees"))
	if err != nil {
		return
	}
	have := make(map[string]bool, len(ents))
	for _, e := range ents {
		have[e.Name()] = true
	}
	for i := range 256 {
		name := fmt.Sprintf("%02x", i)
		if have[name] {
			continue
		}
		if err := os.Mkdir(filepath.Join(s.dir, "trees", name), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return
		}
	}
}
