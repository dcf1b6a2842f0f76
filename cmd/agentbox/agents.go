package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v3"
)

func agentsCommand() *cli.Command {
	return &cli.Command{
		Name:  "agents",
		Usage: "list the agent profiles (what Claude Code, Codex, Gemini CLI... need to run inside)",
		Description: `An agent profile is chosen by agentbox run from the command (claude, codex,
gemini) or with --agent-profile NAME. Profiles are defined under agents: in
policy files (the built-in ones in policy/roles.yaml); --json prints them whole.`,
		Flags: append(policyFlags(false)[1:], &cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "print as JSON"}),
		Action: listAction(policy.AgentProfiles, func(out io.Writer, a *policy.AgentProfile) {
			fmt.Fprintf(out, "%-12s %-22s %s\n", a.Name, strings.Join(a.Programs, ","), a.Description)
		}),
	}
}
