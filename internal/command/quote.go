package command

import (
	"strings"

	"github.com/agentbox/agentbox/internal/shellquote"
	"mvdan.cc/sh/v3/shell"
)

// Join quotes each word and joins them with spaces, the form used in action
// details ("rm -rf 'a b'").
func Join(argv []string) string { return shellquote.Join(argv) }

// Quote returns s as one bash word, quoted only when needed.
func Quote(s string) string { return shellquote.Word(s) }

// joinWords renders prefix and w like Join, except that flagged words
// (dynamic or pattern, see words) are written as their source text,
// unquoted, so "ls $HOME" stays "ls $HOME".
func joinWords(prefix string, w words) string {
	n := len(prefix)
	for _, s := range w.s {
		n += len(s) + 3
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(prefix)
	for i, s := range w.s {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.flagged(i) {
			b.WriteString(s)
		} else {
			shellquote.AppendWord(&b, s)
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
