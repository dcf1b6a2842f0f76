package checkpoint

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The journal's answer is the first JSON a launch decodes into
// journalResp, and encoding/json builds its decoders for that type and
// every type under it on first use: ~0.3 ms of CPU per launch (issue 47,
// perf over 60 launches), on the start checkpoint's path. parseJournalResp
// reads the shapes the journal writes field by field instead; whatever it
// does not take exactly as json.Unmarshal would (an unknown or repeated
// key, a key in another case or with escapes, a null inside an array, a
// number that is not a plain integer of the field's range, bad syntax)
// goes to json.Unmarshal, so the result never differs
// (FuzzJournalResp, TestParseJournalResp).

// parseJournalResp decodes one answer line of the journal as
// json.Unmarshal into a zero journalResp does.
func parseJournalResp(line []byte) (journalResp, error) {
	r := jreader{b: line}
	var resp journalResp
	if r.resp(&resp) && r.end() {
		return resp, nil
	}
	resp = journalResp{}
	if err := json.Unmarshal(line, &resp); err != nil {
		return journalResp{}, fmt.Errorf("checkpoint journal: %w", err)
	}
	return resp, nil
}

// jreader reads JSON from b at i. Its methods return false for anything
// they do not read exactly as json.Unmarshal would; the caller then
// falls back to json.Unmarshal.
type jreader struct {
	b []byte
	i int
}

