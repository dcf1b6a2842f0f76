package command

import (
	"strings"

	"github.com/agentbox/agentbox/internal/programs"
)

// hShell: sh/bash/zsh/... [opts] (-c SCRIPT [NAME ARGS] | FILE [ARGS] | (stdin)).
// A -c script is parsed recursively; a shell reading commands from stdin
// (a pipe, a heredoc, a terminal) is FloorAsk, since what it runs is not on
// the command line.
func hShell(a *analyzer, w words, cwd string, depth int) {
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
		a.raise(it, FloorAsk, "shell reads commands from standard input")
	case w.flagged(i):
		a.raise(it, FloorAsk, "dynamic shell script file "+w.s[i])
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

var interpSpecs = map[string]*interpSpec{
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

// hInterp: an interpreter with inline code (python -c, node -e, perl -e,
// ruby -e, php -r, lua -e) is FloorAskUnlessExplicit: only a rule naming
// more than the program allows it. One reading its program from stdin is
// too. perl/ruby -i edits the operand files in place.
func hInterp(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	sp := interpSpecs[base]
	if sp == nil {
		sp = interpSpecs[strings.TrimRight(base, "0123456789.")]
	}
	if sp == nil {
		a.execItem(w, catExecute, false)
		return
	}
	var code []string
	problem := ""
	script := -1
	module := false
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
						i++
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
	case module || script >= 0:
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

// hSed: sed -i edits its files (create_file items); an e command or s///e
// flag runs shell commands (FloorAskUnlessExplicit); w/W commands and the
// s///w flag write files; a script from -f FILE cannot be judged
// (FloorAskUnlessExplicit).
func hSed(a *analyzer, w words, cwd string, depth int) {
	inPlace, fromFile, sandbox := false, false, false
	var scripts []int
	var scriptVals []string
	var ops []int
	problem := ""
	ddash := false
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if ddash || w.flagged(i) || len(s) < 2 || s[0] != '-' {
			ops = append(ops, i)
			continue
		}
		if s == "--" {
			ddash = true
			continue
		}
		if strings.HasPrefix(s, "--") {
			name, v, has := strings.Cut(s[2:], "=")
			switch name {
			case "in-place":
				inPlace = true
			case "expression":
				if has {
					scriptVals = append(scriptVals, v)
				} else if i+1 < w.len() {
					i++
					scripts = append(scripts, i)
				}
			case "file":
				fromFile = true
				if !has {
					i++
				}
			case "line-length":
				if !has {
					i++
				}
			case "sandbox":
				sandbox = true
			}
			continue
		}
	cluster:
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'i':
				inPlace = true
				break cluster
			case 'e':
				if j+1 < len(s) {
					scriptVals = append(scriptVals, s[j+1:])
				} else if i+1 < w.len() {
					i++
					scripts = append(scripts, i)
				}
				break cluster
			case 'f':
				fromFile = true
				if j+1 == len(s) {
					i++
				}
				break cluster
			case 'l':
				if j+1 == len(s) {
					i++
				}
				break cluster
			case 'n', 'r', 'E', 's', 'u', 'z', 'b':
			default:
				problem = "unknown sed option -" + string(s[j])
			}
		}
	}
	if len(scripts) == 0 && len(scriptVals) == 0 && !fromFile && len(ops) > 0 {
		scripts = append(scripts, ops[0])
		ops = ops[1:]
	}
	cats := catExecute | catRead
	if inPlace {
		cats |= catWrite
	}
	var writes []string
	execs := false
	unknown := ""
	dyn := false
	for _, k := range scripts {
		if w.flagged(k) {
			dyn = true
			continue
		}
		scriptVals = append(scriptVals, w.s[k])
	}
	if !sandbox {
		for _, sc := range scriptVals {
			e, ws, ok := scanSed(sc)
			execs = execs || e
			writes = append(writes, ws...)
			if !ok && unknown == "" {
				unknown = sc
			}
		}
	}
	if len(writes) > 0 {
		cats |= catWrite
	}
	it := a.execItem(w, cats, false)
	if problem != "" {
		a.raise(it, FloorAsk, "sed: "+problem)
	}
	if dyn {
		a.raise(it, FloorAsk, "sed: dynamic script")
	}
	if execs {
		a.raise(it, FloorAskUnlessExplicit, "sed script runs shell commands (e)")
	}
	if unknown != "" {
		a.raise(it, FloorAskUnlessExplicit, "sed script not understood: "+unknown)
	}
	if fromFile && !sandbox {
		a.raise(it, FloorAskUnlessExplicit, "sed script read from a file")
	}
	for _, f := range writes {
		a.pathItem("create_file", f, false, cwd)
	}
	if inPlace {
		for _, o := range ops {
			a.pathWord("create_file", w, o, cwd)
		}
	}
}

