package command

import "strings"

// findArgPrimaries are find primaries that take one argument.
var findArgPrimaries = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		"-amin": true, "-anewer": true, "-atime": true, "-cmin": true, "-cnewer": true, "-context": true,
		"-ctime": true, "-fstype": true, "-gid": true, "-group": true, "-ilname": true, "-iname": true,
		"-inum": true, "-ipath": true, "-iregex": true, "-iwholename": true, "-links": true, "-lname": true,
		"-maxdepth": true, "-mindepth": true, "-mmin": true, "-mtime": true, "-name": true, "-newer": true,
		"-path": true, "-perm": true, "-regex": true, "-regextype": true, "-samefile": true, "-size": true,
		"-type": true, "-uid": true, "-used": true, "-user": true, "-wholename": true, "-xtype": true,
		"-printf": true, "-files0-from": true,
	}
}}

// findFlagPrimaries are find primaries, operators and options without
// argument.
var findFlagPrimaries = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		"-print": true, "-print0": true, "-ls": true, "-prune": true, "-quit": true, "-true": true,
		"-false": true, "-empty": true, "-executable": true, "-readable": true, "-writable": true,
		"-nouser": true, "-nogroup": true, "-depth": true, "-d": true, "-mount": true, "-xdev": true,
		"-noleaf": true, "-daystart": true, "-follow": true, "-ignore_readdir_race": true,
		"-noignore_readdir_race": true, "-xautofs": true, "-warn": true, "-nowarn": true, "-help": true, "--help": true,
		"-version": true, "--version": true, "-not": true, "-and": true, "-or": true, "-a": true, "-o": true,
		"!": true, "(": true, ")": true, ",": true, "-delete": true,
	}
}}

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
		case findArgPrimaries.get()[s] || strings.HasPrefix(s, "-newer"):
			if strings.HasPrefix(s, "-newer") && len(s) > len("-newer") && len(s) != len("-newerXY") {
				problems = append(problems, "unknown find primary "+s)
			}
			i += 2
		case findFlagPrimaries.get()[s]:
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
		// --pre runs a program on every file searched; --hostname-bin
		// runs one to learn the host name (for hyperlinks).
		pre, opt := "", ""
		for _, o := range []string{"--pre", "--hostname-bin"} {
			switch {
			case s == o && i+1 < w.len():
				pre, opt = w.s[i+1], o
				i++
			case strings.HasPrefix(s, o+"="):
				pre, opt = s[len(o)+1:], o
			}
		}
		if pre == "" {
			continue
		}
		a.raise(it, FloorAskUnlessExplicit, "rg "+opt+" runs "+pre)
		start := len(a.items)
		a.cmd(words{s: []string{pre, "{file}"}, flags: []uint8{0, flagDynamic}}, cwd, depth+1)
		a.raiseFrom(start, FloorAskUnlessExplicit, "program run by rg "+opt)
	}
}

// fdPlaceholders are the replacement strings of fd -x/-X.
var fdPlaceholders = []string{"{}", "{/}", "{//}", "{.}", "{/.}"}

// hFd: fd -x/--exec CMD... and -X/--exec-batch CMD... run CMD on results.
func hFd(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, catExecute|catRead, false)
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) || !(s == "-x" || s == "--exec" || s == "-X" || s == "--exec-batch") {
			continue
		}
		j := i + 1
		for j < w.len() && !(w.s[j] == ";" && !w.flagged(j)) {
			j++
		}
		inner := w.sub(i+1, j)
		has := false
		for _, p := range fdPlaceholders {
			before := inner
			inner = markPlaceholder(inner, p)
			has = has || !sameFlags(before, inner)
		}
		if !has {
			inner = withDynamicTail(inner, "{}")
		}
		if inner.len() > 0 {
			a.cmd(inner, cwd, depth+1)
		}
		i = j
	}
}

func sameFlags(a, b words) bool {
	if a.flags == nil || b.flags == nil {
		return a.flags == nil && b.flags == nil
	}
	for i := range a.flags {
		if a.flags[i] != b.flags[i] {
			return false
		}
	}
	return true
}
