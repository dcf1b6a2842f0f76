package command

import (
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/programs"
)

// hShell: sh/bash/zsh/... [opts] (-c SCRIPT [NAME ARGS] | FILE [ARGS] | (stdin)).
// A -c script is parsed recursively; a shell reading commands from stdin
// (a pipe, a heredoc, a terminal) is FloorAsk, since what it runs is not on
// the command line.
func hShell(a *analyzer, w words, cwd string, depth int) {
	if w.len() == 2 && !w.flagged(1) && (w.s[1] == "--version" || w.s[1] == "--help") {
		// bash --version: prints and exits, reading no commands.
		a.execItem(w, catExecute, true)
		return
	}
	cflag, stdin, commandGiven := false, false, false
	problem := ""
	var inline []string // fish -C/--init-command, --command=X
	i := 1
loop:
	for i < w.len() {
		s := w.s[i]
		if w.flagged(i) {
			if !cflag && strings.HasPrefix(s, "-") {
				problem = "dynamic shell option " + s
			}
			break
		}
		switch {
		case s == "--" || s == "-":
			i++
			break loop
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s[2:], "=")
			switch name {
			case "rcfile", "init-file":
				if !has {
					i++
				}
				problem = "--" + name + " reads commands from a file"
			case "command":
				cflag = true
				if has {
					inline = append(inline, v)
					commandGiven = true
				}
			case "init-command":
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
				}
				inline = append(inline, v)
			}
			i++
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			takes := 0
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'c':
					cflag = true
				case 's':
					stdin = true
				case 'o', 'O':
					takes++
				case 'C':
					if baseName(w.s[0]) == "fish" {
						takes++
					}
				}
			}
			i++
			for ; takes > 0 && i < w.len(); takes-- {
				if baseName(w.s[0]) == "fish" {
					inline = append(inline, w.s[i])
				}
				i++
			}
		default:
			break loop
		}
	}
	if cflag && len(inline) == 0 {
		if i >= w.len() {
			it := a.execItem(w, catExecute, false)
			a.raise(it, FloorAsk, "shell -c without a script")
			return
		}
		it := a.execItem(w, catExecute, problem == "")
		if problem != "" {
			a.raise(it, FloorAsk, problem)
		}
		if w.flagged(i) {
			// Its substitutions were analyzed where they stand; the text
			// they produce is unknown.
			a.raise(it, FloorAsk, "dynamic shell script "+w.s[i])
			return
		}
		a.script(w.s[i], cwd, depth+1, it)
		return
	}
	if !cflag && len(inline) == 0 && problem == "" && !stdin && i < w.len() && !w.flagged(i) && systemReadOnlyScript(w.s[i]) {
		// `sh /usr/bin/lsb_release -a`: a system program that happens to
		// be a shell script, run the way its #! line would: decided as
		// that program (pip and Codex probe lsb_release at start).
		a.execItem(w, catExecute, true)
		a.cmd(w.from(i), cwd, depth+1)
		return
	}
	it := a.execItem(w, catExecute, false)
	if problem != "" {
		a.raise(it, FloorAsk, problem)
	}
	for _, s := range inline {
		a.script(s, cwd, depth+1, it)
	}
	if cflag && !commandGiven && i < w.len() {
		// fish -C INIT -c SCRIPT: the -c script runs too.
		if w.flagged(i) {
			a.raise(it, FloorAsk, "dynamic shell script "+w.s[i])
		} else {
			a.script(w.s[i], cwd, depth+1, it)
		}
	}
	if len(inline) > 0 {
		return
	}
	switch {
	case stdin || i >= w.len() || stdinPath(w.s[i]):
		// Lifted only by a rule naming this exact form (the developer
		// role's shell.stdin, while the run can be undone).
		a.raise(it, FloorAskUnlessExplicit, "shell reads commands from standard input")
	case w.flagged(i):
		a.raise(it, FloorAsk, "dynamic shell script file "+w.s[i])
	case !cflag && problem == "":
		a.scriptItems(w.from(i), cwd, depth)
	}
}

