package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/command"
)

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list the agentbox runs in progress (this user's run registry)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per run"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 0 {
				return exitf(exitUsage, "ps: takes no arguments")
			}
			runs, err := agentbox.List("")
			if err != nil {
				return exitf(exitFailure, "ps: %v", err)
			}
			out := c.Root().Writer
			if c.Bool("json") {
				enc := json.NewEncoder(out)
				for _, r := range runs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tROLE\tPID\tSTARTED\tPENDING\tWORKSPACE\tCOMMAND")
			for _, r := range runs {
				id := r.ID
				if r.Review {
					id += " (review)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", id, r.Agent, r.Role, r.Pid,
					r.Started.Local().Format(time.DateTime), r.Pending, r.Workspace, clip(command.Join(r.Argv), 60))
			}
			return tw.Flush()
		},
	}
}

// clip shortens s to n runes for a table cell.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
