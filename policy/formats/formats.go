// Package formats links the readers of the foreign policy formats that
// live in packages of their own (Claude Code settings, Codex rules,
// Chorus profiles, Codelia permissions, Forge rule files:
// internal/policyfmt/...) into the loader (policy/load: load.Policy,
// load.Read, load.Files and lint). Neither the core nor the loader
// imports a format (the formats import them), so a program that loads
// policy imports this package for its effect:
//
//	import _ "github.com/agentbox/agentbox/policy/formats"
//
// agentbox's commands and the agentbox package get it through
// internal/plan, policy/remember through its own import. Without it,
// files in those formats are refused, never misread. It exports nothing
// and imports only the format packages (arch_test.go).
package formats

import (
	_ "github.com/agentbox/agentbox/internal/policyfmt/chorus"  // Chorus profiles and agent.json permissions
	_ "github.com/agentbox/agentbox/internal/policyfmt/claude"  // Claude Code settings.json permissions
	_ "github.com/agentbox/agentbox/internal/policyfmt/codelia" // Codelia config.json permissions
	_ "github.com/agentbox/agentbox/internal/policyfmt/codex"   // Codex execpolicy .rules
	_ "github.com/agentbox/agentbox/internal/policyfmt/forge"   // Forge permissions.json rule files
)
