package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestUnknownPrograms: the developer role's unknown_programs: allow lets a
// program no rule names run while the run can be undone — only a program
// file that exists, and not a network client, privilege changer, signal
// sender or device tool; with checkpoints off it asks as before, and
// inline code keeps its floor.
func TestUnknownPrograms(t *testing.T) {
	look := func(name string) string { p, _ := exec.LookPath(name); return p }
	for _, cp := range []bool{true, false} {
		e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Checkpoints: cp})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			argv []string
			want Decision // with checkpoints on (Ask: anything but allow)
		}{
			{[]string{"mkfifo", "p"}, Allow},
			{[]string{"no-such-program-here", "x"}, Ask},
			{[]string{"mount", "/dev/sda1", "/mnt"}, Ask},
			{[]string{"ping", "-c1", "h"}, Ask},
			{[]string{"python3", "-c", "print(1)"}, Ask},
			{[]string{"bash", "--version"}, Allow},
		} {
			if look(tc.argv[0]) == "" && tc.want == Allow {
				continue // not installed here
			}
			res := e.Decide(Query{Argv: tc.argv, ExecContext: ExecContext{Cwd: "/", Exe: look(tc.argv[0]), LookPath: look}})
			want := tc.want
			if !cp && want == Allow && tc.argv[0] != "bash" {
				want = Ask
			}
			if (res.Decision == Allow) != (want == Allow) {
				t.Errorf("checkpoints %v: %v = %v (%s), want %v", cp, tc.argv, res.Decision, res.Reason, want)
			}
			if cp && res.Decision == Allow && tc.argv[0] == "mkfifo" && !strings.Contains(res.Reason, "unknown_programs: allow") {
				t.Errorf("the allow does not say why: %s", res.Reason)
			}
		}
	}
}
