package gitwire

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitSeesRefusal pushes with real git through a Guard in front of a
// real git http-backend that itself allows everything (force, deletes):
// the Guard alone keeps the server's refs, and git prints the refusal as
// "! [remote rejected] <ref> (agentbox: <reason>)". The same force push
// without the Guard goes through, so the server is no accomplice.
func TestGitSeesRefusal(t *testing.T) {
	for _, f := range []Format{SHA1, SHA256} {
		t.Run(string(f), func(t *testing.T) {
			captures(t, f) // skips without SHA-256
			s := newServer(t, f, false)
			c := newClient(t, s, f)
			guard := func(ap *Approval) {
				s.mu.Lock()
				s.guard = ap
				s.mu.Unlock()
			}
			push := func(wantOK bool, want string, args ...string) {
				t.Helper()
				out, ok := c.push(args...)
				if ok != wantOK || !strings.Contains(out, want) {
					t.Fatalf("git push %v: ok=%v, want %v and %q in:\n%s", args, ok, wantOK, want, out)
				}
			}
			c.commit("A")
			guard(&Approval{Refs: refs("refs/heads/main"), Create: true})
			push(true, "[new branch]", "origin", "main")
			b := c.commit("B")
			guard(&Approval{Refs: refs("refs/heads/main")})
			push(true, "main -> main", "origin", "main")
			if got := s.serverRef(t, "refs/heads/main"); got != b {
				t.Fatalf("server main %s after a fast-forward to %s", got, b)
			}

			c.git("commit", "-q", "--amend", "-m", "B rewritten")
			push(false, "! [remote rejected] main -> main (agentbox: non-fast-forward (no force)", "--force", "origin", "main")
			push(false, "! [remote rejected] main (agentbox: delete of a protected ref", "origin", ":main")
			c.git("checkout", "-q", "-b", "other")
			push(false, "! [remote rejected] other -> other (agentbox: ref not approved", "origin", "other")
			push(false, "~1 -> main (agentbox: non-fast-forward (no force): the push carries no commit", "--force", "origin", b+"~1:refs/heads/main")
			if got := s.serverRef(t, "refs/heads/main"); got != b {
				t.Fatalf("server main %s after refused pushes, want %s", got, b)
			}
			if got := s.serverRef(t, "refs/heads/other"); got != "" {
				t.Fatalf("server has other = %s after a refused push", got)
			}

			// A push over git's post buffer (1 MiB): git probes with a
			// lone flush first, then streams the body chunked.
			if f == SHA1 {
				c.git("checkout", "-q", "main")
				c.git("reset", "-q", "--hard", b)
				big := make([]byte, 1200<<10)
				rand.Read(big)
				if err := os.WriteFile(filepath.Join(c.dir, "big.bin"), big, 0o644); err != nil {
					t.Fatal(err)
				}
				c.git("add", "big.bin")
				c.git("commit", "-q", "-m", "big")
				n := len(s.bodies)
				push(true, "main -> main", "origin", "main")
				if s.serverRef(t, "refs/heads/main") != c.git("rev-parse", "HEAD") || len(s.bodies) < n+2 || string(s.bodies[n]) != "0000" {
					t.Fatalf("big push: server main %s, %d bodies (first %q)", s.serverRef(t, "refs/heads/main"), len(s.bodies)-n, s.bodies[n][:min(8, len(s.bodies[n]))])
				}
				c.git("commit", "-q", "--amend", "-m", "big rewritten")
				push(false, "! [remote rejected] main -> main (agentbox: non-fast-forward (no force)", "--force", "origin", "main")
			}

			// The control: the server takes the same force push unguarded.
			guard(nil)
			push(true, "(forced update)", "--force", "origin", "main")
		})
	}
}
