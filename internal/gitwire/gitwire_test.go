package gitwire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

var (
	capMu   sync.Mutex
	capSets = map[Format]map[string]capture{}
	capFail = map[Format]bool{}
)

// captures returns the real push bodies of one object format, made once
// per test binary (about a second of git).
func captures(t testing.TB, f Format) map[string]capture {
	t.Helper()
	capMu.Lock()
	defer capMu.Unlock()
	if c, ok := capSets[f]; ok {
		return c
	}
	if capFail[f] {
		t.Fatalf("making the %s captures failed in an earlier test", f)
	}
	if f == SHA256 {
		if out, err := gitTry(t.TempDir(), "init", "-q", "--object-format=sha256", "probe"); err != nil {
			t.Skipf("reason: this git has no SHA-256 repositories: %v %s", err, out)
		}
	}
	capFail[f] = true
	c := captureSet(t, f)
	capSets[f], capFail[f] = c, false
	return c
}

func refs(r ...string) []string { return r }

// TestCheckRealPushes holds each kind of update, as real git sent it,
// against approvals: what passes, and each refusal with its ref and reason.
func TestCheckRealPushes(t *testing.T) {
	main := Approval{Refs: refs("refs/heads/main")}
	mainCreate := Approval{Refs: refs("refs/heads/main"), Create: true}
	cases := []struct {
		f       Format
		capture string
		ap      Approval
		reason  Reason // "" passes
		ref     string
	}{
		{SHA1, "create", mainCreate, "", ""},
		{SHA1, "create", main, ReasonCreate, "refs/heads/main"},
		{SHA1, "ff", main, "", ""},
		{SHA1, "ff", Approval{Refs: refs("refs/heads/dev")}, ReasonNotApproved, "refs/heads/main"},
		{SHA1, "ff", Approval{}, ReasonNotApproved, "refs/heads/main"},
		{SHA1, "new-branch", Approval{Refs: refs("refs/heads/feature"), Create: true}, "", ""},
		{SHA1, "new-branch", Approval{Refs: refs("refs/heads/*"), Create: true}, "", ""},
		{SHA1, "new-branch", Approval{Refs: refs("refs/heads/feat*"), Create: true}, "", ""},
		{SHA1, "new-branch", Approval{Refs: refs("refs/heads/main"), Create: true}, ReasonNotApproved, "refs/heads/feature"},
		{SHA1, "new-branch", Approval{Refs: refs("refs/heads/feature")}, ReasonCreate, "refs/heads/feature"},
		{SHA1, "force", main, ReasonNotFastForward, "refs/heads/main"},
		{SHA1, "force", Approval{Refs: refs("refs/heads/*"), Create: true, Delete: true}, ReasonNotFastForward, "refs/heads/main"},
		{SHA1, "rewind", main, ReasonNotFastForward, "refs/heads/main"},
		{SHA1, "delete-main", Approval{Refs: refs("refs/heads/main"), Delete: true}, ReasonDeleteProtected, "refs/heads/main"},
		{SHA1, "delete-main", Approval{Refs: refs("refs/heads/dev"), Delete: true, Protected: refs("refs/heads/dev")}, ReasonNotApproved, "refs/heads/main"},
		{SHA1, "delete-main", Approval{Refs: refs("refs/heads/main"), Delete: true, Protected: []string{}}, "", ""},
		{SHA1, "delete-feature", Approval{Refs: refs("refs/heads/feature"), Delete: true}, "", ""},
		{SHA1, "delete-feature", Approval{Refs: refs("refs/heads/feature")}, ReasonDelete, "refs/heads/feature"},
		{SHA1, "delete-feature", Approval{Refs: refs("refs/heads/*"), Delete: true, Protected: refs("refs/heads/f*")}, ReasonDeleteProtected, "refs/heads/feature"},
		{SHA1, "delete-feature", main, ReasonNotApproved, "refs/heads/feature"},
		{SHA1, "merge", main, "", ""},
		{SHA1, "multi", Approval{Refs: refs("refs/heads/main", "refs/heads/feature")}, "", ""},
		{SHA1, "multi", main, ReasonNotApproved, "refs/heads/feature"},
		{SHA1, "tag", Approval{Refs: refs("refs/tags/v1"), Create: true}, "", ""},
		{SHA1, "tag", Approval{Refs: refs("refs/heads/*"), Create: true}, ReasonNotApproved, "refs/tags/v1"},
		{SHA1, "push-option", main, "", ""},
		{SHA1, "shallow", main, "", ""},
		{SHA1, "ff", Approval{Refs: refs("refs/*/*/main")}, ReasonNotApproved, ""},
		{SHA256, "create", mainCreate, "", ""},
		{SHA256, "ff", main, "", ""},
		{SHA256, "force", main, ReasonNotFastForward, "refs/heads/main"},
		{SHA256, "rewind", main, ReasonNotFastForward, "refs/heads/main"},
		{SHA256, "delete-main", Approval{Refs: refs("refs/heads/main"), Delete: true}, ReasonDeleteProtected, "refs/heads/main"},
		{SHA256, "merge", main, "", ""},
		{SHA256, "multi", Approval{Refs: refs("refs/heads/main", "refs/heads/feature")}, "", ""},
		{SHA256, "tag", Approval{Refs: refs("refs/tags/*"), Create: true}, "", ""},
	}
	for _, tc := range cases {
		name := string(tc.f) + "/" + tc.capture + "/" + strings.Join(tc.ap.Refs, ",")
		t.Run(name, func(t *testing.T) {
			c, ok := captures(t, tc.f)[tc.capture]
			if !ok {
				t.Fatalf("no capture %q", tc.capture)
			}
			sum, err := Check(bytes.NewReader(c.body), tc.ap, Limits{})
			checkVerdict(t, err, tc.reason, tc.ref)
			if err == nil {
				if sum.Request == nil || sum.Request.Format != tc.f {
					t.Fatalf("summary %+v: want format %s", sum, tc.f)
				}
				if sum.Request.HasPack() != (sum.PackBytes > 0) {
					t.Fatalf("summary %+v: pack read %d bytes, HasPack %v", sum, sum.PackBytes, sum.Request.HasPack())
				}
			}
			// The Guard gives the same verdict, hands on every byte of a
			// passed push and never a refused push's trailer.
			for _, src := range readers(c.body) {
				g := NewGuard(src.r, tc.ap, Limits{})
				out, rerr := io.ReadAll(g)
				g.Close()
				if (rerr == nil) != (err == nil) || g.Err() != nil && err != nil && g.Err().Error() != err.Error() {
					t.Fatalf("%s: Guard read err %v, verdict %v; Check: %v", src.name, rerr, g.Err(), err)
				}
				if !bytes.HasPrefix(c.body, out) {
					t.Fatalf("%s: Guard handed on bytes that are not the body's", src.name)
				}
				switch {
				case err == nil && len(out) != len(c.body):
					t.Fatalf("%s: passed push: %d of %d bytes handed on", src.name, len(out), len(c.body))
				case err != nil && tc.reason != ReasonNotFastForward && len(out) != 0:
					t.Fatalf("%s: refused by its commands, yet %d bytes handed on", src.name, len(out))
				case err != nil && len(out) > len(c.body)-20:
					t.Fatalf("%s: refused push: %d of %d bytes handed on, the trailer among them", src.name, len(out), len(c.body))
				}
			}
		})
	}
}

