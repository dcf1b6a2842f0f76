package sandbox

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
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
