package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/export"
	"github.com/agentbox/agentbox/audit/fleet"
)

// writeRun appends one run's events to w: launch, n program starts
// (every tenth denied), exit.
func writeRun(t testing.TB, w *audit.Writer, run string, n int) {
	t.Helper()
	zero := 0
	if err := w.Write(audit.Event{Event: audit.EventLaunch, Run: run, Agent: "a1", Role: "developer", Argv: []string{"make", "test"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		d := audit.DecisionAllow
		if i%10 == 9 {
			d = audit.DecisionDeny
		}
		if err := w.Write(audit.Event{Event: audit.EventExec, Run: run, Agent: "a1", Role: "developer", Pid: 1000 + i, Ppid: 999,
			Exe: "/usr/bin/cc", Argv: []string{"cc", "-c", fmt.Sprintf("f%d.c", i)}, Decision: d, Rule: "developer/build", Reason: "builds"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(audit.Event{Event: audit.EventExit, Run: run, Agent: "a1", Exit: &zero}); err != nil {
		t.Fatal(err)
	}
}

// host is one "machine": a state directory with its keyed log.
type host struct {
	name, dir, log string
	key            audit.Key
	w              *audit.Writer
}

func newHost(t testing.TB, name string) *host {
	dir := filepath.Join(t.TempDir(), name)
	h := &host{name: name, dir: dir, log: filepath.Join(dir, "audit.jsonl")}
	w, err := audit.OpenKeyed(h.log, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	h.w = w
	if h.key, err = audit.LoadKey(h.log+audit.KeySuffix, false); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *host) follower(t testing.TB, endpoint string) *export.Follower {
	exp, err := export.NewExporter(context.Background(), export.Endpoint{URL: endpoint, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exp.Shutdown(context.Background()) })
	return &export.Follower{Log: h.log, Exporter: exp, Source: export.Source{Host: h.name, Log: h.log},
		Cursor: export.CursorPath(h.log, endpoint), Poll: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, BatchLines: 100}
}

// TestCollectorStopRestart: a real OpenTelemetry Collector receives a
// run's events over OTLP/HTTP and over gRPC while they are written; it is
// stopped mid-run and started again. Every event arrives exactly once,
// the chain and MACs re-verify from what the collector's file exporter
// wrote, the local log still verifies, and nothing but the fixed-size
// cursor was spooled on disk.
func TestCollectorStopRestart(t *testing.T) {
	for _, proto := range []string{"http", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			dir := t.TempDir()
			col := startCollector(t, dir)
			endpoint := "http://" + col.HTTP
			if proto == "grpc" {
				endpoint = "grpc://" + col.GRPC
			}
			h := newHost(t, "host-"+proto)
			f := h.follower(t, endpoint)
			var failures []string
			f.OnError = func(err error) { failures = append(failures, err.Error()) }
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			fctx, fcancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- f.Run(fctx, nil) }()

			writeRun(t, h.w, "run-1", 600) // 602 events
			waitFor(t, "the first run exported", func() bool { return f.Stats().LastSeq >= 602 })
			col.Stop()
			writeRun(t, h.w, "run-2", 900) // written while the collector is down
			waitFor(t, "failed attempts while the collector is down", func() bool { return f.Stats().Failures >= 2 })
			if got := f.Stats().LastSeq; got != 602 {
				t.Fatalf("cursor moved to seq %d while the collector was down", got)
			}
			assertSpool(t, h.dir)
			col.Start()
			// The exporting process ends part-way (its context is
			// cancelled); another one resumes from the cursor.
			waitFor(t, "some of run-2 exported", func() bool { return f.Stats().LastSeq > 700 })
			fcancel()
			if err := <-done; err != context.Canceled {
				t.Fatalf("first follower: %v", err)
			}
			sent1 := f.Stats().Sent
			writeRun(t, h.w, "run-3", 300)
			f2 := h.follower(t, endpoint)
			stop := make(chan struct{})
			close(stop) // export what is there, then return
			if err := f2.Run(ctx, stop); err != nil {
				t.Fatalf("second follower: %v", err)
			}
			const total = 602 + 902 + 302
			if s := f2.Stats(); s.Sent+sent1 != total || s.LastSeq != total {
				t.Fatalf("followers sent %d + %d (%+v), want %d", sent1, s.Sent, s, total)
			}
			lines := col.WaitReceived(total)
			var ks fleet.Keys
			if err := ks.Add(h.name, h.key); err != nil {
				t.Fatal(err)
			}
			rep := fleet.Verify(lines, ks)
			if len(rep.Chains) != 1 {
				t.Fatalf("chains %+v", rep.Chains)
			}
			c := rep.Chains[0]
			if !rep.OK() || c.Lines != total || c.Duplicate != 0 || c.MACs != total || len(lines) != total {
				t.Fatalf("received %d records: %+v", len(lines), c)
			}
			if _, err := audit.VerifyFile(h.log); err != nil {
				t.Fatalf("local log: %v", err)
			}
			t.Logf("%s: %d events, %d failed attempts while the collector was down (first: %s)", proto, total, len(failures), first(failures))
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// assertSpool checks what the export keeps on disk: the log, its head
// and key, the cursor and its lock, each of bounded size but the log.
func assertSpool(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, _ := e.Info()
		switch n := e.Name(); {
		case n == "audit.jsonl":
		case n == "audit.jsonl.head", n == "audit.jsonl.key":
		case strings.HasPrefix(n, "audit.jsonl.export-") && fi.Size() <= 256:
		default:
			t.Errorf("unexpected spool file %s (%d bytes)", n, fi.Size())
		}
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
