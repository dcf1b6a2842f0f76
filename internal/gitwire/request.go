package gitwire

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Format is a repository's object format: the hash of object ids and of
// the pack trailer.
type Format string

// The object formats git has.
const (
	SHA1   Format = "sha1"
	SHA256 Format = "sha256"
)

// hexLen is the length of an object id in hex.
func (f Format) hexLen() int {
	if f == SHA256 {
		return 64
	}
	return 40
}

// Command is one ref update of a push: "<old-oid> <new-oid> <refname>".
// Old is all zeros for a creation, New all zeros for a deletion.
type Command struct {
	// Old is the object id the client believes the ref has (lower-case hex).
	Old string
	// New is the object id the ref is to have (lower-case hex).
	New string
	// Ref is the full ref name ("refs/heads/main").
	Ref string
}

// IsCreate reports whether the command creates Ref (Old is zero).
func (c Command) IsCreate() bool { return isZero(c.Old) }

// IsDelete reports whether the command deletes Ref (New is zero).
func (c Command) IsDelete() bool { return isZero(c.New) }

func isZero(oid string) bool { return strings.Trim(oid, "0") == "" }

// Request is the command section of a receive-pack request: everything
// before the pack.
type Request struct {
	// Commands are the ref updates in the order sent. A request with none
	// is git's probe (a lone flush-pkt before a large push): it carries no
	// pack.
	Commands []Command
	// Capabilities are those sent after the first command's NUL
	// ("report-status", "side-band-64k", "object-format=sha256", ...).
	Capabilities []string
	// Shallow are the object ids of the client's "shallow" lines.
	Shallow []string
	// PushOptions are the strings of a push with --push-option (sent when
	// the client asked for the "push-options" capability).
	PushOptions []string
	// Format is the object format (object-format=, SHA-1 when absent).
	Format Format
	// Size is the length of the command section in bytes: where the pack
	// starts.
	Size int64
}

// Has reports whether the client sent capability c (a bare name, or
// name=value compared whole).
func (r *Request) Has(c string) bool {
	if r == nil {
		return false
	}
	for _, x := range r.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// SideBand reports which side-band the client asked for: 65520 for
// side-band-64k, 1000 for side-band, 0 for none.
func (r *Request) SideBand() int {
	switch {
	case r.Has("side-band-64k"):
		return 65520
	case r.Has("side-band"):
		return 1000
	}
	return 0
}

// HasPack reports whether a pack follows the command section: git sends
// one unless every command is a delete (or there is none).
func (r *Request) HasPack() bool {
	for _, c := range r.Commands {
		if !c.IsDelete() {
			return true
		}
	}
	return false
}

// maxPkt is the largest pkt-line git writes (LARGE_PACKET_MAX).
const maxPkt = 65520

// pkt is one pkt-line: flush (length 0000), or data.
type pkt struct {
	flush bool
	data  []byte
	off   int64 // body offset of the length prefix
}

// readPkt reads one pkt-line into buf.
func readPkt(w *wire, buf []byte) (pkt, error) {
	off := w.offset()
	var h [4]byte
	if err := w.readFull(h[:]); err != nil {
		return pkt{}, eofAt(err, off, "pkt-line length")
	}
	var n [2]byte
	if _, err := hex.Decode(n[:], h[:]); err != nil {
		return pkt{}, malformed(off, "pkt-line length %q is not hex", h[:])
	}
	l := int(n[0])<<8 | int(n[1])
	switch {
	case l == 0:
		return pkt{flush: true, off: off}, nil
	case l < 4:
		return pkt{}, malformed(off, "pkt-line length %04x: special packets have no place in a receive-pack request", l)
	case l > maxPkt:
		return pkt{}, malformed(off, "pkt-line length %d over %d", l, maxPkt)
	}
	d := buf[:l-4]
	if err := w.readFull(d); err != nil {
		return pkt{}, eofAt(err, off, "pkt-line of %d bytes", l)
	}
	return pkt{data: d, off: off}, nil
}

// eofAt turns a short read into a malformed error, passes others on.
func eofAt(err error, off int64, what string, args ...any) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return malformed(off, "body ends inside %s", fmt.Sprintf(what, args...))
	}
	return err
}

