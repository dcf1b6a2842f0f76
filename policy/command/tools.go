package command

import (
	"path"
	"strings"
)

// findArgPrimaries are find primaries that take one argument.
var findArgPrimaries = map[string]bool{
	"-amin": true, "-anewer": true, "-atime": true, "-cmin": true, "-cnewer": true, "-context": true,
	"-ctime": true, "-fstype": true, "-gid": true, "-group": true, "-ilname": true, "-iname": true,
	"-inum": true, "-ipath": true, "-iregex": true, "-iwholename": true, "-links": true, "-lname": true,
	"-maxdepth": true, "-mindepth": true, "-mmin": true, "-mtime": true, "-name": true, "-newer": true,
	"-path": true, "-perm": true, "-regex": true, "-regextype": true, "-samefile": true, "-size": true,
	"-type": true, "-uid": true, "-used": true, "-user": true, "-wholename": true, "-xtype": true,
	"-printf": true, "-files0-from": true,
}

// findFlagPrimaries are find primaries, operators and options without
// argument.
var findFlagPrimaries = map[string]bool{
	"-print": true, "-print0": true, "-ls": true, "-prune": true, "-quit": true, "-true": true,
	"-false": true, "-empty": true, "-executable": true, "-readable": true, "-writable": true,
	"-nouser": true, "-nogroup": true, "-depth": true, "-d": true, "-mount": true, "-xdev": true,
	"-noleaf": true, "-daystart": true, "-follow": true, "-ignore_readdir_race": true,
	"-noignore_readdir_race": true, "-xautofs": true, "-warn": true, "-nowarn": true, "-help": true, "--help": true,
	"-version": true, "--version": true, "-not": true, "-and": true, "-or": true, "-a": true, "-o": true,
	"!": true, "(": true, ")": true, ",": true, "-delete": true,
}

// hFind: find [-H -L -P -D x -Ox] [ROOTS...] [EXPR]. -delete deletes under
// every root; -fprint*/-fls write files; -exec/-execdir/-ok/-okdir run an
// inner command whose {} words are dynamic.
func hFind(a *analyzer, w words, cwd string, depth int) {
	i := 1
	for i < w.len() && !w.flagged(i) {
		s := w.s[i]
		if s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O") {
			i++
			continue
		}
		if s == "-D" {
			i += 2
			continue
		}
		break
	}
	var roots []int
	for i < w.len() {
		s := w.s[i]
		if !w.flagged(i) && (strings.HasPrefix(s, "-") || s == "!" || s == "(" || s == ")" || s == ",") {
			break
		}
		roots = append(roots, i)
		i++
	}
	exprStart := i
	cats := catExecute | catRead
	var problems []string
	del := false
	var files []int
	var inners []words
	rootsUnknown := false
	for i < w.len() {
		s := w.s[i]
		if w.flagged(i) {
			problems = append(problems, "dynamic find expression word "+s)
			i++
			continue
		}
		switch {
		case s == "-exec" || s == "-execdir" || s == "-ok" || s == "-okdir":
			j := i + 1
			for j < w.len() && !(w.s[j] == ";" && !w.flagged(j)) && !(w.s[j] == "+" && j > i+1 && w.s[j-1] == "{}") {
				j++
			}
			if j >= w.len() {
				problems = append(problems, s+" without terminating ; or +")
			}
			inner := markPlaceholder(w.sub(i+1, j), "{}")
			if inner.len() > 0 {
				inners = append(inners, inner)
			}
			i = j + 1
		case s == "-delete":
			del = true
			cats |= catDestructive | catWrite
			i++
		case s == "-fprint" || s == "-fprint0" || s == "-fls":
			if i+1 < w.len() {
				files = append(files, i+1)
			}
			cats |= catWrite
			i += 2
		case s == "-fprintf":
			if i+1 < w.len() {
				files = append(files, i+1)
			}
			cats |= catWrite
			i += 3
		case s == "-files0-from":
			rootsUnknown = true
			i += 2
		case findArgPrimaries[s] || strings.HasPrefix(s, "-newer"):
			if strings.HasPrefix(s, "-newer") && len(s) > len("-newer") && len(s) != len("-newerXY") {
				problems = append(problems, "unknown find primary "+s)
			}
			i += 2
		case findFlagPrimaries[s]:
			i++
		default:
			problems = append(problems, "unknown find primary "+s)
			i++
		}
	}
	_ = exprStart
	it := a.execItem(w, cats, false)
	for _, p := range problems {
		a.raise(it, FloorAsk, "find: "+p)
	}
	if del {
		if rootsUnknown {
			a.pathItem("delete", "{files0-from}", true, cwd)
		}
		if len(roots) == 0 {
			a.pathItem("delete", ".", false, cwd)
		}
		for _, r := range roots {
			a.pathWord("delete", w, r, cwd)
		}
	}
	for _, f := range files {
		a.pathWord("create_file", w, f, cwd)
	}
	for _, in := range inners {
		a.cmd(in, cwd, depth+1)
	}
}

