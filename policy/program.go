package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/programs"
)

// Program locations: a `program:` rule matches a program start by where the
// code it runs lives, not by its name. The location of an exec item is
//
//   - for a shell or script interpreter running a script file (`sh
//     .git/hooks/post-commit`, `bash build.sh`, and what the kernel makes of
//     a `#!` file: the interpreter with the script path as argument), the
//     script's path;
//   - otherwise the program file: the resolved executable the exec supervisor
//     read from /proc/PID/exe (DecideExecAt's exe), or, for a static check,
//     argv[0] when it holds a '/' ("./build/app"), joined to the working
//     directory.
//
// Programs the policy names (any command rule or command glob for their
// name, and git) get no location: they are decided by what they are, so a
// binary called rm or git placed in target/ is still rm or git. The exec
// supervisor also withholds the location of every program it identifies as
// a policed binary by content (a renamed copy of git or curl), see
// sandbox/identity.go.

// programGlob is a `program:` matcher. A pattern starting with "/" is an
// absolute file-system path glob ("/usr/lib/gcc/**"); any other pattern is
// workspace-relative and gitignore-style, like `path:` ("target/**").
type programGlob struct {
	g   *pathGlob
	abs bool
}

func compileProgramGlob(src string) (*programGlob, error) {
	s := strings.TrimSpace(src)
	if s == "" {
		return nil, fmt.Errorf("invalid program glob %q: empty", src)
	}
	abs := strings.HasPrefix(s, "/")
	if abs {
		first, _, _ := strings.Cut(strings.TrimPrefix(s, "/"), "/")
		switch first {
		case "context", "target", "feedback", "agents":
			return nil, fmt.Errorf("invalid program glob %q: a leading '/' makes it an absolute file-system path; write workspace paths without it (%q)", src, strings.TrimPrefix(s, "/"))
		}
	}
	g, err := compilePathGlob(s)
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	return &programGlob{g: g, abs: abs}, nil
}

// match reports whether the program at abs (absolute, clean), rel (its
// workspace-relative form, "" outside the workspace) matches.
func (p *programGlob) match(abs, rel string) bool {
	if p.abs {
		return abs != "" && p.g.match(strings.TrimPrefix(abs, "/"))
	}
	return rel != "" && p.g.match(rel)
}

// isInterpreter reports whether name is a script interpreter (versioned
// names like python3.12 included): it runs the file named by its first
// operand, and a `#!` script exec'd by the kernel arrives as such an argv.
func isInterpreter(name string) bool { return programs.Is(name, programs.Interpreter) }

// isShell reports whether name is a shell (shell options precede the script).
func isShell(name string) bool { return programs.Is(name, programs.Shell) }

// scriptOperand returns the script file an interpreter argv runs, or ""
// when it runs inline code, reads standard input, or cannot be told.
func scriptOperand(argv []string) string {
	name := baseName(argv[0])
	if !isInterpreter(name) || len(argv) < 2 {
		return ""
	}
	if !isShell(name) {
		// Other interpreters: only `interp FILE ...`.
		if strings.HasPrefix(argv[1], "-") {
			return ""
		}
		return argv[1]
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--" || a == "-":
			if a == "-" || i+1 >= len(argv) {
				return ""
			}
			return argv[i+1]
		case a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
			// --norc, --noprofile, --posix, --login, --restricted...
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, c := range a[1:] {
				switch {
				case c == 'c' || c == 's' || c == 'i':
					return "" // inline code, stdin, interactive
				case c == 'o' || c == 'O':
					i++ // takes an option name
				case !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
					return ""
				}
			}
		default:
			return a
		}
	}
	return ""
}

// namedProgram reports whether some rule names this program (command
// rules, command globs, exec/bash regexes and globs whose literal prefix is
// the program and a space, git): such programs are decided by name only.
func (e *Engine) namedProgram(name string) bool {
	return name == "git" || len(e.cmdIndex[name]) > 0 || len(e.globIndex[name]) > 0 ||
		len(e.actIndex[ToolExec][name]) > 0 || len(e.actIndex[ToolBash][name]) > 0
}

