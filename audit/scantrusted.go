package audit

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The chain fields of a line whose MAC checked. A line with a valid MAC is
// a line the key's holder wrote (agentbox's writer, whose output is JSON
// as encoding/json writes it): the syntax of the values verify does not
// read cannot have been changed by anyone without the key. So verify
// reads such a line's seq, prev, event, kid and mac with scanChain, which
// skips the other values by their quotes and brackets without checking
// their escapes, UTF-8 or number syntax (scanInfo checks all of that, and
// is what an unkeyed line, or one whose MAC fails, is read with: the
// errors a tampered line gives are unchanged). scanChain is exact on what
// it returns and declines (ok false; the caller uses scanInfo) whatever
// the writer does not write: whitespace between tokens, an escaped key or
// chain value, a chain value that is not valid UTF-8 (encoding/json reads
// each bad byte as U+FFFD), a key encoding/json would match
// case-insensitively, a seq that is not a plain positive integer.

// scanChain reads the chain fields of line (see above). li carries seq,
// prev, event, kid and mac, as slices of line; ok is false when it
// declines.
func scanChain(line []byte) (li lineInfo, ok bool) {
	b := line
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return li, false
	}
	i := 1
	for {
		if i >= len(b) || b[i] != '"' {
			return li, false
		}
		q := quoteOrBackslash(b, i+1)
		if q < 0 || b[q] != '"' {
			return li, false // unterminated, or an escaped key
		}
		key := b[i+1 : q]
		i = q + 1
		if i >= len(b) || b[i] != ':' {
			return li, false
		}
		i++
		switch string(key) {
		case "seq":
			n, end, ok := plainUint(b, i)
			if !ok {
				return li, false
			}
			li.seq, i = n, end
		case "prev", "event", "kid", "mac":
			v, end, ok := chainString(b, i)
			if !ok {
				return li, false
			}
			i = end
			switch key[0] {
			case 'p':
				li.prev = v
			case 'e':
				li.event = v
			case 'k':
				li.kid = v
			default:
				li.mac = v
			}
		default:
			if _, known := infoKind(key); !known && hasFoldKey(string(key)) {
				return li, false
			}
			if i = skipTrusted(b, i); i < 0 {
				return li, false
			}
		}
		if i >= len(b) {
			return li, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] == '}' && i == len(b)-1 {
			break
		}
		return li, false
	}
	return li, li.seq != 0 && len(li.event) > 0
}

// plainUint reads a positive decimal integer without a leading zero at
// b[i:] (what encoding/json writes for seq), returning it and the index
// after it; ok is false for anything else, and on overflow.
func plainUint(b []byte, i int) (n uint64, end int, ok bool) {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		d := uint64(b[i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, 0, false
		}
		n = n*10 + d
		i++
	}
	if i == start || b[start] == '0' && i-start > 1 {
		return 0, 0, false
	}
	return n, i, true
}

// chainString reads a string value without escapes (or null, as nil) at
// b[i:], returning its contents and the index after it. A value that is
// not valid UTF-8 is declined: encoding/json reads each bad byte as
// U+FFFD, and scanChain returns nothing ParseLine would read otherwise.
func chainString(b []byte, i int) (v []byte, end int, ok bool) {
	if i+4 <= len(b) && string(b[i:i+4]) == "null" {
		return nil, i + 4, true
	}
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	q := quoteOrBackslash(b, i+1)
	if q < 0 || b[q] != '"' || !utf8.Valid(b[i+1:q]) {
		return nil, 0, false
	}
	return b[i+1 : q : q], q + 1, true
}

// skipTrusted returns the index after the JSON value at b[i:], or -1: a
// string ends at the first quote not escaped by a backslash, an object
// or array at its matching bracket (strings inside skipped whole), a
// number or literal at the next comma or closing bracket.
func skipTrusted(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			if i = skipString(b, i); i < 0 {
				return -1
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) && (b[i] == ',' || b[i] == '}') {
			return i
		}
	}
	return -1
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1 when it does not end.
func skipString(b []byte, i int) int {
	k := i + 1
	for {
		if k = indexQuote(b, k); k < 0 {
			return -1
		}
		bs := 0
		for j := k - 1; j > i && b[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return k + 1
		}
		k++
	}
}

// Word-at-a-time byte search: the strings of a line are short (keys,
// names, ids), where a call of bytes.IndexByte costs more than the
// search; eight bytes are tested at once with the classic test for a
// zero byte, whose lowest flagged byte is always a real match.
const ones, highs = 0x0101010101010101, 0x8080808080808080

func zeroBytes(v uint64) uint64 { return (v - ones) & ^v & highs }

// indexQuote returns the index of the first '"' in b at or after k, or -1.
func indexQuote(b []byte, k int) int {
	for ; k+8 <= len(b); k += 8 {
		if m := zeroBytes(binary.LittleEndian.Uint64(b[k:]) ^ (ones * '"')); m != 0 {
			return k + bits.TrailingZeros64(m)/8
		}
	}
	for ; k < len(b); k++ {
		if b[k] == '"' {
			return k
		}
	}
	return -1
}

// quoteOrBackslash returns the index of the first '"' or '\\' in b at or
// after k, or -1.
func quoteOrBackslash(b []byte, k int) int {
	for ; k+8 <= len(b); k += 8 {
		x := binary.LittleEndian.Uint64(b[k:])
		if m := zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')); m != 0 {
			return k + bits.TrailingZeros64(m)/8
		}
	}
	for ; k < len(b); k++ {
		if b[k] == '"' || b[k] == '\\' {
			return k
		}
	}
	return -1
}
