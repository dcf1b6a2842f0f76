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
	"github.com/agentbox/agentbox/internal/gitsum"
	"github.com/agentbox/agentbox/internal/review"
)

// agentbox diff, apply and discard: a review run's layer, after the run.

func reviewStoreFlag() cli.Flag {
	return &cli.StringFlag{Name: "review-store", Usage: "review layers `DIR` (default: ~/.local/state/agentbox/layers)"}
}

// reviewFlags are every review command's: the store, the workspace (the
// end line names it; a run's layer is found by its id alone) and whether
// .git internals are listed or summarised.
func reviewFlags(extra ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		reviewStoreFlag(),
		&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "the run's workspace `DIR` (not needed: the run id finds its layer)"},
	}, extra...)
}

func gitInternalsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "git-internals", Usage: "list the files changed inside .git directories, not a summary per repository"}
}

// listed is one line of a layer's listing and the paths it stands for.
type listed struct {
	line  string
	paths []string
}

// layerListing is what a layer's changes show as lines: one per path,
// and (unless --git-internals) one per repository for its .git
// directory ("git      (proj): 2 commits on main, index changed (...)").
func layerListing(c *cli.Command, store, run string, cs []agentbox.LayerChange) ([]listed, error) {
	var sums []review.GitSummary
	if !c.Bool("git-internals") {
		var err error
		if cs, sums, err = review.LayerGitSummary(store, run, cs); err != nil {
			return nil, err
		}
	}
	var out []listed
	for _, ch := range cs {
		line := fmt.Sprintf("%-8s %s", ch.Kind, review.EscapeControls(ch.Path))
		if ch.From != "" {
			line += " (from " + review.EscapeControls(ch.From) + ")"
		}
		if ch.Kind == "mode" {
			line += fmt.Sprintf(" %o -> %o", ch.OldMode, ch.Mode)
		}
		out = append(out, listed{line, []string{ch.Path}})
	}
	for _, s := range sums {
		out = append(out, listed{fmt.Sprintf("%-8s %s", "git", review.EscapeControls(s.Listed())), s.Paths})
	}
	return out, nil
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
			"--stat lists the paths only; --json prints one object per change. What changed inside a .git\n" +
			"directory is one line per repository (\"git (proj): 2 commits on main, index changed\") unless\n" +
			"--git-internals. RUN is found from any directory. Without RUN, lists the layers kept.",
		Flags: reviewFlags(
			&cli.BoolFlag{Name: "stat", Usage: "list the changed paths, not their content"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per change"},
			gitInternalsFlag(),
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			out := cliOut(c)
			store := c.String("review-store")
			if c.Args().Len() == 0 {
				ls, err := review.Layers(store)
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
			cs, err := review.LayerChanges(store, run)
			if err != nil {
				return reviewErr("diff", err)
			}
			paths := c.Args().Slice()[1:]
			var picked []agentbox.LayerChange
			for _, ch := range cs {
				if underAny(ch.Path, paths) || ch.From != "" && underAny(ch.From, paths) {
					picked = append(picked, ch)
				}
			}
			if c.Bool("json") {
				for _, ch := range picked {
					if err := json.NewEncoder(out).Encode(ch); err != nil {
						return err
					}
				}
				return nil
			}
			lines, err := layerListing(c, store, run, picked)
			if err != nil {
				return reviewErr("diff", err)
			}
			if c.Bool("stat") {
				for _, l := range lines {
					fmt.Fprintln(out, l.line)
				}
				return nil
			}
			for _, ch := range picked {
				if !c.Bool("git-internals") && gitsum.GitDirOf(ch.Path) != "" {
					continue // summarised below
				}
				d, err := review.LayerDiff(store, run, ch)
				if err != nil {
					return reviewErr("diff", err)
				}
				fmt.Fprintf(out, "diff --agentbox a/%s b/%s (%s)\n%s", review.EscapeControls(ch.Path), review.EscapeControls(ch.Path), ch.Kind, d)
			}
			for _, l := range lines {
				if strings.HasPrefix(l.line, "git ") {
					fmt.Fprintln(out, l.line)
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
			"(--force applies over them). A git index that only git status touched since is no conflict: the\n" +
			"run's replaces it (a note says so). All or nothing: everything is staged first, then renamed\n" +
			"into place; a failure puts back what was moved. Recorded in RUN's audit log (who, which paths,\n" +
			"hashes). A layer applied whole is removed; a partial apply leaves the rest.",
		Flags: reviewFlags(
			&cli.BoolFlag{Name: "force", Usage: "apply over paths changed since the run started"},
			gitInternalsFlag(),
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return exitf(exitUsage, "apply: which run? (agentbox diff lists the layers kept)")
			}
			run := c.Args().First()
			store := c.String("review-store")
			// the listing's git summary reads the layer: made before the
			// apply, which removes a layer applied whole
			var before []listed
			if cs, err := review.LayerChanges(store, run); err == nil {
				before, _ = layerListing(c, store, run, cs)
			}
			res, err := review.Apply(store, run, c.Args().Slice()[1:], c.Bool("force"), os.Stderr)
			if err != nil {
				return reviewErr("apply", err)
			}
			out := cliOut(c)
			applied := map[string]bool{}
			for _, ch := range res.Applied {
				applied[ch.Path] = true
			}
			for _, l := range before {
				for _, p := range l.paths {
					if applied[p] {
						fmt.Fprintln(out, l.line)
						break
					}
				}
			}
			for _, n := range res.Notes {
				fmt.Fprintf(out, "note: %s\n", review.EscapeControls(n))
			}
			if res.Left > 0 {
				fmt.Fprintf(out, "applied %d change(s); %d left in the layer (agentbox diff %s)\n", len(res.Applied), res.Left, run)
			} else {
				fmt.Fprintf(out, "applied %d change(s) to target/; the layer is removed\n", len(res.Applied))
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
		Flags:     reviewFlags(),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return exitf(exitUsage, "discard: takes one RUN")
			}
			run, store := c.Args().First(), c.String("review-store")
			cs, err := review.LayerChanges(store, run)
			if err != nil {
				return reviewErr("discard", err)
			}
			if err := review.Discard(store, run); err != nil {
				return reviewErr("discard", err)
			}
			fmt.Fprintf(cliOut(c), "discarded run %s's layer: %d change(s) dropped; target/ was never changed\n", run, len(cs))
			return nil
		},
	}
}
