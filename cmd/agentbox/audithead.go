package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/fleet"
	"github.com/urfave/cli/v3"
)

// auditHeadCommand is `agentbox audit head`: the log's head (the seq and
// hash of its last line, from its head file), signed with the log's key,
// for a host to publish; `audit verify --otlp ... --heads FILE` then sees
// a chain whose tail was cut at the source.
func auditHeadCommand() *cli.Command {
	return &cli.Command{
		Name:      "head",
		Usage:     "print the log's head (seq and hash of its last line), signed with its key, for publishing",
		UsageText: "agentbox audit head [--file F] [--host NAME] [--key FILE] [--json]",
		Description: "Reads <log>.head and signs it with the log's key (<log>.key, AGENTBOX_AUDIT_KEY or --key) as the host\n" +
			"the exporter names (default: this machine's host name). Collect each host's line into one file\n" +
			"and check an exported stream against it: agentbox audit verify --otlp F --host-key H=K --heads FILE.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "audit log `FILE` (default " + audit.DefaultPath() + ")"},
			&cli.StringFlag{Name: "host", Usage: "host `NAME` as audit export names it (default: this machine's host name)"},
			&cli.StringFlag{Name: "key", Usage: "the log's key `FILE` (default <log>.key)"},
			&cli.BoolFlag{Name: "json", Usage: "print the signed head as one JSON line (what --heads reads)"},
		},
		Action: auditHead,
	}
}

func auditHead(_ context.Context, c *cli.Command) error {
	log := c.String("file")
	if log == "" {
		log = audit.DefaultPath()
	}
	abs, err := filepath.Abs(log)
	if err != nil {
		return exitf(exitBadInput, "%v", err)
	}
	host := c.String("host")
	if host == "" {
		if host, err = os.Hostname(); err != nil {
			return exitf(exitFailure, "host name: %v", err)
		}
	}
	h, err := audit.ReadHeadFile(abs)
	if err != nil {
		return exitf(exitBadInput, "%v", err)
	}
	if h == nil {
		return exitf(exitBadInput, "%s%s: no head file (the log was never written by agentbox, or the head was removed)", abs, audit.HeadSuffix)
	}
	keyPath := audit.KeyPath(abs, c.String("key"))
	if keyPath == "" {
		return exitf(exitUsage, "audit head: no key for %s (--key FILE)", abs)
	}
	k, err := audit.LoadKey(keyPath, false)
	if err != nil {
		return exitf(exitBadInput, "%v", err)
	}
	sh := fleet.SignHead(k, host, abs, *h, time.Now())
	out := cliOut(c)
	if c.Bool("json") {
		b, _ := json.Marshal(sh)
		fmt.Fprintf(out, "%s\n", b)
		return nil
	}
	fmt.Fprintf(out, "host %s log %s seq %d hash %s (signed with key %s at %s)\n", sh.Host, sh.Log, sh.Seq, sh.Hash, sh.Kid, sh.Time)
	return nil
}

// checkPublishedHeads adds the --heads files' findings to rep.
func checkPublishedHeads(c *cli.Command, rep *fleet.Report, lines []fleet.Line, keys fleet.Keys) error {
	for _, name := range c.StringSlice("heads") {
		b, err := os.ReadFile(name)
		if err != nil {
			return exitf(exitBadInput, "--heads: %v", err)
		}
		heads, err := fleet.ParseHeads(name, b)
		if err != nil {
			return exitf(exitBadInput, "--heads: %v", err)
		}
		fleet.CheckHeads(rep, lines, keys, heads)
	}
	return nil
}
