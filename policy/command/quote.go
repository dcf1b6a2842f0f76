package command

import (
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/shell"
)

// safeByte reports whether b can appear unquoted in a shell word without
// changing its meaning.
var safeByte = func() (t [256]bool) {
	for b := 'a'; b <= 'z'; b++ {
		t[b] = true
	}
	for b := 'A'; b <= 'Z'; b++ {
		t[b] = true
	}
	for b := '0'; b <= '9'; b++ {
		t[b] = true
	}
	for _, b := range "_@%+=:,./-" {
		t[b] = true
	}
	return t
}()

// needsQuote reports whether s must be quoted to be read back as one word.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if !safeByte[s[i]] && !(i > 0 && (s[i] == '~' || s[i] == '^')) {
			return true
		}
	}
	return false
}

// hasControl reports whether s holds a control byte or invalid UTF-8, which
// single quotes would carry through raw (a newline in an action string could
// fool line-based tools and regex rules).
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return !utf8.ValidString(s)
}

// appendQuoted appends s as one shell word: bare when safe, in single quotes
// otherwise, and in ANSI-C $'...' quoting when it holds control bytes.
// Quote reads back as the same string in bash.
func appendQuoted(b *strings.Builder, s string) {
	if !needsQuote(s) {
		b.WriteString(s)
		return
	}
	if hasControl(s) {
		const hex = "0123456789abcdef"
		b.WriteString("$'")
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\\' || c == '\'':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c >= 0x7f:
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('\'')
		return
	}
	b.WriteByte('\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(`'\''`)
		s = s[i+1:]
	}
	b.WriteString(s)
	b.WriteByte('\'')
}

// Quote returns s as one bash word, quoted only when needed.
func Quote(s string) string {
	if !needsQuote(s) {
		return s
	}
	var b strings.Builder
	appendQuoted(&b, s)
	return b.String()
}

// Join quotes each word and joins them with spaces, the form used in action
// details ("rm -rf 'a b'").
func Join(argv []string) string {
	return joinWords(words{s: argv})
}

// joinWords renders w like Join, except that flagged words (dynamic or
// pattern, see words) are written as their source text, unquoted, so
// "ls $HOME" stays "ls $HOME".
func joinWords(w words) string {
	n := 0
	for _, s := range w.s {
		n += len(s) + 3
	}
	var b strings.Builder
	b.Grow(n)
	for i, s := range w.s {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.flagged(i) {
			b.WriteString(s)
		} else {
			appendQuoted(&b, s)
		}
	}
	return b.String()
}

// SplitWords splits s into words the way a shell would (quotes and
// escapes; parameters expand to nothing): a Codex rule example given as
// a string ("git push origin main").
func SplitWords(s string) ([]string, error) {
	return shell.Fields(s, func(string) string { return "" })
}