// scriptItems adds the items of the script file (or module) an
// interpreter runs, as the command it is: `node /usr/bin/npm publish` is
// also `npm publish`, `sh ./deploy.sh prod` also `deploy.sh prod`,
// `python3 -m pip install x` also `pip install x` — what `agentbox check`
// and a shell line name, and what the kernel turns a #! script's exec
// into. The script's own item is transparent (Item.Wrapper): rules that
// name the script decide it, and with none it passes, the interpreter's
// item deciding.
//
// A directory operand (`node --test test/`, `python3 app/` running its
// __main__.py) is named by the directory: its trailing slashes would
// leave an empty command name, which asks. The root directory names no
// script; the interpreter's item decides alone.
func (a *analyzer) scriptItems(w words, cwd string, depth int) {
	if w.len() == 0 || w.flagged(0) || w.s[0] == "" {
		return
	}
	if s0 := strings.TrimRight(w.s[0], "/"); s0 != w.s[0] {
		if s0 == "" {
			return
		}
		w = words{s: append([]string{s0}, w.s[1:]...), flags: w.flags}
	}
	n := len(a.items)
	a.cmd(w, cwd, depth+1)
	if n < len(a.items) && a.items[n].Floor == FloorNone && a.items[n].Argv != nil {
		a.items[n].Wrapper = true
	}
}

// interpSpec describes an interpreter's options: which carry inline code,
// which take an argument, which end the options.
type interpSpec struct {
	inline     string   // short letters whose argument is program text
	inlineLong []string // long options whose argument is program text
	argLetters string   // short letters with a required argument
	argLong    []string // long options with a required argument
	optLetters string   // short letters with an optional attached argument
	digLetters string   // short letters with optional attached digits (perl -l, -0)
	inplace    byte     // letter for in-place editing of operand files (perl/ruby -i)
	module     string   // letters whose argument names a module to run (ends options)
	scriptOpt  string   // letters whose argument is the script file (php -f)
	stdinOK    bool     // no program on the command line is not reading one from stdin
}

var interpSpecs = lazyTable[string, *interpSpec]{build: func() map[string]*interpSpec {
	return map[string]*interpSpec{
		"python":    {inline: "c", argLetters: "WX", module: "m", argLong: []string{"check-hash-based-pycs"}},
		"pypy":      {inline: "c", argLetters: "WX", module: "m"},
		"node":      {inline: "ep", inlineLong: []string{"eval", "print"}, argLetters: "rC", argLong: []string{"require", "import", "loader", "experimental-loader", "conditions", "input-type", "title", "env-file", "inspect-port", "stack-size", "max-old-space-size"}},
		"nodejs":    {inline: "ep", inlineLong: []string{"eval", "print"}, argLetters: "rC", argLong: []string{"require", "import", "loader", "experimental-loader", "conditions", "input-type", "title", "env-file"}},
		"bun":       {inline: "ep", inlineLong: []string{"eval", "print"}, stdinOK: true},
		"perl":      {inline: "eE", argLetters: "I", optLetters: "MmCxdDFV", digLetters: "l0", inplace: 'i'},
		"ruby":      {inline: "e", argLetters: "IrCE", optLetters: "WTxKF", digLetters: "0", inplace: 'i'},
		"php":       {inline: "rRBE", argLetters: "cdzt", scriptOpt: "f"},
		"lua":       {inline: "e", argLetters: "l"},
		"luajit":    {inline: "e", argLetters: "lbj"},
		"Rscript":   {inline: "e", stdinOK: true},
		"tclsh":     {},
		"osascript": {inline: "e"},
		"jshell":    {},
	}
}}

