package audit

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/capfield"
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
	if !capfield.Fits(e.Argv, MaxField, MaxArgv) {
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

// capValue and capArgv are capfield's, with the event bounds.
func capValue(s string, n int) string { return capfield.Value(s, n) }

func capArgv(argv []string) []string { return capfield.Words(argv, MaxField, MaxArgv) }