// hRg: rg --pre COMMAND runs COMMAND on every searched file.
func hRg(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute|catRead, false)
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if s == "--" {
			break
		}
		pre := ""
		switch {
		case s == "--pre" && i+1 < w.len():
			pre = w.s[i+1]
			i++
		case strings.HasPrefix(s, "--pre="):
			pre = s[len("--pre="):]
		default:
			continue
		}
		if pre == "" {
			continue
		}
		a.raise(it, FloorAskUnlessExplicit, "rg --pre runs "+pre+" on every file")
		start := len(a.items)
		a.cmd(words{s: []string{pre, "{file}"}, flags: []uint8{0, flagDynamic}}, cwd, depth+1)
		a.raiseFrom(start, FloorAskUnlessExplicit, "program run by rg --pre")
	}
}

// hRm: rm/rmdir/unlink/shred delete their operands.
func hRm(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	a.execItem(w, programCategories(base), false)
	a.operandPaths("delete", w, cwd, func(opt string) bool {
		return base == "shred" && (opt == "-n" || opt == "-s" || opt == "--random-source")
	})
}

// hTouch: touch creates (or updates) its operands.
func hTouch(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, catExecute|catWrite, false)
	a.operandPaths("create_file", w, cwd, func(opt string) bool {
		return opt == "-d" || opt == "-r" || opt == "-t"
	})
}

// hTee: tee [opts] FILE... writes every FILE.
func hTee(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, catExecute|catWrite, false)
	a.operandPaths("create_file", w, cwd, nil)
}

// operandPaths emits a tool item for every operand of w: words after the
// program that are not options (a lone "-" is an operand, "--" ends the
// options). takesValue, when set, names the options whose value is the
// next word.
func (a *analyzer) operandPaths(tool string, w words, cwd string, takesValue func(opt string) bool) {
	ddash := false
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if !ddash && !w.flagged(i) {
			if s == "--" {
				ddash = true
				continue
			}
			if len(s) > 1 && s[0] == '-' {
				if takesValue != nil && takesValue(s) {
					i++
				}
				continue
			}
		}
		a.pathWord(tool, w, i, cwd)
	}
}

// hSort: sort -o FILE / --output=FILE writes FILE; --compress-program runs
// a program.
func hSort(a *analyzer, w words, cwd string, depth int) {
	var outs []int
	var outVals []string
	var progs []string
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		if s == "--" {
			break
		}
		switch {
		case s == "--output" && i+1 < w.len():
			outs = append(outs, i+1)
			i++
		case strings.HasPrefix(s, "--output="):
			outVals = append(outVals, s[len("--output="):])
		case strings.HasPrefix(s, "--compress-program="):
			progs = append(progs, s[len("--compress-program="):])
		case s == "--compress-program" && i+1 < w.len():
			progs = append(progs, w.s[i+1])
			i++
		case len(s) > 1 && s[0] == '-' && s[1] != '-':
			for j := 1; j < len(s); j++ {
				c := s[j]
				if strings.IndexByte("kStT", c) >= 0 {
					if j+1 == len(s) {
						i++
					}
					break
				}
				if c == 'o' {
					if j+1 < len(s) {
						outVals = append(outVals, s[j+1:])
					} else if i+1 < w.len() {
						outs = append(outs, i+1)
						i++
					}
					break
				}
			}
		}
	}
	cats := catExecute | catRead
	if len(outs)+len(outVals) > 0 {
		cats |= catWrite
	}
	it := a.execItem(w, cats, false)
	for _, o := range outs {
		a.pathWord("create_file", w, o, cwd)
	}
	for _, o := range outVals {
		a.pathItem("create_file", o, false, cwd)
	}
	for _, p := range progs {
		a.raise(it, FloorAskUnlessExplicit, "sort --compress-program runs "+p)
		a.cmd(words{s: []string{p}}, cwd, depth+1)
	}
}

// copySpec are the options of cp, mv, install and ln that take an argument.
var copyArgOpts = map[string]string{
	"cp": "St", "mv": "St", "install": "mogSt", "ln": "St",
}