// absIn resolves p against dir ("" when p is relative and dir is not an
// absolute directory).
func absIn(p, dir string) string {
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		return path.Clean(p)
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	return path.Join(dir, p)
}

// programRel maps an absolute program path into the workspace ("" when it is
// outside), trying the workspace as given and with symlinks resolved.
func (e *Engine) programRel(abs string) string {
	if abs == "" || e.workspace == "" {
		return ""
	}
	for _, ws := range []string{e.workspace, e.workspaceReal} {
		if ws == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(abs, ws); ok && strings.HasPrefix(rest, "/") && len(rest) > 1 {
			return rest[1:]
		}
	}
	return ""
}

// itemLocation returns the program location of exec item it (see the
// package comment above). argv is the program start the items came from
// (nil for shell lines), exe its resolved executable ("" if unknown) and
// cwd the directory relative paths are resolved against ("" to use
// absolute paths only).
func (e *Engine) itemLocation(it *command.Item, first bool, argv []string, cwd, exe string, look func(string) string) string {
	if len(it.Argv) == 0 || !strings.HasPrefix(it.Action, "tool:exec:") {
		return ""
	}
	if loc := e.argvLocation(it, first, argv, cwd, exe); loc != "" {
		return loc
	}
	return e.wordLocation(it, look)
}

// argvLocation is itemLocation from the program start's own argv and exe.
func (e *Engine) argvLocation(it *command.Item, first bool, argv []string, cwd, exe string) string {
	name := baseName(it.Argv[0])
	if s := scriptOperand(it.Argv); s != "" {
		return absIn(s, cwd)
	}
	if e.namedProgram(name) || isInterpreter(name) {
		return "" // an interpreter is located by its script only
	}
	if first && exe != "" && len(argv) > 0 && baseName(argv[0]) == name {
		return absIn(exe, "")
	}
	// Find the item's words in the original argv (the program a wrapper
	// runs: `env X=1 ./build/app`), and take the path written there.
	for j := 0; j < len(argv); j++ {
		w := argv[j]
		if !strings.Contains(w, "/") || baseName(w) != name || len(argv)-j < len(it.Argv) {
			continue
		}
		same := true
		for k := 1; k < len(it.Argv); k++ {
			if argv[j+k] != it.Argv[k] {
				same = false
				break
			}
		}
		if same {
			return absIn(w, cwd)
		}
	}
	return ""
}

// wordLocation locates an exec item of a shell line by its command word,
// as the shell would find it: an absolute path as written; a relative one
// ("./hello", "bin/tool") against the directory the line shows the command
// runs in (Item.Cwd: the parse directory and its cd's; unknown after a cd
// to a dynamic place, and then nothing); a bare name through look (a PATH
// search the caller does, e.g. node_modules/.bin of an npm script). The
// same rules give `agentbox check --shell` and the exec supervisor the same
// location for the same line, directory and PATH.
func (e *Engine) wordLocation(it *command.Item, look func(string) string) string {
	if len(it.Argv) == 0 || !strings.HasPrefix(it.Action, "tool:exec:") {
		return ""
	}
	if s := scriptOperand(it.Argv); s != "" {
		if path.IsAbs(s) || it.Cwd == "" {
			return absIn(s, "")
		}
		return absIn(s, it.Cwd)
	}
	name := baseName(it.Argv[0])
	if e.namedProgram(name) || isInterpreter(name) {
		return ""
	}
	// The command word: the first word of the source that is not an
	// assignment (LD_LIBRARY_PATH=build ./app).
	w := ""
	for _, f := range strings.Fields(it.Text) {
		if n, _, ok := strings.Cut(f, "="); ok && n != "" && !strings.ContainsAny(n, "/'\"$`\\") {
			continue
		}
		w = f
		break
	}
	if w == "" || baseName(w) != name || strings.ContainsAny(w, "'\"$`\\*?[{~") {
		return ""
	}
	switch {
	case strings.HasPrefix(w, "/"):
		return path.Clean(w)
	case strings.Contains(w, "/"):
		if it.Cwd == "" {
			return ""
		}
		return path.Join(it.Cwd, w)
	case look != nil:
		if p := look(w); path.IsAbs(p) {
			return path.Clean(p)
		}
	}
	return ""
}

