package main

import "github.com/urfave/cli/v3"

// hookCommand is not implemented yet.
func hookCommand() *cli.Command {
	return &cli.Command{Name: "hook", Usage: "(not implemented yet)", Hidden: true}
}
