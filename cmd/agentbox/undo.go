package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/boundary"
)

// storeFlags find a workspace's checkpoint store.
func storeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "workspace `DIR` (default: the workspace the current directory is in)"},
		&cli.StringFlag{Name: "checkpoint-store", Usage: "checkpoint store `DIR` (default: the workspace's, under ~/.local/state/agentbox/checkpoints)"},
	}
}

func storeOf(c *cli.Command) (string, error) {
	if s := c.String("checkpoint-store"); s != "" {
		return agentbox.CheckpointStore("", s)
	}
	ws := c.String("workspace")
	if ws == "" {
		var err error
		if ws, err = boundary.FindWorkspace("."); err != nil {
			return "", exitf(exitUsage, "%v; give --workspace DIR", err)
		}
	}
	s, err := agentbox.CheckpointStore(ws, "")
	if err != nil {
		return "", exitf(exitBadInput, "%v", err)
	}
	return s, nil
}

func changesCommand() *cli.Command {
	return &cli.Command{
		Name:      "changes",
		Usage:     "what each command of a run changed in target/ and feedback/ (from its checkpoints)",
		ArgsUsage: "[RUN]",
		Description: "Lists, per command of RUN (default: the latest run), the paths it added, modified, deleted or\n" +
			"changed the mode of, with its audit seq and command line. Without RUN and with no runs recorded,\n" +
			"lists nothing. --diff shows a unified diff of each change (binary files named, not shown).",
		Flags: append(storeFlags(),
			&cli.BoolFlag{Name: "diff", Usage: "show a unified diff of each changed file"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON, one object per command"},
			&cli.BoolFlag{Name: "runs", Usage: "list the recorded runs instead"},
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			if run := c.Args().First(); run != "" && !c.Bool("runs") {
				if done, err := reviewChanges(c, run); done {
					return err
				}
			}
			store, err := storeOf(c)
			if err != nil {
				return err
			}
			out := cliOut(c)
			runs, err := agentbox.RecordedRuns(store)
			if err != nil {
				return exitf(exitBadInput, "changes: %v", err)
			}
			if c.Bool("runs") {
				for _, r := range runs {
					what := ""
					if r.Of != "" {
						what = " (undo of " + r.Of + ")"
					}
					fmt.Fprintf(out, "%s  %s%s\n", r.Run, r.Time.Local().Format("2006-01-02 15:04:05"), what)
				}
				return nil
			}
			run := c.Args().First()
			if run == "" {
				if len(runs) == 0 {
					return exitf(exitBadInput, "changes: no run has checkpoints in %s", store)
				}
				run = runs[len(runs)-1].Run
			}
			steps, err := agentbox.Changes(store, run)
			if err != nil {
				return exitf(exitBadInput, "changes: %v", err)
			}
			excluded, err := agentbox.Excluded(store, run)
			if err != nil {
				return exitf(exitBadInput, "changes: %v", err)
			}
			defer func() {
				if len(excluded) == 0 {
					return
				}
				if c.Bool("json") {
					b, _ := json.Marshal(map[string]any{"kind": "excluded", "run": run, "paths": excluded})
					fmt.Fprintf(out, "%s\n", b)
					return
				}
				fmt.Fprintf(out, "not checkpointed (left out; undo neither restores nor removes them):\n")
				for i, p := range excluded {
					if i == 20 {
						fmt.Fprintf(out, "  ... and %d more\n", len(excluded)-20)
						break
					}
					fmt.Fprintf(out, "  %s\n", clipped(p, 300))
				}
			}()
			for _, st := range steps {
				if c.Bool("json") {
					b, _ := json.Marshal(st)
					fmt.Fprintf(out, "%s\n", b)
					continue
				}
				if len(st.Changes) == 0 {
					continue
				}
				if st.Kind == "start" {
					fmt.Fprintf(out, "run %s, before its first command (the agent's own writes):\n", run)
				} else {
					fmt.Fprintf(out, "seq %d: %s\n", st.Seq, clipped(strings.Join(st.Argv, " "), 200))
				}
				for _, ch := range st.Changes {
					fmt.Fprintf(out, "  %-8s %s\n", ch.Kind, clipped(ch.Path, 300))
					if c.Bool("diff") && ch.Kind != "mode" {
						d, err := agentbox.ChangeDiff(store, run, st, ch.Path)
						if err != nil {
							return exitf(exitBadInput, "changes: %v", err)
						}
						fmt.Fprint(out, d)
					}
				}
			}
			return nil
		},
	}
}

// clipped shows s on one line, control characters escaped (\xNN).
func clipped(s string, n int) string {
	s = agentbox.EscapeControls(strings.ReplaceAll(s, "\n", `\n`))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "put target/ and feedback/ back as they were before a run (or one of its commands)",
		ArgsUsage: "RUN",
		Description: "Restores what RUN changed, from its checkpoints: everything (default), the state before the\n" +
			"command with audit seq --to SEQ, or only what command --only SEQ changed (refused, changing\n" +
			"nothing, when later commands changed the same paths). Paths changed since the run by someone\n" +
			"else are kept, and an undo that must change them is refused unless --force. Refused while RUN\n" +
			"is live. The undo is itself recorded: agentbox undo of the id it prints brings the work back.",
		Flags: append(storeFlags(),
			&cli.Uint64Flag{Name: "to", Usage: "restore the state before the command with audit seq `SEQ`"},
			&cli.Uint64Flag{Name: "only", Usage: "revert only what the command with audit seq `SEQ` changed"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be restored; change nothing"},
			&cli.BoolFlag{Name: "force", Usage: "also overwrite paths changed since the run, outside it"},
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return exitf(exitUsage, "undo: want one RUN id (agentbox changes --runs lists them)")
			}
			run := c.Args().First()
			if done, err := reviewUndo(c, run); done {
				return err
			}
			store, err := storeOf(c)
			if err != nil {
				return err
			}
			res, err := agentbox.Undo(store, run, agentbox.UndoOptions{To: c.Uint64("to"), Only: c.Uint64("only"), DryRun: c.Bool("dry-run"), Force: c.Bool("force")})
			var conflict *agentbox.UndoConflict
			switch {
			case errors.As(err, &conflict):
				return exitf(exitBadInput, "undo %s: %v", run, err)
			case errors.Is(err, agentbox.ErrRunLive):
				return exitf(exitBadInput, "undo: %v", err)
			case err != nil:
				return exitf(exitBadInput, "undo %s: %v", run, err)
			}
			out := cliOut(c)
			verb := "restored"
			if c.Bool("dry-run") {
				verb = "would restore"
			}
			for _, ch := range res.Restored {
				fmt.Fprintf(out, "%s %-8s %s\n", verb, ch.Kind, clipped(ch.Path, 300))
			}
			for _, ch := range res.Kept {
				fmt.Fprintf(out, "kept (changed since the run) %s\n", clipped(ch.Path, 300))
			}
			for _, n := range res.Notes {
				fmt.Fprintf(out, "note: %s\n", clipped(n, 300))
			}
			if len(res.Restored) == 0 {
				fmt.Fprintln(out, "nothing to restore")
			}
			if res.Redo != "" {
				fmt.Fprintf(out, "undone; to bring it back: agentbox undo %s\n", res.Redo)
			}
			return nil
		},
	}
}

