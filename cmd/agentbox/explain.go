package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/policytext"
	"github.com/agentbox/agentbox/policy"
	"github.com/urfave/cli/v3"
)

func explainCommand() *cli.Command {
	return &cli.Command{
		Name:      "explain",
		Usage:     "show how a command or action is decided: every part, every matching rule, and why the winner won",
		ArgsUsage: "[-- ARGV...]",
		Description: `Same inputs as 'agentbox check' (-- ARGV..., --shell LINE, --action ACTION).
For each part of the input (each simple command of a shell line, each
command a wrapper runs, each file a redirection writes) it lists the rules
that matched, most decisive first, marks the winner with '*', and says why
it won: a deny always wins; otherwise the most specific rule (exact action >
longer literal prefix > shorter); equal specificity: ask over allow, then the
higher layer. Exit status is check's: 0 allow, 3 ask, 4 deny.`,
		Flags: append(append(policyFlags(true), inputFlags()...),
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "print the explanation as JSON"}),
		Action: func(ctx context.Context, c *cli.Command) error {
			in, err := readInput(c, false)
			if err != nil {
				return err
			}
			e, err := loadEngine(c)
			if err != nil {
				return err
			}
			var ex policy.Explanation
			switch {
			case len(in.argv) > 0:
				ex = e.Explain(policy.Query{Argv: in.argv, ExecContext: judge.ArgvContext(in.argv, in.cwd, os.Getenv("PATH"))})
			case c.IsSet("shell"):
				ex = e.Explain(policy.Query{Shell: in.shell, ExecContext: policy.ExecContext{Cwd: in.cwd, LookPath: judge.LookPath(os.Getenv("PATH"), in.cwd), Exists: judge.Overwritable}})
			default:
				ex = e.Explain(policy.Query{Action: in.action})
			}
			out := c.Root().Writer
			if c.Bool("json") {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(explainJSON(ex)); err != nil {
					return exitf(exitFailure, "explain: %v", err)
				}
			} else {
				fmt.Fprint(out, policytext.Explanation(ex))
			}
			return decisionExit(ex.Result.Decision)
		},
	}
}

func explainJSON(ex policy.Explanation) any {
	type match struct {
		ID          string `json:"id"`
		Layer       string `json:"layer"`
		Source      string `json:"source"`
		Decision    string `json:"decision"`
		Match       string `json:"match"`
		Specificity int    `json:"specificity"`
		Description string `json:"description,omitempty"`
	}
	type seg struct {
		Result  policy.Result `json:"result"`
		Text    string        `json:"text,omitempty"`
		Matches []match       `json:"matches"`
	}
	out := struct {
		Result   policy.Result `json:"result"`
		Segments []seg         `json:"segments"`
	}{Result: ex.Result}
	for _, s := range ex.Segments {
		sg := seg{Result: s.Result, Text: s.Text, Matches: []match{}}
		for _, m := range s.Matches {
			sg.Matches = append(sg.Matches, match{m.Ref.ID, m.Ref.Layer.String(), m.Ref.Source, m.Decision.String(), m.Matcher, m.Specificity, m.Description})
		}
		out.Segments = append(out.Segments, sg)
	}
	return out
}
