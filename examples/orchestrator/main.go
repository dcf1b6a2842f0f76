// Command orchestrator is an example of embedding agentbox as a Go library:
// it launches several agents at once, each under its own agent id in one
// shared workspace, answers their approvals in Go with a simple prefix
// policy, shares one audit log between them, and verifies it at the end.
//
//	go run ./examples/orchestrator --workspace ./ws --agents 3 \
//	    --allow-prefix "touch" -- sh -c 'echo hello from $HOME'
//
// It shows what an orchestrator relies on: the os/exec-like lifecycle
// (agentbox.New, Start, Wait, Stop), approvals answered through
// approval.Func, events as they happen (agentbox.WithEvents), exit codes
// (agentbox.Exit*), and one audit log that many concurrent runs append to
// without interleaving (audit.Verify). Runs are listed by `agentbox ps`
// while they run.
//
// With --review every agent is a review run (agentbox.WithReview): they
// work on the same target/ at once, each in a layer of its own, and the
// best result is applied — here the one that exited 0 with the fewest
// changes (a real orchestrator would run the tests in each or ask a
// reviewing model); the other layers are discarded.
//
//	go run ./examples/orchestrator --workspace ./ws --agents 3 --review -- claude -p "fix the failing test"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
)

type prefixes []string

func (p *prefixes) String() string     { return strings.Join(*p, ", ") }
func (p *prefixes) Set(s string) error { *p = append(*p, s); return nil }

func main() {
	// agentbox re-executes this binary as its sandbox helper.
	if agentbox.MaybeRunHelper() {
		return
	}
	ws := flag.String("workspace", "", "workspace `DIR` (created if missing)")
	role := flag.String("role", "developer", "role `NAME` for every agent")
	n := flag.Int("agents", 2, "number of agents to launch")
	auditFile := flag.String("audit", "", "shared audit log `FILE` (default: <workspace>.audit.jsonl)")
	timeout := flag.Duration("timeout", 10*time.Minute, "stop every agent after `DURATION`")
	review := flag.Bool("review", false, "review runs: each agent writes its own layer; the best is applied, the rest discarded")
	var allow prefixes
	flag.Var(&allow, "allow-prefix", "approve asks whose argv starts with `WORDS` (repeatable); everything else is denied")
	flag.Parse()
	if *ws == "" || flag.NArg() == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: orchestrator --workspace DIR [--agents N] [--allow-prefix WORDS]... -- CMD...")
		os.Exit(2)
	}
	if *auditFile == "" {
		*auditFile = filepath.Clean(*ws) + ".audit.jsonl"
	}
	os.Exit(run(*ws, *role, *n, *auditFile, *timeout, *review, allow, flag.Args()))
}

func run(ws, role string, n int, auditFile string, timeout time.Duration, review bool, allow prefixes, argv []string) int {
	if _, err := agentbox.Init(ws); err != nil {
		return fail("%v", err)
	}
	aw, err := audit.OpenKeyed(auditFile, "") // signed with <log>.key, created on first use
	if err != nil {
		return fail("audit log: %v", err)
	}
	// Approvals are answered here, in Go: allow what starts with a given
	// prefix, deny the rest. A real orchestrator would ask a human or a
	// reviewing model; the request carries argv, cwd, the program and rule.
	approver := approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
		line := strings.Join(req.Argv, " ")
		for _, p := range allow {
			if line == p || strings.HasPrefix(line, p+" ") {
				fmt.Printf("[%s] approve: %s\n", req.Agent, line)
				return approval.Response{Answer: approval.AllowOnce, Approver: "orchestrator prefix " + p}, nil
			}
		}
		fmt.Printf("[%s] deny: %s (%s)\n", req.Agent, line, req.Reason)
		return approval.Response{Answer: approval.DenyOnce, Approver: "orchestrator"}, nil
	})
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	defer cancelT()

	var wg sync.WaitGroup
	codes := make([]int, n)
	runs := make([]*agentbox.Run, n)
	for i := range n {
		agent := fmt.Sprintf("agent%d", i+1)
		var extra []agentbox.Option
		if review {
			extra = append(extra, agentbox.WithReview())
		}
		r, err := agentbox.New(ws, role, argv, append(extra,
			agentbox.WithAgent(agent),
			agentbox.WithAuditWriter(aw),
			agentbox.WithApprover(approver),
			agentbox.WithEvents(func(e audit.Event) {
				if e.Decision == audit.DecisionDeny || e.Decision == audit.DecisionAskDenied {
					fmt.Printf("[%s] %s %s: %s\n", e.Agent, e.Decision, e.Action, e.Reason)
				}
			}))...)
		if err != nil {
			return fail("%s: %v", agent, err)
		}
		if err := r.Start(ctx); err != nil {
			return fail("%s: %v", agent, err)
		}
		fmt.Printf("[%s] started run %s, pid %d\n", agent, r.ID(), r.Pid())
		runs[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Wait()
			switch {
			case err != nil:
				fmt.Printf("[%s] agentbox failed: %v\n", agent, err)
				codes[i] = agentbox.ExitFailure
			default:
				fmt.Printf("[%s] exit %d\n", agent, res.ExitCode)
				codes[i] = res.ExitCode
			}
		}()
	}
	wg.Wait()
	if review {
		if code := applyBest(runs, codes); code != 0 {
			return code
		}
	}
	if err := aw.Close(); err != nil {
		return fail("audit log: %v", err)
	}

	f, err := os.Open(auditFile)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	vr, err := audit.Verify(f, nil)
	if err != nil {
		return fail("audit log %s does NOT verify: %v", auditFile, err)
	}
	fmt.Printf("audit log %s verifies: %+v\n", auditFile, vr)
	worst := 0
	for _, c := range codes {
		worst = max(worst, c)
	}
	return worst
}

// applyBest applies the layer of the run that exited 0 with the fewest
// changes and discards the others.
func applyBest(runs []*agentbox.Run, codes []int) int {
	best, bestN := -1, 0
	for i, r := range runs {
		cs, err := r.Changes()
		if err != nil {
			return fail("run %s: %v", r.ID(), err)
		}
		fmt.Printf("[%s] exit %d, %d change(s) in its layer\n", r.ID(), codes[i], len(cs))
		if codes[i] == 0 && (best < 0 || len(cs) < bestN) {
			best, bestN = i, len(cs)
		}
	}
	for i, r := range runs {
		if i == best {
			res, err := r.Apply(nil, false)
			if err != nil {
				return fail("applying run %s: %v", r.ID(), err)
			}
			fmt.Printf("[%s] applied %d path(s)\n", r.ID(), len(res.Applied))
			continue
		}
		if err := r.Discard(); err != nil {
			return fail("discarding run %s: %v", r.ID(), err)
		}
	}
	return 0
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "orchestrator: "+format+"\n", args...)
	return agentbox.ExitFailure
}
