package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeLine fills e from one log line without reflection: a field scanner
// over the top-level object for the fields agentbox writes. Anything it
// does not handle exactly as encoding/json would (an unknown or
// differently-cased key, an escaped string, a number or time it cannot
// read) makes it report false, and the caller decodes with encoding/json
// instead — so the result is always what json.Unmarshal gives, at a
// fraction of the cost on the lines agentbox writes (audit verify and
// report of a 1M-event log read every line).
func decodeLine(line []byte, e *Event) bool {
	d := scanner{b: line}
	d.ws()
	return d.object(func(key []byte) bool {
		k, ok := plainKey(key)
		return ok && d.field(k, e)
	}) && d.end()
}

type scanner struct {
	b []byte
	i int
	// trusted: rawString finds a string's end without checking its
	// escapes and bytes (a line whose MAC matched: scantrusted.go)
	trusted bool
}

func (d *scanner) ws() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\n' || d.b[d.i] == '\r') {
		d.i++
	}
}

func (d *scanner) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *scanner) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// object reads a JSON object, calling member for each key (the raw
// string token, quotes included) with the scanner at the member's value;
// member must consume the value.
func (d *scanner) object(member func(key []byte) bool) bool {
	if !d.eat('{') {
		return false
	}
	d.ws()
	if d.eat('}') {
		return true
	}
	for {
		d.ws()
		key, ok := d.rawString()
		if !ok {
			return false
		}
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		if !member(key) {
			return false
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		return d.eat('}')
	}
}

// array reads a JSON array, calling elem with the scanner at each element;
// elem must consume it.
func (d *scanner) array(elem func() bool) bool {
	if !d.eat('[') {
		return false
	}
	d.ws()
	if d.eat(']') {
		return true
	}
	for {
		d.ws()
		if !elem() {
			return false
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		return d.eat(']')
	}
}

// plainKey is a key token's text when it holds no escape and is valid
// UTF-8 (encoding/json would otherwise decode it differently).
func plainKey(tok []byte) (string, bool) {
	k := tok[1 : len(tok)-1]
	if bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k) {
		return "", false
	}
	return string(k), true
}

// plainString reads a string without escapes or control characters (ok
// false otherwise: the slow path decides).
func (d *scanner) plainString() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			raw := d.b[start:d.i]
			if !utf8.Valid(raw) {
				return "", false // encoding/json replaces invalid UTF-8
			}
			d.i++
			return string(raw), true
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			return "", false
		}
		d.i++
	}
	return "", false
}

// escapedString finishes plainString's string from its first backslash
// (at d.i; the string's text began at start), decoding the escapes
// encoding/json writes and reads: \" \\ \/ \b \f \n \r \t and \uXXXX
// outside the surrogates. A surrogate escape (encoding/json pairs it or
// puts U+FFFD), invalid UTF-8 or a control character reports false: the
// slow path decides. (Real events' reasons quote commands: a third of a
// real run's lines carry \".)
func (d *scanner) escapedString(start int) (string, bool) {
	buf := make([]byte, 0, d.i-start+32)
	seg := start // the unescaped run being copied
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			raw := d.b[seg:d.i]
			if !utf8.Valid(raw) {
				return "", false
			}
			buf = append(buf, raw...)
			d.i++
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			d.i++
			continue
		}
		raw := d.b[seg:d.i]
		if !utf8.Valid(raw) {
			return "", false
		}
		buf = append(buf, raw...)
		if d.i+1 >= len(d.b) {
			return "", false
		}
		esc := d.b[d.i+1]
		d.i += 2
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			var r rune
			for _, h := range d.b[d.i : d.i+4] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				return "", false
			}
			d.i += 4
			buf = utf8.AppendRune(buf, r)
		default:
			return "", false
		}
		seg = d.i
	}
	return "", false
}

func (d *scanner) null() bool {
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// str reads a string value (null is "").
func (d *scanner) str(dst *string) bool {
	if d.null() {
		*dst = ""
		return true
	}
	s, ok := d.plainString()
	*dst = s
	return ok
}

// number returns the raw bytes of a JSON number.
func (d *scanner) number() ([]byte, bool) {
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	return d.b[start:d.i], d.i > start
}

func (d *scanner) integer(dst *int) bool {
	if d.null() {
		return true
	}
	raw, ok := d.number()
	if !ok {
		return false
	}
	n, err := strconv.Atoi(string(raw))
	*dst = n
	return err == nil && (len(raw) == 1 || raw[0] != '0') && !(len(raw) > 1 && raw[0] == '-' && raw[1] == '0')
}

func (d *scanner) field(key string, e *Event) bool {
	switch key {
	case "time":
		var s string
		if d.null() {
			return true
		}
		if !d.str(&s) {
			return false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		e.Time = t
		return err == nil
	case "seq":
		if d.null() {
			return true
		}
		raw, ok := d.number()
		if !ok || len(raw) > 1 && raw[0] == '0' {
			return false
		}
		n, err := strconv.ParseUint(string(raw), 10, 64)
		e.Seq = n
		return err == nil
	case "prev":
		return d.str(&e.Prev)
	case "agent":
		return d.str(&e.Agent)
	case "role":
		return d.str(&e.Role)
	case "run":
		return d.str(&e.Run)
	case "event":
		return d.str(&e.Event)
	case "pid":
		return d.integer(&e.Pid)
	case "ppid":
		return d.integer(&e.Ppid)
	case "cwd":
		return d.str(&e.Cwd)
	case "action":
		return d.str(&e.Action)
	case "exe":
		return d.str(&e.Exe)
	case "decision":
		return d.str(&e.Decision)
	case "rule":
		return d.str(&e.Rule)
	case "layer":
		return d.str(&e.Layer)
	case "reason":
		return d.str(&e.Reason)
	case "approver":
		return d.str(&e.Approver)
	case "signal":
		return d.str(&e.Signal)
	case "limit":
		return d.str(&e.Limit)
	case "kid":
		return d.str(&e.Kid)
	case "mac":
		return d.str(&e.Mac)
	case "exit":
		if d.null() {
			e.Exit = nil
			return true
		}
		var n int
		if !d.integer(&n) {
			return false
		}
		e.Exit = &n
		return true
	case "argv":
		if d.null() {
			e.Argv = nil
			return true
		}
		e.Argv = e.Argv[:0]
		if e.Argv == nil {
			e.Argv = []string{}
		}
		return d.array(func() bool {
			var v string
			if !d.str(&v) {
				return false
			}
			e.Argv = append(e.Argv, v)
			return true
		})
	case "detail":
		if d.null() {
			e.Detail = nil
			return true
		}
		if e.Detail == nil {
			e.Detail = map[string]string{}
		}
		return d.object(func(key []byte) bool {
			k, ok := plainKey(key)
			var v string
			if ok && d.str(&v) {
				e.Detail[k] = v
				return true
			}
			return false
		})
	}
	return false // a key agentbox does not write: the slow path decides
}

// decodeEvent decodes a line like json.Unmarshal into an Event, taking the
// field scanner's fast path when it can.
func decodeEvent(line []byte, e *Event) error {
	if decodeLine(line, e) {
		return nil
	}
	*e = Event{}
	if err := json.Unmarshal(line, e); err != nil {
		return err
	}
	return nil
}
