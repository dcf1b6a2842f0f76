package gitwire

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// packBody is a receive-pack body as git send-pack builds it: one update
// of ref from old to new, then the pack `git pack-objects --revs` makes of
// new ^old (extra are pack-objects options: window, depth).
func packBody(t testing.TB, dir, old, new, ref string, extra ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(pl(old + " " + new + " " + ref + "\x00 report-status-v2 side-band-64k agent=test"))
	b.WriteString("0000")
	in := new + "\n"
	if !isZero(old) {
		in += "^" + old + "\n"
	}
	cmd := exec.Command("git", append([]string{"pack-objects", "--stdout", "--revs", "-q"}, extra...)...)
	cmd.Dir, cmd.Env = dir, gitEnv(dir)
	cmd.Stdin = strings.NewReader(in)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git pack-objects: %v\n%s", err, errb.String())
	}
	return b.Bytes()
}

// TestDeltaCommit: the same fast-forward, packed once with commits whole
// and once with the tip sent as a delta of another commit. The first
// passes; the second cannot be proven without resolving deltas, so it is
// refused (fail closed).
func TestDeltaCommit(t *testing.T) {
	dir := t.TempDir()
	gitOut(t, dir, "init", "-q", "-b", "main", ".")
	msg := strings.Repeat("a long commit message that repeats itself\n", 400)
	commit := func(n int, m string) string {
		os.WriteFile(filepath.Join(dir, "f"), []byte(strings.Repeat("x", n)), 0o644)
		gitOut(t, dir, "add", "f")
		gitOut(t, dir, "commit", "-q", "-m", m)
		return gitOut(t, dir, "rev-parse", "HEAD")
	}
	old := commit(1, "base")
	commit(2, "first\n\n"+msg+"padding padding padding\n")
	commit(3, "second\n\n"+msg+"padding\n")
	tip := commit(4, "tip\n\n"+msg)
	ap := Approval{Refs: refs("refs/heads/main")}

	whole := packBody(t, dir, old, tip, "refs/heads/main", "--window=0")
	sum, err := Check(bytes.NewReader(whole), ap, Limits{})
	if err != nil || sum.Deltas != 0 || sum.Commits != 3 {
		t.Fatalf("commits whole: %+v %v", sum, err)
	}

	deltas := packBody(t, dir, old, tip, "refs/heads/main", "--window=10", "--depth=50")
	sum, err = Check(bytes.NewReader(deltas), ap, Limits{})
	if sum.Commits == 3 {
		t.Skipf("reason: pack-objects sent every commit whole (%+v)", sum)
	}
	var r *RefusedError
	if sum.Deltas == 0 || !errors.As(err, &r) || r.Reason != ReasonNotFastForward || r.Ref != "refs/heads/main" {
		t.Fatalf("commits as deltas: %+v, err %v; want a refusal: cannot prove", sum, err)
	}
	t.Logf("%d of 3 commits whole, %d deltas: %v", sum.Commits, sum.Deltas, err)
}
