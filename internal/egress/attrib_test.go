package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/policy"
)

// waitFile polls for file to hold a line and returns it.
func waitFile(t *testing.T, file string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was not written", file)
	return ""
}

// netEvents are the proxy's events carrying a decision.
func (tp *testProxy) netEvents() []audit.Event {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []audit.Event
	for _, e := range tp.events {
		if e.Decision != "" {
			out = append(out, e)
		}
	}
	return out
}

// waitNetEvents polls until tp has audited n decided connections (their
// events are written once the connection's attribution is known, which
// may be after the client has its answer) and returns them.
func (tp *testProxy) waitNetEvents(t testing.TB, n int) []audit.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := tp.netEvents()
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAttribution: connections through the proxy are attributed to the
// process holding the client socket and the program the run recorded for
// it. Real processes on loopback: an outer bash (recorded as "outer")
// runs an inner bash (recorded as "inner") whose subshell, forked without
// an exec of its own, opens the connection (bash's /dev/tcp): it runs
// inner's program, with outer above it. A connection of a process no
// program start names (this test itself) is attributed to its pid with
// the reason its program is unknown.
func TestAttribution(t *testing.T) {
	up, _ := benchPair(t, 0)
	_, upPort, _ := net.SplitHostPort(up)
	procs := NewProcesses()
	procs.SetNetPid(os.Getpid()) // the test's processes share its namespace
	tp := newTestProxy(t, map[string]policy.Decision{"up.test": policy.Allow}, map[string]string{"up.test": "127.0.0.1"}, Config{Processes: procs})
	_, proxyPort, _ := net.SplitHostPort(tp.addr)

	dir := t.TempDir()
	f := func(n string) string { return filepath.Join(dir, n) }
	inner := fmt.Sprintf(`echo $$ > %s
( echo $BASHPID > %s
  while [ ! -e %s ]; do sleep 0.01; done
  exec 3<>/dev/tcp/127.0.0.1/%s
  printf 'CONNECT up.test:%s HTTP/1.1\r\nHost: up.test:%s\r\n\r\n' >&3
  read -r status <&3; read -r blank <&3
  echo ping >&3; read -r answer <&3
  echo "$status $answer" > %s )`, f("inner"), f("sub"), f("go"), proxyPort, upPort, upPort, f("answer"))
	if err := os.WriteFile(f("inner.sh"), []byte(inner), 0o600); err != nil {
		t.Fatal(err)
	}
	outer := fmt.Sprintf(`echo $$ > %s; bash %s; exit 0`, f("outer"), f("inner.sh"))
	cmd := exec.Command("bash", "-c", outer)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	outerPid, _ := strconv.Atoi(waitFile(t, f("outer")))
	innerPid, _ := strconv.Atoi(waitFile(t, f("inner")))
	subPid, _ := strconv.Atoi(waitFile(t, f("sub")))
	procs.Exec(outerPid, 0, 0, "outer", "/usr/bin/outer")
	procs.Exec(innerPid, 0, 0, "inner", "/usr/bin/inner")
	os.WriteFile(f("go"), nil, 0o600)
	if got := waitFile(t, f("answer")); !strings.Contains(got, "200") || !strings.HasSuffix(got, "ok") {
		t.Fatalf("through the proxy: %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}

	// This test's own connection: no program start names it.
	c, br, err := dialProxy(tp.addr, upPort)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "ping\n")
	br.ReadString('\n')
	c.Close()

	evs := tp.waitNetEvents(t, 2)
	if len(evs) != 2 {
		t.Fatalf("%d decided connections, want 2: %+v", len(evs), evs)
	}
	want := []map[string]string{
		{"pid": strconv.Itoa(subPid), "program": "inner", "program_path": "/usr/bin/inner", "ancestry": "outer[" + strconv.Itoa(outerPid) + "]"},
		{"pid": strconv.Itoa(os.Getpid()), "program": "unknown", "ancestry": ""},
	}
	for i, w := range want {
		for k, v := range w {
			if evs[i].Detail[k] != v {
				t.Errorf("connection %d: detail %s = %q, want %q (%v)", i, k, evs[i].Detail[k], v, evs[i].Detail)
			}
		}
	}
	if !strings.Contains(evs[1].Detail["attribution"], "no program start") {
		t.Errorf("unknown program not said: %v", evs[1].Detail)
	}
	if _, ok := evs[0].Detail["attribution"]; ok {
		t.Errorf("attributed connection has a failure note: %v", evs[0].Detail)
	}
}

// TestProgramRightsProxy: the proxy's side of rights that follow a
// program, the client being this process recorded as one program, then
// as another. As "self" (mode only, its own host example.com and its own
// secret): its secret is put in place; the run's secret's placeholder and
// the run's host other.test are refused. As "stranger": the program's
// placeholder is refused, the run's host is reached.
func TestProgramRightsProxy(t *testing.T) {
	procs := NewProcesses()
	procs.SetNetPid(os.Getpid())
	defer procs.Close()
	const progPlaceholder, progValue = "agentbox-placeholder-prog", "prog-real-value"
	prog := Secret{Name: "PROG_KEY", Placeholder: progPlaceholder, Value: progValue, Headers: []string{"Authorization"},
		Hosts: func(h string, _ int) bool { return h == "example.com" }, Programs: []string{"self"}}
	cfg := Config{Processes: procs, Secrets: []Secret{exampleSecret(), prog}, Programs: []Program{{
		Name: "self", Source: "test.yaml:3", Only: true,
		Match: func(name, _ string) bool { return name == "self" },
		Hosts: func(h string, _ int) bool { return h == "example.com" },
	}}}
	var lastAuth string
	w := newInspectWorld(t, cfg, func(rw http.ResponseWriter, r *http.Request) {
		lastAuth = r.Header.Get("Authorization")
		io.WriteString(rw, "ok")
	})
	w.client.Transport.(*http.Transport).DisableKeepAlives = true
	cases := []struct {
		as, url, header, value string
		want                   int
		wantWhy                string
	}{
		{"self", w.apiURL("/a"), "Authorization", "Bearer " + progPlaceholder, 200, ""},
		{"self", w.apiURL("/b"), "X-Api-Key", placeholder, 403, "the run's, from self["},
		{"self", w.plainURL("/c"), "", "", 403, "may reach only its own hosts"},
		{"stranger", w.apiURL("/d"), "Authorization", "Bearer " + progPlaceholder, 403, "program self's only, from stranger["},
		{"stranger", w.plainURL("/e"), "", "", 200, ""},
	}
	for i, c := range cases {
		procs.Exec(os.Getpid(), 0, 0, c.as, "/usr/bin/"+c.as)
		hdr := map[string]string{}
		if c.header != "" {
			hdr[c.header] = c.value
		}
		lastAuth = ""
		code, body := w.do(t, "GET", c.url, hdr)
		if code != c.want {
			t.Errorf("case %d (%s %s): %d %q, want %d", i, c.as, c.url, code, body, c.want)
			continue
		}
		if c.want == 403 {
			evs := w.tp.netEvents()
			last := evs[len(evs)-1]
			if last.Decision != "deny" || !strings.Contains(last.Reason, c.wantWhy) || last.Detail["program"] != c.as {
				t.Errorf("case %d: audit %+v, want a deny of program %s saying %q", i, last, c.as, c.wantWhy)
			}
			if i == 2 && last.Rule != "programs/self" {
				t.Errorf("the mode only refusal names rule %q, want programs/self", last.Rule)
			}
		}
		if i == 0 && lastAuth != "Bearer "+progValue {
			t.Errorf("the program's secret was not put in place: upstream saw %q", lastAuth)
		}
	}
}

// TestFindSocketProcNet: the fallback when agentbox cannot enter the
// sandbox's namespace (not root): the client socket's inode read from
// /proc/PID/net/tcp by its addresses is the socket's own (fstat of the
// client's descriptor), and the sock_diag lookup agrees.
func TestFindSocketProcNet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	want := st.Sys().(*syscall.Stat_t).Ino
	ra, la := s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)
	got, err := findSocket("/proc/self/net/tcp", hexAddr4(ra), hexAddr4(la))
	if err != nil || got != want {
		t.Fatalf("/proc/self/net/tcp: inode %d, %v; want %d", got, err, want)
	}
	if _, err := findSocket("/proc/self/net/tcp", hexAddr4(la), hexAddr4(la)); err == nil {
		t.Error("a socket no line names was found")
	}
	d, err := newSockDiag("")
	if err != nil {
		t.Skipf("reason: %v", err)
	}
	defer d.Close()
	if got, err := d.inode(ra, la); err != nil || got != want {
		t.Fatalf("sock_diag: inode %d, %v; want %d", got, err, want)
	}
}

