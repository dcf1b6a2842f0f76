package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
)

// approveAs answers every approval request on the socket at path as uid
// (its connection is made by a thread running with that effective uid, so
// the socket sees that peer) with answer, for requests accepted by want;
// it stops when the connection ends.
func approveAs(t *testing.T, path string, uid int, answer string, want func(reason string) bool) {
	t.Helper()
	var c net.Conn
	dial := func() {
		runtime.LockOSThread() // this thread's credentials only, and it dies with them changed
		if uid != 0 {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
				t.Errorf("setresuid %d: %v", uid, e)
				return
			}
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var err error
			if c, err = net.Dial("unix", path); err == nil {
				return
			}
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); dial() }() // the locked thread exits with the goroutine
	<-done
	if c == nil {
		t.Errorf("uid %d could not connect to %s", uid, path)
		return
	}
	go testkit.ServeApprovals(c, func(m map[string]any) string {
		if reason, _ := m["reason"].(string); !want(reason) {
			return ""
		}
		return answer
	})
}

// TestEscalateInRun: inside a developer run, `agentbox escalate open` is
// asked on the approval socket. An approver (uid 65534) whose grants do
// not include open answers allow: refused, audited with its identity and
// the missing grant, and the question stays open; the workspace lead (uid
// 0, granted open by the approvers block) answers allow: the role
// changes, is audited with who granted it, and the next program (git
// reset --hard, denied to developer) runs under open. A move to locked
// needs no grant.
func TestEscalateInRun(t *testing.T) {
	w := newAgentWorld(t)
	if os.Geteuid() != 0 {
		t.Skip("reason: the test connects approvers as other uids (root only)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "abesc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	os.Chmod(sockDir, 0o755)
	sock := filepath.Join(sockDir, "approve.sock")
	pol := filepath.Join(w.dir, "approvers.yaml")
	if err := os.WriteFile(pol, []byte(`version: 1
approvers:
  lead: {members: ["uid:0"], grant: [open], always: true}
  helper: {members: ["uid:65534"], grant: [locked]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		approveAs(t, sock, 65534, "allow", func(r string) bool { return !strings.Contains(r, "was refused") })
		approveAs(t, sock, 0, "allow", func(r string) bool { return strings.Contains(r, "was refused") })
	}()
	script := `git reset --hard -q; echo "before=$?"
agentbox escalate open --reason "the test needs it"; echo "escalate=$?"
git reset --hard -q; echo "after=$?"
agentbox escalate locked; echo "narrow=$?"`
	// A script file: each program it starts is decided when it starts
	// (a sh -c line is decided whole, and git reset would refuse it).
	if err := os.WriteFile(filepath.Join(w.proj, "esc.sh"), []byte(script+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(w.bin, "agentbox"), "run", "--role", "developer", "--policy", pol,
		"--approve", "socket:"+sock, "--exec", w.bin, "--exec", filepath.Dir(self), "--", "sh", "esc.sh")
	cmd.Dir = w.proj
	cmd.Env = w.env()
	out, _ := cmd.CombinedOutput()
	wg.Wait()
	for _, want := range []string{"before=126", "agentbox: role changed to open", "escalate=0", "after=0", "narrow=0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	evs, _ := w.events(t)
	var refused, changed []audit.Event
	for _, e := range evs {
		switch {
		case e.Decision == audit.DecisionAnswerRefused:
			refused = append(refused, e)
		case e.Event == audit.EventRole:
			changed = append(changed, e)
		}
	}
	if len(refused) == 0 || !strings.Contains(refused[0].Approver, "uid=65534") || !strings.Contains(refused[0].Reason, "no approver role grants role open") {
		t.Errorf("no refusal of uid 65534's answer naming the missing grant: %+v", refused)
	}
	if len(changed) != 2 || changed[0].Detail["to"] != "open" || !strings.Contains(changed[0].Approver, "uid=0") || changed[1].Detail["to"] != "locked" {
		t.Errorf("role changes audited: %+v", changed)
	}
	found := false
	for _, e := range evs {
		if e.Action == "tool:git:reset --hard -q" && e.Decision == audit.DecisionAllow && e.Role == "open" {
			found = true
		}
	}
	if !found {
		t.Error("git reset was not allowed under role open after the change")
	}
}

// TestEscalateBadInput: outside a run, an unknown role, no approver.
func TestEscalateBadInput(t *testing.T) {
	w := newAgentWorld(t)
	if out, code := w.cli(t, w.ws, "escalate", "open"); code != 2 || !strings.Contains(out, "inside agentbox run only") {
		t.Errorf("escalate outside a run: exit %d\n%s", code, out)
	}
	self, _ := os.Executable()
	os.WriteFile(filepath.Join(w.proj, "bad.sh"), []byte("agentbox escalate nosuchrole; echo \"unknown=$?\"\nagentbox escalate open; echo \"noapprover=$?\"\n"), 0o644)
	out, _ := w.cli(t, w.proj, "run", "--role", "developer", "--exec", w.bin, "--exec", filepath.Dir(self), "--", "sh", "bad.sh")
	for _, want := range []string{"unknown=126", `unknown role "nosuchrole"`, "noapprover=126", "needs approval, no approver: rule developer/self_edit.role"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
