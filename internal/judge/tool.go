package judge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/policy"
)

// ToolCall is an agent's tool call as its own permission hook reports it
// (Claude Code's PreToolUse: tool_name, tool_input, cwd).
type ToolCall struct {
	Name    string          // Bash, Read, Write, Edit, WebFetch...
	Input   json.RawMessage // the tool's input object
	Cwd     string          // where the call runs ("" unknown)
	PathEnv string          // PATH bare command names of a Bash line are found on
}

// WorkspacePathRule names the built-in refusal of tool paths outside the
// workspace.
const WorkspacePathRule = "hook/workspace-path"

// pathRefusal is a tool path that is outside the workspace or ambiguous.
type pathRefusal struct{ err error }

func (p *pathRefusal) Error() string { return p.err.Error() }

// toolCall is one tool call mapped onto the policy.
type toolCall struct {
	action string               // action string decided and audited
	decide func() policy.Result // how to decide it
}

// DecideTool decides an agent's tool call against eng in workspace ws:
// Bash -> tool:bash:<command> (decided in the call's cwd); Read, Glob,
// Grep, LS -> tool:view:<path>; Write -> tool:create_file:<path>; Edit,
// MultiEdit, NotebookEdit -> tool:str_replace:<path>; WebFetch -> a rule
// naming the URL, else the host as a connection; WebSearch ->
// tool:web_search:<query>; any other tool -> tool:<name>:<input JSON>.
// Paths are made relative to the workspace; one outside it (also through
// a symlink) or with a '..' component is denied by WorkspacePathRule. An
// error is bad input; the action is still named when one could be built.
func DecideTool(eng *policy.Engine, ws boundary.Root, in ToolCall) (string, policy.Result, error) {
	call, err := mapTool(eng, ws, in)
	var refused *pathRefusal
	switch {
	case errors.As(err, &refused):
		// A path outside the workspace is an ordinary deny, not a failure.
		return call.action, policy.Result{Decision: policy.Deny, Action: call.action, Reason: refused.Error(),
			Rule: &policy.RuleRef{ID: WorkspacePathRule, Layer: policy.LayerBuiltin, Source: "builtin:hook"}}, nil
	case err != nil:
		return call.action, policy.Result{}, err
	}
	return call.action, call.decide(), nil
}

