package agentbox

import (
	"os"
	"slices"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/remember"
)

// inboxInfo is what the run tells an approval inbox (--approve inbox):
// who it is, where its audit log and project policy are, its session
// rules (listed and revocable there) and, with each ask, its last
// commands and the files it has changed so far.
func (r *Run) inboxInfo() approval.InboxInfo {
	ws := r.plan.Workspace()
	info := approval.InboxInfo{
		Attach: approval.InboxAttach{
			Run: r.plan.ID, Agent: r.plan.Agent, Role: r.plan.Role.Name, Workspace: ws,
			Command: r.plan.Argv, Audit: r.auditPathForEntry(), Pid: os.Getpid(), Started: time.Now().UTC(),
		},
		Rules: func() []approval.InboxRule {
			var out []approval.InboxRule
			for _, ri := range r.plan.Engine.Session().Rules() {
				out = append(out, approval.InboxRule{ID: ri.ID, Decision: ri.Decision, Match: ri.Matcher, By: ri.By, At: ri.At})
			}
			return out
		},
		Revoke: func(id, by string) error {
			if err := r.RemoveSessionRule(id); err != nil {
				return err
			}
			if r.sink != nil {
				_ = r.sink.emit(audit.Event{Event: audit.EventRevoke, Rule: id, Approver: by,
					Reason: "session rule revoked: the action is decided by the policy again"})
			}
			return nil
		},
		Context: func() (recent, changed []string) {
			if r.sink != nil {
				recent = r.sink.Recent()
			}
			return recent, r.changedSoFar()
		},
	}
	if ws != "" {
		file := policy.ProjectFile(ws)
		info.Attach.Policy = file
		info.Preview = func(req approval.Request) *approval.InboxRemember {
			allow, err, deny := remember.Preview(r.plan.Engine, file, req.Action)
			p := &approval.InboxRemember{File: file, Allow: allow, Deny: deny}
			if err != nil {
				p.AllowNote = err.Error()
			}
			return p
		}
	}
	return info
}

// changedSoFar lists the paths the run has changed (as of its last
// checkpoint, or its review layer now), the last 20.
func (r *Run) changedSoFar() []string {
	var paths []string
	switch {
	case r.plan.Review != nil:
		ch, err := r.Changes()
		if err != nil {
			return nil
		}
		for _, c := range ch {
			paths = append(paths, string(c.Kind)+" "+c.Path)
		}
	case r.plan.Checkpoints != nil:
		steps, _, err := checkpoint.Changes(r.plan.Checkpoints.Dir, r.plan.ID)
		if err != nil {
			return nil
		}
		for _, st := range steps {
			for _, c := range st.Changes {
				e := string(c.Kind) + " " + c.Path
				if !slices.Contains(paths, e) {
					paths = append(paths, e)
				}
			}
		}
	}
	if len(paths) > 20 {
		paths = paths[len(paths)-20:]
	}
	return paths
}