// checkVerdict fails unless err is nil for reason "", else a
// *RefusedError with that reason and ref.
func checkVerdict(t *testing.T, err error, reason Reason, ref string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var r *RefusedError
	if !errors.As(err, &r) {
		t.Fatalf("err = %v, want a refusal %q", err, reason)
	}
	if r.Reason != reason || r.Ref != ref {
		t.Fatalf("refusal %q of ref %q (%v), want %q of %q", r.Reason, r.Ref, err, reason, ref)
	}
	if !strings.Contains(err.Error(), string(reason)) || ref != "" && !strings.Contains(err.Error(), ref) {
		t.Fatalf("error %q does not name the reason and ref", err)
	}
}

type namedReader struct {
	name string
	r    io.Reader
}

// readers are the ways a body may arrive: whole, a byte at a time, in
// halves, with the last bytes and io.EOF together.
func readers(b []byte) []namedReader {
	return []namedReader{
		{"whole", bytes.NewReader(b)},
		{"one-byte", iotest.OneByteReader(bytes.NewReader(b))},
		{"half", iotest.HalfReader(bytes.NewReader(b))},
		{"data-err", iotest.DataErrReader(bytes.NewReader(b))},
	}
}

// TestRequestFields holds what the command section says: commands,
// capabilities, push options, shallow lines, the object format.
func TestRequestFields(t *testing.T) {
	for _, f := range []Format{SHA1, SHA256} {
		caps := captures(t, f)
		g := NewGuard(bytes.NewReader(caps["multi"].body), Approval{}, Limits{})
		req, _ := g.Commands()
		if req == nil || len(req.Commands) != 2 || req.Commands[0].Ref != "refs/heads/feature" || req.Commands[1].Ref != "refs/heads/main" {
			t.Fatalf("%s multi: %+v", f, req)
		}
		if req.Format != f || !req.Has("report-status-v2") || req.SideBand() != 65520 || !req.HasPack() {
			t.Fatalf("%s multi: format %s caps %v", f, req.Format, req.Capabilities)
		}
		for _, c := range req.Commands {
			if len(c.Old) != f.hexLen() || c.IsCreate() || c.IsDelete() {
				t.Fatalf("%s multi: command %+v", f, c)
			}
		}
		g.Close()
	}
	caps := captures(t, SHA1)
	for name, want := range map[string]func(*Request) bool{
		"push-option":    func(r *Request) bool { return len(r.PushOptions) == 2 && r.PushOptions[1] == "note=x y" },
		"shallow":        func(r *Request) bool { return len(r.Shallow) == 1 && len(r.Shallow[0]) == 40 },
		"delete-feature": func(r *Request) bool { return r.Commands[0].IsDelete() && !r.HasPack() },
		"create":         func(r *Request) bool { return r.Commands[0].IsCreate() && r.HasPack() },
	} {
		g := NewGuard(bytes.NewReader(caps[name].body), Approval{}, Limits{})
		req, _ := g.Commands()
		if req == nil || !want(req) {
			t.Errorf("%s: %+v", name, req)
		}
		g.Close()
	}
}

