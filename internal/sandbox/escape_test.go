package sandbox

// The escape suite: real sandboxes (Landlock, seccomp, capabilities,
// rlimits, cgroups when available) launched through Run, each attempting one
// way out and each asserting that nothing outside changed or leaked.
//
// The test binary doubles as the sandbox helper (TestMain calls
// MaybeRunHelper) and as a small client for attempts the shell cannot make
// (raw sockets, ptrace, mount, /proc/PID/mem): it is copied into the
// workspace's target/ and run there as "./client escape-client MODE ARGS".

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
)

func TestMain(m *testing.M) {
	if MaybeRunHelper() {
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "escape-client" {
		os.Exit(escapeClient(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// escapeClient performs one attempt from inside the sandbox. It prints
// "OK ..." and returns 0 when the operation succeeded, "ERR ..." and 1 when
// the kernel refused it.
func escapeClient(mode string, args []string) int {
	res := func(err error, what string) int {
		if err != nil {
			fmt.Printf("ERR %s: %v\n", what, err)
			return 1
		}
		fmt.Printf("OK %s\n", what)
		return 0
	}
	inet := func(addr string) *unix.SockaddrInet4 {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		sa := &unix.SockaddrInet4{Port: p}
		copy(sa.Addr[:], net.ParseIP(host).To4())
		return sa
	}
	switch mode {
	case "tcp", "mptcp":
		proto := 0
		if mode == "mptcp" {
			proto = unix.IPPROTO_MPTCP
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, proto)
		if err != nil {
			return res(err, "socket")
		}
		return res(unix.Connect(fd, inet(args[0])), "connect "+args[0])
	case "udp":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return res(err, "socket")
		}
		return res(unix.Sendto(fd, []byte("escaped"), 0, inet(args[0])), "sendto "+args[0])
	case "family":
		// A socket of an address family the sandbox does not need (vsock:
		// a channel to the hypervisor on a VM; bluetooth, CAN, packet...).
		fam, _ := strconv.Atoi(args[0])
		fd, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return res(err, "socket family "+args[0])
	case "abstract":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return res(err, "socket")
		}
		return res(unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + args[0]}), "connect @"+args[0])
	case "unixpath":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return res(err, "socket")
		}
		return res(unix.Connect(fd, &unix.SockaddrUnix{Name: args[0]}), "connect "+args[0])
	case "ptrace":
		pid, _ := strconv.Atoi(args[0])
		return res(unix.PtraceSeize(pid), "ptrace seize "+args[0])
	case "kill":
		pid, _ := strconv.Atoi(args[0])
		return res(unix.Kill(pid, unix.SIGTERM), "kill "+args[0])
	case "mount":
		return res(unix.Mount("none", args[0], "tmpfs", 0, ""), "mount "+args[0])
	case "unshare":
		return res(unix.Unshare(unix.CLONE_NEWUSER|unix.CLONE_NEWNS), "unshare")
	case "procmem":
		// A sibling inside the sandbox: its memory must not be writable.
		c := exec.Command("/bin/sleep", "5")
		if err := c.Start(); err != nil {
			return res(err, "start sibling")
		}
		defer c.Process.Kill()
		f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", c.Process.Pid), os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return res(err, "open /proc/sibling/mem for writing")
	case "selfmem":
		f, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return res(err, "open /proc/self/mem for writing")
	case "vmwrite":
		c := exec.Command("/bin/sleep", "5")
		if err := c.Start(); err != nil {
			return res(err, "start sibling")
		}
		defer c.Process.Kill()
		b := []byte("x")
		local := []unix.Iovec{{Base: &b[0], Len: 1}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: 1}}
		_, err := unix.ProcessVMWritev(c.Process.Pid, local, remote, 0)
		return res(err, "process_vm_writev")
	}
	if f, ok := extraEscapeClients[mode]; ok {
		return f(args)
	}
	fmt.Printf("ERR unknown mode %q\n", mode)
	return 2
}

// testRole is the explicit role used by the suite (independent of the
// policy engine's built-in roles).
func testRole() policy.RoleInfo {
	return policy.RoleInfo{
		Name: "escape-test",
		FS: policy.FSGrants{
			Context:     policy.AccessRead,
			Target:      policy.AccessAll,
			Feedback:    policy.AccessReadWrite,
			OwnAgent:    policy.AccessAll,
			OtherAgents: policy.AccessRead,
		},
	}
}

const (
	contextContent = "context-original\n"
	secretContent  = "TOP-SECRET-d41d8cd98f00\n"
	policyContent  = "version: 1\n"
	otherContent   = "other agent notes\n"
)

// testWS is a workspace plus an outside directory for one test.
type testWS struct {
	t       *testing.T
	W       string // workspace
	Out     string // outside the workspace
	Audit   string // an audit log outside the workspace
	watched []string
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := LandlockABI(); abi < RequiredLandlockABI {
		t.Skipf("reason: kernel Landlock ABI %d < %d (%s)", abi, RequiredLandlockABI, helper.LandlockFeature(abi+1))
	}
}

