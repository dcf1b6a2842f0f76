package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/testkit"
)

// TestUserSettingsLimits: as a regular user (made by the test) where the
// machine gives that user no cgroup for limits (cgroup v1 here), a
// developer run is refused in one line that names --no-limits, the
// settings file and its key (and the systemd-run prefix where systemd
// could delegate); `limits: off` in that file makes --no-limits the
// default, said at launch; --no-limits=false overrides it; a bad file is
// an error naming the file and line.
func TestUserSettingsLimits(t *testing.T) {
	if abi := sandbox.LandlockABI(); abi < sandbox.RequiredLandlockABI {
		t.Skipf("reason: Landlock ABI %d < %d", abi, sandbox.RequiredLandlockABI)
	}
	u := testkit.NewUser(t, "abu")
	dir, err := os.MkdirTemp("", "agentbox-userconf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := testkit.CopyBinary(t, dir, "agentbox")
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".config", "agentbox", "config.yaml")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	u.Own(home)
	run := func(args ...string) (int, string) {
		cmd := exec.Command(exe, args...)
		cmd.Dir = home
		cmd.Env = []string{"AGENTBOX_TEST_MAIN=1", "AGENTBOX_CHECKPOINT_JOURNAL=off", "PATH=/usr/bin:/bin", "HOME=" + home,
			"XDG_STATE_HOME=" + filepath.Join(home, "state"), "AGENTBOX_RUN_REGISTRY=" + filepath.Join(home, "runs")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Cred()}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	base := []string{"run", "--role", "developer", "--workspace", ws, "--audit", filepath.Join(home, "audit.jsonl"), "--no-user-policy", "--approve", "none"}
	cases := []struct {
		name     string
		settings string // "" leaves no file
		flags    []string
		code     int
		want     []string
		unwanted []string
	}{
		{"no settings: refused, saying how", "", nil, exitFailure,
			[]string{"--no-limits", "`limits: off` in " + settings, "cgroups unusable"}, []string{"--best-effort"}},
		{"limits: off makes --no-limits the default", "limits: off\n", nil, 0,
			[]string{strconv.Itoa(u.UID) + "\n", "limits off by " + settings + ":1 (limits: off)"}, nil},
		{"--no-limits=false overrides the file", "limits: off\n", []string{"--no-limits=false"}, exitFailure,
			[]string{"`limits: off` in " + settings}, []string{"limits off by"}},
		{"limits: on", "# stated\nlimits: on\n", nil, exitFailure, []string{"--no-limits"}, nil},
		{"a bad file names file and line", "\nlimit: off\n", nil, exitRunUsage,
			[]string{settings + `:2: unknown setting "limit" (known: limits, audit, push)`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(settings)
			if c.settings != "" {
				if err := os.WriteFile(settings, []byte(c.settings), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append(append(append([]string{}, base...), c.flags...), "--", "id", "-u")
			code, out := run(args...)
			t.Logf("%s", out)
			if c.code != 0 && code == 0 {
				t.Skipf("reason: user %s has a usable cgroup here (delegated); nothing is refused", u.Name)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out)
			}
			testkit.CheckOutput(t, out, c.want, c.unwanted)
			if code != 0 && strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Errorf("refusal is not one line:\n%s", out)
			}
			if code == exitFailure && cgroup.SystemdScopeHelps() != strings.Contains(out, "systemd-run --user --scope -p Delegate=yes agentbox run") {
				t.Errorf("systemd-run hint present=%v, want %v:\n%s", !cgroup.SystemdScopeHelps(), cgroup.SystemdScopeHelps(), out)
			}
		})
	}
}
