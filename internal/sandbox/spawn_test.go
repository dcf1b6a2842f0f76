package sandbox

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/boundary"
)

// TestUsernsError: the line a helper that needed a user namespace gets
// names what needed it, the kernel's refusal and the flag that does
// without it, and ends there (no stray ";" after the flag).
func TestUsernsError(t *testing.T) {
	refused := fmt.Errorf("fork/exec /bin/agentbox-helper: %w", syscall.EPERM)
	for _, tc := range []struct{ why, want string }{
		{"the read-only view outside the writable areas and the ladder's namespaces need a user namespace; accept their loss with --allow-weaker mount-ro,pid-ns",
			"the read-only view outside the writable areas and the ladder's namespaces need a user namespace, and a user namespace could not be made for it (operation not permitted: unprivileged user namespaces disabled, or refused by a container runtime's seccomp profile?); accept their loss with --allow-weaker mount-ro,pid-ns"},
		{"--review needs overlayfs in the run's own mount namespace; run without --review",
			"--review needs overlayfs in the run's own mount namespace, and a user namespace could not be made for it (operation not permitted: unprivileged user namespaces disabled, or refused by a container runtime's seccomp profile?); run without --review"},
		{"a reason with no flag",
			"a reason with no flag, and a user namespace could not be made for it (operation not permitted: unprivileged user namespaces disabled, or refused by a container runtime's seccomp profile?)"},
	} {
		got := usernsError(tc.why, refused).Error()
		if got != tc.want {
			t.Errorf("usernsError(%q):\n got %q\nwant %q", tc.why, got, tc.want)
		}
		if strings.HasSuffix(got, ";") || strings.HasSuffix(got, "; ") {
			t.Errorf("usernsError(%q) ends in a stray separator: %q", tc.why, got)
		}
	}
}

// TestDebugLogClock: the --debug lines the launcher writes while it is
// made (the protections line) count from the run's clock like the rest;
// the first read 9223372036854 ms (a zero start).
func TestDebugLogClock(t *testing.T) {
	for _, t0 := range []time.Time{time.Now(), {}} {
		var log bytes.Buffer
		plan := &boundary.Plan{Workspace: "/w", AgentID: "a", OwnAgent: "/w/agents/a", Home: "/w/agents/a/home", Tmp: "/w/agents/a/tmp", Cache: "/w/agents/a/cache"}
		if _, err := newLauncher(Config{Argv: []string{"true"}, Plan: plan, Log: &log, T0: t0, BestEffort: true}); err != nil {
			t.Logf("newLauncher: %v", err) // the lines before the error count too
		}
		if !strings.Contains(log.String(), "protections:") {
			t.Fatalf("no protections line:\n%s", log.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			var ms float64
			if _, err := fmt.Sscanf(line, "agentbox: %fms", &ms); err != nil || ms < 0 || ms > 60000 {
				t.Errorf("t0 %v: line %q: %v ms (%v)", t0, line, ms, err)
			}
		}
	}
}