// TestRefusedBytes holds the fail-closed reading: a body cut anywhere, a
// changed byte anywhere in the pack, a section over its cap, bytes that are
// no receive-pack request — each a refusal naming where, never a pass.
func TestRefusedBytes(t *testing.T) {
	caps := captures(t, SHA1)
	main := Approval{Refs: refs("refs/heads/main"), Create: true}
	for _, name := range []string{"ff", "merge", "create"} {
		body := caps[name].body
		for n := 0; n < len(body); n++ {
			if _, err := Check(bytes.NewReader(body[:n]), main, Limits{}); err == nil {
				t.Fatalf("%s cut at %d of %d bytes: passed", name, n, len(body))
			}
		}
		g := NewGuard(bytes.NewReader(body), main, Limits{})
		req, _ := g.Commands()
		g.Close()
		for i := int(req.Size); i < len(body); i++ {
			b := bytes.Clone(body)
			b[i] ^= 0x40
			_, err := Check(bytes.NewReader(b), main, Limits{})
			var r *RefusedError
			if !errors.As(err, &r) || r.Reason != ReasonMalformed && r.Reason != ReasonTooLarge && r.Reason != ReasonNotFastForward {
				t.Fatalf("%s byte %d changed: %v", name, i, err)
			}
		}
	}
	ff := caps["ff"].body
	bad := []struct {
		name   string
		body   []byte
		lim    Limits
		reason Reason
		off    int64 // -2: any
	}{
		{"commands over cap", ff, Limits{Commands: 100}, ReasonTooLarge, -2},
		{"pack over cap", ff, Limits{Pack: 100}, ReasonTooLarge, -2},
		{"inflated over cap", ff, Limits{Inflated: 100}, ReasonTooLarge, -2},
		{"commits over cap", caps["merge"].body, Limits{Commits: 1}, ReasonTooLarge, -2},
		{"endless object", append([]byte(pl(zero40+" "+strings.Repeat("a", 40)+" refs/heads/main\x00")+"0000PACK\x00\x00\x00\x02\x00\x00\x00\x01\x30\x78\x01"),
			bytes.Repeat([]byte("\x00\x00\x00\xff\xff"), 40000)...), Limits{Pack: 100 << 10}, ReasonTooLarge, 106 + 100<<10},
		{"bytes after the pack", append(bytes.Clone(ff), 'x'), Limits{}, ReasonMalformed, int64(len(ff))},
		{"not hex", []byte("zz00"), Limits{}, ReasonMalformed, 0},
		{"delim pkt", []byte("0001"), Limits{}, ReasonMalformed, 0},
		{"long pkt", []byte("fff5"), Limits{}, ReasonMalformed, 0},
		{"empty", nil, Limits{}, ReasonMalformed, 0},
		{"no pack", []byte(pl(zero40+" "+strings.Repeat("a", 40)+" refs/heads/main\x00report-status") + "0000"), Limits{}, ReasonMalformed, -2},
		{"bad ref", []byte(pl(zero40+" "+strings.Repeat("a", 40)+" refs/heads/../main\x00") + "0000"), Limits{}, ReasonMalformed, 0},
		{"short oid", []byte(pl(zero40+" aaaa refs/heads/main\x00") + "0000"), Limits{}, ReasonMalformed, 0},
		{"signed push", []byte(pl("push-cert\x00report-status") + "0000"), Limits{}, ReasonUnsupported, 0},
		{"unknown format", []byte(pl(zero40+" "+strings.Repeat("a", 40)+" refs/heads/main\x00object-format=md5") + "0000"), Limits{}, ReasonUnsupported, 0},
		{"garbage pack", append([]byte(pl(zero40+" "+strings.Repeat("a", 40)+" refs/heads/main\x00")+"0000"), "JUNKJUNKJUNKJUNK"...), Limits{}, ReasonMalformed, 106},
		{"twice", []byte(pl(zero40+" "+zero40[:39]+"1 refs/heads/main\x00") + pl(zero40+" "+zero40[:39]+"1 refs/heads/main") + "0000"), Limits{}, ReasonMalformed, -1},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(bytes.NewReader(tc.body), main, tc.lim)
			var r *RefusedError
			if !errors.As(err, &r) || r.Reason != tc.reason {
				t.Fatalf("err = %v, want %q", err, tc.reason)
			}
			if tc.off != -2 && r.Offset != tc.off {
				t.Fatalf("err = %v: offset %d, want %d", err, r.Offset, tc.off)
			}
		})
	}
	// git's probe before a large push: a lone flush, no pack, passes.
	sum, err := Check(strings.NewReader("0000"), main, Limits{})
	if err != nil || sum.Request == nil || len(sum.Request.Commands) != 0 {
		t.Fatalf("probe: %+v %v", sum, err)
	}
}