// ExecContext is what a caller knows about a program start or shell line
// beyond its words.
type ExecContext struct {
	// Cwd is the working directory ("" if unknown).
	Cwd string
	// Exe is the program's resolved executable (the exec supervisor's
	// /proc/PID/exe; "" if unknown or identified as a policed binary).
	Exe string
	// LookPath finds a bare command name as the shell would with the
	// process's PATH (absolute result, "" if not found); nil: bare names
	// get no location. The engine itself does no I/O.
	LookPath func(name string) string
	// Exists reports whether the absolute path names a file a write would
	// overwrite (non-empty content or a symlink); nil: unknown. With it a
	// write onto such a file is also decided as tool:overwrite:PATH, and
	// `git checkout X` of an existing path as the `git restore X` it is.
	Exists func(path string) bool
	// Interp are the words the kernel runs a script with when Argv[0]
	// names one: its #! line's interpreter and argument, for every level
	// of a chain (["/usr/bin/env", "node"] for npm). The program start is
	// then decided as the script — Argv, named by the script, exactly as
	// `agentbox check` and a shell line name it — and as what the kernel
	// runs (Interp followed by Argv), whose items pass unless a rule names
	// them or a floor holds them (a role's rule on the interpreter still
	// applies; `#!/usr/bin/curl -K` is still curl); the stricter wins. nil:
	// Argv[0] is not a script, or that is unknown.
	Interp []string
	// Aliases are other names of Argv[0]'s file — the links it was found
	// through and their targets (/usr/bin/npx → npx-cli.js; a link the
	// agent made to /usr/bin/npm): a rule naming any of them decides too.
	Aliases []string
}

// execItems returns the items one program start is decided on and their
// program locations: argv's own, then (see ExecContext.Interp, Aliases)
// each alias's first item and what the kernel runs, transparent.
func (e *Engine) execItems(argv []string, c ExecContext) ([]command.Item, []string) {
	items := e.withOverwrites(fromArgv(argv, c.Cwd), c)
	locs := e.execLocations(items, argv, c)
	if len(c.Interp) == 0 && len(c.Aliases) == 0 {
		return items, locs
	}
	for _, a := range c.Aliases {
		if a == "" || baseName(a) == baseName(argv[0]) {
			continue
		}
		alias := append([]string{a}, argv[1:]...)
		more := fromArgv(alias, c.Cwd)[:1]
		if more[0].Floor == command.FloorNone {
			more[0].Wrapper = true
		}
		items = append(items, more...)
		locs = append(locs, e.execLocations(more, alias, ExecContext{Cwd: c.Cwd})...)
	}
	if len(c.Interp) > 0 {
		script := argv[0]
		if c.Exe != "" {
			script = c.Exe // argv[0] may be the script's name only
		}
		kernel := append(append(append([]string(nil), c.Interp...), script), argv[1:]...)
		more := e.withOverwrites(fromArgv(kernel, c.Cwd), c)
		for i := range more {
			if more[i].Argv != nil && more[i].Floor == command.FloorNone {
				more[i].Wrapper = true
			}
		}
		items = append(items, more...)
		locs = append(locs, e.execLocations(more, kernel, ExecContext{Cwd: c.Cwd, LookPath: c.LookPath})...)
	}
	return items, locs
}

