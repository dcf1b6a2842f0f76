package export_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/fleet"
)

// TestFleetThroughCollector: three hosts (state directories with keys of
// their own) export to one collector, two over OTLP/HTTP and one over
// gRPC; verification of what it stored passes, and a deleted event, a
// run's dropped tail and one host's events replayed as another's are
// each reported with host, run and seq.
func TestFleetThroughCollector(t *testing.T) {
	col := startCollector(t, t.TempDir())
	var hosts []*host
	var ks fleet.Keys
	total := 0
	for i, name := range []string{"host-a", "host-b", "host-c"} {
		h := newHost(t, name)
		hosts = append(hosts, h)
		if err := ks.Add(name, h.key); err != nil {
			t.Fatal(err)
		}
		endpoint := "http://" + col.HTTP
		if i == 2 {
			endpoint = "grpc://" + col.GRPC
		}
		writeRun(t, h.w, name+"-run-1", 40)
		writeRun(t, h.w, name+"-run-2", 20)
		total += 42 + 22
		f := h.follower(t, endpoint)
		stop := make(chan struct{})
		close(stop)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := f.Run(ctx, stop)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	lines := col.WaitReceived(total)
	if rep := fleet.Verify(lines, ks); !rep.OK() || len(rep.Chains) != 3 {
		t.Fatalf("untouched: %+v", rep)
	}
	var wrongKeys fleet.Keys
	for i, h := range hosts {
		wrongKeys.Add(h.name, hosts[(i+1)%3].key)
	}

	tests := []struct {
		name   string
		edit   func([]fleet.Line) []fleet.Line
		keys   fleet.Keys
		want   fleet.Finding // Kind, Host, Run, Seq compared; Detail by substring
		others bool          // other hosts' chains stay whole
	}{
		{"event deleted", func(ls []fleet.Line) []fleet.Line {
			return drop(ls, func(l fleet.Line, e audit.Event) bool { return l.Host == "host-b" && e.Seq == 10 })
		}, ks, fleet.Finding{Kind: fleet.Missing, Host: "host-b", Seq: 10, Detail: "not received, between run host-b-run-1 seq 9"}, true},
		{"run tail dropped", func(ls []fleet.Line) []fleet.Line {
			return drop(ls, func(l fleet.Line, e audit.Event) bool { return l.Host == "host-c" && e.Seq > 60 })
		}, ks, fleet.Finding{Kind: fleet.Missing, Host: "host-c", Run: "host-c-run-2", Seq: 60, Detail: "exit event is missing"}, true},
		{"host-a replayed as host-b", func(ls []fleet.Line) []fleet.Line {
			var out []fleet.Line
			for _, l := range ls {
				if l.Host == "host-b" {
					continue
				}
				out = append(out, l)
				if l.Host == "host-a" {
					l.Host = "host-b"
					out = append(out, l)
				}
			}
			return out
		}, ks, fleet.Finding{Kind: fleet.Forged, Host: "host-b", Run: "host-a-run-1", Seq: 1, Detail: "signed with host host-a's key"}, true},
		{"wrong keys", func(ls []fleet.Line) []fleet.Line { return ls }, wrongKeys,
			fleet.Finding{Kind: fleet.Forged, Host: "host-a", Run: "host-a-run-1", Seq: 1, Detail: "signed with host host-c's key"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := fleet.Verify(tt.edit(append([]fleet.Line(nil), lines...)), tt.keys)
			found := false
			for _, c := range rep.Chains {
				if c.Host != tt.want.Host {
					if tt.others && !c.Whole {
						t.Errorf("%s not whole: %v", c.Host, c.Findings)
					}
					continue
				}
				if c.Whole {
					t.Errorf("%s reported whole", c.Host)
				}
				for _, f := range c.Findings {
					if f.Kind == tt.want.Kind && f.Run == tt.want.Run && f.Seq == tt.want.Seq && strings.Contains(f.Detail, tt.want.Detail) {
						found = true
					}
				}
				if !found {
					t.Errorf("findings of %s: %v; want %s", c.Host, c.Findings, tt.want)
				}
			}
		})
	}
}

func drop(ls []fleet.Line, bad func(fleet.Line, audit.Event) bool) []fleet.Line {
	var out []fleet.Line
	for _, l := range ls {
		e, err := audit.ParseLine(l.Bytes)
		if err == nil && bad(l, e) {
			continue
		}
		out = append(out, l)
	}
	return out
}
