package policy

import "github.com/agentbox/agentbox/internal/command"

// The command parser (internal/command) turns argv and shell lines into Items;
// these indirections name exactly what the engine calls.
var (
	fromArgv     = command.FromArgv
	parseShell   = command.ParseShell
	parseShellIn = command.ParseShellIn
)
