package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// outsideProbes are the things outside a run that the ladder keeps it
// from: a TCP listener on loopback, an abstract unix socket, a sleeping
// process of the same user. Each counts what reached it.
type outsideProbes struct {
	tcpAddr, abstract string
	tcpHits, absHits  atomic.Int32
	sleeper           *exec.Cmd
}

func newOutsideProbes(t *testing.T) *outsideProbes {
	t.Helper()
	o := &outsideProbes{abstract: fmt.Sprintf("agentbox-ladder-%d", os.Getpid())}
	tl, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { tl.Close() })
	o.tcpAddr = tl.Addr().String()
	al, err := net.Listen("unix", "@"+o.abstract)
	must(t, err)
	t.Cleanup(func() { al.Close() })
	for l, n := range map[net.Listener]*atomic.Int32{tl: &o.tcpHits, al: &o.absHits} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				n.Add(1)
				c.Close()
			}
		}()
	}
	o.sleeper = exec.Command("sleep", "300")
	must(t, o.sleeper.Start())
	t.Cleanup(func() { o.sleeper.Process.Kill(); o.sleeper.Wait() })
	return o
}

// sleeperAlive reports whether the outside sleeper still runs (not a
// zombie: its parent, this test, has not waited).
func (o *outsideProbes) sleeperAlive() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", o.sleeper.Process.Pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// TestLadderCappedABI runs each Landlock ABI from 1 to 6 (capped with
// AGENTBOX_LANDLOCK_ABI_MAX on this newer kernel) as root, with no
// --best-effort: every run starts, and the effects are checked from
// outside — a context/ file keeps its content after truncate, the TCP
// listener and the abstract socket outside see no connection, the
// sleeper outside is alive after a kill — and the launch event's
// protections name the mechanism that did it (no claim without effect).
func TestLadderCappedABI(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: the root rungs of the ladder need root (TestLadderRegularUser covers a regular user)")
	}
	if LandlockABI() < 7 {
		t.Skipf("reason: kernel Landlock ABI %d: the caps 1-6 are tested on ABI 7 or later", LandlockABI())
	}
	w := newTestWS(t)
	o := newOutsideProbes(t)
	ctxFile := filepath.Join(w.W, "context", "c.txt")
	for abi := 1; abi <= 6; abi++ {
		t.Run("abi"+strconv.Itoa(abi), func(t *testing.T) {
			t.Setenv(ABIMaxEnv, strconv.Itoa(abi))
			script := fmt.Sprintf(`truncate -s 0 %s; ./client escape-client tcp %s; ./client escape-client abstract %s; ./client escape-client kill %d; echo end`,
				ctxFile, o.tcpAddr, o.abstract, o.sleeper.Process.Pid)
			r := w.sh(runOpts{}, script)
			if r.err != nil || r.code != 0 || !strings.Contains(r.out, "end") {
				t.Fatalf("ABI %d: the run did not start and end: err %v, exit %d\n%s", abi, r.err, r.code, r.out)
			}
			if b, _ := os.ReadFile(ctxFile); string(b) != contextContent {
				t.Errorf("ABI %d: context/c.txt truncated (%q)", abi, b)
			}
			if n := o.tcpHits.Load(); n != 0 || strings.Contains(r.out, "OK connect 127") {
				t.Errorf("ABI %d: the outside TCP listener was reached (%d)\n%s", abi, n, r.out)
			}
			if n := o.absHits.Load(); n != 0 || strings.Contains(r.out, "OK connect @") {
				t.Errorf("ABI %d: the outside abstract socket was reached (%d)\n%s", abi, n, r.out)
			}
			if !o.sleeperAlive() || strings.Contains(r.out, "OK kill") {
				t.Fatalf("ABI %d: the outside sleeper was killed\n%s", abi, r.out)
			}
			var got string
			for _, e := range r.records {
				if e.Event == "launch" {
					got = e.Detail["protections"]
				}
			}
			want := map[string]string{
				"truncate": map[bool]string{true: ByLandlock, false: ByMountNS}[abi >= 3],
				"tcp":      map[bool]string{true: ByLandlock, false: ByNetNS}[abi >= 4],
				"ioctl":    map[bool]string{true: ByLandlock, false: BySeccomp}[abi >= 5],
				"signals":  map[bool]string{true: ByLandlock, false: ByPidNS}[abi >= 6],
				"metadata": ByMountNS,
			}
			for name, by := range want {
				if !strings.Contains(got, name+"="+by) {
					t.Errorf("ABI %d: the launch event says %q; want %s=%s", abi, got, name, by)
				}
			}
			if strings.Contains(got, "="+ByNone) {
				t.Errorf("ABI %d: a protection is claimed by nothing: %s", abi, got)
			}
		})
	}
}

