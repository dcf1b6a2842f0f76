package shellquote

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Display renders argv as one line a human can read and a shell would parse
// back into the same words. Words needing no quotes are printed as they are,
// others in single quotes; words holding control characters, invalid UTF-8 or
// invisible formatting runes (bidi overrides, zero-width spaces) use bash's
// $'...' form with \xNN / \uNNNN escapes. The result never contains a byte
// below 0x20, DEL, or a rune that could move the cursor or reorder text, so a
// sandboxed program cannot repaint or forge the prompt it appears in.
func Display(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(w))
	}
	return b.String()
}

// Sanitize escapes s like Display does inside $'...', but without quoting:
// safe characters are kept, everything unsafe becomes \xNN, \uNNNN or a C
// escape, and backslashes are doubled so escapes stay unambiguous. Use it for
// single values shown to a human (cwd, rule, reason).
func Sanitize(s string) string {
	if !needsEscape(s) && !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	escapeInto(&b, s, false)
	return b.String()
}

func quoteWord(w string) string {
	switch {
	case w == "":
		return "''"
	case needsEscape(w):
		var b strings.Builder
		b.WriteString("$'")
		escapeInto(&b, w, true)
		b.WriteByte('\'')
		return b.String()
	case allPlain(w):
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func allPlain(w string) bool {
	for _, r := range w {
		if !isShellPlain(r) {
			return false
		}
	}
	return true
}

// isShellPlain reports runes a shell never treats specially inside a word.
func isShellPlain(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case strings.ContainsRune("-_./=:,+@%^", r):
		return true
	}
	return r >= 0x80 && isSafeRune(r)
}

// isSafeRune reports printable runes that do not alter how surrounding text is
// displayed: no controls (C0, DEL, C1), no format characters (bidi overrides,
// zero-width joiners), no line or paragraph separators.
func isSafeRune(r rune) bool {
	if r == utf8.RuneError || r < 0x20 || (r >= 0x7f && r < 0xa0) {
		return false
	}
	if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
		return false
	}
	return unicode.IsPrint(r) || r == ' '
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return true
		}
		if !isSafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// escapeInto writes s with every unsafe byte or rune escaped. inQuote escapes
// the single quote too, for use inside $'...'.
func escapeInto(b *strings.Builder, s string, inQuote bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'' && inQuote:
			b.WriteString(`\'`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && !isSafeRune(r):
			fmt.Fprintf(b, `\x%02x`, r)
		case !isSafeRune(r) && r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		case !isSafeRune(r):
			fmt.Fprintf(b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
}

// Command renders argv as a command a human is told to run (a suggestion
// in a warning: "agentbox quarantine PATH"): each word quoted with
// mvdan.cc/sh's syntax.Quote for bash, so pasting it into a shell runs
// exactly those words — a path like "s;touch${IFS}x;#" stays one word —
// and every non-printable rune (controls, invalid UTF-8, bidi overrides,
// zero-width spaces) is written as a $'\xNN' / $'\uNNNN' escape, so the
// line cannot drive the terminal it is printed on. A word syntax.Quote
// cannot represent (a NUL byte) is rendered as Display renders it.
func Command(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			q = quoteWord(w)
		}
		b.WriteString(q)
	}
	return b.String()
}
