package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
)

// TestRunEndLine: every run ends with a line saying how — exit status and
// its meaning (timeout, memory limit, pids limit, refusal, normal), what
// was refused, what changed — and the command that takes it back from any
// directory; --json-summary writes the same facts; --quiet drops it.
func TestRunEndLine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the limit rows need a cgroup of the run's own: run as root")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	tgt := filepath.Join(ws, "target")
	t.Chdir(tgt)
	for _, tc := range []struct {
		name  string
		flags []string
		argv  []string
		code  int
		end   string // regexp the end line matches
		json  func(s summaryJSON) bool
	}{
		{"changes", nil, []string{"sh", "-c", "echo x > b.txt; echo y > c.txt; rm a.txt"}, 0,
			`ended: exit 0; 3 files changed \(target/a.txt, target/b.txt, target/c.txt\)\nagentbox: see: agentbox changes --workspace \S+; undo: agentbox undo --workspace \S+ \w+\n$`,
			func(s summaryJSON) bool { return s.ChangedCount == 3 && s.Checkpointed }},
		{"refused", nil, []string{"sh", "-c", "git push origin main"}, 126,
			`ended: exit 126: a program was refused or not executable; 1 refused \(first: tool:git:push origin main \(rule developer/git.push\)\); no file changed\n`,
			func(s summaryJSON) bool { return s.Refused == 1 && strings.Contains(s.FirstRefused, "git.push") }},
		{"timeout", []string{"--timeout", "1s"}, []string{"sleep", "30"}, 124,
			`ended: exit 124: the run's timeout \(--timeout\) ended it`, func(s summaryJSON) bool { return s.TimedOut }},
		// A limit hit is also said when it happens (the sort outlives the
		// kill by the time the line is read: the line comes before the end).
		{"memory", []string{"--memory", "64M"}, []string{"sh", "-c", "head -c 400000000 /dev/zero | sort >/dev/null; sleep 1"}, -1,
			`(?s)agentbox: the memory limit \(64 MiB, --memory\) killed a process.*ended: exit \d+.*the memory limit of 64 MiB \(--memory\) killed 1 process`, func(s summaryJSON) bool { return s.OOMKills == 1 }},
		{"pids", []string{"--pids", "8"}, []string{"sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & done; wait"}, -1,
			`the process limit of 8 \(--pids\) refused \d+ forks?`, func(s summaryJSON) bool { return s.PidsMaxHits > 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(tgt, "a.txt"), []byte("a\n"), 0o644)
			sum := filepath.Join(t.TempDir(), "summary.json")
			args := append([]string{"run", "--role", "developer", "--no-user-policy", "--approve", "none", "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
				"--json-summary", sum}, tc.flags...)
			_, errOut, code := runCLI(t, "", append(append(args, "--"), tc.argv...)...)
			if tc.code >= 0 && code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, errOut)
			}
			i := strings.Index(errOut, "agentbox: run ")
			if strings.HasPrefix(tc.end, "(?s)") {
				i = 0 // a line before the end line is part of what is checked
			}
			if i < 0 || !regexp.MustCompile(tc.end).MatchString(errOut[i:]) {
				t.Errorf("end line does not match %q:\n%s", tc.end, errOut)
			}
			var s summaryJSON
			b, err := os.ReadFile(sum)
			if err != nil || json.Unmarshal(b, &s) != nil || s.ExitCode != code || s.Run == "" || !tc.json(s) {
				t.Errorf("--json-summary: %v %s", err, b)
			}
			// What the end line suggests works from another directory.
			if m := regexp.MustCompile(`undo: (agentbox undo --workspace (\S+) (\w+))`).FindStringSubmatch(errOut); m != nil {
				t.Chdir(t.TempDir())
				if _, e, c := runCLI(t, "", "undo", "--workspace", m[2], m[3]); c != 0 {
					t.Errorf("%s from another directory: exit %d %s", m[1], c, e)
				}
				if _, err := os.Stat(filepath.Join(tgt, "a.txt")); err != nil {
					t.Errorf("undo did not bring a.txt back: %v", err)
				}
				t.Chdir(tgt)
			}
		})
	}
	_, errOut, _ := runCLI(t, "", "run", "-q", "--role", "developer", "--no-user-policy", "--approve", "none", "--audit", "none", "--", "true")
	if strings.Contains(errOut, "agentbox: run ") {
		t.Errorf("--quiet printed the end line: %s", errOut)
	}
}