// FuzzParseTCPLine: no line of /proc/net/tcp makes the reader panic, and
// a line it accepts names the addresses asked for.
func FuzzParseTCPLine(f *testing.F) {
	f.Add("   0: 0100007F:D431 0100007F:0C38 01 00000000:00000000 00:00000000 00000000     0        0 123456 1 0000000000000000 20 4 30 10 -1", "0100007F:D431", "0100007F:0C38")
	f.Add("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", "a", "b")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, line, local, remote string) {
		ino, ok := parseTCPLine([]byte(line), []byte(local), []byte(remote))
		if ok && (!strings.Contains(line, local) || !strings.Contains(line, remote)) {
			t.Fatalf("accepted %q for %q → %q (inode %d)", line, local, remote, ino)
		}
	})
}

// TestAttributionAfterClose: a connection no programs: block governs is
// not held for its program: it is served and ends (client and proxy side)
// while the attribution is still reading the program, and its events are
// written after, once each, with the program. A connection to a host only
// a program is granted waits for the attribution and is refused to this
// process, decided as another program (fail closed).
func TestAttributionAfterClose(t *testing.T) {
	up, _ := benchPair(t, 0)
	_, port, _ := net.SplitHostPort(up)
	procs := NewProcesses()
	defer procs.Close()
	procs.SetNetPid(os.Getpid())
	procs.Exec(os.Getpid(), 0, 0, "self", "/usr/bin/self")
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	attribHeld = func() { <-release }
	defer func() { attribHeld = nil }()
	tp := newTestProxy(t, map[string]policy.Decision{"up.test": policy.Allow}, map[string]string{"up.test": "127.0.0.1", "gov.test": "127.0.0.1"},
		Config{Processes: procs, Programs: []Program{{Name: "other", Source: "test.yaml:1",
			Match: func(name, _ string) bool { return name == "other" },
			Hosts: func(h string, _ int) bool { return h == "gov.test" }}}})
	defer func() { free(); tp.p.Close() }() // before attribHeld is reset: its goroutines end first

	c, br, err := dialProxy(tp.addr, port)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "ok\n" {
		t.Fatalf("round trip while the attribution is held: %q %v", line, err)
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tp.p.mu.Lock()
		open := len(tp.p.conns)
		tp.p.mu.Unlock()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy's side of the connection did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if evs := tp.netEvents(); len(evs) != 0 {
		t.Fatalf("events written before the program was known: %+v", evs)
	}
	free()
	tp.p.Close() // waits for the events
	tp.mu.Lock()
	evs := slices.Clone(tp.events)
	tp.mu.Unlock()
	if len(evs) != 2 || evs[0].Decision != "allow" || evs[1].Reason != "connection closed" {
		t.Fatalf("want the decision and the close, once each: %+v", evs)
	}
	for _, e := range evs {
		if e.Detail["program"] != "self" || e.Detail["pid"] != strconv.Itoa(os.Getpid()) {
			t.Errorf("event without its program: %+v", e.Detail)
		}
	}
}