// scanSed walks a sed script's commands far enough to find e (execute) and
// w/W (write) commands and s flags. ok is false when the script does not
// parse; callers then treat it as possibly doing anything.
func scanSed(s string) (execs bool, writes []string, ok bool) {
	i := 0
	n := len(s)
	skipSpace := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = n - i
		}
		v := s[i : i+j]
		i += j
		return v
	}
	// delimited reads up to an unescaped delim; false at end of input.
	delimited := func(d byte) bool {
		for i < n {
			c := s[i]
			if c == '\\' {
				i += 2
				continue
			}
			if c == '\n' && d != '\n' {
				// an unescaped newline inside s/// is an error in GNU sed
				return false
			}
			i++
			if c == d {
				return true
			}
		}
		return false
	}
	addr := func() bool {
		switch {
		case i < n && s[i] >= '0' && s[i] <= '9':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < n && s[i] == '$':
			i++
		case i < n && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < n && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		default:
			return true
		}
		return true
	}
	for steps := 0; i < n; steps++ {
		if steps > 10000 {
			return execs, writes, false
		}
		for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ';') {
			i++
		}
		if i >= n {
			break
		}
		if s[i] == '#' {
			toEOL()
			continue
		}
		if !addr() {
			return execs, writes, false
		}
		skipSpace()
		if i < n && s[i] == ',' {
			i++
			skipSpace()
			if i < n && (s[i] == '+' || s[i] == '~') {
				i++
				for i < n && s[i] >= '0' && s[i] <= '9' {
					i++
				}
			} else if !addr() {
				return execs, writes, false
			}
		}
		skipSpace()
		for i < n && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			return execs, writes, false
		}
		c := s[i]
		i++
		switch c {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			skipSpace()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			for i < n && s[i] != ';' && s[i] != '\n' {
				i++
			}
		case 'a', 'i', 'c':
			for {
				line := toEOL()
				if !strings.HasSuffix(line, "\\") || i >= n {
					break
				}
				i++ // the newline
			}
		case 'r', 'R':
			toEOL()
		case 'w', 'W':
			skipSpace()
			f := toEOL()
			if f != "/dev/stdout" && f != "/dev/stderr" {
				writes = append(writes, f)
			}
		case 'e':
			execs = true
			toEOL()
		case 's', 'y':
			if i >= n {
				return execs, writes, false
			}
			d := s[i]
			if d == '\\' || d == '\n' {
				return execs, writes, false
			}
			i++
			if !delimited(d) || !delimited(d) {
				return execs, writes, false
			}
			if c == 'y' {
				break
			}
		flags:
			for i < n {
				switch f := s[i]; {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
				case f == 'e':
					execs = true
					i++
				case f == 'w':
					i++
					skipSpace()
					fn := toEOL()
					if fn != "/dev/stdout" && fn != "/dev/stderr" {
						writes = append(writes, fn)
					}
				default:
					break flags
				}
			}
		default:
			return execs, writes, false
		}
	}
	return execs, writes, true
}

