// Package command understands command lines the way a shell and the programs
// it starts would: it parses shell lines (mvdan.cc/sh/v3), looks through
// wrappers (env, nice, timeout, sudo, xargs, find -exec, sh -c ...), parses
// git's global options to find the real subcommand, and classifies
// interpreters and write/exec options. The result is a flat list of Items,
// each an action string for the policy engine plus a floor the decision may
// not go below. It makes no decisions itself.
package command

// Floor is the least strict decision an Item may receive, whatever the rules
// say. It mirrors policy.Decision's order without importing it.
type Floor int

// Floors, least strict first.
const (
	// FloorNone: the rules decide freely.
	FloorNone Floor = iota
	// FloorAskUnlessExplicit: at least ask, unless an allow rule more
	// specific than the bare program name matches this Item's action
	// (an interpreter with inline code, eval of a literal, source FILE).
	FloorAskUnlessExplicit
	// FloorAsk: at least ask, whatever the rules say (dynamic command
	// names, unparseable input, git config that makes git run programs).
	FloorAsk
	// FloorDeny: always deny (reserved for input that cannot be judged
	// safely at all, e.g. a NUL byte in an argument).
	FloorDeny
)

// Pos is a position in a shell line, 1-based; zero for argv input.
type Pos struct {
	Line, Col int
}

// Item is one thing a command line would do, as an action string
// ("tool:exec:rm -rf x", "tool:git:push origin main", "tool:create_file:out.txt",
// "tool:delete:target/a.go").
type Item struct {
	Action string // full action string, "tool:<tool>:<detail>"
	// Argv is the simple command's words for exec/git items (after wrapper
	// removal, git: starting at "git"); nil for path items.
	Argv []string
	// Categories are Forge categories that apply: "read", "write",
	// "execute", "network", "destructive".
	Categories []string
	Floor      Floor
	// FloorReason says why the floor is set ("dynamic command name $cmd").
	FloorReason string
	Pos         Pos
	// Text is the source text of the simple command this item came from.
	Text string
	// Wrapper marks the item of a transparent wrapper (env, nice, nohup,
	// timeout, stdbuf, time, command, builtin, exec, setsid, flock, watch,
	// xargs, ionice, chrt, taskset, busybox) whose inner command is emitted
	// as items of its own right after it. Its Action holds the wrapper's own
	// argv up to the inner command ("tool:exec:timeout 10"). An engine may
	// let a Wrapper item pass when no rule names it, since the inner items
	// carry the decision; privilege or namespace changers (sudo, doas, su,
	// pkexec, chroot, unshare) and tools with their own effects (find, rg,
	// gdb, strace) are never Wrapper items, nor is an item with a Floor.
	Wrapper bool
}
