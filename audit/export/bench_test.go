package export_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
)

const benchEvents = 300_000

// writeEvents writes n exec events one at a time, as a run's supervisor
// does, and returns the time taken.
func writeEvents(b *testing.B, w *audit.Writer, n int) time.Duration {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := w.Write(audit.Event{Event: audit.EventExec, Run: "bench", Agent: "a1", Role: "developer", Pid: 1000 + i, Ppid: 999,
			Exe: "/usr/bin/cc", Argv: []string{"cc", "-c", fmt.Sprintf("f%d.c", i)}, Decision: audit.DecisionAllow, Rule: "developer/build"}); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(t0)
}

// BenchmarkExport300k writes 300k events to a local keyed log, alone and
// while a Follower exports them to a real collector over OTLP/HTTP, and
// reports the writer's cost per event in both (added_pct: the run's added
// latency per event; goal ≤ 5) and how fast the export delivered them.
// Run with -benchtime 1x.
func BenchmarkExport300k(b *testing.B) {
	col := startCollector(b, b.TempDir())
	for i := 0; i < b.N; i++ {
		alone := newHost(b, "alone")
		base := writeEvents(b, alone.w, benchEvents)

		h := newHost(b, "exported")
		f := h.follower(b, "http://"+col.HTTP)
		f.BatchLines = 512
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		stop := make(chan struct{})
		t0 := time.Now()
		go func() { done <- f.Run(ctx, stop) }()
		with := writeEvents(b, h.w, benchEvents)
		close(stop)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		drained := time.Since(t0)
		cancel()
		if s := f.Stats(); s.Sent != benchEvents {
			b.Fatalf("sent %d", s.Sent)
		}
		b.ReportMetric(float64(base.Nanoseconds())/benchEvents, "local-ns/event")
		b.ReportMetric(float64(with.Nanoseconds())/benchEvents, "exported-ns/event")
		b.ReportMetric(100*(float64(with)-float64(base))/float64(base), "added_pct")
		b.ReportMetric(benchEvents/drained.Seconds(), "export-events/s")
	}
}

// BenchmarkExportCollectorDown writes 300k events while the Follower
// cannot reach its collector, and reports the heap it holds meanwhile:
// one batch, whatever the backlog.
func BenchmarkExportCollectorDown(b *testing.B) {
	for i := 0; i < b.N; i++ {
		h := newHost(b, "down")
		f := h.follower(b, "http://"+freePort(b)) // nothing listens there
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx, nil) }()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		writeEvents(b, h.w, benchEvents)
		waitFor(b, "failed attempts", func() bool { return f.Stats().Failures >= 3 })
		runtime.GC()
		runtime.ReadMemStats(&after)
		cancel()
		<-done
		if f.Stats().Sent != 0 {
			b.Fatal("sent to nothing")
		}
		b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric((float64(after.HeapInuse)-float64(before.HeapInuse))/(1<<20), "heap-growth-MiB")
	}
}