// hCopy: cp/mv/install/ln write their destination (DIR/base(SRC) for a
// directory target); mv also deletes its sources and the file it moves
// over.
func hCopy(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	argOpts := copyArgOpts[base]
	target := ""
	targetDyn := false
	noTargetDir := false
	noClobber := false
	dirMode := false
	var ops []int
	ddash := false
	var progs []string
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
			case "target-directory":
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
					targetDyn = w.flagged(i)
				}
				target = v
			case "no-target-directory":
				noTargetDir = true
			case "no-clobber", "update":
				noClobber = noClobber || name == "no-clobber"
			case "directory":
				dirMode = true
			case "strip-program":
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
				}
				progs = append(progs, v)
			case "suffix", "mode", "owner", "group":
				if !has {
					i++
				}
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			c := s[j]
			if strings.IndexByte(argOpts, c) >= 0 {
				v := s[j+1:]
				if v == "" && i+1 < w.len() {
					i++
					v = w.s[i]
					if c == 't' {
						targetDyn = w.flagged(i)
					}
				}
				if c == 't' {
					target = v
				}
				break
			}
			switch c {
			case 'T':
				noTargetDir = true
			case 'n':
				noClobber = true
			case 'd':
				if base == "install" {
					dirMode = true
				}
			}
		}
	}
	cats := catExecute | catWrite
	if base == "mv" {
		cats |= catDestructive
	}
	it := a.execItem(w, cats, false)
	for _, p := range progs {
		a.raise(it, FloorAskUnlessExplicit, "install --strip-program runs "+p)
	}
	if dirMode {
		for _, o := range ops {
			a.pathWord("create_file", w, o, cwd)
		}
		return
	}
	var srcs []int
	dest := -1
	if target != "" {
		srcs = ops
	} else if len(ops) >= 2 || (base == "ln" && len(ops) == 1) {
		if base == "ln" && len(ops) == 1 {
			srcs = ops
		} else {
			srcs = ops[:len(ops)-1]
			dest = ops[len(ops)-1]
		}
	} else {
		srcs = ops
	}
	if base == "mv" {
		for _, s := range srcs {
			a.pathWord("delete", w, s, cwd)
		}
	}
	intoDir := func(dir string, dirDyn bool) {
		for _, s := range srcs {
			name := path.Base(w.s[s])
			a.pathItem("create_file", strings.TrimSuffix(dir, "/")+"/"+name, dirDyn || w.flagged(s), cwd)
		}
	}
	switch {
	case target != "":
		intoDir(target, targetDyn)
	case dest < 0 && base == "ln":
		intoDir(".", false)
	case dest < 0:
	case len(srcs) > 1 || (strings.HasSuffix(w.s[dest], "/") && !noTargetDir):
		intoDir(w.s[dest], w.flagged(dest))
	default:
		if base == "mv" && !noClobber {
			a.pathWord("delete", w, dest, cwd)
		}
		a.pathWord("create_file", w, dest, cwd)
	}
}

// hDd: dd of=FILE writes FILE.
func hDd(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, programCategories("dd"), false)
	for i := 1; i < w.len(); i++ {
		if v, ok := strings.CutPrefix(w.s[i], "of="); ok {
			a.pathItem("create_file", v, w.flagged(i), cwd)
		}
	}
}

// hTruncate: truncate -s SIZE FILE... writes every FILE.
func hTruncate(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, programCategories("truncate"), false)
	ddash := false
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if !ddash && !w.flagged(i) {
			if s == "--" {
				ddash = true
				continue
			}
			if s == "-s" || s == "-r" || s == "--size" || s == "--reference" {
				i++
				continue
			}
			if len(s) > 1 && s[0] == '-' {
				continue
			}
		}
		a.pathWord("create_file", w, i, cwd)
	}
}

// urlFile is the file name a download of u is saved as by default.
func urlFile(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	slash := strings.IndexByte(u, '/')
	if slash < 0 {
		return "index.html"
	}
	name := path.Base(u[slash:])
	if name == "/" || name == "." || name == "" {
		return "index.html"
	}
	return name
}

// curlArgLetters are curl's short options that take an argument.
const curlArgLetters = "AbcCdDeEFHKmoPQrtTuUwxXyYz"

