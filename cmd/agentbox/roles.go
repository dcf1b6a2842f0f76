package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v3"
)

func rolesCommand() *cli.Command {
	return &cli.Command{
		Name:  "roles",
		Usage: "list the roles (built-in and from policy files) with what they are for",
		Description: `Built-in roles: investigator, developer, documenter, tester (workspace role
templates) and the Chorus presets open, standard, locked. Roles defined in the
user, project (--workspace) or --policy files are listed too.`,
		Flags: append(policyFlags(false)[1:], &cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "print as JSON"}),
		Action: listAction((*policy.Layers).Roles, func(out io.Writer, r policy.RoleSummary) {
			ext := ""
			if r.Extends != "" && !strings.HasPrefix(r.Extends, "_") {
				ext = " (extends " + r.Extends + ")"
			}
			fmt.Fprintf(out, "%-14s default %-5s %s%s\n", r.Name, r.Default, r.Description, ext)
		}),
	}
}