func newTestWS(t *testing.T) *testWS {
	t.Helper()
	requireLandlock(t)
	w := &testWS{t: t, W: t.TempDir(), Out: t.TempDir()}
	for _, a := range boundary.Areas {
		must(t, os.Mkdir(filepath.Join(w.W, a), 0o755))
	}
	write(t, filepath.Join(w.W, "context", "c.txt"), contextContent, 0o644)
	write(t, filepath.Join(w.W, "agentbox.yaml"), policyContent, 0o644)
	must(t, os.MkdirAll(filepath.Join(w.W, "agents", "other", "home"), 0o755))
	write(t, filepath.Join(w.W, "agents", "other", "notes.txt"), otherContent, 0o644)
	write(t, filepath.Join(w.W, "target", "t.txt"), "target file\n", 0o644)
	write(t, filepath.Join(w.Out, "secret.txt"), secretContent, 0o644)
	w.Audit = filepath.Join(w.Out, "audit.jsonl")
	write(t, w.Audit, `{"event":"launch"}`+"\n", 0o600)
	// The client: this test binary, runnable inside target/.
	exe, err := os.ReadFile(os.Args[0])
	must(t, err)
	write(t, filepath.Join(w.W, "target", "client"), string(exe), 0o755)
	w.watched = []string{filepath.Join(w.W, "context"), filepath.Join(w.W, "agentbox.yaml"),
		filepath.Join(w.W, "agents", "other"), w.Out}
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(content), mode))
}

