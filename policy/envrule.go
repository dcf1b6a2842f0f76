package policy

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/programs"
)

// The environment rule: loader and runtime variables (LD_PRELOAD,
// LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH, PYTHONPATH...; the list is in
// internal/command/envinject.go) make a program load code they name before
// or beside its own. The same rule decides the variables a shell line sets
// (Item.Env, for `check`, the hook and the shell analyser) and the real
// environment of a program start (the exec supervisor):
//
//   - a sensitive program (git, network, privilege, deleting or writing
//     tools; programs.Sensitive) with such a variable pointing into a place
//     the sandbox may write, or where it points cannot be told: deny;
//     pointing elsewhere (a system library): ask;
//   - any other program: ask, unless the role lists the variable in
//     inject_env (builds that point LD_LIBRARY_PATH at their own output).

// systemRoots are read-only for every role: the distribution's files.
var systemRoots = []string{"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/nix/store", "/snap"}

// mayBeWritable reports whether code at p may have been written by the
// agent, and names the place: a relative path, a workspace area the role
// can write, or anything outside the workspace that is not a system
// directory (outside a sandbox, as for the hook, /tmp is the agent's too).
func (e *Engine) mayBeWritable(p string) (bool, string) {
	if !filepath.IsAbs(p) {
		return true, "a relative path"
	}
	p = filepath.Clean(p)
	if e.workspace != "" {
		if rel, err := filepath.Rel(e.workspace, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			area, _, _ := strings.Cut(rel, "/")
			var a Access
			switch area {
			case "context":
				a = e.info.FS.Context
			case "target":
				a = e.info.FS.Target
			case "feedback":
				a = e.info.FS.Feedback
			case "agents":
				return true, "agents/" // the agent's own area is writable
			default:
				return false, ""
			}
			if strings.Contains(string(a), "w") {
				return true, area + "/"
			}
			return false, ""
		}
	}
	for _, w := range e.info.FS.ExtraWrite {
		if p == w || strings.HasPrefix(p, strings.TrimSuffix(w, "/")+"/") {
			return true, w
		}
	}
	for _, r := range systemRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return false, ""
		}
	}
	return true, filepath.Dir(p)
}

// DecideEnv applies the environment rule to a start of prog (argv[0] or
// identity name) with environment env (NAME=value) in cwd ("" when not
// known: relative values are then taken as writable). It returns Allow
// when no variable applies.
func (e *Engine) DecideEnv(prog string, env []string, cwd string) Result {
	name := filepath.Base(prog)
	ins := command.Injections(env, programs.Family(name), cwd)
	res := Result{Decision: Allow}
	if len(ins) == 0 {
		return res
	}
	sensitive := programs.Sensitive(name)
	for _, in := range ins {
		var d Decision
		var why string
		where := ""
		writable := in.Unknown
		if in.Unknown {
			where = "a place that cannot be told statically"
		}
		for _, p := range in.Paths {
			if writable {
				break
			}
			if w, area := e.mayBeWritable(p); w {
				writable, where = true, area
			}
		}
		switch {
		case sensitive && writable:
			d = Deny
			why = in.Name + " points into " + where + ", which the sandboxed code can write: " + name + " must run as itself (code loaded this way would act with its permissions and no decision of its own)"
		case sensitive:
			d = Ask
			why = in.Name + "=" + clip(in.Value) + " changes what " + name + " loads"
		case slices.Contains(e.info.InjectEnv, in.Name):
			continue
		default:
			d = Ask
			why = in.Name + " makes " + name + " load code it names (allow it for this role with inject_env: [" + in.Name + "])"
		}
		if d > res.Decision {
			res.Decision, res.Reason, res.Floor = d, why, "environment: "+in.Name
		}
	}
	return res
}