// TestLadderRefusalNamesEveryProtection: without namespaces (a regular
// user where user namespaces are refused) the refusal is one line naming
// every missing protection and the --allow-weaker names, and
// --allow-weaker with those names accepts it.
func TestLadderRefusalNamesEveryProtection(t *testing.T) {
	l := NewLadder(LadderInput{ABI: 2, UserNS: errors.New("user.max_user_namespaces is 0")})
	err := l.Check(false, nil)
	if err == nil {
		t.Fatal("ABI 2 without namespaces accepted")
	}
	msg := err.Error()
	for _, want := range []string{"truncating files", "TCP", "signals", "chmod", "--allow-weaker truncate,tcp,signals,metadata", "--best-effort", "max_user_namespaces"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("refusal is more than one line:\n%s", msg)
	}
	if err := l.Check(false, []string{"truncate", "tcp", "signals"}); err == nil || strings.Contains(err.Error(), "tcp,") || !strings.Contains(err.Error(), "--allow-weaker metadata") {
		t.Errorf("with three of four accepted: %v", err)
	}
	if err := l.Check(false, []string{"truncate", "tcp", "signals", "metadata"}); err != nil {
		t.Errorf("all accepted: %v", err)
	}
	if err := l.Check(true, nil); err != nil {
		t.Errorf("--best-effort: %v", err)
	}
	if s := l.Short(); !strings.Contains(s, "NOT enforced: truncate, tcp, signals, metadata") {
		t.Errorf("launch line part %q does not list what is not enforced", s)
	}
	// ABI 6 with namespaces: nothing refused, nothing missing but metadata's
	// stand-in.
	if l := NewLadder(LadderInput{ABI: 6, Root: true}); len(l.Missing()) != 0 || l.PidNS || l.NetNS {
		t.Errorf("ABI 6 as root: %+v", l)
	}
	// A TCP grant below ABI 4 cannot be kept apart: refused, named.
	if err := NewLadder(LadderInput{ABI: 3, Root: true, TCPGrants: true}).Check(false, nil); err == nil || !strings.Contains(err.Error(), "--allow-weaker tcp") {
		t.Errorf("tcp grant on ABI 3: %v", err)
	}
}

// TestLadderRegularUser: a regular user made by the test runs each capped
// ABI: the same effects checked from outside as for root, plus chmod and
// utime of the user's own file outside the workspace refused (mode and
// mtime unchanged).
func TestLadderRegularUser(t *testing.T) {
	if LandlockABI() < 7 {
		t.Skipf("reason: kernel Landlock ABI %d: the caps are tested on ABI 7 or later", LandlockABI())
	}
	run, dir, u := asRegularUser(t)
	if err := UserNSAvailable(); err != nil {
		t.Skipf("reason: user namespaces unavailable here: %v", err)
	}
	ws := filepath.Join(dir, "ws")
	if code, out := run("init", ws); code != 0 {
		t.Fatalf("init: %d %s", code, out)
	}
	uid, gid := u.UID, u.GID
	ctxFile := filepath.Join(ws, "context", "c.txt")
	outside := filepath.Join(dir, "outside.txt")
	for _, f := range []string{ctxFile, outside} {
		must(t, os.WriteFile(f, []byte("keep\n"), 0o644))
		must(t, os.Chown(f, uid, gid))
	}
	st0, err := os.Stat(outside)
	must(t, err)
	o := newOutsideProbes(t)
	o.sleeper = sleeperAs(t, uid, gid) // the user's own process outside
	for _, abi := range []int{2, 4, 7} {
		t.Run("abi"+strconv.Itoa(abi), func(t *testing.T) {
			args := []string{"run", "--no-exec-policy", "--role", "developer", "--workspace", ws, "--no-limits", "--no-user-policy", "--",
				"sh", "-c", fmt.Sprintf("truncate -s 0 %s; chmod 666 %s; touch -d 1970-01-01 %s; kill %d; echo end", ctxFile, outside, outside, o.sleeper.Process.Pid)}
			if abi < 7 {
				args = append([]string{"ENV:" + ABIMaxEnv + "=" + strconv.Itoa(abi)}, args...)
			}
			code, out := run(args...)
			if code != 0 || !strings.Contains(out, "end") {
				t.Fatalf("ABI %d as %s: exit %d\n%s", abi, u.Name, code, out)
			}
			if b, _ := os.ReadFile(ctxFile); string(b) != "keep\n" {
				t.Errorf("ABI %d: context file truncated", abi)
			}
			st, err := os.Stat(outside)
			must(t, err)
			if st.Mode() != st0.Mode() || !st.ModTime().Equal(st0.ModTime()) {
				t.Errorf("ABI %d: the user's own file outside changed: mode %v→%v mtime %v→%v", abi, st0.Mode(), st.Mode(), st0.ModTime(), st.ModTime())
			}
			if !o.sleeperAlive() {
				t.Fatalf("ABI %d: the outside sleeper was killed\n%s", abi, out)
			}
			if !strings.Contains(out, "metadata by mount namespace") {
				t.Errorf("ABI %d: the launch line does not say the mount namespace holds metadata:\n%s", abi, out)
			}
		})
	}
}

// sleeperAs starts sleep 300 as uid:gid (a process of the regular user
// outside its run).
func sleeperAs(t *testing.T, uid, gid int) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "300")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	must(t, c.Start())
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", c.Process.Pid)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}
