package command

import "strings"

// hPager: less/more with a +command holding ! or | (shell escape, pipe) or
// s (save) runs commands or writes files; -o/-O FILE logs to FILE.
func hPager(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute|catRead, false)
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case strings.HasPrefix(s, "+") && strings.ContainsAny(s, "!|"):
			a.raise(it, FloorAskUnlessExplicit, baseName(w.s[0])+" "+s+" runs a shell command")
		case s == "-o" || s == "-O":
			if i+1 < w.len() {
				i++
				a.pathWord("create_file", w, i, cwd)
			}
		case strings.HasPrefix(s, "--log-file=") || strings.HasPrefix(s, "--LOG-FILE="):
			a.pathItem("create_file", s[strings.IndexByte(s, '=')+1:], false, cwd)
		}
	}
}

// hEditor: vim/emacs command-line commands and scripts (-c, +cmd, --cmd,
// -S, -s, ex mode; --eval, -l, --batch, -f) can run anything.
func hEditor(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute|catWrite, false)
	base := baseName(w.s[0])
	emacs := strings.HasPrefix(base, "emacs")
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			a.raise(it, FloorAsk, base+": dynamic argument "+s)
			continue
		}
		risky := false
		if emacs {
			risky = s == "--eval" || strings.HasPrefix(s, "--eval=") || s == "-l" || strings.HasPrefix(s, "--load") ||
				s == "--batch" || s == "-batch" || s == "-f" || strings.HasPrefix(s, "--funcall") || strings.HasPrefix(s, "--script") || s == "-x"
		} else {
			risky = s == "-c" || s == "--cmd" || s == "-S" || s == "-s" || s == "-e" || s == "-E" || s == "-es" || s == "-Es" || s == "-u" ||
				(strings.HasPrefix(s, "+") && len(s) > 1 && !isDigits(s[1:]) && !strings.HasPrefix(s, "+/"))
		}
		if risky {
			a.raise(it, FloorAskUnlessExplicit, base+" "+s+" runs editor commands, which can run programs")
		}
	}
	if base == "ex" {
		a.raise(it, FloorAskUnlessExplicit, "ex runs editor commands, which can run programs")
	}
}
