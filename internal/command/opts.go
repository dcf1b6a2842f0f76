package command

import "strings"

// optSpec describes a program's options in getopt_long terms, enough to find
// where its operands (and so a wrapped inner command) start.
type optSpec struct {
	short    string   // letters without an argument
	shortArg string   // letters with a required argument (attached or next word)
	shortOpt string   // letters with an optional, attached-only argument
	long     []string // long options without argument ("--x=v" tolerated)
	longArg  []string // long options with a required argument ("--x=v" or "--x v")
	numeric  bool     // "-N" (digits) is an option, as in nice -10
	plus     bool     // "+x" is an option too, as in sh +e
	dash     bool     // a lone "-" is an option (env's old spelling of -i)
}

// opt is one parsed option.
type opt struct {
	name string // the letter, or the long name without "--"
	val  string
	has  bool // val was given
	long bool
	idx  int // index of the word the option starts in
}

// scanOpts parses the options of w from index start up to the first operand
// (getopt with a leading '+': stop at the first non-option). fn, if not nil,
// sees each option and may return true to stop right after it. next is the
// index of the first operand (after a "--"); problem is non-empty when an
// option was unknown, ambiguous, missing its argument, or a flagged (dynamic)
// word stood where an option could be — the caller then cannot be sure where
// the operands start and should at least ask.
func scanOpts(w words, start int, sp *optSpec, fn func(o opt) bool) (next int, problem string) {
	note := func(p string) {
		if problem == "" {
			problem = p
		}
	}
	i := start
	for i < w.len() {
		s := w.s[i]
		if w.flagged(i) {
			note("dynamic argument " + s)
			return i, problem
		}
		if s == "--" {
			return i + 1, problem
		}
		if s == "-" && sp.dash {
			i++
			if fn != nil && fn(opt{name: "-", idx: i - 1}) {
				return i, problem
			}
			continue
		}
		if len(s) < 2 || (s[0] != '-' && !(sp.plus && s[0] == '+')) {
			return i, problem
		}
		if strings.HasPrefix(s, "--") {
			name, val, has := strings.Cut(s[2:], "=")
			full, takesArg, ok := matchLong(sp, name)
			if !ok {
				note("unknown option --" + name)
				i++
				continue
			}
			o := opt{name: full, val: val, has: has, long: true, idx: i}
			i++
			if takesArg && !has {
				if i < w.len() {
					o.val, o.has = w.s[i], true
					if w.flagged(i) {
						note("dynamic argument " + w.s[i])
					}
					i++
				} else {
					note("option --" + full + " needs an argument")
				}
			}
			if fn != nil && fn(o) {
				return i, problem
			}
			continue
		}
		if sp.numeric && isDigits(s[1:]) {
			o := opt{name: "#", val: s[1:], has: true, idx: i}
			i++
			if fn != nil && fn(o) {
				return i, problem
			}
			continue
		}
		idx := i
		i++
		stop := false
		for j := 1; j < len(s); j++ {
			c := s[j]
			switch {
			case strings.IndexByte(sp.shortArg, c) >= 0:
				o := opt{name: string(c), idx: idx}
				if j+1 < len(s) {
					o.val, o.has = s[j+1:], true
				} else if i < w.len() {
					o.val, o.has = w.s[i], true
					if w.flagged(i) {
						note("dynamic argument " + w.s[i])
					}
					i++
				} else {
					note("option -" + string(c) + " needs an argument")
				}
				j = len(s)
				if fn != nil && fn(o) {
					stop = true
				}
			case strings.IndexByte(sp.shortOpt, c) >= 0:
				o := opt{name: string(c), idx: idx}
				if j+1 < len(s) {
					o.val, o.has = s[j+1:], true
				}
				j = len(s)
				if fn != nil && fn(o) {
					stop = true
				}
			case strings.IndexByte(sp.short, c) >= 0:
				if fn != nil && fn(opt{name: string(c), idx: idx}) {
					stop = true
				}
			default:
				note("unknown option -" + string(c))
			}
			if stop {
				break
			}
		}
		if stop {
			return i, problem
		}
	}
	return i, problem
}

// matchLong finds long option name in sp, accepting an unambiguous prefix
// as getopt_long does.
func matchLong(sp *optSpec, name string) (full string, takesArg, ok bool) {
	for _, l := range sp.long {
		if l == name {
			return l, false, true
		}
	}
	for _, l := range sp.longArg {
		if l == name {
			return l, true, true
		}
	}
	if name == "" {
		return "", false, false
	}
	n := 0
	for _, l := range sp.long {
		if strings.HasPrefix(l, name) {
			full, takesArg = l, false
			n++
		}
	}
	for _, l := range sp.longArg {
		if strings.HasPrefix(l, name) {
			full, takesArg = l, true
			n++
		}
	}
	if n == 1 {
		return full, takesArg, true
	}
	return "", false, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isAssignment reports whether s looks like NAME=value (an environment
// assignment to env or sudo).
func isAssignment(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
