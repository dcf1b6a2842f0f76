package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/internal/boundary"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a workspace: context/ target/ feedback/ agents/ and agentbox.yaml",
		ArgsUsage: "DIR",
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return exitf(exitRunUsage, "init: want exactly one workspace DIR")
			}
			dir := c.Args().First()
			created, err := boundary.Init(dir)
			if err != nil {
				return exitf(exitBadInput, "%v", err)
			}
			for _, p := range created {
				fmt.Fprintf(c.Root().Writer, "created %s\n", p)
			}
			if len(created) == 0 {
				fmt.Fprintf(c.Root().Writer, "workspace %s is complete\n", dir)
			}
			return nil
		},
	}
}