// mapTool turns a tool call into an action and a way to decide it. On
// error the returned toolCall still names the action when one could be
// built, for the audit event.
func mapTool(eng *policy.Engine, ws boundary.Root, in ToolCall) (toolCall, error) {
	var ti map[string]any
	if err := json.Unmarshal(in.Input, &ti); err != nil {
		return toolCall{}, fmt.Errorf("tool_input: %v", err)
	}
	str := func(key string, required bool) (string, error) {
		v, ok := ti[key]
		if !ok || v == nil {
			if required {
				return "", fmt.Errorf("tool_input.%s is missing", key)
			}
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("tool_input.%s is not a string", key)
		}
		if required && s == "" {
			return "", fmt.Errorf("tool_input.%s is empty", key)
		}
		return s, nil
	}
	// dirArg is the optional "path" of LS, Grep and Glob: default the cwd,
	// then the workspace.
	dirArg := func() (string, error) {
		p, err := str("path", false)
		if p == "" && err == nil {
			p = cmp.Or(in.Cwd, ws.Abs)
		}
		return p, err
	}
	decide := func(action string) toolCall {
		return toolCall{action: action, decide: func() policy.Result { return eng.Decide(policy.Query{Action: action}) }}
	}
	pathTool := func(tool, key string) (toolCall, error) {
		p, err := str(key, true)
		if err != nil {
			return toolCall{}, err
		}
		r, err := ws.Rel(p, in.Cwd)
		if err != nil {
			return toolCall{action: policy.FormatAction(tool, p)}, &pathRefusal{err}
		}
		return decide(policy.FormatAction(tool, r)), nil
	}
	switch in.Name {
	case "Bash":
		cmd, err := str("command", true)
		if err != nil {
			return toolCall{}, err
		}
		// Decided where the call runs: relative paths in the line
		// against its cwd, bare names through PATH, as the exec
		// supervisor locates them in a run.
		c := policy.ExecContext{Cwd: in.Cwd, Exists: Overwritable}
		if in.Cwd != "" {
			c.LookPath = LookPath(in.PathEnv, in.Cwd)
		}
		return toolCall{action: policy.FormatAction(policy.ToolBash, cmd),
			decide: func() policy.Result { return eng.Decide(policy.Query{Shell: cmd, ExecContext: c}) }}, nil
	case "Read":
		return pathTool(policy.ToolView, "file_path")
	case "NotebookRead":
		return pathTool(policy.ToolView, "notebook_path")
	case "Write":
		return pathTool(policy.ToolCreateFile, "file_path")
	case "Edit", "MultiEdit":
		return pathTool(policy.ToolStrReplace, "file_path")
	case "NotebookEdit":
		return pathTool(policy.ToolStrReplace, "notebook_path")
	case "LS", "Grep":
		p, err := dirArg()
		if err != nil {
			return toolCall{}, err
		}
		r, err := ws.Rel(p, in.Cwd)
		if err != nil {
			return toolCall{action: policy.FormatAction(policy.ToolView, p)}, &pathRefusal{err}
		}
		return decide(policy.FormatAction(policy.ToolView, r)), nil
	case "Glob":
		pattern, err := str("pattern", true)
		if err != nil {
			return toolCall{}, err
		}
		base, err := dirArg()
		if err != nil {
			return toolCall{}, err
		}
		// An absolute pattern names its own base: its literal leading directories.
		if filepath.IsAbs(pattern) {
			base, pattern = splitGlobBase(pattern)
		}
		for _, part := range strings.Split(pattern, "/") {
			if part == ".." {
				return toolCall{action: policy.FormatAction(policy.ToolView, pattern)}, &pathRefusal{fmt.Errorf("pattern %s: '..' components are refused", pattern)}
			}
		}
		r, err := ws.Rel(base, in.Cwd)
		if err != nil {
			return toolCall{action: policy.FormatAction(policy.ToolView, path.Join(base, pattern))}, &pathRefusal{err}
		}
		return decide(policy.FormatAction(policy.ToolView, path.Join(r, pattern))), nil
	case "WebFetch":
		// A rule naming the URL (tool:web_fetch:...) decides it; otherwise
		// its host does, like a connection through the egress proxy (the
		// network block, host: rules; unlisted hosts are denied).
		u, err := str("url", true)
		if err != nil {
			return toolCall{}, err
		}
		byURL := policy.FormatAction("web_fetch", u)
		pu, perr := url.Parse(u)
		if r := eng.Decide(policy.Query{Action: byURL}); r.Rule != nil || perr != nil || pu.Hostname() == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
			return decide(byURL), nil
		}
		port := 443
		if pu.Scheme == "http" {
			port = 80
		}
		if p := pu.Port(); p != "" {
			if n, err := strconv.Atoi(p); err == nil {
				port = n
			}
		}
		host := strings.ToLower(pu.Hostname())
		action := policy.NetAction(host, port)
		return toolCall{action: action, decide: func() policy.Result { return eng.Decide(policy.Query{Host: host, Port: port}) }}, nil
	case "WebSearch":
		q, err := str("query", true)
		if err != nil {
			return toolCall{}, err
		}
		return decide(policy.FormatAction("web_search", q)), nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, in.Input); err != nil {
		return toolCall{}, fmt.Errorf("tool_input: %v", err)
	}
	return decide(policy.FormatAction(in.Name, compact.String())), nil
}

// splitGlobBase splits an absolute glob into its literal leading directory
// and the rest ("/ws/target/**/*.go" -> "/ws/target", "**/*.go").
func splitGlobBase(pattern string) (string, string) {
	parts := strings.Split(pattern, "/")
	i := 0
	for i < len(parts)-1 && !strings.ContainsAny(parts[i], "*?[{\\") {
		i++
	}
	base := strings.Join(parts[:i], "/")
	if base == "" {
		base = "/"
	}
	return base, strings.Join(parts[i:], "/")
}
