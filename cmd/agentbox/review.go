package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox"
)

// agentbox diff, apply and discard: a review run's layer, after the run.

func reviewStoreFlag() cli.Flag {
	return &cli.StringFlag{Name: "review-store", Usage: "review layers `DIR` (default: ~/.local/state/agentbox/layers)"}
}

// reviewErr maps the review errors to exit codes and one line.
func reviewErr(cmd string, err error) error {
	var le *agentbox.LiveError
	var ce *agentbox.ConflictError
	switch {
	case errors.As(err, &ce):
		return exitf(3, "%s: %v", cmd, err)
	case errors.As(err, &le), errors.Is(err, agentbox.ErrNoLayer):
		return exitf(exitBadInput, "%s: %v", cmd, err)
	}
	return exitf(exitFailure, "%s: %v", cmd, err)
}

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "what a review run's layer would change in target/",
		ArgsUsage: "RUN [PATH...]",
		Description: "A unified diff of each path RUN's layer changes against target/ as it is now: additions,\n" +
			"deletions, renames, mode changes, symlinks (shown as their target) and binary files (named).\n" +
			"--stat lists the paths only; --json prints one object per change. Without RUN, lists the layers kept.",
		Flags: []cli.Flag{
			reviewStoreFlag(),
			&cli.BoolFlag{Name: "stat", Usage: "list the changed paths, not their content"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per change"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			out := cliOut(c)
			store := c.String("review-store")
			if c.Args().Len() == 0 {
				ls, err := agentbox.ReviewLayers(store)
				if err != nil {
					return reviewErr("diff", err)
				}
				for _, l := range ls {
					state := "ended " + l.Ended.Local().Format("2006-01-02 15:04:05")
					if l.Ended.IsZero() {
						state = "running"
					}
					fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\n", l.Run, l.Agent, l.Role, state, l.Target)
				}
				return nil
			}
			run := c.Args().First()
			cs, err := agentbox.ReviewChanges(store, run)
			if err != nil {
				return reviewErr("diff", err)
			}
			paths := c.Args().Slice()[1:]
			for _, ch := range cs {
				if !underAny(ch.Path, paths) && !(ch.From != "" && underAny(ch.From, paths)) {
					continue
				}
				switch {
				case c.Bool("json"):
					if err := json.NewEncoder(out).Encode(ch); err != nil {
						return err
					}
				case c.Bool("stat"):
					line := fmt.Sprintf("%-8s %s", ch.Kind, agentbox.EscapeControls(ch.Path))
					if ch.From != "" {
						line += " (from " + agentbox.EscapeControls(ch.From) + ")"
					}
					if ch.Kind == "mode" {
						line += fmt.Sprintf(" %o -> %o", ch.OldMode, ch.Mode)
					}
					fmt.Fprintln(out, line)
				default:
					d, err := agentbox.ReviewDiff(store, run, ch)
					if err != nil {
						return reviewErr("diff", err)
					}
					fmt.Fprintf(out, "diff --agentbox a/%s b/%s (%s)\n%s", agentbox.EscapeControls(ch.Path), agentbox.EscapeControls(ch.Path), ch.Kind, d)
				}
			}
			return nil
		},
	}
}

func underAny(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, q := range paths {
		q = strings.Trim(q, "/")
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "carry a review run's layer (or some paths of it) into target/",
		ArgsUsage: "RUN [PATH...]",
		Description: "Applies what RUN's layer changes, all of it or the PATHs given (relative to target/), file by\n" +
			"file: each written beside its place and renamed in, links created as links. A path that changed in\n" +
			"target/ since RUN started is a conflict: nothing is applied, the paths are listed, exit 3\n" +
			"(--force applies over them). Recorded in RUN's audit log (who, which paths, hashes). A layer\n" +
			"applied whole is removed; a partial apply leaves the rest.",
		Flags: []cli.Flag{
			reviewStoreFlag(),
			&cli.BoolFlag{Name: "force", Usage: "apply over paths changed since the run started"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return exitf(exitUsage, "apply: which run? (agentbox diff lists the layers kept)")
			}
			run := c.Args().First()
			res, err := agentbox.ApplyReview(c.String("review-store"), run, c.Args().Slice()[1:], c.Bool("force"), os.Stderr)
			if res != nil {
				for _, ch := range res.Applied {
					fmt.Fprintf(cliOut(c), "%-8s %s\n", ch.Kind, agentbox.EscapeControls(ch.Path))
				}
			}
			if err != nil {
				return reviewErr("apply", err)
			}
			if res.Left > 0 {
				fmt.Fprintf(cliOut(c), "%d change(s) left in the layer (agentbox diff %s)\n", res.Left, run)
			}
			return nil
		},
	}
}

func discardCommand() *cli.Command {
	return &cli.Command{
		Name:      "discard",
		Usage:     "remove a review run's layer without applying it",
		ArgsUsage: "RUN",
		Flags:     []cli.Flag{reviewStoreFlag()},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return exitf(exitUsage, "discard: takes one RUN")
			}
			if err := agentbox.DiscardReview(c.String("review-store"), c.Args().First()); err != nil {
				return reviewErr("discard", err)
			}
			return nil
		},
	}
}
