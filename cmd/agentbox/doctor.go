package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// doctorCommand prints, before any run, what enforces each protection on
// this machine for this user (the Landlock ladder, sandbox.NewLadder) and
// the fix for each gap: the table a run's launch line says short.
func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "show what enforces each protection on this machine for this user, and how to close each gap",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "network", Value: "none", Usage: "the run's network `MODE` to check for: none, proxy or tcp"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 0 {
				return exitf(exitUsage, "doctor: takes no arguments")
			}
			in := sandbox.LadderInput{ABI: sandbox.EffectiveLandlockABI(), Root: os.Geteuid() == 0 && sandbox.HasCapSysAdmin()}
			switch c.String("network") {
			case "none":
			case "proxy":
				in.Proxy = true
			case "tcp":
				in.TCPGrants = true
			default:
				return exitf(exitUsage, "doctor: --network %q: want none, proxy or tcp", c.String("network"))
			}
			if !in.Root {
				in.UserNS = sandbox.UserNSAvailable()
			}
			l := sandbox.NewLadder(in)
			who := "uid " + fmt.Sprint(os.Getuid())
			if u, err := user.Current(); err == nil {
				who = u.Username + " (" + who + ")"
			}
			kernel := "?"
			if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
				kernel = strings.TrimSpace(string(b))
			}
			abi := fmt.Sprintf("Landlock ABI %d", in.ABI)
			if k := sandbox.LandlockABI(); k != in.ABI {
				abi += fmt.Sprintf(" (kernel %d, capped by %s)", k, sandbox.ABIMaxEnv)
			}
			userns := "user namespaces: not needed (root)"
			if !in.Root {
				userns = "user namespaces: available"
				if in.UserNS != nil {
					userns = "user namespaces: " + in.UserNS.Error()
				}
			}
			w := c.Root().Writer
			fmt.Fprintf(w, "agentbox doctor: Linux %s, %s, %s, %s\n", kernel, abi, who, userns)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PROTECTION\tENFORCED BY\tNOTE\tFIX")
			for _, p := range l.Protections {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.By, p.Note, p.Fix)
			}
			tw.Flush()
			if err := l.Check(false, nil); err != nil {
				fmt.Fprintf(w, "a run here is refused: %v\n", err)
				return exitf(exitFailure, "doctor: %d protection(s) cannot be enforced here", len(l.Missing()))
			}
			fmt.Fprintln(w, "every protection is enforced here; launch line: "+l.Short())
			return nil
		},
	}
}
