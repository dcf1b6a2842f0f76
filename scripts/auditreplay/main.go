// Command auditreplay writes a keyed audit log of N events through the
// project's own writer (audit.OpenKeyed, WriteBatch) from the events of a
// real run's log: each event of the source is written again in order, run
// after run (run ids and times shifted, seq, prev, kid and mac set by the
// writer), until N are written. scripts/bench-audit.sh uses it so `audit
// verify` is measured on the lines agentbox really writes.
//
//	auditreplay SOURCE.jsonl OUT.jsonl N
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/audit"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: auditreplay SOURCE.jsonl OUT.jsonl N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "auditreplay: N %q: want a positive count\n", os.Args[3])
		os.Exit(2)
	}
	src, err := audit.ReadFile(os.Args[1])
	if err != nil || len(src) == 0 {
		fmt.Fprintf(os.Stderr, "auditreplay: %s: %v (%d events)\n", os.Args[1], err, len(src))
		os.Exit(1)
	}
	w, err := audit.OpenKeyed(os.Args[2], "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "auditreplay:", err)
		os.Exit(1)
	}
	defer w.Close()
	span := src[len(src)-1].Time.Sub(src[0].Time) + time.Second
	batch := make([]audit.Event, 0, 4096)
	for i := 0; i < n; i++ {
		round := i / len(src)
		e := src[i%len(src)]
		e.Seq, e.Prev, e.Kid, e.Mac = 0, "", "", ""
		e.Time = e.Time.Add(time.Duration(round) * span)
		if e.Run != "" {
			e.Run = fmt.Sprintf("%s-%d", e.Run, round)
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteBatch(batch); err != nil {
				fmt.Fprintln(os.Stderr, "auditreplay:", err)
				os.Exit(1)
			}
			batch = batch[:0]
		}
	}
}