// TestGovernedRefused: a host only program other is granted, reached by
// a CONNECT tunnel (no request read) from this process, decided as self,
// is refused and audited with the program; decided as other, allowed.
func TestGovernedRefused(t *testing.T) {
	up, _ := benchPair(t, 0)
	_, port, _ := net.SplitHostPort(up)
	procs := NewProcesses()
	defer procs.Close()
	procs.SetNetPid(os.Getpid())
	tp := newTestProxy(t, map[string]policy.Decision{"up.test": policy.Allow}, map[string]string{"gov.test": "127.0.0.1"},
		Config{Processes: procs, Programs: []Program{{Name: "other", Source: "test.yaml:1",
			Match: func(name, _ string) bool { return name == "other" },
			Hosts: func(h string, _ int) bool { return h == "gov.test" }}}})
	for i, c := range []struct {
		as   string
		want string
	}{{"self", "403"}, {"other", "200"}} {
		procs.Exec(os.Getpid(), 0, 0, c.as, "/usr/bin/"+c.as)
		conn, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT gov.test:%s HTTP/1.1\r\nHost: gov.test:%s\r\n\r\n", port, port)
		status, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.Contains(status, c.want) {
			t.Errorf("case %d (%s): %q, want %s", i, c.as, status, c.want)
		}
		evs := tp.waitNetEvents(t, i+1)
		if last := evs[len(evs)-1]; last.Detail["program"] != c.as || (c.want == "403") != (last.Decision == "deny" && last.Rule == "programs/other") {
			t.Errorf("case %d: audit %+v", i, last)
		}
	}
}

