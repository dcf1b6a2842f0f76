package main

import "github.com/urfave/cli/v3"

// auditCommand is not implemented yet.
func auditCommand() *cli.Command {
	return &cli.Command{Name: "audit", Usage: "(not implemented yet)", Hidden: true}
}
