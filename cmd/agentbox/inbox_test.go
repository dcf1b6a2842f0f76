package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/testkit"
)

// TestInboxInBrowser: `agentbox inbox` and real runs attached to it,
// answered in a real headless Chromium through the page's buttons and
// keys. Two runs each hit an ask; one is allowed with a click, the other
// denied with a key; from outside, the first program ran and the second
// did not, and both answers are in the runs' audit logs with the
// approver's login. Then "always" (which writes the project policy) is
// revoked on the rules page, session rule and project rule, and the
// identical command asks again.
func TestInboxInBrowser(t *testing.T) {
	needLongSuite(t, "AGENTBOX_BROWSER", "the browser tests")
	if abi := sandbox.LandlockABI(); abi < sandbox.RequiredLandlockABI {
		t.Skipf("reason: Landlock ABI %d < %d", abi, sandbox.RequiredLandlockABI)
	}
	b := testkit.StartBrowser(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "inbox.sock")
	inb := exec.Command(os.Args[0], "inbox", "--socket", sock, "--state-dir", filepath.Join(dir, "state"),
		"--audit", filepath.Join(dir, "inbox.jsonl"), "--user", "alice")
	inb.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1")
	out, err := inb.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	inb.Stderr = io.Discard
	if err := inb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inb.Process.Kill(); inb.Wait() })
	sc := bufio.NewScanner(out)
	var login string
	for login == "" && sc.Scan() {
		if m := regexp.MustCompile(`log in as alice: (\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			login = m[1]
		}
	}
	if login == "" {
		t.Fatal("agentbox inbox printed no login URL")
	}
	go io.Copy(io.Discard, out)

	type run struct {
		cmd         *exec.Cmd
		ws, auditTo string
		done        chan error
	}
	startRun := func(agent string, argv ...string) *run {
		ws := filepath.Join(dir, agent)
		if _, err := boundary.Init(ws); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"f1", "f2", "f3"} {
			os.WriteFile(filepath.Join(ws, "target", f), []byte("x\n"), 0o644)
		}
		// twice.sh waits at a FIFO between its two chmods: a builtin
		// read, not a polling loop, whose commands would fill the card's
		// "last commands" while the test works the page (under load they
		// pushed the approved chmod out of it).
		if err := syscall.Mkfifo(filepath.Join(ws, "context", "go"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(ws, "target", "twice.sh"),
			[]byte("chmod 600 f3\ntouch made.txt\ntouch made2.txt\nread x < ../context/go\nchmod 600 f3\n"), 0o755)
		r := &run{ws: ws, auditTo: filepath.Join(dir, agent+".jsonl"), done: make(chan error, 1)}
		r.cmd = exec.Command(os.Args[0], append([]string{"run", "--role", "developer", "--workspace", ws, "--agent", agent,
			"--approve", "inbox:" + sock, "--audit", r.auditTo, "--no-user-policy", "--"}, argv...)...)
		r.cmd.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1")
		r.cmd.Dir = filepath.Join(ws, "target")
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { r.done <- r.cmd.Wait() }()
		t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done; r.done <- nil })
		return r
	}
	mode := func(p string) os.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	waitDone := func(r *run) {
		select {
		case err := <-r.done:
			r.done <- err
		case <-time.After(60 * time.Second):
			t.Fatalf("run in %s did not end", r.ws)
		}
	}
	events := func(r *run, decision string) []audit.Event { // by decision, or by event kind
		evs, err := audit.ReadFile(r.auditTo)
		if err != nil {
			t.Fatal(err)
		}
		var out []audit.Event
		for _, e := range evs {
			if e.Decision == decision || e.Event == decision {
				out = append(out, e)
			}
		}
		return out
	}

	b.Navigate(login)
	b.WaitJS("logged in as alice", `document.querySelector("#who").textContent === "alice" && !document.querySelector("#pending").hidden`, 20*time.Second)

	alpha := startRun("alpha", "chmod", "600", "f1")
	beta := startRun("beta", "chmod", "600", "f2")
	b.WaitJS("both asks on the page", `document.querySelectorAll(".ask").length === 2`, 30*time.Second)
	b.WaitJS("each with its command and rule", `[...document.querySelectorAll(".ask")].every(c => /chmod 600 f[12]/.test(c.innerText) && /developer\/chmod/.test(c.innerText) && /auto-deny in \d+m\d\ds/.test(c.innerText) && !/denied in/.test(c.innerText))`, 5*time.Second)
	b.WaitJS("the countdown not in red, the loading line gone", `document.querySelector("#loading").hidden && getComputedStyle(document.querySelector(".ask .deadline")).color !== "rgb(207, 34, 46)"`, 5*time.Second)
	shot := filepath.Join(os.TempDir(), fmt.Sprintf("agentbox-inbox-%d.png", os.Getpid()))
	if err := b.Screenshot(shot); err != nil {
		t.Errorf("screenshot: %v", err)
	} else {
		t.Logf("screenshot of the inbox: %s", shot)
	}
	// alpha: the Allow once button, clicked.
	b.Click(`.ask[data-agent="alpha"] button[data-answer="allow"]`)
	// beta: selected by a click on its card, then the deny key.
	b.WaitJS("alpha answered", `document.querySelectorAll(".ask").length === 1`, 20*time.Second)
	b.Click(`.ask[data-agent="beta"] h3`)
	b.Key("d")
	b.WaitJS("beta answered", `document.querySelectorAll(".ask").length === 0`, 20*time.Second)
	waitDone(alpha)
	waitDone(beta)
	if m := mode(filepath.Join(alpha.ws, "target", "f1")); m != 0o600 {
		t.Errorf("alpha's allowed chmod did not run: f1 is %v", m)
	}
	if m := mode(filepath.Join(beta.ws, "target", "f2")); m != 0o644 {
		t.Errorf("beta's denied chmod ran: f2 is %v", m)
	}
	approver := regexp.MustCompile(`^inbox user=alice addr=127\.0\.0\.1:\d+ \(uid=\d+ pid=\d+\)$`)
	if ev := events(alpha, audit.DecisionAskApproved); len(ev) != 1 || !approver.MatchString(ev[0].Approver) {
		t.Errorf("alpha's audit log: approved events %+v", ev)
	}
	if ev := events(beta, audit.DecisionAskDenied); len(ev) != 1 || !approver.MatchString(ev[0].Approver) {
		t.Errorf("beta's audit log: denied events %+v", ev)
	}

	// "Always", then revoke it: the identical command asks again.
	gamma := startRun("gamma", "/bin/sh", "twice.sh")
	b.WaitJS("gamma's ask", `document.querySelectorAll('.ask[data-agent="gamma"]').length === 1`, 30*time.Second)
	b.Click(`.ask[data-agent="gamma"] h3`)
	b.Key("A")
	policyFile := filepath.Join(gamma.ws, "agentbox.yaml")
	b.WaitJS("the exact rule shown before it is written", `(() => { const c = document.querySelector(".confirm"); return c && c.innerText.includes("`+policyFile+`") && c.innerText.includes("command: chmod 600"); })()`, 10*time.Second)
	b.Key("Enter")
	testkit.WaitCond(t, "gamma's first chmod ran", func() bool { return mode(filepath.Join(gamma.ws, "target", "f3")) == 0o600 })
	if data, _ := os.ReadFile(policyFile); !strings.Contains(string(data), "command: chmod") {
		t.Fatalf("always did not write the project policy:\n%s", data)
	}
	b.Click(`nav button[data-tab="rules"]`)
	b.WaitJS("the session rule, with where it came from", `[...document.querySelectorAll("#session-rules tr[data-rule]")].some(r => /chmod 600 f3/.test(r.innerText) && /remember by inbox user=alice/.test(r.innerText))`, 10*time.Second)
	b.Click(`#session-rules button[data-revoke]`)
	b.WaitJS("the session rule revoked", `document.querySelectorAll("#session-rules tr[data-rule]").length === 0 && document.querySelector("#session-rules table")`, 10*time.Second)
	b.WaitJS("the project rule, with who saved it", `[...document.querySelectorAll("#project-rules tr[data-key]")].some(r => /command "chmod 600"/.test(r.innerText) && /remembered approval by inbox user=alice/.test(r.innerText))`, 10*time.Second)
	// The rules list is re-rendered when a run's state changes, which can
	// close an open confirmation between seeing it and clicking it: open
	// it again then (a bounded number of times).
	for try := 0; ; try++ {
		b.Click(`#project-rules button[data-project-revoke]`)
		b.WaitJS("the edit shown first", `(() => { const c = document.querySelector("#project-rules .confirm"); return c && /- decision: allow/.test(c.innerText) && /- *command: chmod 600/.test(c.innerText); })()`, 10*time.Second)
		if b.TryClick(`#project-rules button[data-confirm-project]`) {
			break
		}
		if try == 5 {
			t.Fatal("browser: the project rule's confirmation went away before it could be clicked, 6 times")
		}
	}
	b.WaitJS("the project rule removed", `document.querySelectorAll("#project-rules tr[data-key]").length === 0 && document.querySelector("#project-rules table")`, 10*time.Second)
	if data, _ := os.ReadFile(policyFile); strings.Contains(string(data), "chmod") {
		t.Errorf("the project policy still has the rule:\n%s", data)
	}
	os.Chmod(filepath.Join(gamma.ws, "target", "f3"), 0o644)
	testkit.WaitCond(t, "gamma let past its FIFO", func() bool {
		f, err := os.OpenFile(filepath.Join(gamma.ws, "context", "go"), os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return false // ENXIO: not reading yet
		}
		f.Close()
		return true
	})
	b.Click(`nav button[data-tab="pending"]`)
	b.WaitJS("the identical command asks again", `document.querySelectorAll('.ask[data-agent="gamma"]').length === 1`, 30*time.Second)
	var card string
	b.Eval(`document.querySelector('.ask[data-agent="gamma"]').innerText`, &card)
	for _, want := range []string{"started by", "sh twice.sh", "last commands", "ask_approved: tool:exec:chmod 600 f3", "changed so far", "f3", "made.txt"} {
		if !strings.Contains(card, want) {
			t.Errorf("gamma's second ask lacks %q:\n%s", want, card)
		}
	}
	b.Click(`.ask[data-agent="gamma"] h3`)
	b.Key("d")
	waitDone(gamma)
	if m := mode(filepath.Join(gamma.ws, "target", "f3")); m != 0o644 {
		t.Errorf("the second chmod ran after the revoke: f3 is %v", m)
	}
	if ev := events(gamma, "revoke"); len(ev) != 1 || !strings.Contains(ev[0].Approver, "user=alice") {
		t.Errorf("gamma's audit log: revoke events %+v", ev)
	}

	// History: the answers, each linked to its event.
	b.Click(`nav button[data-tab="history"]`)
	b.WaitJS("history rows", `(() => { const t = document.querySelector("#history-table tbody").innerText; return /ask_approved/.test(t) && /ask_denied/.test(t) && /alpha/.test(t) && /beta/.test(t); })()`, 10*time.Second)
	b.Click(`#history-table tbody a`)
	b.WaitJS("the event shown", `!document.querySelector("#event").hidden && /"seq"/.test(document.querySelector("#event").innerText)`, 10*time.Second)
}
