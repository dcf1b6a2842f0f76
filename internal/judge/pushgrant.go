package judge

import (
	"cmp"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/supervise"
)

// Push grants (docs/operations.md, "Push tokens"). A `git push` program
// start the policy allows or a human approves is recorded as a grant for
// its process: the remote's URL and the refs its refspecs name. The
// egress proxy gives that process tree, and no other, a token minted for
// the push (egress.PushTokens); the wire check holds the ref updates to
// the grant: the refs named, no force, no deletion.

// grantPush records the grant of an allowed `git push` (Config.Pushes
// nil: none). A grant that cannot be recorded leaves the push without a
// token: the proxy refuses it on the wire.
func (p *Judge) grantPush(ev *supervise.ExecEvent, argv []string, approver string) {
	if p.cfg.Pushes == nil {
		return
	}
	g, err := command.ParseGit(argv)
	if err != nil || g.Sub != "push" {
		return
	}
	dir := ev.Cwd
	for _, d := range g.Dirs {
		if filepath.IsAbs(d) {
			dir = d
		} else {
			dir = filepath.Join(dir, d)
		}
	}
	pa := parsePushArgs(g.Args)
	gd := findGitDir(dir, envValue(ev.Env, "GIT_DIR"))
	conf := p.pushConfig(g, gd)
	cfg := func(k string) string { return conf[strings.ToLower(k)] }
	branch := currentBranch(gd)
	remote := pa.remote
	if remote == "" {
		remote = cmp.Or(cfg("branch."+branch+".pushremote"), cfg("remote.pushdefault"), cfg("branch."+branch+".remote"), "origin")
	}
	u := remote
	if !looksLikeURL(remote) {
		u = cmp.Or(cfg("remote."+remote+".pushurl"), cfg("remote."+remote+".url"))
	}
	grant := egress.PushGrant{Pid: ev.Pid, Start: ev.Start, Program: "git", Remote: remote, URL: stripUserinfo(u),
		Refs: pushRefs(pa.refspecs, branch), Approver: approver}
	id, err := p.cfg.Pushes.Grant(grant)
	if err != nil {
		_ = p.writeEvent(audit.Event{Agent: p.cfg.AgentID, Role: p.roleInfo().Name, Run: p.cfg.RunID, Event: audit.EventNet,
			Action: "tool:git:push-token", Decision: audit.DecisionDeny, Pid: ev.Pid,
			Reason: "no push grant recorded: " + err.Error(), Detail: map[string]string{"push_token": "no_grant", "remote": remote}})
		return
	}
	d := map[string]string{"push_token": "granted", "push": id, "remote": remote, "push_pid": strconv.Itoa(ev.Pid)}
	if grant.URL != "" {
		d["repo"] = grant.URL
	}
	if len(grant.Refs) > 0 {
		d["refs"] = strings.Join(grant.Refs, " ")
	} else {
		d["refs"] = "one unprotected branch"
	}
	if approver != "" {
		d["approver"] = approver
	}
	_ = p.writeEvent(audit.Event{Agent: p.cfg.AgentID, Role: p.roleInfo().Name, Run: p.cfg.RunID, Event: audit.EventNet,
		Action: "tool:git:push-token", Decision: audit.DecisionAllow, Pid: ev.Pid,
		Reason: "push grant " + id + ": its process tree gets a push token at its first receive-pack request", Detail: d})
}

// pushArgs is what a `git push` command line names.
type pushArgs struct {
	remote   string
	refspecs []string
}

// parsePushArgs reads git push's arguments: the options that take a
// value as the next word are skipped with it; the first other word is
// the repository, the rest refspecs.
func parsePushArgs(args []string) pushArgs {
	var pa pushArgs
	var pos []string
	repoOpt := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "--repo" || a == "-o" || a == "--push-option" || a == "--receive-pack" || a == "--exec":
			if a == "--repo" && i+1 < len(args) {
				repoOpt = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--repo="):
			repoOpt = strings.TrimPrefix(a, "--repo=")
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A flag (or -oVALUE, --opt=value). --tags and --follow-tags
			// name no ref: the tags they add are refused on the wire
			// unless a refspec names them.
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) > 0 {
		pa.remote, pa.refspecs = pos[0], pos[1:]
	} else {
		pa.remote = repoOpt
	}
	return pa
}

// pushRefs are the remote refs refspecs name: the destination of
// src:dst, the source itself without one (HEAD: the current branch);
// deletions (:dst) name their ref too (the wire check refuses the
// deletion). None (or a matching ":"): nil, one unprotected branch.
func pushRefs(refspecs []string, branch string) []string {
	var refs []string
	for _, rs := range refspecs {
		rs = strings.TrimPrefix(rs, "+")
		src, dst, has := strings.Cut(rs, ":")
		if !has {
			dst = src
		}
		if src == "" && dst == "" {
			continue // ":" pushes matching branches
		}
		if dst == "HEAD" || dst == "@" {
			dst = branch
		}
		if dst == "" {
			continue
		}
		switch {
		case strings.HasPrefix(dst, "refs/"):
		case strings.HasPrefix(src, "refs/tags/"):
			dst = "refs/tags/" + dst
		default:
			dst = "refs/heads/" + dst
		}
		if !slices.Contains(refs, dst) {
			refs = append(refs, dst)
		}
	}
	return refs
}

// pushConfig reads the remote and branch settings of the repository's
// config (and -c options): lower-cased keys, the last value wins.
func (p *Judge) pushConfig(g command.Git, gd string) map[string]string {
	out := map[string]string{}
	if gd != "" {
		l := &gitConfigLoader{seen: map[string]bool{}, roots: []string{gd}}
		if p.cfg.Workspace != "" {
			l.roots = append(l.roots, p.cfg.Workspace)
		}
		l.loadFile(filepath.Join(gd, "config"), true, 0)
		for _, e := range l.entries {
			out[strings.ToLower(e.Key)] = e.Value
		}
	}
	for _, o := range g.Globals {
		if o.Name == "-c" {
			if k, v, ok := strings.Cut(o.Value, "="); ok {
				out[strings.ToLower(k)] = v
			}
		}
	}
	return out
}

// currentBranch is the branch HEAD names in the git directory gd ("" on
// a detached HEAD or none).
func currentBranch(gd string) string {
	if gd == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(gd, "HEAD"))
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
	if !ok {
		return ""
	}
	return ref
}

// looksLikeURL reports whether a push's repository argument is a URL or
// path rather than a remote's name.
func looksLikeURL(s string) bool {
	return strings.Contains(s, "://") || strings.ContainsAny(s, "/:")
}

// stripUserinfo drops the credentials of an http(s) URL (a placeholder
// in https://x-access-token:...@host/...).
func stripUserinfo(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