// snapshot fingerprints every watched path: names, types, modes, owners and
// contents. Any change outside what the sandbox may write shows up here.
func (w *testWS) snapshot() string {
	var lines []string
	for _, root := range w.watched {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				lines = append(lines, p+" error "+err.Error())
				return nil
			}
			st, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			sum := ""
			if st.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				h := sha256.Sum256(b)
				sum = hex.EncodeToString(h[:8])
			}
			sys := st.Sys().(*syscall.Stat_t)
			lines = append(lines, fmt.Sprintf("%s %v %d:%d %d %s", p, st.Mode(), sys.Uid, sys.Gid, st.Size(), sum))
			return nil
		})
	}
	for _, p := range []string{"/etc/agentbox-pwned", "/tmp/agentbox-pwned"} {
		if _, err := os.Lstat(p); err == nil {
			lines = append(lines, p+" EXISTS")
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// runOpts vary one sandboxed run.
type runOpts struct {
	role    *policy.RoleInfo
	network *Network
	limits  Limits
	env     []string
	grace   time.Duration
	// caches are host caches shown copy-on-write, their overlays made
	// ahead (PrepareCacheMounts) as agentbox run does.
	caches []CacheLayer
}

// runResult is what one run produced.
type runResult struct {
	code    int
	out     string
	records []audit.Event
	elapsed time.Duration
	err     error
}

func (w *testWS) run(o runOpts, argv ...string) runResult {
	w.t.Helper()
	outF, err := os.CreateTemp(w.t.TempDir(), "out")
	must(w.t, err)
	defer outF.Close()
	devnull, err := os.Open(os.DevNull)
	must(w.t, err)
	defer devnull.Close()
	role := testRole()
	if o.role != nil {
		role = *o.role
	}
	env := o.env
	if env == nil {
		env = []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	}
	var recs []audit.Event
	plan, err := boundary.Resolve(w.W, "a1", role.FS)
	if err != nil {
		return runResult{err: err}
	}
	nw := Network{Proxy: role.Network.Proxy, TCPConnect: role.Network.TCPConnect, TCPBind: role.Network.TCPBind}
	if o.network != nil {
		nw = *o.network
	}
	cfg := Config{
		Argv: argv, Plan: plan, Role: role.Name, PassEnv: role.Env,
		Network: nw, Limits: o.limits,
		Stdin: devnull, Stdout: outF, Stderr: outF,
		Env: env, Exe: os.Args[0], KillGrace: o.grace, Warnings: outF,
		Events: func(e Event) {
			recs = append(recs, audit.Event{Event: e.Kind, Pid: e.Pid, Argv: e.Argv, Cwd: e.Cwd, Limit: e.Limit,
				Reason: e.Reason, Exit: e.Exit, Signal: e.Signal, Detail: e.Detail})
		},
	}
	if len(o.caches) > 0 {
		cfg.HostCaches = o.caches
		cfg.CacheMounts = PrepareCacheMounts(o.caches)
		defer cfg.CacheMounts.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, cfg)
	el := time.Since(start)
	_, _ = outF.Seek(0, io.SeekStart)
	out, _ := io.ReadAll(outF)
	r := runResult{out: string(out), records: recs, elapsed: el, err: err}
	if res != nil {
		r.code = res.ExitCode
	}
	return r
}

// sh runs script with /bin/sh -c in target/.
func (w *testWS) sh(o runOpts, script string) runResult {
	w.t.Helper()
	return w.run(o, "/bin/sh", "-c", script)
}

// escapeAttempt is one row of the table: a shell script that must fail
// (exit non-zero), optionally with output it must (not) print.
type escapeAttempt struct {
	name    string
	script  string
	mustOK  bool     // the operation is allowed (a positive control)
	notOut  []string // strings that must not appear in the output
	wantOut []string // strings that must appear
	opts    runOpts
	after   func(t *testing.T, w *testWS, r runResult)
}

func TestEscapeFilesystem(t *testing.T) {
	w := newTestWS(t)
	exp := func(s string) string {
		return strings.NewReplacer("{OUT}", w.Out, "{W}", w.W, "{AUDIT}", w.Audit).Replace(s)
	}
	attempts := []escapeAttempt{
		{name: "write context file", script: `echo pwned > ../context/c.txt`},
		{name: "append context file", script: `echo pwned >> ../context/c.txt`},
		{name: "create file in context", script: `echo pwned > ../context/new.txt`},
		{name: "delete context file", script: `rm -f ../context/c.txt && test ! -e ../context/c.txt`},
		{name: "truncate context file", script: `truncate -s 0 ../context/c.txt`},
		{name: "write outside workspace", script: `echo pwned > {OUT}/new.txt`},
		{name: "overwrite outside file", script: `echo pwned > {OUT}/secret.txt`},
		{name: "escape via dotdot", script: `echo pwned > ../../$(basename {OUT})/new.txt`},
		{name: "write /tmp", script: `echo pwned > /tmp/agentbox-pwned`},
		{name: "write /etc", script: `echo pwned > /etc/agentbox-pwned`},
		{name: "symlink made during run to /etc", script: `ln -s /etc etc-link && echo pwned > etc-link/agentbox-pwned`},
		{name: "symlink made during run to outside", script: `ln -s {OUT} out-link && echo pwned > out-link/new.txt`},
		{name: "read outside through symlink", script: `ln -s {OUT}/secret.txt s && cat s`, notOut: []string{"TOP-SECRET"}},
		{name: "symlink into context then write", script: `ln -s ../context/c.txt cl && echo pwned > cl`},
		{name: "hardlink context file into target then write", script: `ln ../context/c.txt hl && echo pwned >> hl`},
		{name: "hardlink outside secret into target", script: `ln {OUT}/secret.txt hl2 && cat hl2`, notOut: []string{"TOP-SECRET"}},
		{name: "rename context file into target", script: `mv ../context/c.txt ./stolen`},
		{name: "rename target file into context", script: `mv t.txt ../context/t.txt`},
		{name: "rename project policy", script: `mv ../agentbox.yaml ./p.yaml`},
		{name: "write via /proc/self/root", script: `echo pwned > /proc/self/root{OUT}/new.txt`},
		{name: "read via /proc/1/root", script: `cat /proc/1/root/etc/shadow /proc/1/root{OUT}/secret.txt`, notOut: []string{"TOP-SECRET", "root:"}},
		{name: "read via /proc/self/cwd escape", script: `cat /proc/self/cwd/../../$(basename {OUT})/secret.txt`, notOut: []string{"TOP-SECRET"}},
		{name: "read /etc/shadow", script: `cat /etc/shadow`, notOut: []string{"root:"}},
		{name: "read secret outside", script: `cat {OUT}/secret.txt`, notOut: []string{"TOP-SECRET"}},
		{name: "list outside dir", script: `ls {OUT}`, notOut: []string{"secret.txt"}},
		{name: "write other agent area", script: `echo pwned > ../agents/other/home/x`},
		{name: "delete other agent file", script: `rm ../agents/other/notes.txt`},
		{name: "read other agent area (allowed)", script: `cat ../agents/other/notes.txt`, mustOK: true, wantOut: []string{"other agent notes"}},
		{name: "write project policy", script: `echo 'rules: []' >> ../agentbox.yaml`},
		{name: "replace project policy", script: `rm -f ../agentbox.yaml; echo x > ../agentbox.yaml`},
		{name: "read project policy (allowed)", script: `cat ../agentbox.yaml`, mustOK: true, wantOut: []string{"version: 1"}},
		{name: "read audit log", script: `cat {AUDIT}`, notOut: []string{"launch"}},
		{name: "append audit log", script: `echo '{}' >> {AUDIT}`},
		{name: "mknod in target", script: `mknod ./null c 1 3`},
		{name: "chown context file", script: `chown 1234 ../context/c.txt`},
		{name: "set-uid bit on own file", script: `cp /bin/true ./suid && chmod u+s ./suid`},
		{name: "set-gid bit on own file", script: `cp /bin/true ./sgid && chmod 2755 ./sgid`},
		{name: "set-uid bit on a system program", script: `chmod 4755 /usr/bin/env`},
		{name: "execute context file", script: `cp /bin/true ./t2 && ../context/c.txt`},
		{name: "write own area and target (allowed)", script: `echo ok > $HOME/f && echo ok > $TMPDIR/f && echo ok > new.txt && echo ok > ../feedback/r.md && cat $HOME/f`, mustOK: true, wantOut: []string{"ok"}},
		{name: "capabilities and no_new_privs", script: `grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status`, mustOK: true,
			wantOut: []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"}},
	}
	if os.Geteuid() != 0 {
		// Without root the bounding set cannot be dropped (and need not be).
		attempts[len(attempts)-1].wantOut = []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"}
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			before := w.snapshot()
			r := w.sh(a.opts, exp(a.script))
			if r.err != nil {
				t.Fatalf("run: %v", r.err)
			}
			if a.mustOK && r.code != 0 {
				t.Errorf("exit %d, want 0; output:\n%s", r.code, r.out)
			}
			if !a.mustOK && r.code == 0 {
				t.Errorf("escape attempt succeeded (exit 0); output:\n%s", r.out)
			}
			for _, s := range a.notOut {
				if strings.Contains(r.out, s) {
					t.Errorf("output leaks %q:\n%s", s, r.out)
				}
			}
			for _, s := range a.wantOut {
				if !strings.Contains(r.out, s) {
					t.Errorf("output lacks %q:\n%s", s, r.out)
				}
			}
			if after := w.snapshot(); after != before {
				t.Errorf("outside changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestEscapeAreaSymlinkRefused(t *testing.T) {
	requireLandlock(t)
	out := t.TempDir()
	for _, area := range []string{"target", "context", "feedback", "agents"} {
		t.Run(area, func(t *testing.T) {
			w := newTestWS(t)
			p := filepath.Join(w.W, area)
			must(t, os.RemoveAll(p))
			must(t, os.Symlink(out, p))
			r := w.run(runOpts{}, "/bin/true")
			if r.err == nil || !strings.Contains(r.err.Error(), "symlink") {
				t.Fatalf("Run err = %v, want a refusal naming the symlink", r.err)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("outside dir got entries: %v", ents)
			}
		})
	}
	t.Run("agent dir", func(t *testing.T) {
		w := newTestWS(t)
		must(t, os.Symlink(out, filepath.Join(w.W, "agents", "a1")))
		r := w.run(runOpts{}, "/bin/true")
		if r.err == nil || !strings.Contains(r.err.Error(), "symlink") {
			t.Fatalf("Run err = %v, want a refusal naming the symlink", r.err)
		}
	})
}

func TestEscapeEnvAndFds(t *testing.T) {
	w := newTestWS(t)
	t.Run("secrets scrubbed", func(t *testing.T) {
		env := []string{"PATH=/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY=AKIAsecretvalue", "GITHUB_TOKEN=ghp_secretvalue",
			"SSH_AUTH_SOCK=/tmp/ssh-agent.sock", "LD_PRELOAD=/tmp/evil.so", "TERM=xterm", "HOME=/root"}
		r := w.run(runOpts{env: env}, "/usr/bin/env")
		if r.code != 0 {
			t.Fatalf("env exit %d: %s", r.code, r.out)
		}
		for _, s := range []string{"AWS_SECRET", "GITHUB_TOKEN", "SSH_AUTH_SOCK", "LD_PRELOAD", "secretvalue", "HOME=/root"} {
			if strings.Contains(r.out, s) {
				t.Errorf("environment leaks %q:\n%s", s, r.out)
			}
		}
		for _, s := range []string{"TERM=xterm", "HOME=" + filepath.Join(w.W, "agents", "a1", "home"), "TMPDIR=" + filepath.Join(w.W, "agents", "a1", "tmp")} {
			if !strings.Contains(r.out, s) {
				t.Errorf("environment lacks %q:\n%s", s, r.out)
			}
		}
	})
	t.Run("role pass-through but never SSH_AUTH_SOCK", func(t *testing.T) {
		role := testRole()
		role.Env = []string{"NPM_*", "SSH_AUTH_SOCK"}
		r := w.run(runOpts{role: &role, env: []string{"PATH=/usr/bin:/bin", "NPM_CONFIG_X=1", "SSH_AUTH_SOCK=/x"}}, "/usr/bin/env")
		if !strings.Contains(r.out, "NPM_CONFIG_X=1") || strings.Contains(r.out, "SSH_AUTH_SOCK") {
			t.Errorf("pass-through wrong:\n%s", r.out)
		}
	})
	t.Run("no leaked fds", func(t *testing.T) {
		// A descriptor of the launcher without O_CLOEXEC (as an outer
		// program might hand agentbox) must not reach the sandbox.
		fd, err := unix.Open(w.Audit, unix.O_RDONLY, 0)
		must(t, err)
		defer unix.Close(fd)
		r := w.run(runOpts{}, "/bin/ls", "/proc/self/fd")
		fds := strings.Fields(r.out)
		if r.code != 0 || strings.Join(fds, " ") != "0 1 2 3" {
			t.Errorf("fds inside = %q (exit %d), want 0 1 2 3 (3 is ls's own directory fd)", fds, r.code)
		}
	})
}

func TestEscapeNetwork(t *testing.T) {
	w := newTestWS(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	tcpAddr := ln.Addr().String()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	must(t, err)
	defer udp.Close()
	udpAddr := udp.LocalAddr().String()
	drain := func() int {
		n := 0
		for {
			select {
			case <-accepted:
				n++
			case <-time.After(100 * time.Millisecond):
				return n
			}
		}
	}
	t.Run("tcp connect refused", func(t *testing.T) {
		r := w.run(runOpts{}, "./client", "escape-client", "tcp", tcpAddr)
		if r.code == 0 || drain() != 0 {
			t.Errorf("TCP connect got through (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("mptcp connect refused", func(t *testing.T) {
		r := w.run(runOpts{}, "./client", "escape-client", "mptcp", tcpAddr)
		if r.code == 0 || drain() != 0 {
			t.Errorf("MPTCP connect got through (exit %d): %s", r.code, r.out)
		}
	})
	// Only unix, netlink and (checked) inet sockets can be made: another
	// family is refused by seccomp with EPERM whether or not this kernel
	// has it (without the filter: EAFNOSUPPORT, or a socket).
	t.Run("other address families refused", func(t *testing.T) {
		for _, fam := range []int{unix.AF_VSOCK, unix.AF_PACKET, unix.AF_BLUETOOTH, unix.AF_CAN, unix.AF_XDP, unix.AF_KEY, unix.AF_ALG} {
			for _, nw := range []*Network{nil, {TCPConnect: []uint16{443}}} {
				r := w.run(runOpts{network: nw}, "./client", "escape-client", "family", strconv.Itoa(fam))
				if r.code == 0 || !strings.Contains(r.out, "operation not permitted") {
					t.Errorf("socket family %d (network %v): exit %d %q; want EPERM from the filter", fam, nw, r.code, r.out)
				}
			}
		}
	})
	t.Run("udp send refused", func(t *testing.T) {
		r := w.run(runOpts{}, "./client", "escape-client", "udp", udpAddr)
		_ = udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		buf := make([]byte, 64)
		n, _, rerr := udp.ReadFrom(buf)
		if r.code == 0 || rerr == nil {
			t.Errorf("UDP datagram got through (exit %d, received %q): %s", r.code, buf[:n], r.out)
		}
	})
	t.Run("udp refused even with tcp network", func(t *testing.T) {
		r := w.run(runOpts{network: &Network{TCPConnect: []uint16{port}}}, "./client", "escape-client", "udp", udpAddr)
		if r.code == 0 {
			t.Errorf("UDP allowed with a TCP-only grant: %s", r.out)
		}
	})
	t.Run("tcp connect allowed with --network tcp:PORT", func(t *testing.T) {
		r := w.run(runOpts{network: &Network{TCPConnect: []uint16{port}}}, "./client", "escape-client", "tcp", tcpAddr)
		if r.code != 0 || drain() != 1 {
			t.Errorf("granted TCP connect failed (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("tcp other port still refused", func(t *testing.T) {
		r := w.run(runOpts{network: &Network{TCPConnect: []uint16{port + 1}}}, "./client", "escape-client", "tcp", tcpAddr)
		if r.code == 0 || drain() != 0 {
			t.Errorf("TCP to an ungranted port got through: %s", r.out)
		}
	})
	t.Run("pathname unix socket outside refused", func(t *testing.T) {
		// Landlock ABI 9+ refuses the connect; below it seccomp refuses
		// creating unix sockets at all.
		sock := filepath.Join(w.Out, "s.sock")
		l, err := net.Listen("unix", sock)
		must(t, err)
		defer l.Close()
		got := make(chan struct{}, 1)
		go func() {
			if c, err := l.Accept(); err == nil {
				got <- struct{}{}
				c.Close()
			}
		}()
		r := w.run(runOpts{}, "./client", "escape-client", "unixpath", sock)
		select {
		case <-got:
			t.Errorf("pathname unix socket connect got through: %s", r.out)
		case <-time.After(100 * time.Millisecond):
		}
		if r.code == 0 {
			t.Errorf("pathname unix socket connect succeeded: %s", r.out)
		}
	})
	t.Run("socketpair still works", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			t.Skip("reason: no /usr/bin/python3")
		}
		r := w.run(runOpts{}, "/usr/bin/python3", "-c", `import socket; a, b = socket.socketpair(); a.send(b"piped"); print(b.recv(5).decode())`)
		if r.code != 0 || !strings.Contains(r.out, "piped") {
			t.Errorf("exit %d: %s", r.code, r.out)
		}
	})
	t.Run("abstract unix socket outside refused", func(t *testing.T) {
		name := fmt.Sprintf("agentbox-escape-%d", os.Getpid())
		l, err := net.Listen("unix", "@"+name)
		must(t, err)
		defer l.Close()
		got := make(chan struct{}, 1)
		go func() {
			if c, err := l.Accept(); err == nil {
				got <- struct{}{}
				c.Close()
			}
		}()
		r := w.run(runOpts{}, "./client", "escape-client", "abstract", name)
		select {
		case <-got:
			t.Errorf("abstract socket connect got through: %s", r.out)
		case <-time.After(100 * time.Millisecond):
		}
		if r.code == 0 {
			t.Errorf("abstract socket connect succeeded: %s", r.out)
		}
	})
}

func TestEscapeProcesses(t *testing.T) {
	w := newTestWS(t)
	victim := exec.Command("/bin/sleep", "60")
	must(t, victim.Start())
	defer victim.Process.Kill()
	vpid := strconv.Itoa(victim.Process.Pid)
	self := strconv.Itoa(os.Getpid())
	alive := func() bool { return unix.Kill(victim.Process.Pid, 0) == nil }
	cases := []struct {
		name string
		argv []string
	}{
		{"kill -0 the test process", []string{"/bin/sh", "-c", "kill -0 " + self}},
		{"read the launcher's environ", []string{"/bin/sh", "-c", "cat /proc/" + self + "/environ"}},
		{"read an outside process's memory", []string{"/bin/sh", "-c", "head -c 16 /proc/" + vpid + "/mem"}},
		{"SIGTERM an outside process", []string{"/bin/sh", "-c", "kill -TERM " + vpid}},
		{"SIGTERM via client", []string{"./client", "escape-client", "kill", vpid}},
		{"ptrace an outside process", []string{"./client", "escape-client", "ptrace", vpid}},
		{"ptrace the launcher", []string{"./client", "escape-client", "ptrace", self}},
		{"mount tmpfs (mount)", []string{"/bin/sh", "-c", "mkdir -p m && mount -t tmpfs none m"}},
		{"mount tmpfs (syscall)", []string{"./client", "escape-client", "mount", "."}},
		{"unshare user+mount namespace", []string{"./client", "escape-client", "unshare"}},
		{"open sibling /proc/PID/mem for writing", []string{"./client", "escape-client", "procmem"}},
		{"open /proc/self/mem for writing", []string{"./client", "escape-client", "selfmem"}},
		{"process_vm_writev into a sibling", []string{"./client", "escape-client", "vmwrite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.run(runOpts{}, c.argv...)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.code == 0 {
				t.Errorf("escape attempt succeeded: %s", r.out)
			}
			if !alive() {
				t.Fatalf("outside process %s was killed", vpid)
			}
		})
	}
}

func TestEscapeOrphansAndTimeout(t *testing.T) {
	w := newTestWS(t)
	t.Run("orphans are gone after the run", func(t *testing.T) {
		marker := strconv.Itoa(1000 + os.Getpid()%1000)
		script := fmt.Sprintf(`sleep %[1]s.1 & setsid sleep %[1]s.2 & nohup sleep %[1]s.3 >/dev/null 2>&1 & (setsid sh -c 'sleep %[1]s.4' &) ; echo started`, marker)
		r := w.sh(runOpts{}, script)
		if r.code != 0 || !strings.Contains(r.out, "started") {
			t.Fatalf("exit %d: %s", r.code, r.out)
		}
		if left := findProcs("sleep\x00" + marker + "."); len(left) > 0 {
			t.Errorf("processes outlived the run: %v", left)
		}
	})
	t.Run("timeout gives 124", func(t *testing.T) {
		r := w.run(runOpts{limits: Limits{Timeout: time.Second}}, "/bin/sleep", "100")
		if r.code != ExitTimeout || r.elapsed > 6*time.Second {
			t.Errorf("exit %d after %v, want 124 within a few seconds", r.code, r.elapsed)
		}
		if !hasRecord(r.records, "limit", "timeout") {
			t.Errorf("no timeout limit record: %+v", r.records)
		}
	})
	t.Run("timeout kills a TERM-ignoring tree", func(t *testing.T) {
		r := w.run(runOpts{limits: Limits{Timeout: 500 * time.Millisecond}, grace: 500 * time.Millisecond},
			"/bin/sh", "-c", `trap '' TERM; while :; do sleep 0.05; done`)
		if r.code != ExitTimeout || r.elapsed > 5*time.Second {
			t.Errorf("exit %d after %v, want 124 after the grace period", r.code, r.elapsed)
		}
	})
}

// findProcs lists pids whose NUL-separated cmdline contains s.
func findProcs(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func hasRecord(recs []audit.Event, event, limit string) bool {
	for _, r := range recs {
		if r.Event == event && (limit == "" || r.Limit == limit) {
			return true
		}
	}
	return false
}

func TestExitStatus(t *testing.T) {
	w := newTestWS(t)
	cases := []struct {
		name string
		argv []string
		want int
	}{
		{"exit 3", []string{"/bin/sh", "-c", "exit 3"}, 3},
		{"killed by SIGTERM", []string{"/bin/sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"missing command", []string{"no-such-command-agentbox"}, ExitNotFound},
		{"not executable (context is read-only)", []string{"../context/c.txt"}, ExitDenied},
		{"success", []string{"/bin/true"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.run(runOpts{}, c.argv...)
			if r.err != nil || r.code != c.want {
				t.Errorf("exit %d (err %v), want %d; output: %s", r.code, r.err, c.want, r.out)
			}
			if !hasRecord(r.records, "launch", "") || !hasRecord(r.records, "exit", "") {
				t.Errorf("missing launch/exit records: %+v", r.records)
			}
		})
	}
}

func TestPositiveToolchains(t *testing.T) {
	t.Parallel() // its own directories; sets no env, no cwd, checks nothing process-wide
	w := newTestWS(t)
	t.Run("git init and commit", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("reason: git not installed")
		}
		r := w.sh(runOpts{}, `set -e; mkdir repo && cd repo && git init -q && echo hi > a.txt && git add a.txt &&
			git -c user.name=t -c user.email=t@e commit -q -m first && git log --oneline`)
		if r.code != 0 || !strings.Contains(r.out, "first") {
			t.Errorf("git failed (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("gcc compile and run", func(t *testing.T) {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skip("reason: gcc not installed")
		}
		write(t, filepath.Join(w.W, "target", "hello.c"), "#include <stdio.h>\nint main(void){puts(\"hello from c\");return 0;}\n", 0o644)
		r := w.sh(runOpts{}, `gcc -O1 -o hello hello.c && ./hello`)
		if r.code != 0 || !strings.Contains(r.out, "hello from c") {
			t.Errorf("gcc failed (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("go build and run", func(t *testing.T) {
		if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
			t.Skip("reason: no Go toolchain at /usr/local/go")
		}
		if testing.Short() {
			t.Skip("reason: -short (a cold go build takes ~20s)")
		}
		dir := filepath.Join(w.W, "target", "gohello")
		must(t, os.Mkdir(dir, 0o755))
		write(t, filepath.Join(dir, "go.mod"), "module gohello\n\ngo 1.22\n", 0o644)
		write(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println(\"hello from go\") }\n", 0o644)
		r := w.sh(runOpts{}, `cd gohello && go build -o hello . && ./hello`)
		if r.code != 0 || !strings.Contains(r.out, "hello from go") {
			t.Errorf("go build failed (exit %d): %s", r.code, r.out)
		}
	})
}

func TestGitCarveOut(t *testing.T) {
	w := newTestWS(t)
	repo := filepath.Join(w.W, "target")
	git := func(args ...string) {
		c := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@e"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	git("init", "-q")
	git("add", "t.txt")
	git("commit", "-q", "-m", "base")
	write(t, filepath.Join(repo, "build.sh"), "#!/bin/sh\necho build ok\n", 0o755)
	t.Run("commit in a pre-existing repo works", func(t *testing.T) {
		r := w.sh(runOpts{}, `echo more >> t.txt && git -c user.name=t -c user.email=t@e commit -qam second && git log --oneline | wc -l`)
		if r.code != 0 || !strings.Contains(r.out, "2") {
			t.Errorf("commit failed (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("new build outputs at the repo root are executable", func(t *testing.T) {
		r := w.sh(runOpts{}, `cp /bin/true ./mytrue && ./mytrue && mkdir -p out && cp /bin/true out/t && out/t && echo ran`)
		if r.code != 0 || !strings.Contains(r.out, "ran") {
			t.Errorf("exit %d: %s", r.code, r.out)
		}
	})
	t.Run("files beside the repo stay executable", func(t *testing.T) {
		r := w.sh(runOpts{}, `./build.sh`)
		if r.code != 0 || !strings.Contains(r.out, "build ok") {
			t.Errorf("build.sh failed (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("launch record notes the carve-out", func(t *testing.T) {
		r := w.run(runOpts{}, "/bin/true")
		for _, rec := range r.records {
			if rec.Event == "launch" && strings.Contains(rec.Detail["notes"], "target/.git/hooks: watched") {
				return
			}
		}
		t.Errorf("no carve-out note in launch records: %+v", r.records)
	})
}

func requireCgroups(t *testing.T) {
	t.Helper()
	if err := cgroup.Available(); err != nil {
		t.Skipf("reason: %v", err)
	}
}

func TestEscapeResourceLimits(t *testing.T) {
	w := newTestWS(t)
	requireCgroups(t)
	t.Run("fork bomb under --pids 64", func(t *testing.T) {
		marker := fmt.Sprintf("bomb%d", os.Getpid())
		// Each shell forks two more forever; pids.max stops it. The main
		// shell then waits without forking (exec): a fork at the limit
		// would make bash retry with a doubling back-off (up to ~30 s).
		script := fmt.Sprintf(`b() { b | b & }; : %s; b; exec sleep 3`, marker)
		// Contained means the run ended by itself, not by its timeout: on a
		// loaded machine the main shell's fork back-off alone can take
		// 15 s (seen under make test), so the timeout is well above it.
		r := w.run(runOpts{limits: Limits{Pids: 64, Timeout: 45 * time.Second}, grace: time.Second}, "/bin/bash", "-c", script)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if hasRecord(r.records, "limit", "timeout") {
			t.Errorf("run hit its timeout after %v; the bomb was not contained", r.elapsed)
		}
		if left := findProcs(marker); len(left) > 0 {
			t.Errorf("bomb processes outlived the run: %d left", len(left))
		}
		if !hasRecord(r.records, "limit", "pids") {
			t.Errorf("no pids limit record: %+v", r.records)
		}
	})
	t.Run("memory bomb under --memory 64M", func(t *testing.T) {
		// python3 would do; the shell is always there: grow a variable.
		r := w.run(runOpts{limits: Limits{MemoryBytes: 64 << 20, Timeout: 30 * time.Second}},
			"/bin/sh", "-c", `x=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; while :; do x="$x$x"; done`)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.code != 128+9 {
			t.Errorf("exit %d, want %d (SIGKILL by the OOM killer): %s", r.code, 128+9, r.out)
		}
		if !hasRecord(r.records, "limit", "memory") {
			t.Errorf("no memory limit record (OOM event): %+v", r.records)
		}
	})
	t.Run("limits without cgroups need --no-limits", func(t *testing.T) {
		saved := cgroupsAvailable
		cgroupsAvailable = func(cgroup.Limits) error { return fmt.Errorf("simulated: no cgroup filesystem") }
		defer func() { cgroupsAvailable = saved }()
		r := w.run(runOpts{limits: Limits{Pids: 10}}, "/bin/true")
		if r.err == nil || !strings.Contains(r.err.Error(), "--no-limits") {
			t.Errorf("err = %v, want a refusal naming --no-limits", r.err)
		}
	})
}

// TestRootRunsAsWorkspaceOwner: agentbox started by root on a workspace that
// belongs to a regular user runs the command as that user, so it cannot
// chmod a root-owned file outside the workspace (Landlock does not cover
// chmod; uid 0 without capabilities still owns every root file).
func TestRootRunsAsWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: only agentbox started by root switches to the workspace owner")
	}
	w := newTestWS(t)
	const uid, gid = 65534, 65534
	// uid 65534 must be able to reach W and the outside file by path, so
	// that only its credentials stand in the way.
	for _, top := range []string{w.W, w.Out} {
		for d := top; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
			must(t, os.Chmod(d, 0o755))
		}
	}
	must(t, filepath.WalkDir(w.W, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
	rootFile := filepath.Join(w.Out, "rootfile")
	write(t, rootFile, "root only\n", 0o600)

	r := w.sh(runOpts{}, `id -u; echo "groups: $(id -G)"; touch own.txt && echo touched; chmod 666 `+rootFile+` && echo CHMOD-OK; exit 0`)
	if r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, r.out)
	}
	if !strings.Contains(r.out, "65534\n") || !strings.Contains(r.out, "touched") {
		t.Fatalf("command did not run as the workspace owner with a writable target:\n%s", r.out)
	}
	if strings.Contains(r.out, "CHMOD-OK") {
		t.Fatalf("chmod of a root-owned file outside the workspace succeeded:\n%s", r.out)
	}
	// The owner's groups, never root's (nogroup: 65534 has no passwd entry
	// here, or its own primary group).
	for _, line := range strings.Split(r.out, "\n") {
		if g, ok := strings.CutPrefix(line, "groups: "); ok && slices.Contains(strings.Fields(g), "0") {
			t.Errorf("command runs with group 0: %q", line)
		}
	}
	st, err := os.Stat(rootFile)
	must(t, err)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("outside file mode changed to %v", st.Mode().Perm())
	}
	st, err = os.Stat(filepath.Join(w.W, "target", "own.txt"))
	must(t, err)
	if owner := st.Sys().(*syscall.Stat_t).Uid; owner != uid {
		t.Errorf("file created in target/ owned by uid %d, want %d", owner, uid)
	}
}

// TestRootOwnedWorkspaceMetadata: agentbox started by root on a root-owned
// workspace: the command keeps uid 0 (without capabilities), and Landlock
// does not cover metadata; the read-only mount namespace does. chmod, utime
// and setxattr of a root-owned file outside every writable area fail, the
// file is unchanged when looked at from outside, and the same operations
// inside target/ work.
func TestRootOwnedWorkspaceMetadata(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: the case is agentbox started by root on a root-owned workspace")
	}
	testkit.NeedProg(t, "python3")
	w := newTestWS(t)
	rootFile := filepath.Join(w.Out, "rootfile")
	write(t, rootFile, "root only\n", 0o600)
	old := time.Unix(1_000_000_000, 0)
	must(t, os.Chtimes(rootFile, old, old))
	script := `import os, sys
f = sys.argv[1]
open("mine", "w").write("x")
os.chmod("mine", 0o755); os.utime("mine", (0, 0))
print("inside ok")
for name, fn in [("chmod", lambda: os.chmod(f, 0o666)), ("utime", lambda: os.utime(f, (0, 0))),
                 ("setxattr", lambda: os.setxattr(f, "user.agentbox", b"1")), ("chown", lambda: os.chown(f, 65534, 65534))]:
    try:
        fn(); print(name, "CHANGED")
    except OSError as e:
        print(name, "refused:", e.strerror)
`
	write(t, filepath.Join(w.W, "target", "meta.py"), script, 0o644)
	r := w.run(runOpts{}, "python3", "meta.py", rootFile)
	if r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, r.out)
	}
	if !strings.Contains(r.out, "inside ok") || strings.Contains(r.out, "CHANGED") {
		t.Fatalf("want metadata changes inside target/ to work and outside to fail:\n%s", r.out)
	}
	st, err := os.Stat(rootFile)
	must(t, err)
	if st.Mode().Perm() != 0o600 || !st.ModTime().Equal(old) || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("outside file changed: mode %v mtime %v", st.Mode().Perm(), st.ModTime())
	}
	if v, err := unix.Getxattr(rootFile, "user.agentbox", make([]byte, 8)); err == nil {
		t.Errorf("xattr set on the outside file (%d bytes)", v)
	}
}

// TestCgroupBornInside: with limits, the command is in every hierarchy of
// the run's cgroup, and no thread of the launcher is left in it: on cgroup
// v1 the forking thread enters the run's cgroups, forks the helper and
// leaves (no cgroup.procs write, which waits for an RCU grace period), and
// the fallback moves the helper afterwards. Both ways are run.
func TestCgroupBornInside(t *testing.T) {
	w := newTestWS(t)
	requireCgroups(t)
	if os.Geteuid() != 0 {
		t.Skip("reason: cgroup limits need root here")
	}
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			noThreadMoves = fallback
			defer func() { noThreadMoves = false }()
			started := filepath.Join(w.W, "target", fmt.Sprintf("started-%v", fallback))
			stop := make(chan struct{})
			leaked := make(chan string, 1)
			go func() {
				// Once the command runs (the helper was forked long
				// before), no thread of this process may be in a run's
				// cgroup (".owner-<our pid>-" names them) until it ends.
				mark := fmt.Sprintf(".owner-%d-", os.Getpid())
				for {
					select {
					case <-stop:
						leaked <- ""
						return
					default:
					}
					if _, err := os.Stat(started); err == nil {
						tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
						for _, f := range tasks {
							if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), mark) {
								rescueThread(f, string(b), mark)
								leaked <- f + ":\n" + string(b)
								return
							}
						}
					}
					runtime.Gosched()
				}
			}()
			r := w.run(runOpts{limits: Limits{Pids: 64, MemoryBytes: 256 << 20, Timeout: 20 * time.Second}},
				"/bin/sh", "-c", "cat /proc/self/cgroup; : > "+started+"; sleep 0.3")
			if _, err := os.Stat(started); err != nil {
				t.Errorf("the command did not mark its start: %v", err)
			}
			close(stop)
			if l := <-leaked; l != "" {
				t.Errorf("a launcher thread was in the run's cgroup: %s", l)
			}
			if r.err != nil || r.code != 0 {
				t.Fatalf("run: %v, exit %d: %s", r.err, r.code, r.out)
			}
			wantCtrls := []string{"pids", "memory"}
			if !strings.Contains(r.out, "0::/\n") || strings.Contains(r.out, ":pids:") {
				// cgroup v1 or hybrid: the freezer joins too where writable
				if strings.Contains(r.out, ":freezer:") {
					wantCtrls = append(wantCtrls, "freezer")
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
				parts := strings.SplitN(line, ":", 3)
				if len(parts) != 3 {
					continue
				}
				if parts[1] == "" && !strings.Contains(r.out, ":pids:") { // v2
					if !strings.Contains(parts[2], "agentbox-") {
						t.Errorf("command not in the run's cgroup: %q", line)
					}
					continue
				}
				for _, c := range wantCtrls {
					if slices.Contains(strings.Split(parts[1], ","), c) && !strings.Contains(parts[2], "/agentbox-") {
						t.Errorf("command not in the run's %s cgroup: %q", c, line)
					}
				}
			}
		})
	}
}

// rescueThread moves a launcher thread found in a run's v1 cgroups back to
// the parent cgroups, so that the run's kill (the freezer) does not freeze
// the test process and the failure can be reported instead of a hang.
func rescueThread(taskCgroup, content, mark string) {
	tid := filepath.Base(filepath.Dir(taskCgroup))
	for _, line := range strings.Split(content, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" || !strings.Contains(parts[2], mark) {
			continue
		}
		tasks := filepath.Join("/sys/fs/cgroup", parts[1], filepath.Dir(parts[2]), "tasks")
		_ = os.WriteFile(tasks, []byte(tid), 0)
	}
}
