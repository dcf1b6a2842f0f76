package plan

// The foreign policy formats in packages of their own register with the
// policy loader when imported (policy.RegisterFormat). Every agentbox
// command loads policy through this package (Load), so importing them
// here is what lets run, check, explain, hook, replay and policy validate
// read Claude Code settings and Codex rules.
import (
	_ "github.com/agentbox/agentbox/internal/policyfmt/claude"
	_ "github.com/agentbox/agentbox/internal/policyfmt/codex"
)
