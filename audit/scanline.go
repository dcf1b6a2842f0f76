package audit

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// lineInfo is what verify and report need of a line, as slices into it:
// found by one allocation-free pass over the top-level object. A line the
// pass cannot read exactly as encoding/json would (see scanInfo) is left to
// ParseLine, so results never differ.
type lineInfo struct {
	seq                                                    uint64
	prev, event, kid, mac                                  []byte
	agent, role, run, action, decision, rule, approver, ts []byte
	exit                                                   int
	hasExit                                                bool
	argv, detail                                           []byte // raw JSON values
	// copied: a field is a decoded copy, not a slice of the line (rebase
	// cannot move it)
	copied bool
}

// rebase points li's slices, which are into from, at the same bytes of
// to (a copy of from). It reports false, leaving li unusable, if a slice
// is not within from.
func (li *lineInfo) rebase(from, to []byte) bool {
	if li.copied {
		return false
	}
	ok := true
	for _, f := range []*[]byte{&li.prev, &li.event, &li.kid, &li.mac, &li.agent, &li.role, &li.run, &li.action,
		&li.decision, &li.rule, &li.approver, &li.ts, &li.argv, &li.detail} {
		if *f == nil {
			continue
		}
		// a slice of from ends cap(from)-cap(f) bytes into it
		off := cap(from) - cap(*f)
		if off < 0 || off+len(*f) > len(from) || off+len(*f) > len(to) {
			ok = false
			continue
		}
		*f = to[off : off+len(*f) : off+len(*f)]
	}
	return ok
}

// infoKeys are the Event fields and the kind of JSON value each takes.
var infoKeys = map[string]byte{
	"time": 's', "seq": 'u', "prev": 's', "agent": 's', "role": 's', "run": 's', "event": 's', "pid": 'i', "ppid": 'i',
	"cwd": 's', "action": 's', "argv": 'a', "exe": 's', "decision": 's', "rule": 's', "layer": 's', "reason": 's',
	"approver": 's', "exit": 'i', "signal": 's', "limit": 's', "detail": 'm', "kid": 's', "mac": 's',
}

// scanInfo reads line's top-level fields. ok is false when the line is
// not one it can vouch for exactly (malformed, an escaped key or value in
// a field it returns, a differently-cased key, a value of the wrong type):
// the caller then uses ParseLine.
func scanInfo(line []byte) (li lineInfo, ok bool) { return scanInfoWith(line, false) }

// scanInfoWith is scanInfo; trusted (a line whose MAC matched) skips the
// check of the strings' escapes and bytes, except in the values it returns
// decoded (scantrusted.go).
func scanInfoWith(line []byte, trusted bool) (li lineInfo, ok bool) {
	d := scanner{b: line, trusted: trusted}
	d.ws()
	ok = d.object(func(kb []byte) bool {
		key := kb[1 : len(kb)-1]
		if len(key) == 0 {
			return false
		}
		kind, known := infoKind(key)
		if !known {
			// encoding/json would match a differently-cased key
			return !hasFoldKey(string(key)) && d.skipValue(0)
		}
		return d.infoField(string(key), kind, &li)
	})
	return li, ok && d.end() && li.seq != 0 && len(li.event) > 0
}

// infoKind is infoKeys[key] as a switch (no map hashing per field).
func infoKind(key []byte) (byte, bool) {
	switch string(key) {
	case "time", "prev", "agent", "role", "run", "event", "cwd", "action", "exe", "decision", "rule", "layer", "reason", "approver", "signal", "limit", "kid", "mac":
		return 's', true
	case "seq":
		return 'u', true
	case "pid", "ppid", "exit":
		return 'i', true
	case "argv":
		return 'a', true
	case "detail":
		return 'm', true
	}
	return 0, false
}

