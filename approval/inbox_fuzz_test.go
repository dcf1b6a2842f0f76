package approval

import (
	"io"
	"log/slog"
	"testing"
)

// FuzzInboxLine: whatever line an inbox sends, the run's approver never
// panics, and a held request is settled only by a well-formed response
// with a valid answer for its id.
func FuzzInboxLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"response","id":"r1","answer":"allow","approver":"user=a addr=1.2.3.4:5"}`,
		`{"type":"response","id":"r1","answer":"remember","prefix":"chmod 600"}`,
		`{"type":"response","id":"r1","answer":"yes"}`,
		`{"type":"revoke","id":"session:1","by":"user=a"}`,
		`{"type":"revoke"}`, `{"type":"response","id":"r1","answer":"allow","answer":"deny"}`,
		`[]`, `{"type":1}`, "", "\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		a := &inboxApprover{log: slog.New(slog.NewTextHandler(io.Discard, nil)), pending: pendingSet{}}
		a.info.Revoke = func(id, by string) error { return nil }
		p := &pending{req: Request{ID: "r1", Argv: []string{"chmod", "600", "f"}}, result: make(chan result, 1)}
		a.pending["r1"] = p
		a.handle(line)
		select {
		case r := <-p.result:
			m, err := parseClientLine(line)
			if err != nil || m.ID != "r1" || r.resp.Answer != m.Answer || !r.resp.UIDKnown {
				t.Fatalf("settled by %q: %+v (parse: %+v %v)", line, r.resp, m, err)
			}
		default:
		}
	})
}
