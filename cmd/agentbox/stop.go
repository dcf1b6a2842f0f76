package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox"
)

func stopCommand() *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop a run: SIGTERM to its command, SIGKILL after the grace period, nothing left behind",
		ArgsUsage: "ID...",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "grace", Usage: "`DURATION` between SIGTERM and SIGKILL", Value: 5 * time.Second},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return exitf(exitUsage, "stop: want the ID of a run (see agentbox ps)")
			}
			failed := 0
			for _, id := range c.Args().Slice() {
				err := agentbox.StopRun("", id, c.Duration("grace"))
				switch {
				case errors.Is(err, agentbox.ErrNoSuchRun):
					fmt.Fprintf(c.Root().ErrWriter, "agentbox: stop %s: no such run (see agentbox ps)\n", id)
					failed++
				case err != nil:
					fmt.Fprintf(c.Root().ErrWriter, "agentbox: stop %s: %v\n", id, err)
					failed++
				default:
					fmt.Fprintf(c.Root().Writer, "stopped %s\n", id)
				}
			}
			if failed > 0 {
				return &exitError{code: exitBadInput, err: errors.New("")}
			}
			return nil
		},
	}
}
