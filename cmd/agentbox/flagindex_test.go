package main

import (
	"context"
	"slices"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/userconf"
)

// parsedRun parses args as agentbox's run command line and calls check
// with the run command, its flags parsed, in place of run's action.
func parsedRun(tb testing.TB, args []string, check func(c *cli.Command)) {
	tb.Helper()
	app := newAppFor(args)
	ran := false
	for _, c := range app.Commands {
		if c.Name == "run" {
			c.Action = func(_ context.Context, c *cli.Command) error { check(c); ran = true; return nil }
		}
	}
	if err := app.Run(context.Background(), args); err != nil || !ran {
		tb.Fatalf("%v: %v (action ran: %v)", args, err, ran)
	}
}

// TestFlagIndexAgrees: the index run's option helpers read answers every
// flag of run as cli's own lookup does (set or not, repeated, given as
// an alias, a root flag), and a name no flag has as cli does.
func TestFlagIndexAgrees(t *testing.T) {
	for _, args := range [][]string{
		{"agentbox", "run", "--role", "developer", "--", "/bin/true"},
		{"agentbox", "run", "--role", "developer", "--quiet", "--no-limits", "--ro", "/a", "--ro", "/b", "--host-caches", "off", "--audit", "/tmp/x.jsonl",
			"--audit-export-header", "A: b", "--checkpoints", "off", "--network", "tcp:443", "--no-limits=false", "--", "/bin/true"},
	} {
		parsedRun(t, args, func(c *cli.Command) {
			ix := indexFlags(c)
			if len(ix.byName) < 50 {
				t.Fatalf("%v: %d flag names indexed, want run's (more than 50)", args, len(ix.byName))
			}
			names := []string{"no-such-flag", "help", "version"}
			for n := range ix.byName {
				names = append(names, n)
			}
			for _, n := range names {
				if ix.Bool(n) != c.Bool(n) || ix.String(n) != c.String(n) || !slices.Equal(ix.StringSlice(n), c.StringSlice(n)) || ix.IsSet(n) != c.IsSet(n) {
					t.Errorf("%v: flag %q: index says %v %q %q set %v; cli says %v %q %q set %v", args, n,
						ix.Bool(n), ix.String(n), ix.StringSlice(n), ix.IsSet(n), c.Bool(n), c.String(n), c.StringSlice(n), c.IsSet(n))
				}
			}
		})
	}
}

// BenchmarkRunFlagLookups: the flag questions of a launch (parseRunFlags,
// the option groups, runExport) through cli's lookup and through the
// index.
func BenchmarkRunFlagLookups(b *testing.B) {
	args := []string{"agentbox", "run", "--role", "developer", "--quiet", "--no-limits", "--no-user-policy", "--approve", "none", "--audit", "/tmp/a.jsonl", "--", "/bin/true"}
	parsedRun(b, args, func(c *cli.Command) {
		ask := func(fl flagReader) {
			flags, err := parseRunFlags(fl)
			if err != nil {
				b.Fatal(err)
			}
			for _, g := range []func(flagReader, *runFlags) ([]agentbox.Option, error){boundaryOptions, egressOptions, auditOptions, checkpointOptions} {
				if _, err := g(fl, flags); err != nil {
					b.Fatal(err)
				}
			}
			if _, _, err := runExport(fl, userconf.Settings{}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("cli", func(b *testing.B) {
			for b.Loop() {
				ask(c)
			}
		})
		b.Run("index", func(b *testing.B) {
			for b.Loop() {
				ask(indexFlags(c))
			}
		})
	})
}
