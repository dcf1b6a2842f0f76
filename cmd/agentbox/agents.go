package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbox/agentbox/internal/mcpconfig"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
	"github.com/urfave/cli/v3"
)

func agentsCommand() *cli.Command {
	list := listAction((*policy.Layers).Agents, func(out io.Writer, a *policy.AgentProfile) {
		fmt.Fprintf(out, "%-12s %-22s %s\n", a.Name, strings.Join(a.Programs, ","), a.Description)
	})
	return &cli.Command{
		Name:  "agents",
		Usage: "list the agent profiles (what Claude Code, Codex, Gemini CLI... need to run inside)",
		Description: `An agent profile is chosen by agentbox run from the command (claude, codex,
gemini) or with --agent-profile NAME. Profiles are defined under agents: in
policy files (the built-in ones in policy/roles.yaml); --json prints them whole.
The MCP servers the agents' configuration files start (the profiles'
mcp_config: in HOME and the current directory) are listed after, each with a
program_rights block to give it its own hosts and secrets (docs/policy.md).`,
		Flags: append(policyFlags(false)[1:], &cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "print as JSON"}),
		Action: func(ctx context.Context, c *cli.Command) error {
			if err := list(ctx, c); err != nil || c.Bool("json") {
				return err
			}
			o, err := loadOptions(c)
			if err != nil {
				return exitf(exitBadInput, "%v", err)
			}
			l, err := load.Read(o)
			if err != nil {
				return exitf(exitBadInput, "%v", err)
			}
			profiles, err := l.Agents()
			if err != nil {
				return exitf(exitBadInput, "%v", err)
			}
			home, _ := os.UserHomeDir()
			cwd, _ := os.Getwd()
			proposeMCP(c.Root().Writer, profiles, home, cwd)
			return nil
		},
	}
}

// proposeMCP prints, per agent profile, a program_rights block for each
// MCP server its configuration files start (mcpconfig.Server.Propose).
func proposeMCP(out io.Writer, profiles []*policy.AgentProfile, home, dir string) {
	for _, a := range profiles {
		servers, errs := mcpconfig.Servers(a, home, dir)
		for _, err := range errs {
			fmt.Fprintf(out, "\n# %s: %v\n", a.Name, err)
		}
		var blocks []string
		for _, s := range servers {
			if p := s.Propose(); p != "" {
				blocks = append(blocks, p)
			} else if s.URL != "" {
				blocks = append(blocks, fmt.Sprintf("  # MCP server %q of %s: remote (%s), reached by the agent itself\n", s.Name, s.Config, s.URL))
			}
		}
		if len(blocks) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n# MCP servers of %s: rights that follow each program (a policy file's agents.%s)\nprogram_rights:\n%s", a.Name, a.Name, strings.Join(blocks, ""))
	}
}
