package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
)

// hostLog writes a real keyed log for host: two runs, each launched and
// exited. It returns the log's lines as a collector would hold them, the
// host's published head, and its key.
func hostLog(t *testing.T, host string) ([]Line, Head, audit.Key) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.OpenKeyed(path, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"r1", "r2"} {
		for _, ev := range []string{audit.EventLaunch, audit.EventExec, audit.EventExit} {
			if err := w.Write(audit.Event{Run: run, Event: ev, Decision: "allow"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	k, err := audit.LoadKey(path+audit.KeySuffix, false)
	if err != nil {
		t.Fatal(err)
	}
	h, err := audit.ReadHeadFile(path)
	if err != nil || h == nil {
		t.Fatalf("head file: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []Line
	for i, l := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		lines = append(lines, Line{Host: host, Log: path, Bytes: l, Where: fmt.Sprintf("%s:%d", path, i+1)})
	}
	return lines, SignHead(k, host, path, *h, time.Now()), k
}

// TestPublishedHeads: a host's published head shows a chain cut after
// its last run exited, which Verify alone cannot see; a changed head,
// one signed with another host's key, one naming another line, and one
// for a log nothing was received of are reported.
func TestPublishedHeads(t *testing.T) {
	l1, h1, k1 := hostLog(t, "ci-1")
	l2, h2, k2 := hostLog(t, "ci-2")
	var keys Keys
	if err := keys.Add("ci-1", k1); err != nil {
		t.Fatal(err)
	}
	if err := keys.Add("ci-2", k2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		lines     func() []Line
		heads     func() []Head
		kind      string // "" whole
		detail    string
		wholeOnly bool // Verify alone passes (the case heads exist for)
	}{
		{name: "whole", lines: func() []Line { return append(append([]Line{}, l1...), l2...) }, heads: func() []Head { return []Head{h1, h2} }},
		{name: "tail cut after the last exit", lines: func() []Line { return append(append([]Line{}, l1[:3]...), l2...) },
			heads: func() []Head { return []Head{h1, h2} }, kind: Missing, detail: "the chain ends at seq 3, before the head the host published at seq 6", wholeOnly: true},
		{name: "head changed", lines: func() []Line { return append(append([]Line{}, l1[:3]...), l2...) },
			heads: func() []Head { h := h1; h.Seq = 3; return []Head{h, h2} }, kind: Forged, detail: "MAC does not match"},
		{name: "head signed with another host's key", lines: func() []Line { return append(append([]Line{}, l1...), l2...) },
			heads: func() []Head {
				h, _ := audit.ReadHeadFile(h1.Log)
				return []Head{SignHead(k2, "ci-1", h1.Log, *h, time.Now())}
			}, kind: Forged, detail: "signed with host ci-2's key"},
		{name: "head names another line", lines: func() []Line { return append(append([]Line{}, l1...), l2...) },
			heads: func() []Head {
				return []Head{SignHead(k1, "ci-1", h1.Log, audit.Head{Seq: h1.Seq, Hash: strings.Repeat("0", 64)}, time.Now())}
			}, kind: Forged, detail: "not the one the host's head names"},
		{name: "nothing received of a host", lines: func() []Line { return append([]Line{}, l1...) },
			heads: func() []Head { return []Head{h1, h2} }, kind: Missing, detail: "nothing of this log was received", wholeOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := tc.lines()
			rep := Verify(lines, keys)
			if tc.wholeOnly && !rep.OK() {
				t.Fatalf("Verify alone already fails: %+v", rep)
			}
			CheckHeads(&rep, lines, keys, tc.heads())
			if tc.kind == "" {
				if !rep.OK() {
					t.Fatalf("whole fleet with its heads fails: %+v", rep)
				}
				return
			}
			if rep.OK() {
				t.Fatalf("passes; want a %s finding %q", tc.kind, tc.detail)
			}
			found := false
			for _, c := range rep.Chains {
				for _, f := range c.Findings {
					if f.Kind == tc.kind && strings.Contains(f.Detail, tc.detail) {
						found = true
					}
				}
			}
			if !found {
				t.Fatalf("no %s finding %q in %+v", tc.kind, tc.detail, rep.Chains)
			}
		})
	}
}

func FuzzParseHeads(f *testing.F) {
	h := Head{Type: headType, Version: 1, Host: "h", Log: "/l", Seq: 3, Hash: strings.Repeat("a", 64), Time: "2026-01-01T00:00:00Z", Kid: "k", Mac: strings.Repeat("b", 64)}
	b, _ := json.Marshal(h)
	f.Add(append(append(b, '\n'), b...))
	f.Add([]byte(`{"type":"agentbox-audit-head","version":2}`))
	f.Add([]byte(`{"type":"agentbox-audit-head","version":1,"host":"h","seq":1,"hash":"zz","kid":"k","mac":"m","x":1}`))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		heads, err := ParseHeads("fuzz", b)
		if err != nil {
			return
		}
		for _, h := range heads {
			if h.Type != headType || h.Seq == 0 || len(h.Hash) != 64 || len(h.Mac) != 64 {
				t.Fatalf("accepted %+v", h)
			}
		}
		rep := Verify(nil, Keys{})
		CheckHeads(&rep, nil, Keys{}, heads) // must not panic
	})
}