// A review run keeps its changes in its layer, which is its undo:
// changes lists the layer, undo discards it.

func reviewChanges(c *cli.Command, run string) (bool, error) {
	cs, err := agentbox.ReviewChanges("", run)
	if errors.Is(err, agentbox.ErrNoLayer) || err != nil && !errors.As(err, new(*agentbox.LiveError)) {
		return false, nil
	}
	if err != nil {
		return true, exitf(exitBadInput, "changes: %v", err)
	}
	out := cliOut(c)
	if c.Bool("json") {
		for _, ch := range cs {
			b, _ := json.Marshal(ch)
			fmt.Fprintf(out, "%s\n", b)
		}
		return true, nil
	}
	fmt.Fprintf(out, "run %s is a review run: its changes are in its layer, not in target/ (agentbox diff|apply|discard %s)\n", run, run)
	for _, ch := range cs {
		fmt.Fprintf(out, "  %-8s %s\n", ch.Kind, agentbox.EscapeControls(ch.Path))
	}
	return true, nil
}

func reviewUndo(c *cli.Command, run string) (bool, error) {
	cs, err := agentbox.ReviewChanges("", run)
	if errors.Is(err, agentbox.ErrNoLayer) || err != nil && !errors.As(err, new(*agentbox.LiveError)) {
		return false, nil
	}
	if err != nil {
		return true, exitf(exitBadInput, "undo: %v", err)
	}
	if c.Uint64("to") != 0 || c.Uint64("only") != 0 {
		return true, exitf(exitUsage, "undo %s: a review run has no per-command checkpoints; agentbox apply %s PATH... takes some paths, agentbox discard %s drops the rest", run, run, run)
	}
	out := cliOut(c)
	if c.Bool("dry-run") {
		fmt.Fprintf(out, "would discard the layer of review run %s (%d change(s); target/ was never changed)\n", run, len(cs))
		return true, nil
	}
	if err := agentbox.DiscardReview("", run); err != nil {
		return true, exitf(exitBadInput, "undo %s: %v", run, err)
	}
	fmt.Fprintf(out, "discarded the layer of review run %s (%d change(s); target/ was never changed)\n", run, len(cs))
	return true, nil
}
