package command

import (
	"path"
	"strings"
)

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
	for i := 1; i < w.len(); i++ {
		if s := w.s[i]; s == "--" {
			break
		} else if s == "--append" || (len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.ContainsRune(s, 'a')) {
			a.appending = true
			defer func() { a.appending = false }()
			break
		}
	}
	a.operandPaths("create_file", w, cwd, nil)
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
var copyArgOpts = lazyTable[string, string]{build: func() map[string]string {
	return map[string]string{
		"cp": "St", "mv": "St", "install": "mogSt", "ln": "St",
	}
}}

// hCopy: cp/mv/install/ln write their destination (DIR/base(SRC) for a
// directory target); mv also deletes its sources and the file it moves
// over.
func hCopy(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	argOpts := copyArgOpts.get()[base]
	target := ""
	targetDyn := false
	noTargetDir := false
	noClobber := false
	dirMode := false
	var ops []int
	var progs []string
	w.eachArg(func(i int) { ops = append(ops, i) }, func(i int) int {
		s := w.s[i]
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
			return i
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
		return i
	})
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

// operands returns the indexes of w's operands (from index 1), skipping
// options and the values of the short options in argLetters (attached or
// next word) and of long options in argLong given as "--x v".
func operands(w words, argLetters string, argLong ...string) []int {
	var ops []int
	w.eachArg(func(i int) { ops = append(ops, i) }, func(i int) int {
		s := w.s[i]
		if strings.HasPrefix(s, "--") {
			for _, l := range argLong {
				if s == "--"+l {
					i++
				}
			}
			return i
		}
		for j := 1; j < len(s); j++ {
			if strings.IndexByte(argLetters, s[j]) >= 0 {
				if j+1 == len(s) {
					i++
				}
				break
			}
		}
		return i
	})
	return ops
}

// hOutOperand: xxd and uniq write their second operand.
func hOutOperand(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	argLetters := map[string]string{"xxd": "cglosnC", "uniq": "fswn"}[base]
	ops := operands(w, argLetters, "skip-fields", "skip-chars", "check-chars")
	cats := programCategories(base)
	if len(ops) >= 2 {
		cats |= catWrite
	}
	a.execItem(w, cats, false)
	if len(ops) >= 2 {
		a.pathWord("create_file", w, ops[1], cwd)
	}
}

// hOutOption: tree -o FILE, cc/gcc/clang -o FILE and go build/test -o FILE
// write FILE; gcc -wrapper runs a program around the compiler's tools;
// ag --pager runs a program.
func hOutOption(a *analyzer, w words, cwd string, depth int) {
	base := baseName(w.s[0])
	var outs []string
	var progs []string
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case s == "-o" && i+1 < w.len():
			i++
			outs = append(outs, w.s[i])
		case strings.HasPrefix(s, "-o") && len(s) > 2 && base != "go" && base != "tree":
			outs = append(outs, s[2:])
		case base == "base64" && s == "--output" && i+1 < w.len():
			i++
			outs = append(outs, w.s[i])
		case base == "base64" && strings.HasPrefix(s, "--output="):
			outs = append(outs, s[len("--output="):])
		case base != "go" && base != "tree" && base != "ag" && s == "-wrapper" && i+1 < w.len():
			i++
			progs = append(progs, strings.ReplaceAll(w.s[i], ",", " "))
		case base == "ag" && (s == "--pager" && i+1 < w.len()):
			i++
			progs = append(progs, w.s[i])
		case base == "ag" && strings.HasPrefix(s, "--pager="):
			progs = append(progs, s[len("--pager="):])
		}
	}
	cats := programCategories(base)
	if len(outs) > 0 {
		cats |= catWrite
	}
	it := a.execItem(w, cats, false)
	for _, o := range outs {
		a.pathItem("create_file", o, false, cwd)
	}
	for _, p := range progs {
		a.raise(it, FloorAskUnlessExplicit, base+" runs "+p)
		start := len(a.items)
		a.cmd(withDynamicTail(words{s: strings.Fields(p)}, "{args}"), cwd, depth+1)
		a.raiseFrom(start, FloorAskUnlessExplicit, "program run by "+base)
	}
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

// curlArgLetters are curl's short options that take an argument.
const curlArgLetters = "AbcCdDeEFHKmoPQrtTuUwxXyYz"

// wgetArgLetters are wget's short options that take an argument.
const wgetArgLetters = "eoaiBtOTwQPlARDIXU"
