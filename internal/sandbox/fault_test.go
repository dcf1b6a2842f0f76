//go:build linux

package sandbox

// The fault-injection suite: real runs of the agentbox binary with a fault
// injected from outside — a full file system under the audit log, the log
// renamed or removed mid-run, approvers that hang, disconnect or answer
// junk, agentbox killed at each point of a run. Each asserts that no
// program ran unaudited, the run's exit status and message, that nothing is
// left running, and what `audit verify` says.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"github.com/agentbox/agentbox/internal/testkit"
)

// faultRun runs agentbox with args (after "run --role developer --workspace
// W --no-user-policy --approve none") and returns exit code, stdout, stderr.
func faultRun(t *testing.T, w *execWorld, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"run", "--role", "developer", "--workspace", w.ws, "--no-user-policy", "--approve", "none"}, args...)
	cmd := exec.CommandContext(ctx, w.bin, full...)
	cmd.Env = append(os.Environ(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentbox run: %v", err)
	}
	return code, so.String(), se.String()
}

// tickScript writes target/tick.sh, which appends one line to target/ticks
// each time it runs: the count of programs that really ran.
func tickScript(t *testing.T, w *execWorld) (script, ticks string) {
	t.Helper()
	script = filepath.Join(w.target, "tick.sh")
	ticks = filepath.Join(w.target, "ticks")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho tick >> "+ticks+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, ticks
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// auditedTicks counts the allowed starts of tick.sh in the log's readable
// lines (a torn last line is skipped).
func auditedTicks(t *testing.T, paths ...string) int {
	t.Helper()
	n := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		audit.Scan(f, audit.Filter{}, func(e audit.Event) error {
			if e.Decision == audit.DecisionAllow && strings.HasSuffix(e.Action, "tick.sh") {
				n++
			}
			return nil
		}, func(*audit.LineError) error { return nil })
		f.Close()
	}
	return n
}

