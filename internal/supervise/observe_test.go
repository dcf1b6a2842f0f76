//go:build linux

package supervise

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// TestSuperviseObserve: the observer given through the context
// (WithObserver) is told of every allowed program start, while its
// process is still stopped (its start time read then names it), and of
// no denied one; decided on the fast path and the slow one, in both
// modes.
func TestSuperviseObserve(t *testing.T) {
	modes := []struct {
		name   string
		notify bool
	}{{"trace-all", false}, {"notify", true}}
	for _, m := range modes {
		for _, fastPath := range []bool{false, true} {
			name := m.name + "/slow"
			if fastPath {
				name = m.name + "/fast"
			}
			t.Run(name, func(t *testing.T) {
				if m.notify {
					if err := helper.ExecNotifySupported(); err != nil {
						t.Skipf("reason: %v", err)
					}
					notifyMode = true
					defer func() { notifyMode = false }()
				}
				type seen struct {
					prog  string
					alive bool
				}
				var mu sync.Mutex
				var got []seen
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				ctx = WithObserver(ctx, func(ev *ExecEvent) {
					// Stopped at its exec: the process is there to read.
					st, err := procfs.ReadStat(ev.Pid)
					mu.Lock()
					got = append(got, seen{ev.Program, err == nil && (ev.Start == 0 || st.StartTime == ev.Start)})
					mu.Unlock()
				})
				decide := func(ev *ExecEvent) Verdict {
					if ev.Program == "false" {
						return Verdict{Message: "agentbox: denied: false"}
					}
					return Verdict{Allow: true}
				}
				r := &run{argv: []string{"sh", "-c", "/bin/true; /bin/false; /bin/echo done"}, ctx: ctx}
				if fastPath {
					r.fast = func(ev *ExecEvent) (Verdict, bool) { return decide(ev), true }
				} else {
					r.decide = decide
				}
				r = supervise(t, r)
				if r.err != nil {
					t.Fatal(r.err)
				}
				mu.Lock()
				defer mu.Unlock()
				var progs []string
				for _, s := range got {
					progs = append(progs, s.prog)
					if !s.alive {
						t.Errorf("%s observed after its process was gone or with another start time", s.prog)
					}
				}
				want := []string{"sh", "true", "echo"}
				if len(progs) != len(want) {
					t.Fatalf("observed %q, want %q", progs, want)
				}
				for i := range want {
					if progs[i] != want[i] {
						t.Fatalf("observed %q, want %q", progs, want)
					}
				}
			})
		}
	}
}
