// Command nowire starts a run but forgets agentbox.MaybeRunHelper: the
// mistake TestHelperNotWired holds to one clear error.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox"
)

func main() {
	r, err := agentbox.New(os.Getenv("NOWIRE_WS"), "developer", []string{"true"},
		agentbox.WithoutCheckpoints(), agentbox.WithAudit(os.Getenv("NOWIRE_AUDIT")))
	if err != nil {
		fmt.Fprintln(os.Stderr, "new:", err)
		os.Exit(3)
	}
	if err := r.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(4)
	}
	res, err := r.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wait:", err)
		os.Exit(5)
	}
	os.Exit(res.ExitCode)
}
