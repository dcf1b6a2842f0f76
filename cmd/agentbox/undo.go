package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/shellquote"
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
		return review.CheckpointStore("", s)
	}
	ws := c.String("workspace")
	if ws == "" {
		var err error
		if ws, err = boundary.FindWorkspace("."); err != nil {
			return "", exitf(exitUsage, "%v; give --workspace DIR", err)
		}
	}
	s, err := review.CheckpointStore(ws, "")
	if err != nil {
		return "", exitf(exitBadInput, "%v", err)
	}
	return s, nil
}

// storeFor finds the checkpoint store of run: the flags' when given, else
// the store that records run (found by its id from any directory), else
// the workspace the current directory is in.
func storeFor(c *cli.Command, run string) (string, error) {
	if run != "" && c.String("checkpoint-store") == "" && c.String("workspace") == "" {
		if pl, err := review.LocateRun(run); err == nil && pl.CheckpointStore != "" {
			return pl.CheckpointStore, nil
		}
	}
	return storeOf(c)
}

// runHeader names a run for a reader: "run 1a2b3c4d5e6f (started
// 2026-11-28 10:00:01, sh -c make, exit 0)".
func runHeader(r *review.RunRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s (started %s", r.Run, r.Time.Local().Format(time.DateTime))
	if len(r.Command) > 0 {
		b.WriteString(", " + clipped(command.Join(r.Command), 80))
	}
	if r.Exit != nil {
		fmt.Fprintf(&b, ", exit %d", *r.Exit)
	}
	if r.Of != "" {
		b.WriteString(", an undo of " + r.Of)
	}
	b.WriteString(")")
	return b.String()
}

// changedCount says how many paths a run changed.
func changedCount(n int) string {
	switch {
	case n < 0:
		return "changes pruned"
	case n == 0:
		return "no file changed"
	}
	return fmt.Sprintf("%d %s changed", n, plural(n, "path", "paths"))
}

func changesCommand() *cli.Command {
	return &cli.Command{
		Name:      "changes",
		Usage:     "what each command of a run changed in target/ and feedback/ (from its checkpoints)",
		ArgsUsage: "[RUN]",
		Description: "Lists, per command of RUN (default: the latest run of the workspace), the paths it added,\n" +
			"modified, deleted or changed the mode of, with its audit seq and command line; the first line\n" +
			"names the run. RUN is found from any directory. What changed inside a .git directory is one\n" +
			"line per repository (\"git (proj): 2 commits on main, index changed\"); --git-internals lists\n" +
			"its files. --diff shows a unified diff of each change (binary files named, not shown).\n" +
			"--runs lists the workspace's runs: id, start, exit status, paths changed, command.",
		Flags: append(storeFlags(),
			&cli.BoolFlag{Name: "diff", Usage: "show a unified diff of each changed file"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON, one object per command"},
			&cli.BoolFlag{Name: "runs", Usage: "list the recorded runs instead"},
			&cli.BoolFlag{Name: "git-internals", Usage: "list the files changed inside .git directories, not a summary"},
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			run := c.Args().First()
			if run != "" && !c.Bool("runs") {
				if done, err := reviewChanges(c, run); done {
					return err
				}
			}
			store, err := storeFor(c, run)
			if err != nil {
				return err
			}
			out := cliOut(c)
			recs, err := review.RunRecords(store)
			if err != nil {
				return exitf(exitBadInput, "changes: %v", err)
			}
			if c.Bool("runs") {
				if c.Bool("json") {
					enc := json.NewEncoder(out)
					for _, r := range recs {
						if err := enc.Encode(r); err != nil {
							return err
						}
					}
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tSTARTED\tEXIT\tCHANGED\tCOMMAND")
				for _, r := range recs {
					exit := "-"
					if r.Exit != nil {
						exit = strconv.Itoa(*r.Exit)
					}
					changed := strconv.Itoa(r.Changed)
					if r.Changed < 0 {
						changed = "pruned"
					}
					cmd := clip(command.Join(r.Command), 60)
					if r.Of != "" {
						cmd = "(undo of " + r.Of + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Run, r.Time.Local().Format(time.DateTime), exit, changed, review.EscapeControls(cmd))
				}
				return tw.Flush()
			}
			var rec *review.RunRecord
			if run == "" {
				if len(recs) == 0 {
					return exitf(exitBadInput, "changes: no run has checkpoints in %s", store)
				}
				rec = &recs[len(recs)-1]
				run = rec.Run
			}
			for i := range recs {
				if recs[i].Run == run {
					rec = &recs[i]
				}
			}
			steps, err := review.Changes(store, run)
			if err != nil {
				return exitf(exitBadInput, "changes: %v", err)
			}
			excluded, err := review.Excluded(store, run)
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
			if !c.Bool("json") && rec != nil {
				fmt.Fprintf(out, "%s: %s\n", runHeader(rec), changedCount(rec.Changed))
			}
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
					fmt.Fprintf(out, "before its first command (the agent's own writes):\n")
				} else {
					fmt.Fprintf(out, "seq %d: %s\n", st.Seq, clipped(strings.Join(st.Argv, " "), 200))
				}
				shown := st.Changes
				var sums []review.GitSummary
				if !c.Bool("git-internals") {
					if shown, sums, err = review.ChangesGitSummary(store, run, st); err != nil {
						return exitf(exitBadInput, "changes: %v", err)
					}
				}
				for _, ch := range shown {
					fmt.Fprintf(out, "  %-8s %s\n", ch.Kind, clipped(ch.Path, 300))
					if c.Bool("diff") && ch.Kind != "mode" {
						d, err := review.ChangeDiff(store, run, st, ch.Path)
						if err != nil {
							return exitf(exitBadInput, "changes: %v", err)
						}
						fmt.Fprint(out, d)
					}
				}
				for _, s := range sums {
					fmt.Fprintf(out, "  %-8s %s\n", "git", clipped(s.Listed(), 300))
				}
			}
			return nil
		},
	}
}

// clipped shows s on one line, control characters escaped (\xNN).
func clipped(s string, n int) string {
	s = review.EscapeControls(strings.ReplaceAll(s, "\n", `\n`))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// undoLine says what an undo did (or would do) to one path, in words a
// reader understands at once.
func undoLine(dry bool, ch review.PathChange) string {
	p := clipped(ch.Path, 300)
	would := func(done, future string) string {
		if dry {
			return "would " + future
		}
		return done
	}
	switch ch.Kind {
	case "added":
		return would("restored", "restore") + " " + p + " (it had been deleted)"
	case "deleted":
		return would("removed", "remove") + " " + p + " (the run had created it)"
	case "mode":
		return would("restored", "restore") + " the mode of " + p
	}
	return would("restored", "restore") + " " + p + " (its earlier content)"
}

// stdinTerminal reports whether the command reads a terminal (a y/N
// question can be answered).
func stdinTerminal(c *cli.Command) bool {
	f, ok := c.Root().Reader.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "put target/ and feedback/ back as they were before a run (or one of its commands)",
		ArgsUsage: "[RUN]",
		Description: "Restores what RUN changed, from its checkpoints: everything (default), the state before the\n" +
			"command with audit seq --to SEQ, or only what command --only SEQ changed (refused, changing\n" +
			"nothing, when later commands changed the same paths). RUN is found from any directory. Without\n" +
			"RUN, proposes the latest run (of the workspace the current directory is in, else of every\n" +
			"workspace): it says what the undo would do and asks y/N at a terminal; elsewhere it refuses,\n" +
			"printing the command that undoes it. Paths changed since the run by someone else are kept,\n" +
			"and an undo that must change them is refused unless --force. Refused while RUN is live. The\n" +
			"undo is itself recorded: agentbox undo of the id it prints brings the work back.",
		Flags: append(storeFlags(),
			&cli.Uint64Flag{Name: "to", Usage: "restore the state before the command with audit seq `SEQ`"},
			&cli.Uint64Flag{Name: "only", Usage: "revert only what the command with audit seq `SEQ` changed"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be restored; change nothing"},
			&cli.BoolFlag{Name: "force", Usage: "also overwrite paths changed since the run, outside it"},
		),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() > 1 {
				return exitf(exitUsage, "undo: want one RUN id (agentbox changes --runs lists them)")
			}
			run := c.Args().First()
			out := cliOut(c)
			var store string
			if run == "" {
				var err error
				if store, run, err = proposeUndo(c); err != nil || run == "" {
					return err
				}
			} else {
				if done, err := reviewUndo(c, run); done {
					return err
				}
				var err error
				if store, err = storeFor(c, run); err != nil {
					return err
				}
			}
			res, err := review.Undo(store, run, review.UndoOptions{To: c.Uint64("to"), Only: c.Uint64("only"), DryRun: c.Bool("dry-run"), Force: c.Bool("force")})
			var conflict *agentbox.UndoConflict
			switch {
			case errors.As(err, &conflict):
				return exitf(exitBadInput, "undo %s: %v", run, err)
			case errors.Is(err, review.ErrRunLive):
				return exitf(exitBadInput, "undo: %v", err)
			case err != nil:
				return exitf(exitBadInput, "undo %s: %v", run, err)
			}
			printUndo(out, res, c.Bool("dry-run"))
			return nil
		},
	}
}

// printUndo lists what an undo did (or would do).
func printUndo(out io.Writer, res *agentbox.UndoResult, dry bool) {
	for _, ch := range res.Restored {
		fmt.Fprintln(out, undoLine(dry, ch))
	}
	for _, ch := range res.Kept {
		fmt.Fprintf(out, "kept %s (changed since the run, not by it)\n", clipped(ch.Path, 300))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(out, "note: %s\n", clipped(n, 300))
	}
	if len(res.Restored) == 0 {
		fmt.Fprintln(out, "nothing to restore: target/ and feedback/ are as the run found them")
	}
	if res.Redo != "" {
		fmt.Fprintf(out, "undone; to bring it back: agentbox undo %s\n", res.Redo)
	}
}

// proposeUndo is undo without a run id: it names the latest run and what
// undoing it would do, then asks at a terminal (y: the store and run to
// undo) or refuses elsewhere with the exact command. run "" and a nil
// error: the user said no.
func proposeUndo(c *cli.Command) (store, run string, err error) {
	out := cliOut(c)
	if c.String("checkpoint-store") != "" || c.String("workspace") != "" {
		if store, err = storeOf(c); err != nil {
			return "", "", err
		}
	} else if ws, ferr := boundary.FindWorkspace("."); ferr == nil {
		if store, err = review.CheckpointStore(ws, ""); err != nil {
			return "", "", exitf(exitBadInput, "undo: %v", err)
		}
	}
	rec, err := review.LatestRun(store)
	if err != nil {
		return "", "", exitf(exitBadInput, "undo: %v", err)
	}
	if rec == nil {
		where := "in any workspace"
		if store != "" {
			where = "in " + store
		}
		return "", "", exitf(exitBadInput, "undo: no run has checkpoints %s: nothing to undo", where)
	}
	fmt.Fprintf(out, "the latest run: %s, in %s: %s\n", runHeader(rec), rec.Workspace, changedCount(rec.Changed))
	res, err := review.Undo(rec.Store, rec.Run, review.UndoOptions{DryRun: true, Force: c.Bool("force"), To: c.Uint64("to"), Only: c.Uint64("only")})
	if err != nil {
		return "", "", exitf(exitBadInput, "undo %s: %v", rec.Run, err)
	}
	printUndo(out, res, true)
	cmd := []string{"agentbox", "undo", rec.Run}
	if c.Bool("dry-run") {
		return "", "", nil
	}
	if len(res.Restored) == 0 {
		return "", "", nil
	}
	if !stdinTerminal(c) {
		return "", "", exitf(exitUsage, "undo: no run id given and no terminal to ask at; to undo that run: %s", shellquote.Command(cmd))
	}
	fmt.Fprintf(out, "undo run %s? [y/N] ", rec.Run)
	answer, _ := bufio.NewReader(c.Root().Reader).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		fmt.Fprintln(out, "nothing undone")
		return "", "", nil
	}
	return rec.Store, rec.Run, nil
}

// A review run keeps its changes in its layer, which is its undo:
// changes lists the layer, undo discards it.

func reviewChanges(c *cli.Command, run string) (bool, error) {
	cs, err := review.LayerChanges("", run)
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
	fmt.Fprintf(out, "run %s is a review run: its %d change(s) are in its layer, not in target/ (agentbox diff|apply|discard %s)\n", run, len(cs), run)
	lines, err := layerListing(c, "", run, cs)
	if err != nil {
		return true, exitf(exitBadInput, "changes: %v", err)
	}
	for _, l := range lines {
		fmt.Fprintf(out, "  %s\n", l.line)
	}
	return true, nil
}

func reviewUndo(c *cli.Command, run string) (bool, error) {
	cs, err := review.LayerChanges("", run)
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
	if err := review.Discard("", run); err != nil {
		return true, exitf(exitBadInput, "undo %s: %v", run, err)
	}
	fmt.Fprintf(out, "discarded the layer of review run %s (%d change(s); target/ was never changed)\n", run, len(cs))
	return true, nil
}