// hCurl: curl -o FILE, -O (file named after the URL), -D/-c/--trace FILE
// and friends are writes.
func hCurl(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, programCategories("curl"), false)
	var outs []string
	remoteName := false
	outDir := ""
	var urls []string
	fileOpts := map[string]bool{"output": true, "dump-header": true, "cookie-jar": true, "trace": true,
		"trace-ascii": true, "stderr": true, "libcurl": true, "etag-save": true, "hsts": true, "alt-svc": true}
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s[2:], "=")
			if name == "remote-name" || name == "remote-name-all" {
				remoteName = true
				continue
			}
			if fileOpts[name] || name == "output-dir" || name == "config" {
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
				}
				if name == "output-dir" {
					outDir = v
				} else if name != "config" {
					outs = append(outs, v)
				}
			}
		case len(s) > 1 && s[0] == '-':
			for j := 1; j < len(s); j++ {
				c := s[j]
				if c == 'O' {
					remoteName = true
					continue
				}
				if strings.IndexByte(curlArgLetters, c) >= 0 {
					v := s[j+1:]
					if v == "" && i+1 < w.len() {
						i++
						v = w.s[i]
					}
					if c == 'o' || c == 'D' || c == 'c' {
						outs = append(outs, v)
					}
					break
				}
			}
		default:
			urls = append(urls, s)
		}
	}
	for _, o := range outs {
		if o == "-" || o == "%" {
			continue
		}
		if outDir != "" && !path.IsAbs(o) {
			o = path.Join(outDir, o)
		}
		a.pathItem("create_file", o, false, cwd)
	}
	if remoteName {
		for _, u := range urls {
			o := urlFile(u)
			if outDir != "" {
				o = path.Join(outDir, o)
			}
			a.pathItem("create_file", o, false, cwd)
		}
	}
}

// wgetArgLetters are wget's short options that take an argument.
const wgetArgLetters = "eoaiBtOTwQPlARDIXU"

// hWget: wget saves to -O FILE, or to a file named after each URL (under
// -P DIR); -o/-a FILE are log files.
func hWget(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, programCategories("wget"), false)
	var outs []string
	docOut := ""
	prefix := ""
	recursive := false
	var urls []string
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s[2:], "=")
			switch name {
			case "output-document", "output-file", "append-output", "directory-prefix":
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
				}
				switch name {
				case "output-document":
					docOut = v
				case "directory-prefix":
					prefix = v
				default:
					outs = append(outs, v)
				}
			case "recursive", "mirror":
				recursive = true
			}
		case strings.HasPrefix(s, "-n"):
		case len(s) > 1 && s[0] == '-':
			for j := 1; j < len(s); j++ {
				c := s[j]
				if c == 'r' || c == 'm' {
					recursive = true
				}
				if strings.IndexByte(wgetArgLetters, c) >= 0 {
					v := s[j+1:]
					if v == "" && i+1 < w.len() {
						i++
						v = w.s[i]
					}
					switch c {
					case 'O':
						docOut = v
					case 'P':
						prefix = v
					case 'o', 'a':
						outs = append(outs, v)
					}
					break
				}
			}
		default:
			urls = append(urls, s)
		}
	}
	for _, o := range outs {
		a.pathItem("create_file", o, false, cwd)
	}
	join := func(o string) string {
		if prefix != "" && !path.IsAbs(o) {
			return path.Join(prefix, o)
		}
		return o
	}
	switch {
	case docOut == "-":
	case docOut != "":
		a.pathItem("create_file", join(docOut), false, cwd)
	default:
		for _, u := range urls {
			o := urlFile(u)
			if recursive {
				host := u
				if i := strings.Index(host, "://"); i >= 0 {
					host = host[i+3:]
				}
				if i := strings.IndexAny(host, "/?#"); i >= 0 {
					host = host[:i]
				}
				o = host
			}
			a.pathItem("create_file", join(o), false, cwd)
		}
	}
}

func registerTools() {
	for _, n := range []string{"rm", "rmdir", "unlink", "shred"} {
		handlers[n] = hRm
	}
	for _, n := range []string{"cp", "mv", "install", "ln"} {
		handlers[n] = hCopy
	}
	handlers["find"] = hFind
	handlers["rg"] = hRg
	handlers["touch"] = hTouch
	handlers["tee"] = hTee
	handlers["sort"] = hSort
	handlers["dd"] = hDd
	handlers["truncate"] = hTruncate
	handlers["curl"] = hCurl
	handlers["wget"] = hWget
	handlers["sed"] = hSed
	handlers["gsed"] = hSed
	for _, n := range []string{"awk", "gawk", "mawk", "nawk"} {
		handlers[n] = hAwk
	}
}
