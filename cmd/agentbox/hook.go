package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
	"github.com/urfave/cli/v3"
)

// hookCommand is `agentbox hook`: agentbox's policy as an agent's own
// permission hook. The hook is a policy layer only (it sees what the agent
// says it will do); run the agent under `agentbox run` for the kernel
// boundary (docs/architecture.md, "Which layer enforces what").
func hookCommand() *cli.Command {
	return &cli.Command{
		Name:  "hook",
		Usage: "decide an agent's tool calls from inside the agent (permission hooks)",
		Commands: []*cli.Command{
			{
				Name:      "claude-code",
				Usage:     "Claude Code PreToolUse hook: read the tool call on stdin, print allow/ask/deny",
				UsageText: "agentbox hook claude-code --role R [--workspace W] [--policy F]... [--audit F] [--agent ID]",
				Description: "Reads one PreToolUse event ({\"tool_name\",\"tool_input\",...}) on stdin and prints\n" +
					"{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":...}}.\n" +
					"Bash -> tool:bash:<command>; Read, Glob, Grep, LS -> tool:view:<path>; Write -> tool:create_file:<path>;\n" +
					"Edit, MultiEdit, NotebookEdit -> tool:str_replace:<path>; WebFetch -> tool:web_fetch:<url>;\n" +
					"WebSearch -> tool:web_search:<query>; any other tool -> tool:<name>:<input JSON>.\n" +
					"Paths are made relative to the workspace; a path outside it (also through a symlink) or\n" +
					"with a '..' component is denied (rule hook/workspace-path). Every decision is audited.\n" +
					"Fails closed: bad input, a bad policy or an unwritable audit log print a deny and exit 2,\n" +
					"which Claude Code treats as \"block the call\" (exit 1 would let the call through).",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "role", Usage: "role `R` whose policy decides"},
					&cli.StringFlag{Name: "workspace", Usage: "workspace `DIR` paths are relative to (its agentbox.yaml is the project layer); default: the nearest workspace above $CLAUDE_PROJECT_DIR or the call's cwd"},
					&cli.StringSliceFlag{Name: "policy", Usage: "extra policy `FILE` (repeatable)"},
					&cli.StringFlag{Name: "audit", Usage: "audit log `FILE` (default " + audit.DefaultPath() + "; none = do not log, e.g. inside an agentbox run sandbox whose supervisor logs every exec; - is refused: stdout is the hook's answer)"},
					&cli.StringFlag{Name: "agent", Value: "claude-code", Usage: "agent `ID` recorded in audit events"},
					hookCheckpointsFlag(),
				},
				Action: hookClaudeCode,
			},
		},
	}
}

// claudeHookInput is the part of Claude Code's PreToolUse event we read.
type claudeHookInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
}

// claudeHookOutput is the answer Claude Code reads from stdout.
type claudeHookOutput struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// maxHookInput bounds stdin (a Write call carries the whole file content).
const maxHookInput = 64 << 20

// exitHookBlock is the exit status that makes Claude Code block a tool call
// (its "blocking error"). It equals exitUsage, so usage errors block too.
const exitHookBlock = 2