func hasFoldKey(k string) bool {
	for name := range infoKeys {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// rawString returns a string token with its quotes, escapes checked.
func (d *scanner) rawString() ([]byte, bool) {
	start := d.i
	if !d.eat('"') {
		return nil, false
	}
	if d.trusted {
		end := skipString(d.b, start)
		if end < 0 {
			return nil, false
		}
		d.i = end
		return d.b[start:end], true
	}
	for d.i < len(d.b) {
		// Eight bytes at a time while none of them ends the plain run
		// (a quote, a backslash or a control character): the long
		// values (reasons, argv) are mostly plain text.
		for d.i+8 <= len(d.b) && plain8(binary.LittleEndian.Uint64(d.b[d.i:])) {
			d.i += 8
		}
		if d.i >= len(d.b) {
			break
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start:d.i], true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return nil, false
			}
			switch d.b[d.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i += 2
			case 'u':
				if d.i+6 > len(d.b) {
					return nil, false
				}
				for _, h := range d.b[d.i+2 : d.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false
					}
				}
				d.i += 6
			default:
				return nil, false
			}
			continue
		case c < 0x20:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// plain8 reports whether none of the eight bytes of x is a quote, a
// backslash or below 0x20 (the bytes that end a plain run of a JSON
// string), by the classic word-at-a-time tests for a zero byte.
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	less20 := (x - ones*0x20) & ^x & highs
	return zero(x^(ones*'"'))|zero(x^(ones*'\\'))|less20 == 0
}

// plainValue returns a string value's contents (null is empty): a slice
// of the line, or, when it holds escapes, a copy with them decoded as
// encoding/json decodes them (ok false for invalid UTF-8, which
// encoding/json replaces, and for a surrogate escape: ParseLine decides).
func (d *scanner) plainValue() ([]byte, bool) {
	if d.null() {
		return nil, true
	}
	raw, ok := d.rawString()
	if !ok {
		return nil, false
	}
	v := raw[1 : len(raw)-1]
	if bytes.IndexByte(v, '\\') >= 0 {
		sub := scanner{b: raw}
		s, ok := sub.plainString()
		if !ok || sub.i != len(raw) {
			return nil, false
		}
		return []byte(s), true
	}
	if !utf8.Valid(v) {
		return nil, false
	}
	return v, true
}

// within reports whether v is a slice of the scanner's bytes.
func (d *scanner) within(v []byte) bool {
	return len(d.b) > 0 && len(v) > 0 && cap(d.b) >= cap(v) && &d.b[:cap(d.b)][cap(d.b)-cap(v)] == &v[:cap(v)][0]
}

// skipValue skips any JSON value, checking its syntax.
func (d *scanner) skipValue(depth int) bool {
	if depth > 64 || d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, ok := d.rawString()
		return ok
	case c == '{':
		return d.object(func([]byte) bool { return d.skipValue(depth + 1) })
	case c == '[':
		return d.array(func() bool { return d.skipValue(depth + 1) })
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
				d.i += len(lit)
				return true
			}
		}
		return false
	default:
		raw, ok := d.number()
		return ok && validNumber(raw)
	}
}

// validNumber checks JSON number syntax.
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i == len(b)
}

// infoField reads one known field, checking its type as encoding/json
// would for an Event.
func (d *scanner) infoField(key string, kind byte, li *lineInfo) bool {
	switch kind {
	case 's':
		switch key {
		case "cwd", "exe", "layer", "reason", "signal", "limit":
			// not returned: only their syntax matters (encoding/json takes
			// any valid escape, and replaces invalid UTF-8); a real run's
			// reasons quote commands (\"), a third of its lines
			if d.null() {
				return true
			}
			_, ok := d.rawString()
			return ok
		}
		v, ok := d.plainValue()
		if !ok {
			return false
		}
		if len(v) > 0 && !d.within(v) {
			li.copied = true
		}
		switch key {
		case "time":
			if v != nil {
				if _, ok := parseTimeFast(v); !ok {
					if _, err := time.Parse(time.RFC3339Nano, string(v)); err != nil {
						return false
					}
				}
			}
			li.ts = v
		case "prev":
			li.prev = v
		case "agent":
			li.agent = v
		case "role":
			li.role = v
		case "run":
			li.run = v
		case "event":
			li.event = v
		case "action":
			li.action = v
		case "decision":
			li.decision = v
		case "rule":
			li.rule = v
		case "approver":
			li.approver = v
		case "kid":
			li.kid = v
		case "mac":
			li.mac = v
		}
		return true
	case 'u':
		raw, ok := d.number()
		if !ok || len(raw) > 1 && raw[0] == '0' {
			return false
		}
		n, err := strconv.ParseUint(string(raw), 10, 64)
		li.seq = n
		return err == nil
	case 'i':
		if d.null() {
			if key == "exit" {
				li.hasExit = false
			}
			return true
		}
		var n int
		if !d.integer(&n) {
			return false
		}
		if key == "exit" {
			li.exit, li.hasExit = n, true
		}
		return true
	case 'a', 'm':
		start := d.i
		if d.null() {
			return true
		}
		// every element (or member value) must be a string or null
		str := func() bool {
			if d.null() {
				return true
			}
			_, ok := d.rawString()
			return ok
		}
		if kind == 'a' {
			if !d.array(str) {
				return false
			}
			li.argv = d.b[start:d.i]
		} else {
			if !d.object(func([]byte) bool { return str() }) {
				return false
			}
			li.detail = d.b[start:d.i]
		}
		return true
	}
	return false
}

// detailValue returns the value of key in a raw detail object written by
// agentbox ("" when absent or escaped).
func detailValue(detail []byte, key string) string {
	pat := `"` + key + `":"`
	i := bytes.Index(detail, []byte(pat))
	if i < 0 {
		return ""
	}
	rest := detail[i+len(pat):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return ""
	}
	return string(rest[:j])
}
