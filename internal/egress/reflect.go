package egress

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"io"
	"net/url"
	"slices"
)

// Reflections. A brokered secret's real value leaves the proxy only in
// the declared headers of requests to its hosts, but an upstream can hand
// it back: an API gateway echoing request headers, a debug endpoint, an
// error page quoting the request, a redirect naming it. Every answer the
// proxy reads (inspected HTTPS, plain http://, forwarded loopback APIs)
// is searched for the value — its headers, its Location, its trailers and
// its body as it streams — and each occurrence is replaced by the
// placeholder before it reaches the sandbox; a Location carrying it is
// refused. The forms searched for (needles):
//
//   - the value as it is;
//   - URL-escaped (query and path escaping), where that differs;
//   - base64, standard and URL alphabets, at each of the three byte
//     alignments the value can have inside the encoded data: the part of
//     the encoding that depends on the value alone (all but at most two
//     bytes at each end), when it is 16 characters or longer.
//
// Not covered: any other transformation (hex, JSON \u escapes, changed
// case, the value split or reversed, a hash of it, compression or
// encryption the proxy does not undo). Answers from a secret's hosts are
// asked for without compression and gzip/deflate ones are decoded; other
// content encodings from those hosts are refused. TLS the proxy passes
// through is not read: those hosts never get the value from the proxy.

// needle is one form of a secret's value the answers are searched for.
type needle struct {
	from, to []byte
	pi       []int // from's prefix function
	secret   string
	form     string // raw, url, base64
}

// minEncodedNeedle is the shortest encoded form searched for: shorter
// ones would match unrelated bytes of an answer.
const minEncodedNeedle = 16

// reflector finds the brokered values in answers.
type reflector struct {
	needles []needle // longest first: of two forms at one place the longer wins
	maxLen  int
}

// newReflector returns the reflector of secrets (nil: none to find).
func newReflector(secrets []Secret) *reflector {
	rf := &reflector{}
	seen := map[string]bool{}
	add := func(from, to, secret, form string) {
		if from == "" || seen[from] {
			return
		}
		seen[from] = true
		rf.needles = append(rf.needles, needle{from: []byte(from), to: []byte(to), secret: secret, form: form})
	}
	for _, s := range secrets {
		if s.Value == "" {
			continue
		}
		add(s.Value, s.Placeholder, s.Name, "raw")
		if e := url.QueryEscape(s.Value); e != s.Value {
			add(e, url.QueryEscape(s.Placeholder), s.Name, "url")
		}
		if e := url.PathEscape(s.Value); e != s.Value {
			add(e, url.PathEscape(s.Placeholder), s.Name, "url")
		}
		// base64: the placeholder's first 3k bytes in place of the
		// value's aligned middle keep the encoding well-formed.
		ph := []byte(s.Placeholder)
		ph = ph[:len(ph)/3*3]
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for k := 0; k < 3 && k < len(s.Value); k++ {
				v := s.Value[k:]
				v = v[:len(v)/3*3]
				if e := enc.EncodeToString([]byte(v)); len(e) >= minEncodedNeedle {
					add(e, enc.EncodeToString(ph), s.Name, "base64")
				}
			}
		}
	}
	if len(rf.needles) == 0 {
		return nil
	}
	slices.SortStableFunc(rf.needles, func(a, b needle) int { return len(b.from) - len(a.from) })
	for i, n := range rf.needles {
		rf.maxLen = max(rf.maxLen, len(n.from))
		rf.needles[i].pi = prefixFunction(n.from)
	}
	return rf
}

