package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentbox/agentbox/internal/policylint"
	"github.com/agentbox/agentbox/internal/policytext"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
	"github.com/urfave/cli/v3"
)

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "show the effective policy of a role, or validate policy files",
		Commands: []*cli.Command{
			{
				Name:  "show",
				Usage: "print the effective, merged role: filesystem grants, network, limits, env, and every rule with its source",
				Description: `Merges the built-in role (following extends), the user file, the project file
(<workspace>/agentbox.yaml) and --policy files, then prints the result: what
the sandbox will grant (Landlock areas, network ports, limits, environment
pass-through) and every rule with its layer and file:line.`,
				Flags: append(policyFlags(true), &cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "print as JSON"}),
				Action: func(ctx context.Context, c *cli.Command) error {
					e, err := loadEngine(c)
					if err != nil {
						return err
					}
					ef := e.Effective()
					out := c.Root().Writer
					if c.Bool("json") {
						enc := json.NewEncoder(out)
						enc.SetIndent("", "  ")
						return enc.Encode(ef)
					}
					fmt.Fprint(out, policytext.Effective(ef))
					return nil
				},
			},
			{
				Name:      "validate",
				Usage:     "check policy files and report every problem (file:line), not just the first",
				ArgsUsage: "FILE...",
				Description: `Parses each FILE as agentbox, Chorus, Codelia or Forge policy and checks it
strictly: unknown keys, invalid decisions, regexes, globs, path globs, sizes
and durations, unknown or cyclic extends, duplicate roles, and unsafe file
permissions (group/world-writable or owned by another user), Codex rules'
match/not_match examples. Rules that load but can never decide (shadowed
by a deny, or by a rule that wins for every action they match, or naming a
tool: no action carries, such as "delte", with the nearest known name) are
printed as warnings. Exit status 0 when every file is valid (and, with
--strict, no rule is shadowed or names an unknown tool), 1 otherwise.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "strict", Usage: "fail when a rule can never decide (shadowed, or an unknown tool: name)"},
					&cli.StringFlag{Name: "role", Aliases: []string{"r"}, Usage: "also report rules that can never take effect under role `R` (its denies are absolute)"},
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					files := c.Args().Slice()
					if len(files) == 0 {
						return exitf(exitUsage, "policy validate: give at least one FILE")
					}
					findings, errs := policylint.LintRole(c.String("role"), files...)
					if len(errs) > 0 {
						for _, err := range errs {
							fmt.Fprintln(c.Root().ErrWriter, err)
						}
						return exitf(exitBadInput, "policy validate: %d problem(s)", len(errs))
					}
					for _, f := range findings {
						fmt.Fprintf(c.Root().ErrWriter, "warning: %s\n", f)
					}
					if len(findings) > 0 && c.Bool("strict") {
						return exitf(exitBadInput, "policy validate: %d rule(s) can never decide", len(findings))
					}
					for _, f := range files {
						fmt.Fprintf(c.Root().Writer, "ok: %s\n", f)
					}
					return nil
				},
			},
		},
	}
}

// listAction is the Action of a listing command (agents, roles): the
// items list gives for the selected policy layers, printed by printList.
func listAction[T any](list func(*policy.Layers) ([]T, error), line func(io.Writer, T)) cli.ActionFunc {
	return func(ctx context.Context, c *cli.Command) error {
		o, err := loadOptions(c)
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
		l, err := load.Read(o)
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
		items, err := list(l)
		if err != nil {
			return exitf(exitBadInput, "%v", err)
		}
		return printList(c, items, line)
	}
}

// printList prints a listing command's items: as indented JSON with
// --json, else one line each.
func printList[T any](c *cli.Command, items []T, line func(io.Writer, T)) error {
	out := c.Root().Writer
	if c.Bool("json") {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	}
	for _, it := range items {
		line(out, it)
	}
	return nil
}
