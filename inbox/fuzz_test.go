package inbox

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/agentbox/agentbox/approval"
)

// FuzzRunLine: whatever a run sends after attaching, the inbox never
// panics, and what it lists stays within its bounds.
func FuzzRunLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"request","id":"r1","agent":"a","role":"developer","pid":4,"program":"/bin/chmod","argv":["chmod"],"cwd":"/","action":"tool:exec:chmod","rule":"r","reason":"x","deadline":"2030-01-01T00:00:00Z"}`,
		`{"type":"request","id":"r1","deadline":"not a time"}`,
		`{"type":"cancel","id":"r1","reason":"timeout"}`,
		`{"type":"ack","id":"r1","answer":"allow"}`,
		`{"type":"error","id":"r1","message":"no"}`,
		`{"type":"rules","rules":[{"id":"session:1","decision":"allow","match":"x"}],"revoked":"session:1"}`,
		`{"type":"rules","rules":7}`, `[]`, "", "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		go io.Copy(io.Discard, b)
		s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), runs: map[string]*runConn{}, asks: map[string]*ask{},
			settled: map[string]settled{}, changed: make(chan struct{})}
		rc := &runConn{info: approval.InboxAttach{Run: "r"}, revokes: map[string]chan error{}, gone: make(chan struct{})}
		rc.conn = a
		s.handleRun(rc, line)
		s.handleRun(rc, line)
		if len(s.asks) > 1 {
			t.Fatalf("one request id listed %d times", len(s.asks))
		}
		_ = s.Asks()
	})
}
