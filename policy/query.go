package policy

// Query is one question to the engine. Exactly one kind is asked, chosen
// by the first field set in this order: Argv (one program start, argv[0]
// its real name), Shell (a whole shell line), Host (a connection through
// the egress proxy to Host:Port), else Action (an action string
// tool:<tool>:<detail>; an invalid one is denied). ExecContext locates
// relative paths and programs for Argv and Shell, and for an Action of
// tool:bash.
type Query struct {
	Action string
	Argv   []string
	Shell  string
	Host   string
	Port   int
	ExecContext
}

// Decide answers q. Command input is understood first: an argv or an
// exec/git action is split into the programs it runs (looking through
// wrappers), a shell line is parsed; every resulting item is decided and
// the strictest wins. A connection to a host no rule names is denied.
func (e *Engine) Decide(q Query) Result {
	switch {
	case q.Argv != nil:
		return e.decideExec(q.Argv, q.ExecContext)
	case q.Shell != "":
		return e.decideShell(FormatAction(ToolBash, q.Shell), q.Shell, q.ExecContext, nil)
	case q.Host != "":
		return e.decide(NetAction(q.Host, q.Port), nil)
	}
	if q.Cwd != "" || q.LookPath != nil {
		if line, ok := cutBash(q.Action); ok {
			return e.decideShell(q.Action, line, q.ExecContext, nil)
		}
	}
	return e.decide(q.Action, nil)
}

// Explain decides q like Decide and records every rule that matched each
// part of it.
func (e *Engine) Explain(q Query) Explanation {
	switch {
	case q.Argv != nil:
		return e.explainExec(q.Argv, q.ExecContext)
	case q.Shell != "":
		return e.explain(FormatAction(ToolBash, q.Shell), q.ExecContext)
	case q.Host != "":
		return e.explain(NetAction(q.Host, q.Port), q.ExecContext)
	}
	return e.explain(q.Action, q.ExecContext)
}

func cutBash(action string) (string, bool) {
	const p = "tool:bash:"
	if len(action) >= len(p) && action[:len(p)] == p {
		return action[len(p):], true
	}
	return "", false
}