// hInterp: an interpreter with inline code (python -c, node -e, perl -e,
// ruby -e, php -r, lua -e) is FloorAskUnlessExplicit: only a rule naming
// more than the program allows it. One reading its program from stdin is
// too. perl/ruby -i edits the operand files in place.
func hInterp(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	sp := interpSpecs.get()[base]
	if sp == nil {
		sp = interpSpecs.get()[strings.TrimRight(base, "0123456789.")]
	}
	if sp == nil {
		a.execItem(w, catExecute, false)
		return
	}
	var code []string
	problem := ""
	script := -1
	module := false
	var modWords words // the module and its arguments (python -m MOD ARGS)
	inplace := false
	stdinProg := false
	i := 1
loop:
	for i < w.len() {
		s := w.s[i]
		if w.flagged(i) {
			problem = "dynamic interpreter argument " + s
			break
		}
		switch {
		case s == "-":
			stdinProg = true
			break loop
		case s == "--":
			if i+1 < w.len() {
				script = i + 1
			}
			break loop
		case len(s) < 2 || s[0] != '-':
			script = i
			break loop
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s[2:], "=")
			i++
			for _, l := range sp.inlineLong {
				if name == l {
					if !has && i < w.len() {
						v = w.s[i]
						i++
					}
					code = append(code, v)
				}
			}
			for _, l := range sp.argLong {
				if name == l && !has {
					i++
				}
			}
		default:
			i++
		cluster:
			for j := 1; j < len(s); j++ {
				c := s[j]
				rest := s[j+1:]
				switch {
				case strings.IndexByte(sp.inline, c) >= 0:
					if rest == "" && i < w.len() {
						rest = w.s[i]
						if w.flagged(i) {
							problem = "dynamic inline code " + rest
						}
						i++
					}
					code = append(code, rest)
					break cluster
				case strings.IndexByte(sp.module, c) >= 0:
					module = true
					if rest == "" {
						modWords = w.from(min(i, w.len()))
						i++
					} else {
						r := w.from(i)
						modWords = words{s: append([]string{rest}, r.s...)}
						if r.flags != nil {
							modWords.flags = append([]uint8{0}, r.flags...)
						}
					}
					break loop
				case strings.IndexByte(sp.scriptOpt, c) >= 0:
					if rest == "" && i < w.len() {
						script = i
						i++
					}
					break cluster
				case strings.IndexByte(sp.argLetters, c) >= 0:
					if rest == "" {
						i++
					}
					break cluster
				case sp.inplace != 0 && c == sp.inplace:
					inplace = true
					break cluster
				case strings.IndexByte(sp.optLetters, c) >= 0:
					break cluster
				case strings.IndexByte(sp.digLetters, c) >= 0:
					for j+1 < len(s) && (s[j+1] >= '0' && s[j+1] <= '9' || s[j+1] == 'x' && c == '0') {
						j++
					}
				}
			}
		}
	}
	cats := catExecute
	if inplace {
		cats |= catWrite
	}
	it := a.execItem(w, cats, false)
	if problem != "" {
		a.raise(it, FloorAsk, base+": "+problem)
	}
	switch {
	case len(code) > 0:
		a.raise(it, FloorAskUnlessExplicit, base+" runs inline code")
	case script >= 0 && stdinPath(w.s[script]):
		a.raise(it, FloorAskUnlessExplicit, base+" reads its program from standard input")
	case module:
		if problem == "" {
			a.scriptItems(modWords, cwd, depth)
		}
	case script >= 0:
		if problem == "" && !w.flagged(script) {
			a.scriptItems(w.from(script), cwd, depth)
		}
	case stdinProg || !sp.stdinOK:
		a.raise(it, FloorAskUnlessExplicit, base+" reads its program from standard input")
	}
	if inplace {
		start := i
		if len(code) == 0 && script >= 0 {
			start = script + 1
		} else if script >= 0 {
			start = script
		}
		for j := start; j < w.len(); j++ {
			if !w.flagged(j) && strings.HasPrefix(w.s[j], "-") {
				continue
			}
			a.pathWord("create_file", w, j, cwd)
		}
	}
}

// hDeno: deno eval CODE runs inline code.
func hDeno(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	if w.len() > 1 && (w.s[1] == "eval" || w.s[1] == "repl") {
		a.raise(it, FloorAskUnlessExplicit, "deno "+w.s[1]+" runs inline code")
	}
}

