package main

import "github.com/urfave/cli/v3"

// runCommand is not implemented yet.
func runCommand() *cli.Command {
	return &cli.Command{Name: "run", Usage: "(not implemented yet)", Hidden: true}
}

// initCommand is not implemented yet.
func initCommand() *cli.Command {
	return &cli.Command{Name: "init", Usage: "(not implemented yet)", Hidden: true}
}

// maybeRunHelper runs the in-sandbox helper when agentbox re-executed itself
// for that purpose, and reports whether it did.
func maybeRunHelper() bool { return false }