// TestProgramForward: a loopback port granted only to program other (a
// program-only forward, internal/plan) is served to a process decided as
// other and refused to any other process of the run, each audited with
// the program.
func TestProgramForward(t *testing.T) {
	up, _ := benchPair(t, 0)
	upHost, upPortS, _ := net.SplitHostPort(up)
	upPort, _ := strconv.Atoi(upPortS)
	procs := NewProcesses()
	defer procs.Close()
	procs.SetNetPid(os.Getpid())
	tp := newTestProxy(t, nil, map[string]string{upHost: upHost},
		Config{Processes: procs, Programs: []Program{{Name: "other", Source: "test.yaml:1",
			Match: func(name, _ string) bool { return name == "other" },
			Hosts: func(h string, p int) bool { return h == upHost && p == upPort }}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go tp.p.Forward(l, upHost, upPort)
	for i, c := range []struct {
		as   string
		want string // the answer read back ("": the connection closed)
	}{{"self", ""}, {"other", "ok\n"}, {"self", ""}} {
		procs.Exec(os.Getpid(), 0, 0, c.as, "/usr/bin/"+c.as)
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "ping\n")
		got, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if got != c.want {
			t.Errorf("case %d (%s): read %q, want %q", i, c.as, got, c.want)
		}
		evs := tp.waitNetEvents(t, i+1)
		last := evs[len(evs)-1]
		if last.Detail["program"] != c.as || last.Detail["forward"] != "true" || (c.want == "") != (last.Decision == "deny" && last.Rule == "programs/other") {
			t.Errorf("case %d: audit %+v", i, last)
		}
	}
}

// TestAttributionHolderChanges: the recent holders searched first (their
// latest socket descriptors) never stand in for the socket's real holder.
// Each step's client socket is made by a shell recorded as a program, the
// test accepts it and attributes it while the shell waits:
//   - alpha's socket at descriptor 3: alpha (now a recent holder, fd 3);
//   - alpha opens another at 3, forks a child that keeps it, closes its
//     own and opens a third socket at 3 again: the child holds the
//     second (it runs alpha's program, forked without exec), not alpha,
//     whose descriptor 3 is a socket but another one; the third is
//     alpha's;
//   - alpha exits, beta's socket at descriptor 3: beta, not the gone
//     alpha, nor the child still alive.
func TestAttributionHolderChanges(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	procs := NewProcesses()
	defer procs.Close()
	procs.SetNetPid(os.Getpid())
	dir := t.TempDir()
	f := func(n string) string { return filepath.Join(dir, n) }
	// step writes name once its socket is made and waits for go-name.
	step := func(name string) string {
		return fmt.Sprintf("echo ok > %s; while [ ! -e %s ]; do sleep 0.01; done\n", f(name), f("go-"+name))
	}
	start := func(name, script string) *exec.Cmd {
		cmd := exec.Command("bash", "-c", "echo $$ > "+f(name)+"\n"+script)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	open := "exec 3<>/dev/tcp/127.0.0.1/" + port + "\n"
	alpha := start("alpha", open+step("a1")+
		"exec 3>&-\n"+open+"sleep 60 & echo $! > "+f("child")+"\nexec 3>&-\n"+open+step("a2")+"exec 3>&-\n")
	alphaPid, _ := strconv.Atoi(waitFile(t, f("alpha")))
	procs.Exec(alphaPid, 0, 0, "alpha", "/usr/bin/alpha")
	attribute := func(name string, conns int) []*Origin {
		t.Helper()
		var out []*Origin
		var ss []net.Conn
		for range conns {
			s, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ss = append(ss, s)
		}
		waitFile(t, f(name))
		for _, s := range ss {
			out = append(out, procs.Attribute(s))
		}
		os.WriteFile(f("go-"+name), nil, 0o600)
		return out
	}
	if o := attribute("a1", 1)[0]; o.Pid != alphaPid || o.Program != "alpha" {
		t.Fatalf("alpha's socket: %+v", o)
	}
	os2 := attribute("a2", 2)
	childPid, _ := strconv.Atoi(waitFile(t, f("child")))
	defer syscall.Kill(childPid, syscall.SIGKILL)
	if o := os2[0]; o.Pid != childPid || o.Program != "alpha" || o.ExecPid != alphaPid {
		t.Errorf("the socket alpha's child kept (child %d): %+v", childPid, o)
	}
	if o := os2[1]; o.Pid != alphaPid || o.Program != "alpha" {
		t.Errorf("alpha's third socket: %+v", o)
	}
	alpha.Wait()
	start("beta", open+step("b1"))
	betaPid, _ := strconv.Atoi(waitFile(t, f("beta")))
	procs.Exec(betaPid, 0, 0, "beta", "/usr/bin/beta")
	if o := attribute("b1", 1)[0]; o.Pid != betaPid || o.Program != "beta" {
		t.Errorf("beta's socket after alpha exited: %+v", o)
	}
}

// TestDirentFds: the descriptor numbers read from /proc/self/fd's raw
// directory records are the ones the standard reader names.
func TestDirentFds(t *testing.T) {
	dfd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dfd)
	var got, want []int
	buf := make([]byte, 256) // small: several reads
	for {
		n, err := syscall.Getdents(dfd, buf)
		if err != nil || n <= 0 {
			break
		}
		got = appendDirentFds(got, buf[:n])
		_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil {
				want = append(want, fd)
			}
		}
	}
	if len(want) < 3 || !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
}

// FuzzAppendDirentFds: no directory record, however malformed, makes the
// reader panic or name a descriptor that is not a record's number.
func FuzzAppendDirentFds(f *testing.F) {
	rec := func(name string) []byte {
		n := (19 + len(name) + 1 + 7) &^ 7
		b := make([]byte, n)
		b[16], b[17] = byte(n), byte(n>>8)
		copy(b[19:], name)
		return b
	}
	f.Add(slices.Concat(rec("."), rec(".."), rec("0"), rec("17"), rec("255")))
	f.Add(rec("12345678901"))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fd := range appendDirentFds(nil, b) {
			if fd < 0 || !bytes.Contains(b, []byte(strconv.Itoa(fd))) {
				t.Fatalf("descriptor %d from %x", fd, b)
			}
		}
	})
}

