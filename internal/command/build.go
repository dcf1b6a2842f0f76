package command

import (
	"path"
	"strings"
)

// optVal returns the value of option name at w.s[i] given as "name=v" or
// "name v" (advancing *i past the value), and whether it matched.
func optVal(w words, i *int, names ...string) (string, bool) {
	s := w.s[*i]
	for _, n := range names {
		if v, ok := strings.CutPrefix(s, n+"="); ok && strings.HasPrefix(n, "--") {
			return v, true
		}
		if s == n && *i+1 < w.len() {
			*i++
			return w.s[*i], true
		}
	}
	return "", false
}

// hTar: tar runs programs given by --to-command, -I/--use-compress-program,
// --checkpoint-action=exec=, -F/--info-script, --rsh-command.
func hTar(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute|catRead|catWrite, false)
	var scripts, progs []string
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		if v, ok := optVal(w, &i, "--to-command", "--info-script", "--new-volume-script"); ok {
			scripts = append(scripts, v)
			continue
		}
		if v, ok := optVal(w, &i, "--use-compress-program", "--rsh-command"); ok {
			progs = append(progs, v)
			continue
		}
		if v, ok := strings.CutPrefix(s, "--checkpoint-action="); ok {
			if cmd, ok := strings.CutPrefix(v, "exec="); ok {
				scripts = append(scripts, cmd)
			}
			continue
		}
		switch {
		case strings.HasPrefix(s, "--"):
		case strings.HasPrefix(s, "-") || i == 1:
			// a short-option cluster, or tar's old-style first word ("xIf")
			for j := 1 - b2i(i == 1 && !strings.HasPrefix(s, "-")); j < len(s); j++ {
				if s[j] != 'I' && s[j] != 'F' {
					continue
				}
				v := s[j+1:]
				if v == "" || i == 1 && !strings.HasPrefix(s, "-") {
					if i+1 < w.len() {
						i++
						v = w.s[i]
					}
				}
				if s[j] == 'I' {
					progs = append(progs, v)
				} else {
					scripts = append(scripts, v)
				}
				break
			}
		}
	}
	for _, p := range progs {
		// The program is judged as a program start of its own.
		a.cmd(words{s: strings.Fields(p)}, cwd, depth+1)
	}
	for _, s := range scripts {
		a.raise(it, FloorAskUnlessExplicit, "tar runs a command for each file or volume")
		a.script(s, cwd, depth+1, it)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hCmake: cmake -E runs portable commands (env, chdir and time run an
// inner command; rm, rename, copy, touch touch paths); cmake -P FILE runs a
// script.
func hCmake(a *analyzer, w words, cwd string, depth int) {
	e := -1
	for i := 1; i < w.len(); i++ {
		if w.s[i] == "-E" && !w.flagged(i) {
			e = i
			break
		}
		if (w.s[i] == "-P" || strings.HasPrefix(w.s[i], "--eval")) && !w.flagged(i) {
			it := a.execItem(w, catExecute, false)
			a.raise(it, FloorAskUnlessExplicit, "cmake -P runs a cmake script")
			return
		}
	}
	if e < 0 || e+1 >= w.len() {
		a.execItem(w, catExecute, false)
		return
	}
	sub := w.s[e+1]
	args := w.from(e + 2)
	switch sub {
	case "env":
		k := 0
		for k < args.len() && !args.flagged(k) && (strings.HasPrefix(args.s[k], "--unset=") || isAssignment(args.s[k]) || args.s[k] == "--modify" || args.s[k] == "--") {
			if args.s[k] == "--" {
				k++
				break
			}
			k++
		}
		a.wrap(w, e+2+k, cwd, depth, catExecute, true, "")
		return
	case "chdir":
		if args.len() >= 1 {
			dir := resolvePath(args.s[0], args.flagged(0), cwd)
			a.execItem(w.sub(0, min(e+3, w.len())), catExecute, args.len() > 1)
			if args.len() > 1 {
				a.cmd(args.from(1), dir, depth+1)
			}
			return
		}
	case "time":
		a.wrap(w, e+2, cwd, depth, catExecute, true, "")
		return
	}
	cats := catExecute
	var ops []int
	for k := 0; k < args.len(); k++ {
		if !args.flagged(k) && strings.HasPrefix(args.s[k], "-") {
			continue
		}
		ops = append(ops, k)
	}
	switch sub {
	case "rm", "remove", "remove_directory":
		cats |= catWrite | catDestructive
	case "rename", "copy", "copy_if_different", "copy_directory", "copy_directory_if_different", "create_symlink", "create_hardlink", "touch", "touch_nocreate":
		cats |= catWrite
	}
	a.execItem(w, cats, false)
	switch sub {
	case "rm", "remove", "remove_directory":
		for _, k := range ops {
			a.pathWord("delete", args, k, cwd)
		}
	case "touch", "touch_nocreate":
		for _, k := range ops {
			a.pathWord("create_file", args, k, cwd)
		}
	case "rename", "create_symlink", "create_hardlink":
		if len(ops) == 2 {
			if sub == "rename" {
				a.pathWord("delete", args, ops[0], cwd)
			}
			a.pathWord("create_file", args, ops[1], cwd)
		}
	case "copy", "copy_if_different", "copy_directory", "copy_directory_if_different":
		if len(ops) >= 2 {
			dst := ops[len(ops)-1]
			if len(ops) == 2 && !strings.HasSuffix(args.s[dst], "/") {
				a.pathWord("create_file", args, dst, cwd)
			} else {
				for _, k := range ops[:len(ops)-1] {
					a.pathItem("create_file", strings.TrimSuffix(args.s[dst], "/")+"/"+path.Base(args.s[k]), args.flagged(dst) || args.flagged(k), cwd)
				}
			}
		}
	}
}

// hGo: go build/test/vet -exec, -toolexec and -vettool name programs the go
// command runs; go env -w persists settings that can name programs.
func hGo(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	if w.len() > 2 && w.s[1] == "env" {
		for _, s := range w.s[2:] {
			if s == "-w" {
				a.raise(it, FloorAskUnlessExplicit, "go env -w persists build settings, which can name programs to run")
			}
		}
	}
	for i := 1; i < w.len(); i++ {
		if w.flagged(i) {
			continue
		}
		if w.s[i] == "-o" && i+1 < w.len() && w.len() > 1 && (w.s[1] == "build" || w.s[1] == "test") {
			i++
			a.pathWord("create_file", w, i, cwd)
			continue
		}
		s := strings.TrimLeft(w.s[i], "-")
		if s == w.s[i] {
			continue
		}
		v, ok := "", false
		for _, n := range []string{"exec", "toolexec", "vettool"} {
			if v2, ok2 := strings.CutPrefix(s, n+"="); ok2 {
				v, ok = v2, true
			} else if s == n && i+1 < w.len() {
				i++
				v, ok = w.s[i], true
			}
			if ok {
				break
			}
		}
		if !ok {
			continue
		}
		a.raise(it, FloorAskUnlessExplicit, "go runs "+v+" around its tools or test binaries")
		start := len(a.items)
		a.cmd(withDynamicTail(words{s: strings.Fields(v)}, "{args}"), cwd, depth+1)
		a.raiseFrom(start, FloorAskUnlessExplicit, "program run by go -exec/-toolexec")
	}
}

// hMake: make --eval/-E TEXT adds makefile text; -f - reads a makefile
// from stdin.
func hMake(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case s == "-E" || s == "--eval" || strings.HasPrefix(s, "--eval="):
			a.raise(it, FloorAskUnlessExplicit, "make --eval runs makefile text given inline")
		case (s == "-f" || s == "--file" || s == "--makefile") && i+1 < w.len() && (w.s[i+1] == "-" || w.s[i+1] == "/dev/stdin"),
			s == "--file=-" || s == "-f-" || s == "--makefile=-" || s == "--file=/dev/stdin":
			a.raise(it, FloorAskUnlessExplicit, "make reads its makefile from standard input")
		}
	}
}

// hZip: zip -TT/--unzip-command CMD runs CMD to test the archive.
func hZip(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute|catWrite, false)
	for i := 1; i < w.len(); i++ {
		if w.flagged(i) {
			continue
		}
		if v, ok := optVal(w, &i, "-TT", "--unzip-command"); ok {
			a.raise(it, FloorAskUnlessExplicit, "zip -TT runs a command")
			a.script(v, cwd, depth+1, it)
		}
	}
}
