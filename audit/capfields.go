package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/shellquote"
)

// Bounds on what one event records. The sandbox chooses much of it (a
// 1 MB argv, a 4 MiB CONNECT target): logged whole, a few such events
// filled the disk, and then every run sharing the log was denied. A
// value past its bound keeps its head, followed by a marker with its
// full length and SHA-256, so a reviewer can still match it.
const (
	MaxField = 4 << 10  // one string field, one argv word, one detail value
	MaxArgv  = 32 << 10 // all of argv together
)

// quoteInvalidArgv writes argv words that are not valid UTF-8 — which
// JSON would turn into U+FFFD, losing the bytes — in bash's $'...' form
// with \xNN escapes (the form action strings use), exact and reversible;
// Detail "argv_quoted" lists their indexes.
func quoteInvalidArgv(e *Event) {
	var idx []string
	for i, w := range e.Argv {
		if !utf8.ValidString(w) {
			if idx == nil {
				e.Argv = append([]string(nil), e.Argv...)
			}
			e.Argv[i] = shellquote.Word(w)
			idx = append(idx, strconv.Itoa(i))
		}
	}
	if idx == nil {
		return
	}
	d := make(map[string]string, len(e.Detail)+1)
	for k, v := range e.Detail {
		d[k] = v
	}
	d["argv_quoted"] = strings.Join(idx, ",")
	e.Detail = d
}

// capEvent bounds e's sandbox-chosen fields (after redaction, so a secret
// is never cut in half and kept); Detail "capped" lists the fields cut.
func capEvent(e *Event) {
	var capped []string
	capStr := func(name string, s *string) {
		if len(*s) > MaxField {
			*s = capValue(*s, MaxField)
			capped = append(capped, name)
		}
	}
	capStr("action", &e.Action)
	capStr("reason", &e.Reason)
	capStr("cwd", &e.Cwd)
	capStr("exe", &e.Exe)
	if argvSize(e.Argv) > MaxArgv || anyLonger(e.Argv, MaxField) {
		e.Argv = capArgv(e.Argv)
		capped = append(capped, "argv")
	}
	for k, v := range e.Detail {
		if len(v) > MaxField {
			if len(capped) == 0 || capped[len(capped)-1] != "detail" {
				capped = append(capped, "detail")
			}
			d := make(map[string]string, len(e.Detail)+1)
			for k2, v2 := range e.Detail {
				d[k2] = v2
			}
			d[k] = capValue(v, MaxField)
			e.Detail = d
		}
	}
	if len(capped) == 0 {
		return
	}
	sort.Strings(capped)
	d := make(map[string]string, len(e.Detail)+1)
	for k, v := range e.Detail {
		d[k] = v
	}
	d["capped"] = strings.Join(capped, ",")
	e.Detail = d
}

// capValue returns s cut to at most n bytes (at a rune boundary) and the
// marker "…[cut: LEN bytes, sha256:HEX]" of the whole.
func capValue(s string, n int) string {
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:cut] + "…[cut: " + strconv.Itoa(len(s)) + " bytes, sha256:" + hex.EncodeToString(sum[:]) + "]"
}

// capArgv keeps argv's words (each capped) while they fit MaxArgv, then
// one marker word for the rest: how many words and bytes, and the SHA-256
// of the rest joined with NUL bytes (as /proc/PID/cmdline holds them).
func capArgv(argv []string) []string {
	out := make([]string, 0, len(argv))
	size := 0
	for i, w := range argv {
		if len(w) > MaxField {
			w = capValue(w, MaxField)
		}
		if size+len(w) > MaxArgv {
			rest := strings.Join(argv[i:], "\x00")
			sum := sha256.Sum256([]byte(rest))
			return append(out, "…["+strconv.Itoa(len(argv)-i)+" more words cut: "+strconv.Itoa(len(rest))+" bytes, sha256:"+hex.EncodeToString(sum[:])+"]")
		}
		out = append(out, w)
		size += len(w)
	}
	return out
}

func argvSize(argv []string) int {
	n := 0
	for _, w := range argv {
		n += len(w)
	}
	return n
}

func anyLonger(argv []string, n int) bool {
	for _, w := range argv {
		if len(w) > n {
			return true
		}
	}
	return false
}
