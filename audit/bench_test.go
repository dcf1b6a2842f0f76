package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func benchEvent() Event {
	return Event{Event: EventExec, Agent: "agent-1", Role: "developer", Run: "run-0123456789",
		Pid: 4242, Ppid: 4241, Cwd: "/ws/target", Action: "tool:exec:go test ./...",
		Argv: []string{"go", "test", "./..."}, Exe: "/usr/local/go/bin/go",
		Decision: DecisionAllow, Rule: "developer/go", Layer: "role"}
}

func benchWrite(b *testing.B, opt Options) {
	w, err := OpenWith(filepath.Join(b.TempDir(), "audit.jsonl"), opt)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	e := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWrite measures one process appending events: flock, tail read,
// one write(2), head update, unlock — no fsync.
func BenchmarkWrite(b *testing.B) { benchWrite(b, Options{}) }

// BenchmarkWriteSync is BenchmarkWrite with Options.Sync (fdatasync of log
// and head per event): the cost of surviving a power loss.
func BenchmarkWriteSync(b *testing.B) { benchWrite(b, Options{Sync: true}) }

// BenchmarkWriteParallel measures goroutines of one process sharing a Writer.
func BenchmarkWriteParallel(b *testing.B) {
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g*runtime.GOMAXPROCS(0)), func(b *testing.B) { benchWriteParallel(b, g) })
	}
}

// benchWriteParallel writes from p×GOMAXPROCS goroutines into one Writer
// (an orchestrator running many agents in one process): concurrent calls
// are group-committed.
func benchWriteParallel(b *testing.B, p int) {
	w, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.SetParallelism(p)
	b.RunParallel(func(pb *testing.PB) {
		e := benchEvent()
		for pb.Next() {
			if err := w.Write(e); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkVerify measures verifying a 10,000-event log.
func BenchmarkVerify(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	w, _ := Open(path)
	for range 10000 {
		w.Write(benchEvent())
	}
	w.Close()
	raw, _ := os.ReadFile(path)
	head, _ := ReadHeadFile(path)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Verify(bytes.NewReader(raw), head); err != nil {
			b.Fatal(err)
		}
	}
}
