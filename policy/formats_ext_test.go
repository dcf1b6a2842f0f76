package policy_test

// The formats in packages of their own register with the loader when
// imported; this brings them into the policy package's tests, so the
// corpus and format tests read Claude Code settings and Codex rules as
// a run does (internal/plan imports them for every agentbox command).
import (
	_ "github.com/agentbox/agentbox/internal/policyfmt/claude"
	_ "github.com/agentbox/agentbox/internal/policyfmt/codex"
)
