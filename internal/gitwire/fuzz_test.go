package gitwire

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"testing"
)

// fuzzLimits keep a fuzzed input's cost small: memory is bounded by them
// (and the 64 KiB read buffer), whatever the bytes say.
var fuzzLimits = Limits{Commands: 64 << 10, Pack: 1 << 20, Inflated: 4 << 20, Commits: 1000}

// FuzzCommands feeds arbitrary bodies to the command section parser and
// the approval check: never a panic, and whatever passes is well formed.
func FuzzCommands(f *testing.F) {
	for _, fm := range []Format{SHA1, SHA256} {
		for _, c := range captures(f, fm) {
			f.Add(c.body)
		}
	}
	f.Add([]byte("0000"))
	f.Add([]byte(pl("push-cert\x00report-status") + "0000"))
	f.Fuzz(func(t *testing.T, body []byte) {
		ap := Approval{Refs: []string{"refs/heads/*", "refs/tags/v1"}, Create: true, Delete: true}
		g := NewGuard(bytes.NewReader(body), ap, fuzzLimits)
		defer g.Close()
		req, err := g.Commands()
		if err != nil {
			var r *RefusedError
			if !errors.As(err, &r) {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		if req.Size > int64(len(body)) {
			t.Fatalf("command section of %d bytes in a body of %d", req.Size, len(body))
		}
		for _, c := range req.Commands {
			if !validOID(c.Old, req.Format) || !validOID(c.New, req.Format) || checkRefName(c.Ref) != nil {
				t.Fatalf("passed a bad command %+v", c)
			}
			if c.IsDelete() && ap.IsProtected(c.Ref) {
				t.Fatalf("passed a delete of protected %s", c.Ref)
			}
		}
		var out bytes.Buffer
		if err := WriteRefusal(&out, req, &RefusedError{Ref: "refs/heads/x", Reason: ReasonNotApproved, Offset: -1}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzPack feeds arbitrary packs (after a real command section) to the
// pack reader and the fast-forward walk: never a panic, never a pass for a
// pack whose trailer is not its checksum.
func FuzzPack(f *testing.F) {
	for _, fm := range []Format{SHA1, SHA256} {
		for _, c := range captures(f, fm) {
			g := NewGuard(bytes.NewReader(c.body), Approval{}, Limits{})
			req, _ := g.Commands()
			g.Close()
			if req != nil && req.HasPack() {
				f.Add(fm == SHA256, c.body[req.Size:])
			}
		}
	}
	f.Add(false, []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x96\x0a"))
	// A commit and one made from it as a REF_DELTA; an OFS_DELTA whose
	// offset (0) the fuzzer has to mend.
	base := []byte("tree " + zero40 + "\nauthor a <a> 1 +0000\n\nbase\n")
	id := sha1.Sum([]byte("commit " + strconv.Itoa(len(base)) + "\x00" + string(base)))
	next := []byte("tree " + zero40 + "\nparent " + hex.EncodeToString(id[:]) + "\n\nnext\n")
	f.Add(false, makePack(f, rawObj{typ: objCommit, data: base}, rawObj{typ: objRefDelta, base: id[:], data: deltaInsert(len(base), next)}))
	ofs := makePack(f, rawObj{typ: objCommit, data: base}, rawObj{typ: objOfsDelta, base: []byte{0}, data: append([]byte{byte(len(base)), byte(len(base))}, 0x90|0x01, byte(len(base)))})
	f.Add(false, ofs)
	f.Fuzz(func(t *testing.T, sha256 bool, pack []byte) {
		fm := SHA1
		if sha256 {
			fm = SHA256
		}
		w := newWire(bytes.NewReader(pack), 4096)
		info, err := readPack(w, fm, fuzzLimits)
		if err != nil {
			var r *RefusedError
			if !errors.As(err, &r) && !errors.Is(err, io.EOF) {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		if len(info.nodes) > fuzzLimits.Commits || info.inflated > fuzzLimits.Inflated {
			t.Fatalf("over the limits: %d nodes, %d inflated", len(info.nodes), info.inflated)
		}
		for id, nd := range info.nodes {
			c := Command{Old: nd.linkOr(id), New: id, Ref: "refs/heads/x"}
			fastForward(c, info.nodes, 100)
		}
	})
}

func (n node) linkOr(id string) string {
	if len(n.links) > 0 {
		return n.links[0]
	}
	return id
}