// replace decides b up to limit: each needle occurrence starting before
// limit is replaced (leftmost first; of several at one place the
// longest). It returns where the caller continues (limit, or past a match
// that reaches beyond it) and, when anything was replaced, the decided
// bytes with the replacements appended to out (hit false: b[:end] as it
// is, nothing appended). found is told of each occurrence. With limit ==
// len(b) the whole of b is decided.
func (rf *reflector) replace(out, b []byte, limit int, found func(*needle)) (_ []byte, end int, hit bool) {
	pos := 0
	var next [16]int
	idx := next[:0]
	if len(rf.needles) > len(next) {
		idx = make([]int, 0, len(rf.needles))
	}
	for range rf.needles {
		idx = append(idx, -2) // not searched yet
	}
	for {
		best := -1
		for i := range rf.needles {
			if idx[i] != -1 && idx[i] < pos {
				j := bytes.Index(b[pos:], rf.needles[i].from)
				if j >= 0 {
					j += pos
				}
				idx[i] = j
			}
			if idx[i] >= 0 && idx[i] < limit && (best < 0 || idx[i] < idx[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		n := &rf.needles[best]
		out = append(out, b[pos:idx[best]]...)
		out = append(out, n.to...)
		pos, hit = idx[best]+len(n.from), true
		if found != nil {
			found(n)
		}
	}
	end = max(pos, limit)
	if !hit {
		return out, end, false
	}
	return append(out, b[pos:end]...), end, true
}

// decided is how much of b (more may follow) can be decided now: all of
// it but its longest tail that is the start of some needle (found with
// each needle's prefix function, so a pathological answer costs no more
// than a needle's length per needle and read).
func (rf *reflector) decided(b []byte) int {
	hold := 0
	for i := range rf.needles {
		n := &rf.needles[i]
		if len(n.from)-1 <= hold {
			continue // longest first: none after can hold more
		}
		q := 0
		for _, c := range b[max(0, len(b)-(len(n.from)-1)):] {
			for q > 0 && n.from[q] != c {
				q = n.pi[q-1]
			}
			if n.from[q] == c {
				q++
			}
		}
		hold = max(hold, q) // q < len(n.from): at most len-1 bytes were fed
	}
	return len(b) - hold
}

// prefixFunction is the KMP prefix function of s: pi[i] is the length of
// the longest proper prefix of s[:i+1] that is also its suffix.
func prefixFunction(s []byte) []int {
	pi := make([]int, len(s))
	for i, q := 1, 0; i < len(s); i++ {
		for q > 0 && s[i] != s[q] {
			q = pi[q-1]
		}
		if s[i] == s[q] {
			q++
		}
		pi[i] = q
	}
	return pi
}

// replaceString replaces every needle in s.
func (rf *reflector) replaceString(s string, found func(*needle)) string {
	if rf == nil {
		return s
	}
	out, _, hit := rf.replace(nil, []byte(s), len(s), found)
	if !hit {
		return s
	}
	return string(out)
}

// contains reports the first needle in s, or nil.
func (rf *reflector) contains(s string) *needle {
	if rf == nil {
		return nil
	}
	var first *needle
	rf.replaceString(s, func(n *needle) {
		if first == nil {
			first = n
		}
	})
	return first
}

// scanReader is an answer's body with the needles replaced as it streams:
// it holds back no more than a needle's length less one byte, and only
// while the bytes read last could start a needle, so a server-sent event
// reaches the client whole as soon as it arrives.
type scanReader struct {
	rf    *reflector
	src   io.ReadCloser
	found func(*needle)

	pend   []byte // read, not yet decided (cap: readSize + maxLen)
	out    []byte // decided, not yet returned
	off    int
	shift  int // bytes of pend that out stands for (dropped at the next read)
	own    []byte
	err    error
	greedy bool
}

// scanReadSize is how much a scanReader asks its source for at once;
// a greedy one gathers reads while greedyRead is left of greedySize.
const (
	scanReadSize = 32 << 10
	greedySize   = 128 << 10
	greedyRead   = 16 << 10
)

// reader scans src. greedy: src is an answer of announced length, read
// into larger pieces (not for a stream whose pieces must go on as they
// come: server-sent events, an answer of unknown length).
func (rf *reflector) reader(src io.ReadCloser, greedy bool, found func(*needle)) *scanReader {
	size := scanReadSize
	if greedy {
		size = greedySize
	}
	return &scanReader{rf: rf, src: src, found: found, greedy: greedy, pend: make([]byte, 0, size+rf.maxLen)}
}

func (s *scanReader) Read(p []byte) (int, error) {
	for s.off == len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

// fill reads once from the source and decides what it can.
func (s *scanReader) fill() {
	if s.shift > 0 {
		s.pend = s.pend[:copy(s.pend, s.pend[s.shift:])]
		s.shift = 0
	}
	s.out, s.off = s.out[:0], 0
	n, err := s.src.Read(s.pend[len(s.pend):cap(s.pend)])
	s.pend = s.pend[:len(s.pend)+n]
	// An answer whose whole length was announced is not waited on by its
	// reader piece by piece: gathering several reads makes fewer, larger
	// chunks and TLS records on the way to the client.
	for s.greedy && err == nil && cap(s.pend)-len(s.pend) >= greedyRead {
		n, err = s.src.Read(s.pend[len(s.pend):cap(s.pend)])
		s.pend = s.pend[:len(s.pend)+n]
	}
	if err != nil {
		s.err = err
	}
	limit := len(s.pend)
	if err == nil {
		limit = s.rf.decided(s.pend)
	}
	own, end, hit := s.rf.replace(s.own[:0], s.pend, limit, s.found)
	if hit {
		s.own, s.out = own, own
	} else {
		s.out = s.pend[:end] // no copy: valid until the next fill
	}
	s.shift = end
}

func (s *scanReader) Close() error { return s.src.Close() }

// scanRWC is an upgraded connection's (101 Switching Protocols) upstream
// end: reads scanned, writes as they are.
type scanRWC struct {
	*scanReader
	w io.Writer
}

func (s scanRWC) Write(b []byte) (int, error) { return s.w.Write(b) }

// gzipBody and zlibBody decode an answer's content encoding as it
// streams, so its bytes can be searched.
func gzipBody(rc io.ReadCloser) (io.ReadCloser, error) {
	zr, err := gzip.NewReader(rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return decoded{zr, rc}, nil
}

func zlibBody(rc io.ReadCloser) (io.ReadCloser, error) {
	zr, err := zlib.NewReader(rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return decoded{zr, rc}, nil
}

// decoded reads a decoder and closes the body under it.
type decoded struct {
	io.Reader
	body io.Closer
}

func (d decoded) Close() error { return d.body.Close() }