func hookClaudeCode(ctx context.Context, c *cli.Command) error {
	out := cliOut(c)
	agent := c.String("agent")
	role := c.String("role")
	var log *audit.Writer
	// block prints a deny, records it when the log is open, and exits 2.
	block := func(in *claudeHookInput, action, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		writeHookAnswer(out, "deny", "agentbox: "+msg)
		if log != nil {
			e := audit.Event{Event: audit.EventTool, Agent: agent, Role: role, Pid: os.Getppid(),
				Action: action, Decision: audit.DecisionDeny, Reason: msg, Detail: map[string]string{"hook": "claude-code"}}
			if in != nil {
				e.Run, e.Cwd = in.SessionID, in.Cwd
				e.Detail["tool"], e.Detail["tool_use_id"] = in.ToolName, in.ToolUseID
			}
			if err := log.Write(e); err != nil {
				msg += "; also failed to write the audit log: " + err.Error()
			}
		}
		return exitf(exitHookBlock, "hook claude-code: %s", msg)
	}
	if c.Args().Len() > 0 {
		return block(nil, "", "unexpected argument %q", c.Args().First())
	}
	if role == "" {
		return block(nil, "", "--role is required")
	}
	logPath := c.String("audit")
	if logPath == "" {
		logPath = audit.DefaultPath()
	}
	if logPath == "-" {
		return block(nil, "", "--audit -: stdout carries the hook's answer; give a file")
	}
	var err error
	if logPath != "none" {
		if log, err = audit.OpenKeyed(logPath, ""); err != nil {
			return block(nil, "", "--audit %s: %v", logPath, err)
		}
		defer log.Close()
	}

	raw, err := io.ReadAll(io.LimitReader(c.Root().Reader, maxHookInput+1))
	if err != nil {
		return block(nil, "", "read stdin: %v", err)
	}
	in, err := parseClaudeHookInput(raw)
	if err != nil {
		return block(nil, "", "stdin: %v", err)
	}
	// Without --workspace, the workspace is the nearest one above the
	// project Claude Code runs in ($CLAUDE_PROJECT_DIR, else the call's cwd).
	wsDir := c.String("workspace")
	if wsDir == "" {
		start := os.Getenv("CLAUDE_PROJECT_DIR")
		if start == "" {
			start = in.Cwd
		}
		if start == "" {
			return block(nil, "", "no --workspace, and neither $CLAUDE_PROJECT_DIR nor the hook input's cwd says where to look for one")
		}
		if wsDir, err = boundary.FindWorkspace(start); err != nil {
			return block(nil, "", "%v; give --workspace", err)
		}
	}
	ws, err := boundary.NewRoot(wsDir)
	if err != nil {
		return block(nil, "", "--workspace %s: %v", wsDir, err)
	}
	project := os.Getenv("CLAUDE_PROJECT_DIR")
	if project == "" {
		project = in.Cwd
	}
	eng, err := load.Policy(plan.Load(role, plan.Selection{Files: c.StringSlice("policy"), Workspace: ws.Abs, ProjectDir: plan.ProjectDir(ws.Abs, project),
		Checkpoints: c.String("checkpoints") != "off"}))
	if err != nil {
		return block(in, "", "policy: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	action, res, err := judge.DecideTool(eng, ws, judge.ToolCall{Name: in.ToolName, Input: in.ToolInput, Cwd: in.Cwd, PathEnv: os.Getenv("PATH")})
	if err != nil {
		return block(in, action, "%s: %v", in.ToolName, err)
	}
	call := struct{ action string }{action}
	decision := res.Decision.String()
	reason := hookReason(&res)
	e := audit.Event{
		Event: audit.EventTool, Agent: agent, Role: role, Run: in.SessionID,
		Pid: os.Getppid(), Cwd: in.Cwd, Action: call.action, Decision: decision, Reason: res.Reason,
		Detail: map[string]string{"hook": "claude-code", "tool": in.ToolName, "tool_use_id": in.ToolUseID},
	}
	if res.Rule != nil {
		e.Rule, e.Layer = res.Rule.ID, res.Rule.Layer.String()
		e.Detail["source"] = res.Rule.Source
	}
	if res.Floor != "" {
		e.Detail["floor"] = res.Floor
	}
	if log != nil {
		if err := log.Write(e); err != nil {
			// Fail closed: a decision that cannot be audited is not made.
			log = nil
			return block(in, call.action, "audit log %s: %v", logPath, err)
		}
	}
	writeHookAnswer(out, decision, reason)
	return nil
}

func writeHookAnswer(out io.Writer, decision, reason string) {
	var o claudeHookOutput
	o.HookSpecificOutput.HookEventName = "PreToolUse"
	o.HookSpecificOutput.PermissionDecision = decision
	o.HookSpecificOutput.PermissionDecisionReason = reason
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(&o)
}

// hookReason is the text Claude Code shows: to the user for ask, to the
// model for deny. It names the part of a Bash line that decided (not the
// whole line), the rule with its description and what to do instead.
func hookReason(r *policy.Result) string {
	part := r.DecidingPart()
	text := policy.ActionText(part.Action)
	if text == "" {
		text = part.Action
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox: %s %s", r.Decision, hookClip(text))
	switch {
	case part.Rule != nil && part.Rule.Description != "":
		fmt.Fprintf(&b, " (%s)", part.Rule.Cited())
	case part.Rule != nil:
		fmt.Fprintf(&b, " (rule %s: %s)", part.Rule.ID, part.Reason)
	default:
		fmt.Fprintf(&b, " (%s)", part.Reason)
	}
	if part.Floor != "" {
		b.WriteString("; " + part.Floor)
	}
	if text != policy.ActionText(r.Action) && r.Action != "" {
		b.WriteString(" in: " + hookClip(policy.ActionText(r.Action)))
	}
	b.WriteString(part.Rule.InsteadText())
	return b.String()
}

func hookClip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// parseClaudeHookInput decodes and checks one PreToolUse event.
func parseClaudeHookInput(raw []byte) (*claudeHookInput, error) {
	if len(raw) > maxHookInput {
		return nil, fmt.Errorf("input larger than %d bytes", maxHookInput)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty input: expected a PreToolUse JSON object")
	}
	var in claudeHookInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("not a PreToolUse JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	if in.HookEventName != "" && in.HookEventName != "PreToolUse" {
		return nil, fmt.Errorf("hook_event_name %q: this hook answers PreToolUse only", in.HookEventName)
	}
	if in.ToolName == "" {
		return nil, errors.New(`missing "tool_name"`)
	}
	if strings.ContainsAny(in.ToolName, " \t\n:") {
		return nil, fmt.Errorf("tool_name %q: contains blanks or ':'", in.ToolName)
	}
	t := bytes.TrimSpace(in.ToolInput)
	if len(t) == 0 || t[0] != '{' {
		return nil, errors.New(`"tool_input" must be a JSON object`)
	}
	return &in, nil
}
