// Package command understands command lines the way a shell and the programs
// it starts would: it parses shell lines (mvdan.cc/sh/v3), looks through
// wrappers (env, nice, timeout, sudo, xargs, find -exec, sh -c ...), parses
// git's global options to find the real subcommand, and classifies
// interpreters and write/exec options. The result is a flat list of Items,
// each an action string for the policy engine plus a floor the decision may
// not go below. It makes no decisions itself, and never touches the file
// system: everything is judged from the text. Of this module it imports
// only internal/programs and internal/shellquote (arch_test.go); it sits
// under internal/ because only the policy engine, the judge and the plan
// need it.
//
// Entry points: FromArgv (one program start, the supervisor's hot path),
// ParseShell / ParseShellIn (a shell line), ParseGit (git's global options).
//
// Conventions of the Items:
//
//   - Program starts are "tool:exec:<argv>", each word shell-quoted only
//     when needed (Quote); argv[0] is reduced to its base name, in the
//     action and in Item.Argv ("/usr/bin/rm -rf x" is "tool:exec:rm -rf x").
//   - git runs are "tool:git:<subcommand> <args>" with the global options
//     (-C, -c, --git-dir, ...) parsed off; Item.Argv keeps the whole argv
//     (starting at "git"). Unknown subcommands (possible aliases) are kept
//     as written. Force-push spellings stay "push"; the args show them.
//   - A wrapper (env, nice, timeout, sudo, xargs, sh -c, ...) gives an item
//     for its own words up to the inner command ("tool:exec:timeout 10";
//     for sh -c and find the whole argv), then the inner command's items.
//     Transparent wrappers are marked Item.Wrapper.
//   - Words whose value is not known statically ($x, $(cmd), globs, brace
//     expansion, a leading ~) keep their source text unquoted ("ls $HOME");
//     run-time placeholders are "{}" (find -exec, xargs -I, fd -x),
//     "{args}" (arguments xargs appends) and "{file}" (rg --pre). Such a
//     word as a command name, a wrapper's inner command or git's subcommand
//     makes the item FloorAsk.
//   - Paths: "tool:create_file:<path>" for redirection targets and files a
//     tool writes (tee, sed -i, sort -o, cp/mv/ln/install destinations, dd
//     of=, curl -o, git --output, ...), "tool:delete:<path>" for what rm,
//     rmdir, unlink, shred, git rm, git clean, find -delete and mv (source,
//     and the file moved over) remove. Paths are cleaned and joined to the
//     working directory when it is known (FromArgv's cwd, ParseShellIn's
//     cwd, an earlier "cd DIR" in the line); otherwise they stay as written.
//     Writes to /dev/null, /dev/stdout, /dev/stderr and /dev/tty are not
//     items; /dev/tcp and /dev/udp paths have the network category.
//   - In shell lines, builtins that only change the shell's own state (cd,
//     pushd, popd, :, true, false, read, set, shift, exit, test, [ ...)
//     give no item; their substitutions and redirections still do.
//   - Items from a script inside an argument (sh -c, eval, su -c, watch,
//     trap, git submodule foreach, ...) have the position of the outer
//     command and the inner command as Text.
//
// Hostile input stays bounded: scripts over 256 KiB are not parsed,
// statement nesting beyond 100 and wrapper/script nesting beyond 16 give
// one FloorAsk item instead of more analysis.
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
	// Cwd is the absolute directory an exec item's command runs in, as far
	// as the line shows it (the parse directory, then its `cd`s); "" when
	// unknown (no directory given, or a cd to a dynamic or relative place).
	// A relative program path ("./hello") is located against it.
	Cwd string
	// Appends marks a create_file item that only appends to its file (>>,
	// tee -a): it never overwrites what is there.
	Appends bool
	// Wrapper marks the item of a transparent wrapper (env, nice, nohup,
	// timeout, stdbuf, time, command, builtin, exec, setsid, flock, watch,
	// xargs, ionice, chrt, taskset, busybox) whose inner command is emitted
	// as items of its own right after it. Its Action holds the wrapper's own
	// argv up to the inner command ("tool:exec:timeout 10"). An engine may
	// let a Wrapper item pass when no rule names it, since the inner items
	// carry the decision; privilege or namespace changers (sudo, doas, su,
	// pkexec, chroot, unshare) and tools with their own effects (find, rg,
	// gdb, strace) are never Wrapper items, nor is an item with a Floor,
	// nor a wrapper with nothing to wrap ("timeout 10", "ionice -p 42").
	Wrapper bool
	// Env are the loader and runtime variables (LD_PRELOAD, PYTHONPATH...;
	// see envinject.go) the line sets for this program, NAME=value ('$' in
	// a value that is not known statically). The policy engine decides
	// them with the same rule the exec supervisor applies to the real
	// environment.
	Env []string
}
