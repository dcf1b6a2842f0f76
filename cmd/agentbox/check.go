package main

import "github.com/urfave/cli/v3"

// checkCommand is not implemented yet.
func checkCommand() *cli.Command {
	return &cli.Command{Name: "check", Usage: "(not implemented yet)", Hidden: true}
}

// explainCommand is not implemented yet.
func explainCommand() *cli.Command {
	return &cli.Command{Name: "explain", Usage: "(not implemented yet)", Hidden: true}
}

// policyCommand is not implemented yet.
func policyCommand() *cli.Command {
	return &cli.Command{Name: "policy", Usage: "(not implemented yet)", Hidden: true}
}

// rolesCommand is not implemented yet.
func rolesCommand() *cli.Command {
	return &cli.Command{Name: "roles", Usage: "(not implemented yet)", Hidden: true}
}
