package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v3"
)

// escalateCommand is `agentbox escalate ROLE` inside a run. The run's
// supervisor decides the start of this program as the request itself
// (internal/judge/escalate.go): it only runs once the role change was
// granted; a refusal is the supervisor's one line instead.
func escalateCommand() *cli.Command {
	return &cli.Command{
		Name:      "escalate",
		Usage:     "inside a run: ask to move the run to another role (granted by the policy and an approver who may grant it)",
		ArgsUsage: "ROLE",
		Description: "Decided as tool:self_edit:permissions:ROLE by the run's policy (the built-in roles ask), then\n" +
			"gated by who answers: only an approver whose grants (the policy's approvers:, else the workspace\n" +
			"owner or root) include ROLE can allow it. Once granted, the programs started afterwards are\n" +
			"decided as ROLE; the kernel boundary (filesystem, network mode) stays the run's: a new run with\n" +
			"--role ROLE has ROLE's. A move to a role that writes and reaches nothing needs no grant.",
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, shown to the approver (`TEXT`)"}},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return exitf(exitUsage, "escalate: want one ROLE")
			}
			role := c.Args().First()
			if os.Getenv("AGENTBOX_RUN") == "" {
				return exitf(exitUsage, "escalate works inside agentbox run only (to run as %s: agentbox run --role %s ...)", role, role)
			}
			if os.Getenv("AGENTBOX_SUPERVISED") != "1" {
				return exitf(exitFailure, "escalate: this run has no exec supervisor (--no-exec-policy), so nothing can change its role; start a new run with --role %s", role)
			}
			fmt.Fprintf(cliOut(c), "agentbox: role changed to %s: the programs started from now on are decided as %s; the filesystem and network boundary stay as launched (a new run with --role %s has %s's)\n", role, role, role, role)
			return nil
		},
	}
}
