// Package capfield bounds values the sandbox chooses (argv words, paths,
// actions) before they are recorded or shown: a value past its bound keeps
// its head, followed by a marker with its full length and SHA-256, so a
// reviewer can still match it against the original.
package capfield

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Value returns s unchanged if it has at most n bytes, else s cut to at
// most n bytes (at a rune boundary) and the marker "…[cut: LEN bytes,
// sha256:HEX]" of the whole.
func Value(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:cut] + "…[cut: " + strconv.Itoa(len(s)) + " bytes, sha256:" + hex.EncodeToString(sum[:]) + "]"
}

// Words keeps ws's words (each cut to maxWord) while they fit maxTotal
// bytes, then one marker word for the rest: how many words and bytes, and
// the SHA-256 of the rest joined with NUL bytes (as /proc/PID/cmdline
// holds them). ws is returned unchanged when it fits.
func Words(ws []string, maxWord, maxTotal int) []string {
	if Fits(ws, maxWord, maxTotal) {
		return ws
	}
	out := make([]string, 0, len(ws))
	size := 0
	for i, w := range ws {
		w = Value(w, maxWord)
		if size+len(w) > maxTotal {
			rest := strings.Join(ws[i:], "\x00")
			sum := sha256.Sum256([]byte(rest))
			return append(out, "…["+strconv.Itoa(len(ws)-i)+" more words cut: "+strconv.Itoa(len(rest))+" bytes, sha256:"+hex.EncodeToString(sum[:])+"]")
		}
		out = append(out, w)
		size += len(w)
	}
	return out
}

// Fits reports whether every word of ws has at most maxWord bytes and all
// together at most maxTotal.
func Fits(ws []string, maxWord, maxTotal int) bool {
	n := 0
	for _, w := range ws {
		if len(w) > maxWord {
			return false
		}
		n += len(w)
	}
	return n <= maxTotal
}

// Line makes s one line of at most n bytes and a marker, for a message a
// person reads (a refusal at the terminal, a command's stderr in an
// error): control characters (newlines, escapes) become spaces, and a
// longer s is cut at n bytes and ends in "...". Unlike Value it keeps no
// trace of the whole: what it shortens is a message, not a record.
func Line(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
