package judge

import (
	"strconv"

	"github.com/agentbox/agentbox/internal/procfs"
	"github.com/agentbox/agentbox/policy"
)

// Porcelain that runs other git commands as its own children: `git stash`
// saves the work, then runs `git reset --hard` (and update-index, read-tree,
// clean for -u) to clean the tree it just saved. Deciding those children as
// if the agent had typed them would deny the stash the role allowed (reset
// is denied: "could lose work"). A child is let through as part of its
// parent when the parent is a git process this policy allowed as that
// porcelain (its pid and start time recorded at its exec, so a reused pid
// does not count) and the child is one of the subcommands it runs. The
// parent is a real git binary (identity by content), which the sandbox
// cannot make run other code without an exec that is decided itself.
//
// Only the first program a child of the porcelain runs is lifted: git
// starts its own subcommands by exec'ing git straight after the fork,
// while a program git starts because of configuration (core.fsmonitor,
// a hook, a pager) runs first and may then exec git itself — that git is
// the porcelain's child by pid, but not one the porcelain chose
// (TestExecIntegrationConfigChildNotLifted).
var porcelainChildren = map[string]map[string]bool{
	"stash": {"reset": true, "update-index": true, "read-tree": true, "write-tree": true, "clean": true,
		"checkout-index": true, "diff-index": true, "apply": true, "merge-recursive": true, "restore": true, "checkout": true},
}

type gitParent struct {
	sub   string
	start uint64
}

// maxGitKids bounds the record of children of porcelain that have
// exec'd; past it the record restarts (a child seen before then counts as
// fresh only if it also passes every other check).
const maxGitKids = 4096

// firstExecOfChild reports whether this exec of pid, a child of ppid, is
// the first program the child runs, when ppid is a recorded porcelain
// (false otherwise); it records the exec.
func (p *Judge) firstExecOfChild(pid, ppid int) bool {
	p.mu.Lock()
	_, porcelain := p.gitParents[ppid]
	p.mu.Unlock()
	if !porcelain {
		return false
	}
	start, err := procfs.StartTime(pid)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, seen := p.gitKids[pid]; seen && s == start {
		return false
	}
	if p.gitKids == nil || len(p.gitKids) >= maxGitKids {
		p.gitKids = map[int]uint64{}
	}
	p.gitKids[pid] = start
	return true
}

// noteGitParent records an allowed git process that runs git children.
func (p *Judge) noteGitParent(pid int, sub string) {
	if porcelainChildren[sub] == nil {
		return
	}
	start, err := procfs.StartTime(pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gitParents == nil {
		p.gitParents = map[int]gitParent{}
	}
	p.gitParents[pid] = gitParent{sub: sub, start: start}
}

// gitChildOf lifts the decision of git subcommand sub started by ppid when
// ppid is a recorded porcelain that runs it; ok is false otherwise.
func (p *Judge) gitChildOf(ppid int, sub string, res policy.Result) (policy.Result, bool) {
	if res.Decision == policy.Allow || res.Floor != "" {
		return res, false
	}
	p.mu.Lock()
	par, known := p.gitParents[ppid]
	p.mu.Unlock()
	if !known || !porcelainChildren[par.sub][sub] || !procfs.Alive(ppid, par.start) {
		return res, false
	}
	res.Decision, res.Rule = policy.Allow, nil
	res.Reason = "run by git " + par.sub + " (pid " + strconv.Itoa(ppid) + ") as part of what it was allowed to do"
	return res, true
}
