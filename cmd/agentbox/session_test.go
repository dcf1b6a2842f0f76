package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// TestTerminalSession drives agentbox through a real terminal (tmux,
// from Debian's packages), as a user at it would: the run asks about a
// chmod, the user chooses [r] remember, reads the exact rule and the file
// it goes in, presses Enter; the run goes on, hits its memory limit, and
// its end line is read back from the screen. Everything is checked as
// the text the terminal shows.
func TestTerminalSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: the memory limit needs a cgroup of the run's own: run as root")
	}
	if abi := sandbox.LandlockABI(); abi < sandbox.RequiredLandlockABI {
		t.Skipf("reason: Landlock ABI %d < %d", abi, sandbox.RequiredLandlockABI)
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("reason: no tmux installed (apt-get install tmux)")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	ws := filepath.Join(dir, "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	tgt := filepath.Join(ws, "target")
	os.WriteFile(filepath.Join(tgt, "key.pem"), []byte("k\n"), 0o644)
	os.WriteFile(filepath.Join(tgt, "job.sh"), []byte("chmod 600 key.pem\nhead -c 400000000 /dev/zero | sort >/dev/null\n"), 0o755)
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The run, in a shell that keeps the terminal open after it.
	run := strings.Join([]string{shq(os.Args[0]), "run", "--role", "developer", "--workspace", shq(ws), "--approve", "tty",
		"--memory", "64M", "--audit", shq(filepath.Join(dir, "audit.jsonl")), "--no-user-policy", "--", "/bin/sh", "job.sh"}, " ")
	script := filepath.Join(dir, "session.sh")
	os.WriteFile(script, []byte("cd "+shq(tgt)+"\nAGENTBOX_TEST_MAIN=1 HOME="+shq(home)+" "+run+"\necho \"[exit $?]\"\nsleep 600\n"), 0o755)
	cmd := exec.Command(tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "60", "-s", "t", "/bin/sh "+shq(script))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	screen := func() string { return tm("capture-pane", "-p", "-J", "-S", "-200", "-t", "t") }
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if s = screen(); ok(s) {
				return s
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("the terminal never showed %s:\n%s", what, s)
		return ""
	}
	has := func(subs ...string) func(string) bool {
		return func(s string) bool {
			for _, x := range subs {
				if !strings.Contains(s, x) {
					return false
				}
			}
			return true
		}
	}
	waitScreen("the question", has("agentbox: approval needed", "argv:    chmod 600 key.pem", "[r] remember", "auto-deny in"))
	tm("send-keys", "-t", "t", "r")
	policyFile := filepath.Join(ws, "agentbox.yaml")
	waitScreen("the rule before it is saved", has("saves in "+policyFile+":", "- decision: allow", "command: chmod 600", "press Enter to save it"))
	if _, err := os.Stat(policyFile); err == nil {
		if b, _ := os.ReadFile(policyFile); strings.Contains(string(b), "chmod") {
			t.Fatalf("the rule was saved before Enter:\n%s", b)
		}
	}
	tm("send-keys", "-t", "t", "Enter")
	s := waitScreen("the end line", has("[exit "))
	t.Logf("the terminal at the end:\n%s", strings.TrimRight(s, "\n"))
	for _, want := range []string{"allowed; saving the rule"} {
		if !strings.Contains(s, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, s)
		}
	}
	end := regexp.MustCompile(`agentbox: run \S+ ended: exit 137: the memory limit of 64 MiB \(--memory\) killed \d+ process`)
	if !end.MatchString(s) {
		t.Errorf("no memory-limit end line on the terminal:\n%s", s)
	}
	if !strings.Contains(s, "[exit 137]") {
		t.Errorf("the run's exit status is not 137:\n%s", s)
	}
	b, err := os.ReadFile(policyFile)
	if err != nil || !strings.Contains(string(b), "command: chmod 600") {
		t.Errorf("the rule shown is not the rule saved: %v\n%s", err, b)
	}
	if st, err := os.Stat(filepath.Join(tgt, "key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the approved chmod did not run: %v %v", st.Mode(), err)
	}
}

// shq quotes a word for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