// hEval: eval of literal words is what they parse to: a transparent
// wrapper whose script's items decide (Claude Code runs every command as
// eval '<cmd>'); a script that does not parse lifts it to ask. eval of
// dynamic text is FloorAsk.
func hEval(a *analyzer, w words, cwd string, depth int) {
	dynamic := false
	rest := w.from(min(1, w.len()))
	if rest.len() > 0 && rest.s[0] == "--" && !rest.flagged(0) {
		rest = rest.from(1)
	}
	dynamic = rest.anyFlagged()
	it := a.execItem(w, catExecute, rest.len() > 0 && !dynamic)
	if rest.len() == 0 {
		return
	}
	if dynamic {
		a.raise(it, FloorAsk, "eval of dynamic text")
	}
	a.script(strings.Join(rest.s, " "), cwd, depth+1, it)
}

// hSource: source/. FILE runs FILE's commands in the current shell.
func hSource(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	if w.len() > 1 && w.flagged(1) {
		// A rule naming the spelling lifts it (an agent profile's
		// source_files: "$HOME/.bashrc"); a bare `allow .` does not.
		a.raise(it, FloorAskUnlessExplicit, "source of a dynamic file name")
		return
	}
	a.raise(it, FloorAskUnlessExplicit, "source runs the commands in a file")
}

// hAlias: alias NAME=VALUE changes what later words mean.
func hAlias(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	for i := 1; i < w.len(); i++ {
		if w.flagged(i) || strings.Contains(w.s[i], "=") {
			a.raise(it, FloorAsk, "alias definition changes what later commands mean")
			return
		}
	}
}

// hTrap: trap 'CMD' SIG... runs CMD later; CMD is parsed.
func hTrap(a *analyzer, w words, cwd string, depth int) {
	// A trap only schedules its handler, which is decided as the script it
	// is (a transparent wrapper, like sh -c).
	it := a.execItem(w, catExecute, true)
	i := 1
	for i < w.len() && !w.flagged(i) && strings.HasPrefix(w.s[i], "-") && w.s[i] != "-" {
		if w.s[i] == "--" {
			i++
			break
		}
		i++
	}
	if i >= w.len() || i+1 >= w.len() {
		return
	}
	if w.flagged(i) {
		a.raise(it, FloorAsk, "trap with a dynamic command")
		return
	}
	if w.s[i] != "-" && w.s[i] != "" {
		same := a.sameShell
		a.sameShell = true // the handler runs in this shell
		a.script(w.s[i], cwd, depth+1, it)
		a.sameShell = same
	}
}

// hRemap: builtins that remap commands or load code into the shell (hash
// -p, enable -f, bind -x, fc re-running history, complete -C).
func hRemap(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	base := baseName(w.s[0])
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			a.raise(it, FloorAsk, base+" with dynamic arguments")
			return
		}
		if !strings.HasPrefix(s, "-") {
			continue
		}
		switch {
		case base == "hash" && strings.ContainsRune(s, 'p'),
			base == "enable" && strings.ContainsRune(s, 'f'),
			base == "bind" && strings.ContainsRune(s, 'x'),
			base == "complete" && strings.ContainsAny(s, "CF"),
			(base == "mapfile" || base == "readarray") && strings.ContainsRune(s, 'C'):
			a.raise(it, FloorAsk, base+" "+s+" makes later words run other code")
			return
		}
	}
	if base == "fc" {
		a.raise(it, FloorAsk, "fc re-runs or edits earlier commands")
	}
}

// stdinPath reports whether a script path names standard input or another
// open file descriptor (/dev/stdin, /dev/fd/N, /proc/self/fd/N), whose
// content is not on the command line.
func stdinPath(p string) bool {
	return p == "/dev/stdin" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/") ||
		strings.HasPrefix(p, "/proc/thread-self/fd/")
}

// systemReadOnlyScript reports a script file given by absolute path in a
// system program directory whose name is a read-only program
// (internal/programs): the sandbox cannot write there, so the file is the
// system's own.
func systemReadOnlyScript(p string) bool {
	dir, name := path.Split(p)
	switch dir {
	case "/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/":
		return programs.Is(name, programs.ReadOnly)
	}
	return false
}
