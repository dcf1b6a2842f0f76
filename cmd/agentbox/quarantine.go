package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/gitleft"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// quarantineCommand is `agentbox quarantine`: neutralise a file a run left
// that would make git run a program (the run's warning names it).
func quarantineCommand() *cli.Command {
	return &cli.Command{
		Name:      "quarantine",
		Usage:     "move aside a git hook, config, attributes, redirect or link a run left that would make git run a program",
		ArgsUsage: "PATH...",
		Description: "Each PATH (as the run's warning names it) is renamed to PATH" + gitleft.QuarantineSuffix + ":\n" +
			"git no longer runs the hook, reads the config, attributes or redirect, or follows the link; review\n" +
			"it and move it back if it is yours. A file holding nothing git would run is refused and left in place.\n" +
			"PATH must lie in a writable area of its workspace (target/, feedback/, agents/) or under an --area\n" +
			"(a --rw grant of the run), and no component of it may be a symbolic link: nothing outside those\n" +
			"areas is ever moved.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "area", Usage: "also accept PATHs under `DIR`, a directory the run could write (--rw)"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return exitf(exitUsage, "quarantine: give the PATH a run's warning names")
			}
			// The kernel's idea of the working directory, not $PWD: a
			// relative PATH is judged where it really is.
			cwd, err := unix.Getwd()
			if err != nil {
				return exitf(exitFailure, "quarantine: working directory: %v", err)
			}
			var extra []string
			for _, a := range c.StringSlice("area") {
				if !filepath.IsAbs(a) {
					a = filepath.Join(cwd, a)
				}
				extra = append(extra, filepath.Clean(a))
			}
			failed := 0
			for _, p := range c.Args().Slice() {
				if !filepath.IsAbs(p) {
					p = cwd + "/" + p // not cleaned: Quarantine refuses '..' as given
				}
				dst, err := gitleft.Quarantine(append(gitleft.WritableAreas(p), extra...), p)
				if err != nil {
					fmt.Fprintf(cliErr(c), "agentbox: quarantine: %s\n", shellquote.Sanitize(err.Error()))
					failed++
					continue
				}
				fmt.Fprintf(cliOut(c), "%s -> %s\n", shellquote.Sanitize(p), shellquote.Sanitize(dst))
			}
			if failed > 0 {
				return exitf(exitBadInput, "quarantine: %d of %d not moved", failed, c.Args().Len())
			}
			return nil
		},
	}
}
