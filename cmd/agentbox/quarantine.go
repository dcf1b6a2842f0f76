package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/internal/gitleft"
)

// quarantineCommand is `agentbox quarantine`: neutralise a file a run left
// that would make git run a program (the run's warning names it).
func quarantineCommand() *cli.Command {
	return &cli.Command{
		Name:      "quarantine",
		Usage:     "move aside a git hook, config, attributes or redirect a run left that would make git run a program",
		ArgsUsage: "PATH...",
		Description: "Each PATH (as the run's warning names it) is renamed to PATH" + gitleft.QuarantineSuffix + ":\n" +
			"git no longer runs the hook or reads the config, attributes or redirect; review it and move it\n" +
			"back if it is yours. A file holding nothing git would run is refused and left in place.",
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return exitf(exitUsage, "quarantine: give the PATH a run's warning names")
			}
			failed := 0
			for _, p := range c.Args().Slice() {
				dst, err := gitleft.Quarantine(p)
				if err != nil {
					fmt.Fprintf(c.Root().ErrWriter, "agentbox: quarantine: %v\n", err)
					failed++
					continue
				}
				fmt.Fprintf(cliOut(c), "%s -> %s\n", p, dst)
			}
			if failed > 0 {
				return exitf(exitBadInput, "quarantine: %d of %d not moved", failed, c.Args().Len())
			}
			return nil
		},
	}
}