const zero40 = "0000000000000000000000000000000000000000"

// pl is s as one pkt-line.
func pl(s string) string {
	var b bytes.Buffer
	pktLine(&b, s)
	return b.String()
}

// TestBodyReadError: an error of the body is the verdict, never a pass.
func TestBodyReadError(t *testing.T) {
	ff := captures(t, SHA1)["ff"].body
	boom := errors.New("connection reset")
	for _, n := range []int{0, 10, len(ff) - 5} {
		src := io.MultiReader(bytes.NewReader(ff[:n]), iotest.ErrReader(boom))
		g := NewGuard(src, Approval{Refs: refs("refs/heads/main")}, Limits{})
		_, err := io.ReadAll(g)
		g.Close()
		if !errors.Is(err, boom) || !errors.Is(g.Err(), boom) {
			t.Fatalf("cut at %d: read %v, verdict %v; want %v", n, err, g.Err(), boom)
		}
	}
}

// TestGuardClose: Close returns at once while the body is stalled mid-pack,
// and the verdict is then a refusal to pass, never a pass.
func TestGuardClose(t *testing.T) {
	ff := captures(t, SHA1)["ff"].body
	pr, pw := io.Pipe()
	go pw.Write(ff[:len(ff)-30]) // then the body stalls
	g := NewGuard(pr, Approval{Refs: refs("refs/heads/main")}, Limits{})
	if _, err := g.Commands(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(g)
		got <- err
	}()
	closed := make(chan struct{})
	go func() {
		g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for a stalled body")
	}
	if err := g.Err(); !errors.Is(err, errClosed) {
		t.Fatalf("verdict after Close: %v", err)
	}
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("reader of a closed Guard saw a clean end")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reader of a closed Guard still blocked")
	}
	pw.CloseWithError(errors.New("client gone")) // ends the check's read
}

