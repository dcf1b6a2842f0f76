package command

import "strings"

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
	w.eachArg(func(i int) { ops = append(ops, i) }, func(i int) int {
		s := w.s[i]
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
			return i
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
		return i
	})
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
	sc := &sedScanner{s: s}
	ok = sc.script()
	return sc.execs, sc.writes, ok
}

// sedScanner is scanSed's state: the script, the position in it and what
// was found so far.
type sedScanner struct {
	s      string
	i      int
	execs  bool
	writes []string
}

func (sc *sedScanner) more() bool { return sc.i < len(sc.s) }

func (sc *sedScanner) skipSpace() {
	for sc.more() && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
}

func (sc *sedScanner) skipDigits() {
	for sc.more() && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
		sc.i++
	}
}

// toEOL returns the rest of the line, leaving the position on its newline.
func (sc *sedScanner) toEOL() string {
	j := strings.IndexByte(sc.s[sc.i:], '\n')
	if j < 0 {
		j = len(sc.s) - sc.i
	}
	v := sc.s[sc.i : sc.i+j]
	sc.i += j
	return v
}

// delimited reads up to an unescaped d; false at end of input.
func (sc *sedScanner) delimited(d byte) bool {
	for sc.more() {
		c := sc.s[sc.i]
		if c == '\\' {
			sc.i += 2
			continue
		}
		if c == '\n' && d != '\n' {
			// an unescaped newline inside s/// is an error in GNU sed
			return false
		}
		sc.i++
		if c == d {
			return true
		}
	}
	return false
}

// write records a w file name (the standard streams are not files).
func (sc *sedScanner) write(f string) {
	if f != "/dev/stdout" && f != "/dev/stderr" {
		sc.writes = append(sc.writes, f)
	}
}

// regexFlags skips the I and M flags of an address regex.
func (sc *sedScanner) regexFlags() {
	for sc.more() && (sc.s[sc.i] == 'I' || sc.s[sc.i] == 'M') {
		sc.i++
	}
}

// addr reads one address, if there is one; false when it does not parse.
func (sc *sedScanner) addr() bool {
	s, i, n := sc.s, sc.i, len(sc.s)
	switch {
	case i < n && s[i] >= '0' && s[i] <= '9':
		for sc.more() && (sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' || sc.s[sc.i] == '~') {
			sc.i++
		}
	case i < n && s[i] == '$':
		sc.i++
	case i < n && s[i] == '/':
		sc.i++
		if !sc.delimited('/') {
			return false
		}
		sc.regexFlags()
	case i+1 < n && s[i] == '\\':
		d := s[i+1]
		sc.i += 2
		if !sc.delimited(d) {
			return false
		}
		sc.regexFlags()
	}
	return true
}

// addresses reads a command's address or address range and any !.
func (sc *sedScanner) addresses() bool {
	if !sc.addr() {
		return false
	}
	sc.skipSpace()
	if sc.more() && sc.s[sc.i] == ',' {
		sc.i++
		sc.skipSpace()
		if sc.more() && (sc.s[sc.i] == '+' || sc.s[sc.i] == '~') {
			sc.i++
			sc.skipDigits()
		} else if !sc.addr() {
			return false
		}
	}
	sc.skipSpace()
	for sc.more() && sc.s[sc.i] == '!' {
		sc.i++
		sc.skipSpace()
	}
	return true
}

// script reads every command; false when the script does not parse.
func (sc *sedScanner) script() bool {
	for steps := 0; sc.more(); steps++ {
		if steps > 10000 {
			return false
		}
		for sc.more() && strings.IndexByte(" \t\n;", sc.s[sc.i]) >= 0 {
			sc.i++
		}
		if !sc.more() {
			break
		}
		if sc.s[sc.i] == '#' {
			sc.toEOL()
			continue
		}
		if !sc.addresses() || !sc.more() {
			return false
		}
		c := sc.s[sc.i]
		sc.i++
		if !sc.command(c) {
			return false
		}
	}
	return true
}

// command reads the arguments of command c; false when they do not parse.
func (sc *sedScanner) command(c byte) bool {
	switch c {
	case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		sc.skipSpace()
		sc.skipDigits()
	case ':', 'b', 't', 'T', 'v':
		for sc.more() && sc.s[sc.i] != ';' && sc.s[sc.i] != '\n' {
			sc.i++
		}
	case 'a', 'i', 'c':
		for {
			line := sc.toEOL()
			if !strings.HasSuffix(line, "\\") || !sc.more() {
				break
			}
			sc.i++ // the newline
		}
	case 'r', 'R':
		sc.toEOL()
	case 'w', 'W':
		sc.skipSpace()
		sc.write(sc.toEOL())
	case 'e':
		sc.execs = true
		sc.toEOL()
	case 's', 'y':
		return sc.substitute(c)
	default:
		return false
	}
	return true
}

// substitute reads an s or y command after its letter: the delimited
// pattern and replacement and, for s, its flags (e executes, w writes).
func (sc *sedScanner) substitute(c byte) bool {
	if !sc.more() {
		return false
	}
	d := sc.s[sc.i]
	if d == '\\' || d == '\n' {
		return false
	}
	sc.i++
	if !sc.delimited(d) || !sc.delimited(d) {
		return false
	}
	if c == 'y' {
		return true
	}
	for sc.more() {
		switch f := sc.s[sc.i]; {
		case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
			sc.i++
		case f == 'e':
			sc.execs = true
			sc.i++
		case f == 'w':
			sc.i++
			sc.skipSpace()
			sc.write(sc.toEOL())
		default:
			return true
		}
	}
	return true
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
