package command

import (
	"path"
	"strings"
)

// Word flags: why a word's runtime value is not known statically.
const (
	// flagDynamic: the word holds an expansion ($x, $(cmd), $((1)), a
	// placeholder filled in at run time such as find's {} or xargs' input).
	flagDynamic uint8 = 1 << iota
	// flagPattern: the word may expand to other or several words (an
	// unquoted glob, brace expansion or tilde).
	flagPattern
)

// words is one simple command's words. s holds each word's value when the
// word is static, and its source text when it is flagged; flags is nil when
// no word is flagged (always the case for argv input).
type words struct {
	s     []string
	flags []uint8
}

func (w words) len() int { return len(w.s) }

// flagged reports whether word i's value is unknown statically.
func (w words) flagged(i int) bool { return w.flags != nil && w.flags[i] != 0 }

// from returns the words from index i on.
func (w words) from(i int) words {
	if i >= len(w.s) {
		return words{}
	}
	r := words{s: w.s[i:]}
	if w.flags != nil {
		r.flags = w.flags[i:]
	}
	return r
}

// sub returns words [i, j).
func (w words) sub(i, j int) words {
	r := words{s: w.s[i:j]}
	if w.flags != nil {
		r.flags = w.flags[i:j]
	}
	return r
}

// anyFlagged reports whether any word in w is flagged.
func (w words) anyFlagged() bool {
	for i := range w.flags {
		if w.flags[i] != 0 {
			return true
		}
	}
	return false
}

// concat returns a new words value holding a followed by b.
func concat(a, b words) words {
	r := words{s: make([]string, 0, len(a.s)+len(b.s))}
	r.s = append(append(r.s, a.s...), b.s...)
	if a.flags != nil || b.flags != nil {
		r.flags = make([]uint8, len(r.s))
		copy(r.flags, a.flags)
		copy(r.flags[len(a.s):], b.flags)
	}
	return r
}

// withDynamicTail returns w followed by one dynamic word with source text
// tail, standing for arguments only known at run time (xargs input).
func withDynamicTail(w words, tail string) words {
	r := concat(w, words{s: []string{tail}, flags: []uint8{flagDynamic}})
	return r
}

// markPlaceholder flags every word that contains ph (find's and xargs -I's
// replacement string) as dynamic.
func markPlaceholder(w words, ph string) words {
	if ph == "" {
		return w
	}
	var flags []uint8
	for i, s := range w.s {
		if strings.Contains(s, ph) {
			if flags == nil {
				flags = make([]uint8, len(w.s))
				copy(flags, w.flags)
			}
			flags[i] |= flagDynamic
		}
	}
	if flags == nil {
		return w
	}
	return words{s: w.s, flags: flags}
}

// baseName is the program name as a policy sees it: the last path element of
// argv[0], without a login shell's leading dash. "/usr/bin/git" and "./git"
// are both "git".
func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 1 && s[0] == '-' {
		s = s[1:]
	}
	return s
}

// resolvePath returns p as an action path: cleaned, and joined to cwd when p
// is relative and cwd is known. Flagged (dynamic) paths keep their source
// text, prefixed by cwd when they do not start with '/', '$' or '~'.
// It never touches the file system.
func resolvePath(p string, dynamic bool, cwd string) string {
	if dynamic {
		if cwd == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "$") || strings.HasPrefix(p, "~") {
			return p
		}
		return strings.TrimSuffix(cwd, "/") + "/" + p
	}
	if p == "" {
		return p
	}
	if cwd != "" && !path.IsAbs(p) {
		if dynamicDir(cwd) {
			// "$D" + "../x" must not clean to "x": the unknown part stays.
			return strings.TrimSuffix(cwd, "/") + "/" + path.Clean(p)
		}
		return path.Join(cwd, p)
	}
	return path.Clean(p)
}

// dynamicDir reports whether a working directory is only known as shell
// text ("$D", "~", "$(mktemp -d)"), after cd to a dynamic argument.
func dynamicDir(d string) bool {
	return strings.ContainsAny(d, "$~`\"'")
}

// harmlessWrite reports whether writing to p has no effect worth judging
// (the null device, the process's own stdout/stderr, its terminal).
func harmlessWrite(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2":
		return true
	}
	return false
}

// eachArg walks w's words from index 1 as GNU getopt does for most tools:
// options and operands may be mixed, and "--" ends the options. A dynamic
// (flagged) word, a word not starting with '-' and a lone "-" are
// operands: operand(i). For an option word ("-xyz", "--name[=v]")
// option(i) returns the index of the last word it used: i, or a later one
// when the option took the next word as its value.
func (w words) eachArg(operand func(i int), option func(i int) int) {
	ddash := false
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		switch {
		case ddash || w.flagged(i) || len(s) < 2 || s[0] != '-':
			operand(i)
		case s == "--":
			ddash = true
		default:
			i = option(i)
		}
	}
}
