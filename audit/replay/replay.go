// Package replay re-decides a recorded audit log under a policy: which of
// the log's decisions a new or changed policy would change ("what would
// this rule have done last week"), with the transitions counted.
package replay

import (
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/internal/programs"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// Options configure Replay.
type Options struct {
	// Policies are the policy files to decide with, layered on the role as
	// `run --policy` would.
	Policies []string
	// Role overrides the role each event was decided under ("" keeps it).
	Role string
	// Workspace is used for the project layer and paths when the log's
	// launch event does not name one ("" to rely on the log).
	Workspace string
	// UserPolicy includes the user policy layer (default: not, so a replay
	// is reproducible).
	UserPolicy bool
}

// Change is one event whose decision the new policy changes.
type Change struct {
	Seq     uint64 `json:"seq"`
	Run     string `json:"run,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Action  string `json:"action"`
	Was     string `json:"was"` // allow, ask or deny (the policy's answer then)
	Now     string `json:"now"`
	Logged  string `json:"logged"` // the logged decision (ask_approved...)
	NowRule string `json:"now_rule,omitempty"`
	Why     string `json:"why"`
}

// Report summarises a replay.
type Report struct {
	Decided int      `json:"decided"` // events re-decided
	Changed []Change `json:"changed"`
	// Counts are the changes by transition ("allow->deny": 3).
	Counts map[string]int `json:"counts"`
	// Skipped counts events that could not be re-decided (no role, a role
	// the policy does not have), with the first reason.
	Skipped    int    `json:"skipped"`
	SkipReason string `json:"skip_reason,omitempty"`
}

// policyAnswer maps a logged decision to the policy's answer then: every
// ask_* outcome was an ask.
func policyAnswer(logged string) string {
	switch {
	case logged == audit.DecisionAllow:
		return "allow"
	case logged == audit.DecisionDeny:
		return "deny"
	case strings.HasPrefix(logged, "ask"):
		return "ask"
	}
	return ""
}

// Replay re-decides every exec, git and tool event of the log read from r
// with the given policy, using the inputs the live decision had: the argv
// (with the program's identity when the supervisor recorded one), the
// working directory, the resolved executable (for program: rules; not for
// policed programs, which are decided by what they are), and the loader
// and runtime variables recorded with the event; a hook's file-tool call
// is first judged against the workspace as the hook did (a path outside
// it is denied by hook/workspace-path whatever the policy: hookPath). It
// reports every event whose decision changes. Git aliases and repository configuration are
// not replayed: the repository may have changed since.
func Replay(r io.Reader, o Options) (*Report, error) {
	rep := &Report{Counts: map[string]int{}, Changed: []Change{}}
	engines := map[string]*policy.Engine{}
	unknown := map[string]bool{}      // role and workspace keys whose role no layer defines
	workspaces := map[string]string{} // run -> workspace from its launch event
	// run -> whether it took checkpoints (its launch event names the store):
	// its undoable asks were allowed, and are re-decided so
	checkpointed := map[string]bool{}
	skip := func(why string) {
		rep.Skipped++
		if rep.SkipReason == "" {
			rep.SkipReason = why
		}
	}
	err := audit.Read(r, audit.Filter{}, func(e audit.Event) error {
		if e.Event == audit.EventLaunch && e.Detail["workspace"] != "" {
			workspaces[e.Run] = e.Detail["workspace"]
		}
		if e.Event == audit.EventLaunch {
			checkpointed[e.Run] = e.Detail["checkpoints"] != ""
		}
		was := policyAnswer(e.Decision)
		if was == "" || (e.Event != audit.EventExec && e.Event != audit.EventGit && e.Event != audit.EventTool) {
			return nil
		}
		role := o.Role
		if role == "" {
			role = e.Role
		}
		if role == "" {
			skip(fmt.Sprintf("event %d has no role (give --role)", e.Seq))
			return nil
		}
		ws := workspaces[e.Run]
		if ws == "" {
			ws = o.Workspace
		}
		if ws == "" && e.Event == audit.EventTool && filepath.IsAbs(e.Cwd) {
			// A hook's call has no launch event: without --workspace the
			// hook judged it in the workspace above the call's cwd.
			if found, err := boundary.FindWorkspace(e.Cwd); err == nil {
				ws = found
			}
		}
		cp := checkpointed[e.Run]
		key := role + "\x00" + ws + "\x00" + fmt.Sprint(cp)
		if unknown[key] {
			skip("")
			return nil
		}
		eng := engines[key]
		if eng == nil {
			var err error
			eng, err = load.Policy(plan.Load(role, plan.Selection{Workspace: ws, Files: o.Policies, NoUserFile: !o.UserPolicy, NoDiscover: true, Checkpoints: cp}))
			var ure *policy.UnknownRoleError
			if errors.As(err, &ure) {
				unknown[key] = true
				// a role from a policy file the replay was not given (run
				// --policy examples/...yaml --role builder): not re-decided
				skip(fmt.Sprintf("event %d: role %q is not in the replayed policy (give its file with --policy, or --role)", e.Seq, role))
				return nil
			}
			if err != nil {
				return err // a bad policy file: the replay cannot be trusted
			}
			engines[key] = eng
		}
		res := replayDecide(eng, &e, ws)
		rep.Decided++
		now := strings.ToLower(res.Decision.String())
		if now == was {
			return nil
		}
		c := Change{Seq: e.Seq, Run: e.Run, Agent: e.Agent, Action: e.Action, Was: was, Now: now, Logged: e.Decision, Why: res.Reason}
		if res.Rule != nil {
			c.NowRule = res.Rule.ID
		}
		rep.Changed = append(rep.Changed, c)
		rep.Counts[was+"->"+now]++
		return nil
	})
	return rep, err
}

// replayDecide re-decides one logged event; ws is the workspace it was
// judged in ("" unknown).
func replayDecide(eng *policy.Engine, e *audit.Event, ws string) policy.Result {
	if e.Event == audit.EventTool {
		action, refused := hookPath(e, ws)
		if refused != nil {
			return *refused
		}
		return eng.Decide(policy.Query{Action: action})
	}
	if len(e.Argv) == 0 {
		return eng.Decide(policy.Query{Action: e.Action})
	}
	argv := append([]string(nil), e.Argv...)
	prog := e.Detail["program"]
	if prog == "" {
		prog = programs.Family(argv[0])
		if i := strings.LastIndexByte(argv[0], '/'); i >= 0 {
			prog = argv[0][i+1:]
		}
	}
	var res policy.Result
	if e.Event == audit.EventGit {
		argv[0] = "git"
		res = eng.Decide(policy.Query{Argv: argv, ExecContext: policy.ExecContext{Cwd: e.Cwd}})
	} else {
		if e.Detail["program"] != "" {
			argv[0] = e.Detail["program"]
		}
		exe := e.Exe
		if programs.Is(prog, programs.Policed) {
			exe = ""
		}
		c := policy.ExecContext{Cwd: e.Cwd, Exe: exe}
		if k := scriptArg(argv, e.Detail["script"]); k > 0 {
			// A #! script: decided as the script with the kernel's
			// interpreter words, as the run decides it now.
			c.Interp, argv = argv[:k], argv[k:]
			c.Exe = argv[0]
			if !strings.HasPrefix(c.Exe, "/") && e.Cwd != "" {
				c.Exe = path.Join(e.Cwd, c.Exe)
			}
		}
		res = eng.Decide(policy.Query{Argv: argv, ExecContext: c})
	}
	if env := strings.Fields(e.Detail["env"]); len(env) > 0 {
		if r := eng.DecideEnv(argv[0], env, e.Cwd); r.Decision > res.Decision {
			res = r
		}
	}
	return res
}

// workspacePathRule is judge.WorkspacePathRule (internal/judge is not
// imported for one name; TestReplayHookOutsideWorkspace holds them equal).
const workspacePathRule = "hook/workspace-path"

// hookPath re-applies to a logged file-tool call (view, create_file,
// str_replace) the check the hook made before any policy (internal/judge
// DecideTool): a path outside the workspace ws, also through a symlink,
// or with a '..' component is denied by hook/workspace-path whatever the
// policy says. It returns the action to decide (a path as given that is
// inside ws becomes workspace-relative, as the hook made it), or the
// refusal. A workspace-relative path the hook accepted is decided as
// logged. When ws is unknown or gone, a call the hook refused stays
// refused: nothing here can say it was inside.
func hookPath(e *audit.Event, ws string) (string, *policy.Result) {
	tool, detail, err := policy.ParseAction(e.Action)
	if err != nil || (tool != policy.ToolView && tool != policy.ToolCreateFile && tool != policy.ToolStrReplace) {
		return e.Action, nil
	}
	wasRefused := e.Rule == workspacePathRule
	if !wasRefused && !filepath.IsAbs(detail) && !hasDotDot(detail) {
		return e.Action, nil // made workspace-relative by the hook: inside
	}
	refuse := func(why string) *policy.Result {
		return &policy.Result{Decision: policy.Deny, Action: e.Action, Reason: why,
			Rule: &policy.RuleRef{ID: workspacePathRule, Layer: policy.LayerBuiltin, Source: "builtin:hook"}}
	}
	if ws != "" {
		if root, err := boundary.NewRoot(ws); err == nil {
			rel, err := root.Rel(detail, e.Cwd)
			if err != nil {
				return e.Action, refuse(err.Error())
			}
			return policy.FormatAction(tool, rel), nil
		}
	}
	if wasRefused {
		return e.Action, refuse("refused by " + workspacePathRule + " when decided, and the workspace is not at hand to judge the path again (give --workspace): " + e.Reason)
	}
	return e.Action, nil
}

// hasDotDot reports whether a slash-separated path has a ".." component.
func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// scriptArg is where a run's exec event's script path (detail "script")
// stands in the kernel's argv: the first word after the interpreter's
// that names it, else 0 (no script, or an event written before scripts
// were recorded; such an event's argv is the kernel's, and the engine
// finds the script an interpreter runs by itself).
func scriptArg(argv []string, script string) int {
	if script == "" {
		return 0
	}
	for i := 1; i < len(argv); i++ {
		if argv[i] == script {
			return i
		}
	}
	return 0
}