// TestFaultAuditDiskFull: the audit log on a tiny tmpfs filled to the brim.
// The default (deny) lets no program start once an event cannot be
// written: every program that ran has its allow event in the log; the run
// ends with 125 and one line naming the log; nothing is left running.
// --audit-failure continue runs on and counts the lost events.
func TestFaultAuditDiskFull(t *testing.T) {
	w := newExecWorld(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0700"); err != nil {
		t.Skipf("reason: cannot mount a tmpfs for the audit log: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	script, ticks := tickScript(t, w)
	loop := filepath.Join(w.target, "loop.sh")
	os.WriteFile(loop, []byte(fmt.Sprintf("i=0; while [ $i -lt 200 ]; do %s; i=$((i+1)); done; echo finished\n", script)), 0o755)

	for _, mode := range []string{"deny", "continue"} {
		t.Run(mode, func(t *testing.T) {
			os.Remove(ticks)
			log := filepath.Join(dir, mode+".jsonl")
			// Leave room for a few events only.
			filler := filepath.Join(dir, "filler")
			os.Remove(filler)
			var st unix.Statfs_t
			unix.Statfs(dir, &st)
			free := int64(st.Bavail) * st.Bsize
			if err := os.WriteFile(filler, make([]byte, free-6*4096), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := faultRun(t, w, nil, "--audit", log, "--audit-failure", mode, "--", "sh", loop)
			ran := countLines(ticks)
			audited := auditedTicks(t, log)
			own := 0 // agentbox's own lines about the audit log
			for _, l := range strings.Split(stderr, "\n") {
				if (strings.HasPrefix(l, "agentbox: audit log") || strings.HasPrefix(l, "agentbox: warning: audit log")) && !strings.Contains(l, "MiB left") {
					own++
					if !strings.Contains(l, log) {
						t.Errorf("audit line does not name the log: %q", l)
					}
				}
			}
			if !strings.Contains(stderr, "MiB left on its file system") {
				t.Errorf("no low-space warning ahead of the failure:\n%s", stderr)
			}
			switch mode {
			case "deny":
				if code != 125 || own != 1 {
					t.Errorf("exit %d, %d audit lines on stderr; want 125 and exactly one:\n%s", code, own, stderr)
				}
				if ran != audited || ran >= 200 {
					t.Errorf("%d programs ran, %d audited: a program ran unaudited, or none was stopped", ran, audited)
				}
				if !strings.Contains(stderr, "no program starts unaudited") {
					t.Errorf("denied programs were not told why:\n%s", stderr)
				}
			case "continue":
				if code != 0 || ran != 200 || !strings.Contains(stdout, "finished") || own != 2 {
					t.Errorf("exit %d, %d ran, %d audit lines; want 0, 200 and a warning plus a count:\n%s", code, ran, own, stderr)
				}
				if !strings.Contains(stderr, "events lost") {
					t.Errorf("no count of lost events:\n%s", stderr)
				}
			}
			if left := findProcs("tick.sh"); len(left) > 0 {
				t.Errorf("processes left running: %v", left)
			}
		})
	}
}

// TestFaultAuditRotatedMidRun: the audit log renamed away (what logrotate
// does) or removed while a run writes it. The run continues in a new file
// at the configured path whose first event carries the old file's last
// hash and name; the rotated set verifies as one chain, and every program
// that ran is in it.
func TestFaultAuditRotatedMidRun(t *testing.T) {
	w := newExecWorld(t)
	script, ticks := tickScript(t, w)
	for _, how := range []string{"rename", "remove"} {
		t.Run(how, func(t *testing.T) {
			os.Remove(ticks)
			dir := t.TempDir()
			log := filepath.Join(dir, "a.jsonl")
			ready, gate := filepath.Join(w.target, "ready-"+how), filepath.Join(w.target, "go-"+how)
			body := fmt.Sprintf("%[1]s; %[1]s; %[1]s; : > %[2]s; until [ -e %[3]s ]; do sleep 0.02; done; %[1]s; %[1]s; %[1]s\n", script, ready, gate)
			loop := filepath.Join(w.target, "rot-"+how+".sh")
			os.WriteFile(loop, []byte(body), 0o755)
			cmd := exec.Command(w.bin, "run", "--role", "developer", "--workspace", w.ws, "--no-user-policy", "--approve", "none", "--audit", log, "--", "sh", loop)
			var se bytes.Buffer
			cmd.Stderr = &se
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitCond(t, "the first half of the run", func() bool { _, err := os.Stat(ready); return err == nil })
			old := log + ".1"
			var removed *os.File
			switch how {
			case "rename":
				if err := os.Rename(log, old); err != nil {
					t.Fatal(err)
				}
			case "remove":
				// Held open to be kept aside once the run is over: a line
				// written up to the removal is in it, however late.
				f, err := os.Open(log)
				if err != nil {
					t.Fatal(err)
				}
				removed = f
				defer f.Close()
				if err := os.Remove(log); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(gate, nil, 0o644)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("run: %v\n%s", err, se.String())
			}
			if removed != nil {
				data, err := io.ReadAll(removed)
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(old, data, 0o600) // to verify with
			}
			if n, a := countLines(ticks), auditedTicks(t, old, log); n != 6 || a != 6 {
				t.Errorf("%d programs ran, %d audited across the files; want 6 and 6", n, a)
			}
			res, err := audit.VerifyFiles(old, log)
			if err != nil {
				t.Fatalf("rotated set does not verify: %v", err)
			}
			evs, _ := audit.ReadFile(log)
			if len(evs) == 0 || evs[0].Event != audit.EventRotate {
				t.Errorf("new file does not start with a rotate event: %+v", evs)
			}
			t.Logf("%s: %d events across the files, last seq %d", how, res.Lines, res.LastSeq)
		})
	}
}

// TestFaultApprover: a socket approver that never answers, disconnects in
// the middle of a request, or answers junk. Each held program is denied
// (audited with the reason) when the approval times out, and the run goes
// on to its end.
func TestFaultApprover(t *testing.T) {
	w := newExecWorld(t)
	pol := filepath.Join(t.TempDir(), "faulty.yaml")
	os.WriteFile(pol, []byte("version: 1\nroles:\n  faulty:\n    extends: developer\n    limits: {approval_timeout: 1s}\n"), 0o600)
	script := filepath.Join(w.target, "asks.sh")
	os.WriteFile(script, []byte("touch f; chmod 600 f; echo chmod=$?; echo after\n"), 0o755)
	for _, fault := range []string{"hang", "disconnect", "junk"} {
		t.Run(fault, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "approve.sock")
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			cmd := exec.Command(w.bin, "run", "--role", "faulty", "--workspace", w.ws, "--no-user-policy", "--policy", pol,
				"--approve", "socket:"+sock, "--audit", log, "--", "sh", script)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The socket file exists once bound, a moment before it
			// listens: the condition is a connection, not the file.
			var conn net.Conn
			testkit.WaitCond(t, "the approval socket", func() bool {
				c, err := net.Dial("unix", sock)
				conn = c
				return err == nil
			})
			rd := bufio.NewReader(conn)
			rd.ReadString('\n') // hello
			req, err := rd.ReadString('\n')
			if err != nil || !strings.Contains(req, `"type":"request"`) {
				t.Fatalf("no request: %q %v", req, err)
			}
			switch fault {
			case "disconnect":
				conn.Close()
			case "junk":
				conn.Write([]byte("this is not json\n{\"type\":\"response\",\"id\":\"nope\",\"answer\":\"allow\"}\n{\"type\":\"response\",\"answer\":\"perhaps\"}\n"))
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("run: %v\n%s", err, se.String())
			}
			conn.Close()
			if !strings.Contains(so.String(), "chmod=126") || !strings.Contains(so.String(), "after") {
				t.Errorf("stdout %q; want the held chmod denied and the run going on", so.String())
			}
			found := false
			evs, _ := audit.ReadFile(log)
			for _, e := range evs {
				if strings.HasPrefix(e.Action, "tool:exec:chmod") && e.Decision == audit.DecisionAskTimeout && strings.Contains(e.Reason, "timed out") {
					found = true
				}
			}
			if !found {
				t.Errorf("no ask_timeout event for chmod with its reason: %+v", evs)
			}
			if _, err := audit.VerifyFile(log); err != nil {
				t.Errorf("audit verify: %v", err)
			}
		})
	}
}

// sandboxProcs lists processes whose working directory is inside ws: the
// helper and everything the command started.
func sandboxProcs(ws string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err == nil && (cwd == ws || strings.HasPrefix(cwd, ws+"/")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestFaultAgentboxKilled: agentbox killed with SIGKILL before the helper
// execs, while a thread is held at its exec notification, while a program
// is held at its exec stop, and while a program is held waiting for an
// approval. With --trace-all nothing of the sandbox survives; in the
// default notify mode the command and every held program die and a
// background process that outlives agentbox cannot start any program. The
// audit log verifies.
func TestFaultAgentboxKilled(t *testing.T) {
	w := newExecWorld(t)
	script := filepath.Join(w.target, "held.sh")
	os.WriteFile(script, []byte("sleep 4711 & touch f; chmod 600 f; wait\n"), 0o755)
	refused := filepath.Join(w.target, "exec-refused")
	loopStarted := filepath.Join(w.target, "loop-started")
	notifyScript := filepath.Join(w.target, "held-notify.sh")
	// The loop marks (with a builtin) that it runs: past its own exec, which
	// a kill of agentbox would otherwise end too.
	os.WriteFile(notifyScript, []byte("sh -c ': > "+loopStarted+"; while /bin/true; do :; done; echo refused > "+refused+"' 4712 &\ntouch f; chmod 600 f; wait\n"), 0o755)
	for _, mode := range []string{"trace-all", "notify"} {
		if mode == "notify" && helper.ExecNotifySupported() != nil {
			t.Logf("notify mode skipped: %v", helper.ExecNotifySupported())
			continue
		}
		for _, point := range []string{"helper-started", "exec-notify", "exec-stop", "held-ask"} {
			if point == "exec-notify" && mode != "notify" {
				continue
			}
			t.Run(mode+"/"+point, func(t *testing.T) {
				os.Remove(refused)
				os.Remove(loopStarted)
				log := filepath.Join(t.TempDir(), "audit.jsonl")
				sock := filepath.Join(t.TempDir(), "approve.sock")
				args := []string{"run", "--role", "developer", "--workspace", w.ws, "--no-user-policy", "--audit", log}
				if mode == "trace-all" {
					args = append(args, "--trace-all")
				}
				env := os.Environ()
				if point == "held-ask" {
					args = append(args, "--approve", "socket:"+sock)
				} else {
					args = append(args, "--approve", "none")
					env = append(env, "AGENTBOX_FAULT_INJECT="+point)
				}
				run := script
				if mode == "notify" && point == "held-ask" {
					run = notifyScript
				}
				cmd := exec.Command(w.bin, append(args, "--", "sh", run)...)
				cmd.Env = env
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if point == "held-ask" {
					var conn net.Conn
					testkit.WaitCond(t, "the approval socket", func() bool {
						c, err := net.Dial("unix", sock)
						conn = c
						return err == nil
					})
					defer conn.Close()
					rd := bufio.NewReader(conn)
					rd.ReadString('\n')
					if req, err := rd.ReadString('\n'); err != nil || !strings.Contains(req, "chmod") {
						t.Fatalf("no held chmod: %q %v", req, err)
					}
					if run == notifyScript {
						testkit.WaitCond(t, "the background loop to run", func() bool { return testkit.Exists(loopStarted) })
					}
					cmd.Process.Signal(unix.SIGKILL)
				}
				err := cmd.Wait()
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("agentbox was not killed at %s: %v", point, err)
				}
				if run == notifyScript {
					// The background loop outlives agentbox, but its next
					// exec fails: nobody listens for the notification.
					testkit.WaitCond(t, "the surviving loop's exec to be refused", func() bool {
						b, _ := os.ReadFile(refused)
						return strings.TrimSpace(string(b)) == "refused"
					})
					for _, p := range findProcs("4712") {
						if pid, err := strconv.Atoi(p); err == nil {
							unix.Kill(pid, unix.SIGKILL)
						}
					}
				}
				testkit.WaitCond(t, "every sandboxed process to be gone", func() bool { return len(sandboxProcs(w.ws)) == 0 })
				if left := findProcs("4711"); len(left) > 0 {
					t.Errorf("the background sleep survived: %v", left)
				}
				if _, err := os.Stat(log); err == nil {
					if _, err := audit.VerifyFile(log); err != nil {
						t.Errorf("audit verify after the kill: %v", err)
					}
				}
			})
		}
	}
}

// TestFaultProcUnreadable: the supervisor cannot read a new program's /proc
// entries (EMFILE, injected): the program is denied, the deny is audited
// with the reason, the run ends cleanly with the denial's status.
func TestFaultProcUnreadable(t *testing.T) {
	w := newExecWorld(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	code, _, stderr := faultRun(t, w, []string{"AGENTBOX_FAULT_INJECT=proc-emfile"}, "--audit", log, "--", "/bin/true")
	if code != 126 || !strings.Contains(stderr, "cannot inspect") && !strings.Contains(stderr, "could not be inspected") {
		t.Errorf("exit %d, stderr %q; want 126 and the reason", code, stderr)
	}
	found := false
	evs, _ := audit.ReadFile(log)
	for _, e := range evs {
		if e.Event == audit.EventExec && e.Decision == audit.DecisionDeny && strings.Contains(e.Reason, "too many open files") {
			found = true
		}
	}
	if !found {
		t.Errorf("no audited deny naming the error: %+v", evs)
	}
	if _, err := audit.VerifyFile(log); err != nil {
		t.Errorf("audit verify: %v", err)
	}
	if left := sandboxProcs(w.ws); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

// TestFaultCgroupRemoved: the run's cgroup removed from outside mid-run
// (its processes moved out first, as only then can it be removed). The run
// ends normally, supervised throughout, and says — one line and a violation
// event — that its limits stopped applying.
func TestFaultCgroupRemoved(t *testing.T) {
	w := newExecWorld(t)
	requireCgroups(t)
	ready, gate := filepath.Join(w.target, "cg-ready"), filepath.Join(w.target, "cg-go")
	script := filepath.Join(w.target, "cg.sh")
	os.WriteFile(script, []byte(fmt.Sprintf(": > %s; until [ -e %s ]; do sleep 0.02; done; echo done\n", ready, gate)), 0o755)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(w.bin, "run", "--role", "developer", "--workspace", w.ws, "--no-user-policy", "--approve", "none", "--audit", log, "--pids", "100", "--", "sh", script)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitCond(t, "the run to start", func() bool { _, err := os.Stat(ready); return err == nil })
	// The cgroup directories of a sandboxed process, and every process in them.
	removed := 0
	for _, pid := range sandboxProcs(w.ws) {
		data, _ := os.ReadFile("/proc/" + pid + "/cgroup")
		for _, line := range strings.Split(string(data), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 || !strings.Contains(parts[2], "agentbox-") {
				continue
			}
			ctrl := strings.Split(parts[1], ",")[0]
			base := "/sys/fs/cgroup/" + ctrl
			if parts[1] == "" {
				base = "/sys/fs/cgroup/unified"
				if _, err := os.Stat(base); err != nil {
					base = "/sys/fs/cgroup"
				}
			}
			dir := filepath.Join(base, parts[2])
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, p := range strings.Fields(string(procs)) {
				os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(p), 0o644)
			}
			if os.Remove(dir) == nil {
				removed++
			}
		}
		break
	}
	if removed == 0 {
		t.Skip("reason: could not remove the run's cgroup from outside")
	}
	os.WriteFile(gate, nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, se.String())
	}
	if !strings.Contains(so.String(), "done") || strings.Count(se.String(), "cgroup was removed") != 1 {
		t.Errorf("stdout %q stderr %q; want the run to finish and one line about the cgroup", so.String(), se.String())
	}
	found := false
	evs, _ := audit.ReadFile(log)
	for _, e := range evs {
		if e.Event == audit.EventViolation && e.Detail["cgroup"] == "removed" {
			found = true
		}
	}
	if !found {
		t.Error("no violation event for the removed cgroup")
	}
}
