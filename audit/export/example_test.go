package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/export"
)

// printExporter stands in for NewExporter's OTLP exporter: it prints each
// record's agentbox.seq attribute.
type printExporter struct{ mu sync.Mutex }

func (p *printExporter) Export(_ context.Context, recs []sdklog.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range recs {
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == export.AttrSeq {
				fmt.Println("sent seq", kv.Value.AsInt64())
			}
			return true
		})
	}
	return nil
}
func (p *printExporter) Shutdown(context.Context) error   { return nil }
func (p *printExporter) ForceFlush(context.Context) error { return nil }

// ExampleFollower sends a local audit log's lines from its cursor on;
// stopped, it returns once every line then in the log was acknowledged,
// and the next Follower of the log resumes after them.
func ExampleFollower() {
	dir, _ := os.MkdirTemp("", "export-example")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "audit.jsonl")
	w, _ := audit.Open(log)
	_ = w.Write(audit.Event{Event: audit.EventLaunch, Run: "r1"})
	_ = w.Write(audit.Event{Event: audit.EventExec, Run: "r1", Decision: audit.DecisionAllow, Action: "make"})

	send := func() {
		f := &export.Follower{Log: log, Exporter: &printExporter{}, Source: export.Source{Host: "ci-1", Log: log},
			Cursor: filepath.Join(dir, "cursor")}
		stop := make(chan struct{})
		close(stop) // send what is there, then return
		if err := f.Run(context.Background(), stop); err != nil {
			fmt.Println(err)
		}
	}
	send()
	_ = w.Write(audit.Event{Event: audit.EventExit, Run: "r1"})
	w.Close()
	send() // from the cursor on: only the new line
	// Output:
	// sent seq 1
	// sent seq 2
	// sent seq 3
}
