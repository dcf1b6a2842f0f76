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