// TestAncestryRemembered: the walk up from a program start ends at the
// first process started before the run's first program start, and is
// remembered (not read from /proc again) only while no process it passed
// has a program start of its own: one recorded later shows in the next
// ancestry. The tree: outer bash O, its subshell P (forked without
// exec), P's sleep C; only C is recorded at first (and an unrelated
// process S, started before them all, is the run's first).
func TestAncestryRemembered(t *testing.T) {
	self, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	procs := NewProcesses()
	defer procs.Close()
	// S must start a clock tick after this process (the run's first
	// program start is after the launcher's side).
	var sPid int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s := exec.Command("sleep", "60")
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Process.Kill(); s.Wait() })
		if st, err := procfs.ReadStat(s.Process.Pid); err == nil && st.StartTime > self.StartTime {
			sPid = s.Process.Pid
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no process started after this one")
		}
	}
	procs.Exec(sPid, 0, 0, "sleep", "/usr/bin/sleep")
	dir := t.TempDir()
	f := func(n string) string { return filepath.Join(dir, n) }
	cmd := exec.Command("bash", "-c", fmt.Sprintf(`echo $$ > %s; ( echo $BASHPID > %s; sleep 60 & echo $! > %s; wait ); exit 0`, f("o"), f("p"), f("c")))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	oPid, _ := strconv.Atoi(waitFile(t, f("o")))
	pPid, _ := strconv.Atoi(waitFile(t, f("p")))
	cPid, _ := strconv.Atoi(waitFile(t, f("c")))
	defer syscall.Kill(cPid, syscall.SIGKILL)
	procs.Exec(cPid, 0, 0, "leaf", "/usr/bin/leaf")
	ancestry := func() string {
		o := &Origin{Pid: cPid}
		procs.program(o)
		if o.Program != "leaf" {
			t.Fatalf("C is %+v", o)
		}
		return strings.Join(o.Ancestry, " < ")
	}
	p, o := "mid["+strconv.Itoa(pPid)+"]", "outer["+strconv.Itoa(oPid)+"]"
	for i, c := range []struct {
		record string // recorded before the walk: "P", "O"
		want   string
	}{{"", ""}, {"", ""}, {"P", p}, {"P", p}, {"O", p + " < " + o}, {"O", p + " < " + o}} {
		switch c.record {
		case "P":
			procs.Exec(pPid, 0, 0, "mid", "/usr/bin/mid")
		case "O":
			procs.Exec(oPid, 0, 0, "outer", "/usr/bin/outer")
		}
		if got := ancestry(); got != c.want {
			t.Errorf("walk %d: ancestry %q, want %q", i, got, c.want)
		}
	}
	procs.mu.RLock()
	leaf := procs.procs[cPid]
	procs.mu.RUnlock()
	if leaf.outside == 0 {
		t.Error("the walk's end was not remembered")
	}
}