func (r *jreader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// end: nothing but white space is left.
func (r *jreader) end() bool {
	r.ws()
	return r.i == len(r.b)
}

// peek is the next byte after white space (0 at the end).
func (r *jreader) peek() byte {
	r.ws()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// lit reads the literal s (null, true, false).
func (r *jreader) lit(s string) bool {
	r.ws()
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

// null reads a null if one is next.
func (r *jreader) null() bool {
	return r.peek() == 'n' && r.lit("null")
}

// object reads an object, calling field for each key (field reads the
// value); keys are plain: ASCII without escapes, each only once (bit
// seen, from field's index into keys).
func (r *jreader) object(keys []string, field func(k int) bool) bool {
	if r.peek() != '{' {
		return false
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return true
	}
	var seen uint32
	for {
		if r.peek() != '"' {
			return false
		}
		start := r.i + 1
		j := start
		for j < len(r.b) && r.b[j] != '"' {
			if c := r.b[j]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return false
			}
			j++
		}
		if j == len(r.b) {
			return false
		}
		key := r.b[start:j]
		r.i = j + 1
		k := -1
		for n, s := range keys {
			if string(key) == s {
				k = n
				break
			}
		}
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		if r.peek() != ':' {
			return false
		}
		r.i++
		if !field(k) {
			return false
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// array reads an array (nil for null, empty for []), calling elem for
// each element.
func (r *jreader) array(elem func() bool) (null, ok bool) {
	if r.null() {
		return true, true
	}
	if r.peek() != '[' {
		return false, false
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return false, true
	}
	for {
		if !elem() {
			return false, false
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return false, true
		default:
			return false, false
		}
	}
}

// str reads a string, unquoted as json.Unmarshal does: invalid UTF-8
// and lone surrogates become U+FFFD.
func (r *jreader) str() (string, bool) {
	if r.peek() != '"' {
		return "", false
	}
	start := r.i + 1
	j := start
	for j < len(r.b) {
		c := r.b[j]
		if c == '"' {
			r.i = j + 1
			return string(r.b[start:j]), true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		j++
	}
	out := append(make([]byte, 0, j-start+16), r.b[start:j]...)
	for j < len(r.b) {
		c := r.b[j]
		switch {
		case c == '"':
			r.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if j+1 >= len(r.b) {
				return "", false
			}
			switch e := r.b[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := hex4(r.b[j+2:])
				if rr < 0 {
					return "", false
				}
				j += 6
				if utf16.IsSurrogate(rr) {
					if j+1 < len(r.b) && r.b[j] == '\\' && r.b[j+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(r.b[j+2:])); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							j += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				out = utf8.AppendRune(out, rr)
				continue
			default:
				return "", false
			}
			j += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			rr, size := utf8.DecodeRune(r.b[j:])
			if rr == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, rr)
			} else {
				out = append(out, r.b[j:j+size]...)
			}
			j += size
		}
	}
	return "", false
}

// hex4 is the value of the 4 hex digits b starts with (-1: not 4).
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		v = v<<4 | rune(c)
	}
	return v
}

// integer reads a plain JSON integer (-?(0|[1-9][0-9]*)), its text;
// a fraction or exponent is not one.
func (r *jreader) integer() ([]byte, bool) {
	r.ws()
	start := r.i
	j := start
	if j < len(r.b) && r.b[j] == '-' {
		j++
	}
	d := j
	for j < len(r.b) && '0' <= r.b[j] && r.b[j] <= '9' {
		j++
	}
	if j == d || (r.b[d] == '0' && j > d+1) {
		return nil, false
	}
	if j < len(r.b) {
		if c := r.b[j]; c == '.' || c == 'e' || c == 'E' {
			return nil, false
		}
	}
	r.i = j
	return r.b[start:j], true
}

// uint reads an unsigned integer of bits bits into *v (null: unchanged).
func (r *jreader) uint(v *uint64, bits int) bool {
	if r.null() {
		return true
	}
	s, ok := r.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(string(s), 10, bits)
	if err != nil {
		return false
	}
	*v = n
	return true
}

// int reads a signed integer of bits bits into *v (null: unchanged).
func (r *jreader) int(v *int64, bits int) bool {
	if r.null() {
		return true
	}
	s, ok := r.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(s), 10, bits)
	if err != nil {
		return false
	}
	*v = n
	return true
}

// strField reads a string into *v (null: unchanged).
func (r *jreader) strField(v *string) bool {
	if r.null() {
		return true
	}
	s, ok := r.str()
	*v = s
	return ok
}

// boolField reads true or false into *v (null: unchanged).
func (r *jreader) boolField(v *bool) bool {
	switch r.peek() {
	case 't':
		*v = true
		return r.lit("true")
	case 'f':
		*v = false
		return r.lit("false")
	}
	return r.null()
}

// strings reads an array of strings (nil for null, empty for []).
func (r *jreader) strings(v *[]string) bool {
	l := []string{}
	null, ok := r.array(func() bool {
		s, ok := r.str()
		l = append(l, s)
		return ok
	})
	if ok && !null {
		*v = l
	}
	return ok
}

var (
	respKeys   = []string{"ok", "gen", "areas", "why", "pruned", "seq"}
	areaKeys   = []string{"all", "dirty", "base"}
	baseKeys   = []string{"id", "root", "excluded", "dirs"}
	dirKeys    = []string{"dir", "tree", "kids", "subs", "depth"}
	entryKeys  = []string{"path", "kind", "mode", "size", "hash", "link", "mtime", "ctime", "ino"}
	prunedKeys = []string{"Removed", "Freed", "Size"}
)

func (r *jreader) resp(v *journalResp) bool {
	return r.object(respKeys, func(k int) bool {
		switch k {
		case 0:
			return r.boolField(&v.OK)
		case 1:
			return r.uint(&v.Gen, 64)
		case 2:
			l := []journalArea{}
			null, ok := r.array(func() bool {
				l = append(l, journalArea{})
				return r.area(&l[len(l)-1])
			})
			if ok && !null {
				v.Areas = l
			}
			return ok
		case 3:
			return r.strField(&v.Why)
		case 4:
			if r.null() {
				return true
			}
			v.Pruned = new(Pruned)
			return r.pruned(v.Pruned)
		default:
			return r.uint(&v.Seq, 64)
		}
	})
}

func (r *jreader) area(v *journalArea) bool {
	return r.object(areaKeys, func(k int) bool {
		switch k {
		case 0:
			return r.boolField(&v.All)
		case 1:
			return r.strings(&v.Dirty)
		default:
			if r.null() {
				return true
			}
			v.Base = new(jbase)
			return r.base(v.Base)
		}
	})
}

func (r *jreader) base(v *jbase) bool {
	return r.object(baseKeys, func(k int) bool {
		switch k {
		case 0:
			return r.strField(&v.ID)
		case 1:
			return r.strField(&v.Root)
		case 2:
			return r.strings(&v.Excluded)
		default:
			l := []jdir{}
			null, ok := r.array(func() bool {
				l = append(l, jdir{})
				return r.dir(&l[len(l)-1])
			})
			if ok && !null {
				v.Dirs = l
			}
			return ok
		}
	})
}

func (r *jreader) dir(v *jdir) bool {
	return r.object(dirKeys, func(k int) bool {
		switch k {
		case 0:
			return r.strField(&v.Dir)
		case 1:
			return r.strField(&v.Tree)
		case 2:
			l := []Entry{}
			null, ok := r.array(func() bool {
				l = append(l, Entry{})
				return r.entry(&l[len(l)-1])
			})
			if ok && !null {
				v.Kids = l
			}
			return ok
		case 3:
			if r.null() {
				v.Subs = nil
				return true
			}
			m := map[string]string{}
			if r.peek() != '{' {
				return false
			}
			r.i++
			if r.peek() == '}' {
				r.i++
				v.Subs = m
				return true
			}
			for {
				key, ok := r.str()
				if !ok || r.peek() != ':' {
					return false
				}
				r.i++
				val, ok := r.str()
				if !ok {
					return false
				}
				m[key] = val
				switch r.peek() {
				case ',':
					r.i++
				case '}':
					r.i++
					v.Subs = m
					return true
				default:
					return false
				}
			}
		default:
			if r.null() {
				return true
			}
			var n int64
			if !r.int(&n, strconv.IntSize) {
				return false
			}
			d := int(n)
			v.Depth = &d
			return true
		}
	})
}

func (r *jreader) entry(v *Entry) bool {
	return r.object(entryKeys, func(k int) bool {
		switch k {
		case 0:
			return r.strField(&v.Path)
		case 1:
			var s string
			ok := r.strField(&s)
			v.Kind = Kind(s)
			return ok
		case 2:
			n := uint64(v.Mode)
			ok := r.uint(&n, 32)
			v.Mode = fs.FileMode(n)
			return ok
		case 3:
			return r.int(&v.Size, 64)
		case 4:
			return r.strField(&v.Hash)
		case 5:
			return r.strField(&v.Link)
		case 6:
			return r.int(&v.Mtime, 64)
		case 7:
			return r.int(&v.Ctime, 64)
		default:
			return r.uint(&v.Ino, 64)
		}
	})
}

func (r *jreader) pruned(v *Pruned) bool {
	return r.object(prunedKeys, func(k int) bool {
		switch k {
		case 0:
			return r.strings(&v.Removed)
		case 1:
			return r.int(&v.Freed, 64)
		default:
			return r.int(&v.Size, 64)
		}
	})
}