// TestWriteRefusal reads back the answer as git does: side-band demuxed,
// report-status lines, the flush.
func TestWriteRefusal(t *testing.T) {
	two := []Command{{Ref: "refs/heads/main"}, {Ref: "refs/heads/dev"}}
	cases := []struct {
		name string
		req  *Request
		err  error
		band bool
		want []string
	}{
		{"side-band", &Request{Commands: two, Capabilities: []string{"report-status-v2", "side-band-64k"}},
			&RefusedError{Ref: "refs/heads/main", Reason: ReasonNotFastForward, Detail: "x\ny", Offset: -1}, true,
			[]string{"unpack ok\n", "ng refs/heads/main agentbox: non-fast-forward (no force): x y\n", "ng refs/heads/dev agentbox: another ref of this push was refused\n"}},
		{"plain", &Request{Commands: two[:1], Capabilities: []string{"report-status"}},
			&RefusedError{Ref: "refs/heads/main", Reason: ReasonDeleteProtected, Offset: -1}, false,
			[]string{"unpack ok\n", "ng refs/heads/main agentbox: delete of a protected ref\n"}},
		{"malformed pack", &Request{Commands: two[:1], Capabilities: []string{"report-status"}},
			&RefusedError{Reason: ReasonMalformed, Detail: "bad", Offset: 9}, false,
			[]string{"unpack error malformed push: bad\n", "ng refs/heads/main agentbox: malformed push: bad\n"}},
		{"no request", nil, errors.New("read failed"), false, []string{"unpack error malformed push: read failed\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteRefusal(&b, tc.req, tc.err); err != nil {
				t.Fatal(err)
			}
			raw := b.Bytes()
			if tc.band {
				var inner []byte
				lines, rest := readPkts(t, raw)
				for _, l := range lines {
					switch l[0] {
					case 1:
						inner = append(inner, l[1:]...)
					case 2:
						if !strings.HasPrefix(string(l[1:]), "agentbox: push refused") {
							t.Fatalf("band 2: %q", l)
						}
					default:
						t.Fatalf("band %d", l[0])
					}
				}
				if len(rest) != 0 {
					t.Fatalf("after the flush: %q", rest)
				}
				raw = inner
			}
			lines, rest := readPkts(t, raw)
			if len(rest) != 0 || len(lines) != len(tc.want) {
				t.Fatalf("report %q, rest %q; want %q", lines, rest, tc.want)
			}
			for i, l := range lines {
				if string(l) != tc.want[i] {
					t.Fatalf("line %d %q, want %q", i, l, tc.want[i])
				}
			}
		})
	}
}

// readPkts reads pkt-lines up to a flush; returns them and what follows.
func readPkts(t *testing.T, b []byte) ([][]byte, []byte) {
	t.Helper()
	var out [][]byte
	for {
		w := newWire(bytes.NewReader(b), 1<<16)
		p, err := readPkt(w, make([]byte, maxPkt))
		if err != nil {
			t.Fatalf("reading %q: %v", b, err)
		}
		n := int(w.offset())
		if p.flush {
			return out, b[n:]
		}
		out = append(out, bytes.Clone(p.data))
		b = b[n:]
	}
}