// readRequest parses the command section (and push options) from w.
func readRequest(w *wire) (*Request, error) {
	req := &Request{Format: SHA1}
	buf := make([]byte, maxPkt)
	first := true
	for {
		p, err := readPkt(w, buf)
		if err != nil {
			return nil, err
		}
		if p.flush {
			break
		}
		line := p.data
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if rest, ok := bytes.CutPrefix(line, []byte("shallow ")); ok && len(req.Commands) == 0 {
			req.Shallow = append(req.Shallow, string(rest)) // checked once the format is known
			continue
		}
		if bytes.HasPrefix(line, []byte("push-cert\x00")) || bytes.Equal(line, []byte("push-cert")) {
			return nil, &RefusedError{Reason: ReasonUnsupported, Detail: "signed push (push-cert)", Offset: p.off}
		}
		if first {
			cmd, caps, _ := bytes.Cut(line, []byte{0})
			req.Capabilities = strings.Fields(string(caps))
			for _, c := range req.Capabilities {
				if v, ok := strings.CutPrefix(c, "object-format="); ok {
					switch Format(v) {
					case SHA1, SHA256:
						req.Format = Format(v)
					default:
						return nil, &RefusedError{Reason: ReasonUnsupported, Detail: fmt.Sprintf("object format %q", oneLine(v)), Offset: p.off}
					}
				}
			}
			line = cmd
			first = false
		} else if bytes.IndexByte(line, 0) >= 0 {
			return nil, malformed(p.off, "NUL in a command after the first")
		}
		c, err := parseCommand(line, req.Format, p.off)
		if err != nil {
			return nil, err
		}
		req.Commands = append(req.Commands, c)
	}
	for _, s := range req.Shallow {
		if !validOID(s, req.Format) {
			return nil, malformed(0, "shallow line: %q is not a %s object id", oneLine(s), req.Format)
		}
	}
	if len(req.Commands) > 0 && req.Has("push-options") {
		for {
			p, err := readPkt(w, buf)
			if err != nil {
				return nil, err
			}
			if p.flush {
				break
			}
			req.PushOptions = append(req.PushOptions, string(bytes.TrimSuffix(p.data, []byte{'\n'})))
		}
	}
	req.Size = w.offset()
	return req, nil
}

// parseCommand parses "<old> <new> <ref>".
func parseCommand(line []byte, f Format, off int64) (Command, error) {
	n := f.hexLen()
	if len(line) < 2*n+3 || line[n] != ' ' || line[2*n+1] != ' ' {
		return Command{}, malformed(off, "%q is not a ref update \"<old> <new> <ref>\" with %s ids", oneLine(string(line)), f)
	}
	c := Command{Old: string(line[:n]), New: string(line[n+1 : 2*n+1]), Ref: string(line[2*n+2:])}
	if !validOID(c.Old, f) || !validOID(c.New, f) {
		return Command{}, malformed(off, "ref update %q: object id not lower-case %s hex", oneLine(string(line)), f)
	}
	if err := checkRefName(c.Ref); err != nil {
		return Command{}, malformed(off, "ref name %q: %v", oneLine(c.Ref), err)
	}
	if c.IsCreate() && c.IsDelete() {
		return Command{}, malformed(off, "ref update of %s from zero to zero", c.Ref)
	}
	return c, nil
}

func validOID(s string, f Format) bool {
	if len(s) != f.hexLen() {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkRefName holds the rules of git check-ref-format that matter here:
// a full name under refs/, no component that is empty, starts with a dot
// or ends in .lock, no "..", "@{", control bytes or any of ` ~^:?*[\`.
func checkRefName(ref string) error {
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("not under refs/")
	}
	if strings.Contains(ref, "..") || strings.Contains(ref, "@{") || ref == "@" {
		return fmt.Errorf(`contains ".." or "@{"`)
	}
	if strings.HasSuffix(ref, ".") {
		return fmt.Errorf("ends with a dot")
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Errorf("contains byte %q", c)
		}
	}
	for _, part := range strings.Split(ref, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return fmt.Errorf("component %q", part)
		}
	}
	return nil
}