// hAwk: an awk program that calls system(), reads from or prints to a
// pipe (| getline, |&, print | "cmd") or writes files (print > "f") is
// FloorAskUnlessExplicit, as is a program from -f FILE (unless --sandbox).
func hAwk(a *analyzer, w words, cwd string, depth int) {
	var progs []string
	fromFile, sandbox, dyn := false, false, false
	problem := ""
	i := 1
	for i < w.len() {
		s := w.s[i]
		if w.flagged(i) {
			dyn = true
			break
		}
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		if strings.HasPrefix(s, "--") {
			name, v, has := strings.Cut(s[2:], "=")
			switch name {
			case "field-separator", "assign", "include", "exec":
				if !has {
					i++
				}
				if name == "include" || name == "exec" {
					fromFile = true
				}
			case "file":
				fromFile = true
				if !has {
					i++
				}
			case "source":
				if !has && i < w.len() {
					v = w.s[i]
					i++
				}
				progs = append(progs, v)
			case "load":
				problem = "awk --load loads a native extension"
				if !has {
					i++
				}
			case "sandbox":
				sandbox = true
			}
			continue
		}
		c := s[1]
		rest := s[2:]
		switch c {
		case 'F', 'v':
			if rest == "" {
				i++
			}
		case 'f', 'i', 'E':
			fromFile = true
			if rest == "" {
				i++
			}
		case 'e':
			if rest == "" && i < w.len() {
				rest = w.s[i]
				i++
			}
			progs = append(progs, rest)
		case 'l':
			problem = "awk -l loads a native extension"
			if rest == "" {
				i++
			}
		case 'S':
			sandbox = true
		}
	}
	if len(progs) == 0 && !fromFile && i < w.len() {
		if w.flagged(i) {
			dyn = true
		} else {
			progs = append(progs, w.s[i])
		}
	}
	it := a.execItem(w, catExecute|catRead, false)
	if problem != "" {
		a.raise(it, FloorAsk, problem)
	}
	if dyn {
		a.raise(it, FloorAsk, "awk: dynamic program")
	}
	if sandbox {
		return
	}
	if fromFile {
		a.raise(it, FloorAskUnlessExplicit, "awk program read from a file")
	}
	for _, p := range progs {
		if why := awkRisky(p); why != "" {
			a.raise(it, FloorAskUnlessExplicit, "awk program "+why)
		}
	}
}

// awkRisky says why awk program p can run commands or write files, or "".
func awkRisky(p string) string {
	if strings.Contains(p, "system") {
		return "calls system()"
	}
	if strings.Contains(p, "|&") {
		return "uses a coprocess (|&)"
	}
	if strings.Contains(p, "@load") {
		return "loads an extension"
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '|' && (i+1 >= len(p) || p[i+1] != '|') && (i == 0 || p[i-1] != '|') {
			rest := strings.TrimLeft(p[i+1:], " \t")
			if strings.HasPrefix(rest, "getline") {
				return "reads from a command (| getline)"
			}
		}
	}
	// print/printf statements with > or | at parenthesis depth 0.
	for k := 0; k < len(p); {
		j := strings.Index(p[k:], "print")
		if j < 0 {
			break
		}
		k += j + len("print")
		depth := 0
		inStr := false
	stmt:
		for ; k < len(p); k++ {
			c := p[k]
			if inStr {
				if c == '\\' {
					k++
				} else if c == '"' {
					inStr = false
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '(':
				depth++
			case ')':
				depth--
			case ';', '}', '\n':
				break stmt
			case '>':
				if depth <= 0 {
					return "writes to a file (print >)"
				}
			case '|':
				if depth <= 0 {
					return "writes to a command (print |)"
				}
			}
		}
	}
	return ""
}

// hEval: eval of literal words parses them as shell code and is
// FloorAskUnlessExplicit; eval of dynamic text is FloorAsk.
func hEval(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	if w.len() < 2 {
		return
	}
	rest := w.from(1)
	if rest.s[0] == "--" && !rest.flagged(0) {
		rest = rest.from(1)
	}
	if rest.anyFlagged() {
		a.raise(it, FloorAsk, "eval of dynamic text")
	} else {
		a.raise(it, FloorAskUnlessExplicit, "eval runs its arguments as shell code")
	}
	a.script(strings.Join(rest.s, " "), cwd, depth+1, it)
}

// hSource: source/. FILE runs FILE's commands in the current shell.
func hSource(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	if w.len() > 1 && w.flagged(1) {
		a.raise(it, FloorAsk, "source of a dynamic file name")
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
	it := a.execItem(w, catExecute, false)
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
		a.script(w.s[i], cwd, depth+1, it)
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

func registerInterpreters() {
	for _, n := range programs.Names(programs.Shell) {
		handlers[n] = hShell
	}
	for n := range interpSpecs {
		handlers[n] = hInterp
	}
	handlers["deno"] = hDeno
	handlers["eval"] = hEval
	handlers["source"] = hSource
	handlers["."] = hSource
	handlers["alias"] = hAlias
	handlers["trap"] = hTrap
	for _, n := range []string{"hash", "enable", "bind", "fc", "complete", "mapfile", "readarray"} {
		handlers[n] = hRemap
	}
}

// stdinPath reports whether a script path names standard input or another
// open file descriptor (/dev/stdin, /dev/fd/N, /proc/self/fd/N), whose
// content is not on the command line.
func stdinPath(p string) bool {
	return p == "/dev/stdin" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/") ||
		strings.HasPrefix(p, "/proc/thread-self/fd/")
}