// decideExec decides one program start: argv[0] is the program's real
// name, c its directory, executable and PATH lookup.
func (e *Engine) decideExec(argv []string, c ExecContext) Result {
	if len(argv) == 0 {
		return Result{Decision: Deny, Action: "tool:exec:", Reason: "empty argv"}
	}
	items, locs := e.execItems(argv, c)
	var res Result
	if len(items) == 1 {
		res = e.decideItemAt(&items[0], locs[0], nil)
	} else {
		res = e.compoundAt(FormatAction(ToolExec, command.Join(argv)), items, locs, nil, nil, nil)
	}
	if len(e.formats) == 0 {
		return res
	}
	// A shell running a line is the agent's shell tool call for the
	// formats (their tool:bash:LINE); any other program start gets their
	// matching rules only.
	if line, ok := shellLineOf(argv); ok {
		return e.applyFormats(res, FormatQuery{Action: FormatAction(ToolBash, line), Line: line, ToolCall: true})
	}
	return e.applyFormats(res, FormatQuery{Action: res.Action, Line: command.Join(argv), Argv: argv})
}

// explainExec is explain for one program start.
func (e *Engine) explainExec(argv []string, c ExecContext) Explanation {
	ex := Explanation{Result: e.decideExec(argv, c)}
	if len(argv) > 0 {
		items, locs := e.execItems(argv, c)
		ex.Segments = e.explainItemsAt(items, locs, nil)
	}
	return ex
}

func (e *Engine) execLocations(items []command.Item, argv []string, c ExecContext) []string {
	locs := make([]string, len(items))
	for i := range items {
		locs[i] = e.itemLocation(&items[i], i == 0, argv, c.Cwd, c.Exe, c.LookPath)
	}
	return locs
}

func (e *Engine) shellLocations(items []command.Item, look func(string) string) []string {
	locs := make([]string, len(items))
	for i := range items {
		locs[i] = e.wordLocation(&items[i], look)
	}
	return locs
}

// actionLocations gives the items of an exec or git action string their
// program locations: only absolute paths count (an action has no working
// directory).
func (e *Engine) actionLocations(tool, detail string, items []command.Item) []string {
	if tool == ToolExec && PlainWords(detail) {
		return e.execLocations(items, strings.Fields(detail), ExecContext{})
	}
	return e.shellLocations(items, nil)
}

// withOverwrites adds, where c.Exists says so, the items a write onto an
// existing file amounts to: tool:overwrite:PATH beside a create_file item
// that does not append, and tool:git:restore X beside `git checkout X`
// whose single operand is an existing path (the parser alone takes it for
// a branch). Only when the policy names the overwrite tool: a role that
// does not ask about overwriting sees the items it always did. Decide and
// Explain both go through it.
func (e *Engine) withOverwrites(items []command.Item, c ExecContext) []command.Item {
	if c.Exists == nil || !e.overwriteRules {
		return items
	}
	var out []command.Item
	for i := range items {
		it := &items[i]
		out = append(out, *it)
		tool, detail, err := ParseAction(it.Action)
		if err != nil {
			continue
		}
		switch {
		case tool == ToolCreateFile && !it.Appends && strings.HasPrefix(detail, "/") && c.Exists(detail):
			ow := command.Item{Action: FormatAction(ToolOverwrite, detail), Categories: []string{"write", "destructive"}, Pos: it.Pos, Text: it.Text}
			out = append(out, ow)
		case tool == ToolGit && len(it.Argv) == 3 && it.Argv[1] == "checkout" && !strings.HasPrefix(it.Argv[2], "-"):
			dir := it.Cwd
			if dir == "" {
				dir = c.Cwd
			}
			p := it.Argv[2]
			if !strings.HasPrefix(p, "/") && dir != "" {
				p = dir + "/" + p
			}
			if strings.HasPrefix(p, "/") && c.Exists(p) {
				out = append(out, command.Item{Action: FormatAction(ToolGit, "restore "+it.Argv[2]), Argv: []string{"git", "restore", it.Argv[2]},
					Categories: []string{"write", "destructive"}, Pos: it.Pos, Text: it.Text, Cwd: it.Cwd})
			}
		}
	}
	return out
}
