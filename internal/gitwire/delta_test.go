package gitwire

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
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
// and once with commits sent as deltas of other commits in the pack. Both
// pass: a delta whose base the pack carries is resolved and its id
// computed from the result. A delta whose base the pack does not carry (a
// thin pack's) cannot be: that update is refused (cannot prove).
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
	mid := commit(3, "second\n\n"+msg+"padding\n")
	tip := commit(4, "tip\n\n"+msg)
	ap := Approval{Refs: refs("refs/heads/main")}

	whole := packBody(t, dir, old, tip, "refs/heads/main", "--window=0")
	sum, err := Check(bytes.NewReader(whole), ap, Limits{})
	if err != nil || sum.Deltas != 0 || sum.Commits != 3 {
		t.Fatalf("commits whole: %+v %v", sum, err)
	}

	deltas := packBody(t, dir, old, tip, "refs/heads/main", "--window=10", "--depth=50")
	sum, err = Check(bytes.NewReader(deltas), ap, Limits{})
	if sum.Deltas < 2 {
		t.Skipf("reason: pack-objects sent the commits whole (%+v)", sum)
	}
	if err != nil || sum.Commits != 3 {
		t.Fatalf("commits as deltas: %+v, err %v; want all 3 resolved and a pass", sum, err)
	}

	// The tip alone, as a REF_DELTA of mid which the pack does not carry
	// (a thin pack; git sends commits whole there, a client need not).
	midData, tipData := gitOut(t, dir, "cat-file", "commit", mid)+"\n", gitOut(t, dir, "cat-file", "commit", tip)+"\n"
	midID, _ := hex.DecodeString(mid)
	delta := deltaInsert(len(midData), []byte(tipData))
	cmds := pl(mid+" "+tip+" refs/heads/main\x00report-status") + "0000"
	// The control: with mid whole in the pack, the delta resolves to
	// the tip's id and the walk reaches mid.
	withBase := append([]byte(cmds), makePack(t, rawObj{typ: objCommit, data: []byte(midData)}, rawObj{typ: objRefDelta, base: midID, data: delta})...)
	if sum, err := Check(bytes.NewReader(withBase), ap, Limits{}); err != nil || sum.Commits != 2 {
		t.Fatalf("hand-made pack with the base: %+v %v", sum, err)
	}
	body := append([]byte(cmds), makePack(t, rawObj{typ: objRefDelta, base: midID, data: delta})...)
	sum, err = Check(bytes.NewReader(body), ap, Limits{})
	var r *RefusedError
	if !errors.As(err, &r) || r.Reason != ReasonNotFastForward || !strings.Contains(r.Detail, "cannot prove") || sum.Deltas != 1 {
		t.Fatalf("thin pack, tip a delta of a commit not in it: %+v, %v; want cannot prove", sum, err)
	}
}

// rawObj is one object of a hand-made pack.
type rawObj struct {
	typ  int
	base []byte // REF_DELTA's base id
	data []byte
}

// makePack builds a version 2 pack of objs with its SHA-1 trailer.
func makePack(t testing.TB, objs ...rawObj) []byte {
	var p bytes.Buffer
	p.WriteString("PACK\x00\x00\x00\x02")
	binary.Write(&p, binary.BigEndian, uint32(len(objs)))
	for _, o := range objs {
		n := len(o.data)
		c := byte(o.typ<<4) | byte(n&15)
		n >>= 4
		for n > 0 {
			p.WriteByte(c | 0x80)
			c = byte(n & 0x7f)
			n >>= 7
		}
		p.WriteByte(c)
		p.Write(o.base)
		z := zlib.NewWriter(&p)
		z.Write(o.data)
		z.Close()
	}
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return p.Bytes()
}

// deltaInsert is a git delta that builds want from a base of baseLen
// bytes by inserting every byte (no copy).
func deltaInsert(baseLen int, want []byte) []byte {
	var d []byte
	for _, v := range []int{baseLen, len(want)} {
		for v >= 0x80 {
			d = append(d, byte(v)|0x80)
			v >>= 7
		}
		d = append(d, byte(v))
	}
	for len(want) > 0 {
		n := min(len(want), 127)
		d = append(d, byte(n))
		d = append(d, want[:n]...)
		want = want[n:]
	}
	return d
}
