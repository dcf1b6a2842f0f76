// Package shellquote is agentbox's one home for shell quoting, in two
// forms for two readers. Word, AppendWord and Join give the canonical
// form of a command that action strings, rules and the audit log use
// (bash reads it back as the same words). Display and Sanitize give what a
// human's terminal shows: the same words, but with every control
// character, invalid byte and text-reordering rune escaped, so a sandboxed
// program cannot repaint or forge the prompt it appears in.
package shellquote

import (
	"strings"
	"unicode/utf8"
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

// AppendWord appends s as one shell word: bare when safe, in single quotes
// otherwise, and in ANSI-C $'...' quoting when it holds control bytes.
// Quote reads back as the same string in bash.
func AppendWord(b *strings.Builder, s string) {
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

// Word returns s as one bash word, quoted only when needed.
func Word(s string) string {
	if !needsQuote(s) {
		return s
	}
	var b strings.Builder
	AppendWord(&b, s)
	return b.String()
}

// Join quotes each word and joins them with spaces ("rm -rf 'a b'").
func Join(argv []string) string {
	n := 0
	for _, s := range argv {
		n += len(s) + 3
	}
	var b strings.Builder
	b.Grow(n)
	for i, s := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		AppendWord(&b, s)
	}
	return b.String()
}
