package gitwire

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
)

// Object types in a pack.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

// node is a commit (its parents) or an annotated tag (its object) carried
// whole in the pack.
type node struct {
	tag   bool
	links []string
}

// packInfo is what reading a pack found.
type packInfo struct {
	objects  uint32
	deltas   uint32
	bytes    int64 // pack length, trailer included
	inflated int64
	nodes    map[string]node // commits and tags by object id
}

// maxHead is how much of a commit or tag is kept to read its header lines
// (tree, parents / object): the rest is only hashed.
const maxHead = 64 << 10

// packReader reads one pack from a wire.
type packReader struct {
	w    *wire
	f    Format
	lim  Limits
	z    io.ReadCloser
	info packInfo
	head []byte
	tmp  []byte

	// Commits and tags kept whole, so that one sent as a delta of
	// another can be resolved: by pack offset and by id, within a budget.
	byOff map[int64]string
	kept  map[string]keptObj
	spent int64
}

// keptObj is a commit or tag's content kept for resolving deltas.
type keptObj struct {
	typ  int
	data []byte
}

// maxKeep is the largest commit, tag or delta kept for resolving deltas;
// keepBudget the most kept in all. Past them a delta stays unresolved
// (and a commit only it would prove is refused: cannot prove).
const (
	maxKeep    = 1 << 20
	keepBudget = 64 << 20
)

// readPack reads a whole pack from w: header, every object (inflated and
// counted; commits and tags hashed and kept as nodes, deltas whose base is
// a commit or tag of the pack applied and hashed too), and the trailer,
// which must be the checksum of everything before it. The trailer's bytes
// are consumed while w holds (the caller releases them or not).
func readPack(w *wire, f Format, lim Limits) (*packInfo, error) {
	pr := &packReader{w: w, f: f, lim: lim, info: packInfo{nodes: map[string]node{}}, tmp: make([]byte, 32<<10),
		byOff: map[int64]string{}, kept: map[string]keptObj{}}
	start := w.offset()
	// No read goes further than the cap, a trailer and one byte (which
	// tells a pack of the cap followed by junk from one at the body's end).
	w.setLimit(start+lim.maxPack()+33, tooLarge(start+lim.maxPack(), "pack over %d bytes", lim.maxPack()))
	var h hash.Hash = sha1.New()
	if f == SHA256 {
		h = sha256.New()
	}
	if err := w.startSum(h); err != nil {
		return nil, err
	}
	var hdr [12]byte
	if err := w.readFull(hdr[:]); err != nil {
		return nil, eofAt(err, start, "the pack header")
	}
	if string(hdr[:4]) != "PACK" {
		return nil, malformed(start, "pack does not start with PACK (%q)", hdr[:4])
	}
	if v := binary.BigEndian.Uint32(hdr[4:]); v != 2 && v != 3 {
		return nil, malformed(start+4, "pack version %d, want 2 or 3", v)
	}
	n := binary.BigEndian.Uint32(hdr[8:])
	for i := uint32(0); i < n; i++ {
		if err := pr.object(start); err != nil {
			return nil, err
		}
		pr.info.objects++
	}
	// The trailer: held back until the caller has decided.
	end := w.offset()
	sum, err := w.stopSum()
	if err != nil {
		return nil, err
	}
	if err := w.startHold(len(sum)); err != nil {
		return nil, err
	}
	trailer := make([]byte, len(sum))
	if err := w.readFull(trailer); err != nil {
		return nil, eofAt(err, end, "the pack trailer")
	}
	if !bytes.Equal(sum, trailer) {
		return nil, malformed(end, "pack checksum %x, trailer says %x", sum, trailer)
	}
	pr.info.bytes = w.offset() - start
	return &pr.info, nil
}

// object reads one object: its header, its base (for a delta) and its
// zlib data.
func (pr *packReader) object(packStart int64) error {
	w := pr.w
	off := w.offset()
	if off-packStart > pr.lim.maxPack() {
		return tooLarge(off, "pack over %d bytes", pr.lim.maxPack())
	}
	c, err := w.ReadByte()
	if err != nil {
		return eofAt(err, off, "an object header")
	}
	typ := int(c>>4) & 7
	size := uint64(c & 15)
	shift := uint(4)
	for c&0x80 != 0 {
		if c, err = w.ReadByte(); err != nil {
			return eofAt(err, off, "an object header")
		}
		if shift > 57 {
			return malformed(off, "object size varint too long")
		}
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	var base string // a delta's base, by id
	switch typ {
	case objCommit, objTree, objBlob, objTag:
	case objOfsDelta:
		// The base's distance back: a big-endian varint where each
		// continuation adds one (git's offset encoding).
		c, err := w.ReadByte()
		if err != nil {
			return eofAt(err, off, "an OFS_DELTA offset")
		}
		d := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if c, err = w.ReadByte(); err != nil {
				return eofAt(err, off, "an OFS_DELTA offset")
			}
			if d >= 1<<56 {
				return malformed(off, "OFS_DELTA offset varint too long")
			}
			d = (d+1)<<7 | uint64(c&0x7f)
		}
		if d == 0 || d > uint64(off-packStart-12) {
			return malformed(off, "OFS_DELTA base %d bytes back is outside the pack", d)
		}
		pr.info.deltas++
		base = pr.byOff[off-int64(d)]
	case objRefDelta:
		if err := w.readFull(pr.tmp[:pr.f.hexLen()/2]); err != nil {
			return eofAt(err, off, "a REF_DELTA base")
		}
		pr.info.deltas++
		base = hex.EncodeToString(pr.tmp[:pr.f.hexLen()/2])
	default:
		return malformed(off, "object type %d", typ)
	}
	if int64(size) < 0 || pr.info.inflated+int64(size) > pr.lim.maxInflated() {
		return tooLarge(off, "objects inflate to more than %d bytes", pr.lim.maxInflated())
	}
	pr.info.inflated += int64(size)
	if err := pr.inflate(); err != nil {
		return pr.dataErr(off, err)
	}
	var oh hash.Hash
	keep := typ == objCommit || typ == objTag
	b, resolvable := pr.kept[base]
	resolvable = resolvable && size <= maxKeep && pr.spent+int64(size) <= keepBudget
	whole := keep && size <= maxKeep && pr.spent+int64(size) <= keepBudget
	if keep {
		oh = pr.objectHash(typ, size)
	}
	pr.head = pr.head[:0]
	var got uint64
	for {
		n, err := pr.z.Read(pr.tmp)
		if n > 0 {
			got += uint64(n)
			if got > size {
				return malformed(off, "object inflates past its size %d", size)
			}
			if keep {
				oh.Write(pr.tmp[:n])
			}
			if room := maxHead - len(pr.head); keep && room > 0 || whole || resolvable {
				if !whole && !resolvable {
					n = min(n, room)
				}
				pr.head = append(pr.head, pr.tmp[:n]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return pr.dataErr(off, err)
		}
	}
	if got != size {
		return malformed(off, "object inflates to %d bytes, header says %d", got, size)
	}
	cut := !whole && got > uint64(len(pr.head)) // only the head was kept
	if resolvable {
		data, err := applyDelta(b.data, pr.head)
		if err != nil {
			return malformed(off, "delta of %s: %v", short(base), err)
		}
		typ, keep, whole, cut = b.typ, true, true, false
		oh = pr.objectHash(typ, uint64(len(data)))
		oh.Write(data)
		pr.head = data
	}
	if !keep {
		return nil
	}
	if len(pr.info.nodes) >= pr.lim.maxCommits() {
		return tooLarge(off, "more than %d commits and tags", pr.lim.maxCommits())
	}
	nd, err := pr.links(typ == objTag, cut)
	if err != nil {
		return malformed(off, "%v", err)
	}
	id := hex.EncodeToString(oh.Sum(nil))
	pr.info.nodes[id] = nd
	if whole {
		pr.kept[id] = keptObj{typ: typ, data: bytes.Clone(pr.head)}
		pr.byOff[off] = id
		pr.spent += int64(len(pr.head))
	}
	return nil
}

// objectHash starts an object id: the hash of "<type> <size>\0" and then
// the content.
func (pr *packReader) objectHash(typ int, size uint64) hash.Hash {
	var h hash.Hash = sha1.New()
	if pr.f == SHA256 {
		h = sha256.New()
	}
	name := "commit"
	if typ == objTag {
		name = "tag"
	}
	h.Write([]byte(name + " " + strconv.FormatUint(size, 10) + "\x00"))
	return h
}

// applyDelta builds an object from its base and a git delta: the base's
// and the result's sizes (varints), then instructions that copy a range
// of the base or insert literal bytes. Every range is checked.
func applyDelta(base, delta []byte) ([]byte, error) {
	varint := func() (uint64, error) {
		var v uint64
		for shift := uint(0); shift < 64; shift += 7 {
			if len(delta) == 0 {
				return 0, fmt.Errorf("delta ends inside a size")
			}
			c := delta[0]
			delta = delta[1:]
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, nil
			}
		}
		return 0, fmt.Errorf("delta size varint too long")
	}
	src, err := varint()
	if err != nil {
		return nil, err
	}
	dst, err := varint()
	if err != nil {
		return nil, err
	}
	if src != uint64(len(base)) {
		return nil, fmt.Errorf("delta for a base of %d bytes, base has %d", src, len(base))
	}
	if dst > maxKeep {
		return nil, fmt.Errorf("delta result of %d bytes", dst)
	}
	out := make([]byte, 0, dst)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			var o, n uint64
			for i := 0; i < 7; i++ {
				if op&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, fmt.Errorf("delta ends inside a copy")
				}
				if i < 4 {
					o |= uint64(delta[0]) << (8 * i)
				} else {
					n |= uint64(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if o+n > uint64(len(base)) || uint64(len(out))+n > dst {
				return nil, fmt.Errorf("delta copies %d bytes at %d of a %d-byte base", n, o, len(base))
			}
			out = append(out, base[o:o+n]...)
		case op != 0:
			if int(op) > len(delta) || uint64(len(out))+uint64(op) > dst {
				return nil, fmt.Errorf("delta inserts past its end")
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
		default:
			return nil, fmt.Errorf("delta instruction 0")
		}
	}
	if uint64(len(out)) != dst {
		return nil, fmt.Errorf("delta builds %d bytes, says %d", len(out), dst)
	}
	return out, nil
}

// dataErr is the error of an object's zlib data at off: the wire's own
// error (a refusal such as the pack cap, or the body's read error) when
// that is what stopped it, else malformed data.
func (pr *packReader) dataErr(off int64, err error) error {
	var r *RefusedError
	if errors.As(err, &r) {
		return r
	}
	if we := pr.w.err; we != nil && we != io.EOF {
		return we
	}
	return malformed(off, "object data: %v", err)
}

// inflate starts (or restarts) the zlib reader at the wire's position.
func (pr *packReader) inflate() error {
	if pr.z == nil {
		z, err := zlib.NewReader(pr.w)
		if err != nil {
			return err
		}
		pr.z = z
		return nil
	}
	return pr.z.(zlib.Resetter).Reset(pr.w, nil)
}

// links reads the header lines of a commit (its parents) or a tag (its
// object) from pr.head.
func (pr *packReader) links(tag, cut bool) (node, error) {
	nd := node{tag: tag}
	rest := pr.head
	for len(rest) > 0 {
		line, more, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			if cut {
				return nd, fmt.Errorf("header lines longer than %d bytes", maxHead)
			}
			return nd, fmt.Errorf("header line without a newline")
		}
		rest = more
		key, val, _ := bytes.Cut(line, []byte{' '})
		switch {
		case !tag && string(key) == "tree", tag && string(key) == "type":
			continue
		case !tag && string(key) == "parent", tag && string(key) == "object":
			if !validOID(string(val), pr.f) {
				return nd, fmt.Errorf("%s %q is not a %s object id", key, oneLine(string(val)), pr.f)
			}
			nd.links = append(nd.links, string(val))
			continue
		}
		return nd, nil
	}
	return nd, nil
}

// fastForward reports whether the update old -> new is proven a
// fast-forward by the pack's commits: a walk from new through parents (and
// a tag's object) reaches old. It fails closed: a commit the pack does not
// carry (whole, or as a delta of an object it carries) ends that path of
// the walk, and a walk that never reaches old is a refusal whose detail
// says whether it left the pack.
func fastForward(c Command, nodes map[string]node, maxWalk int) *RefusedError {
	if c.IsCreate() || c.IsDelete() || c.Old == c.New {
		return nil
	}
	refuse := func(detail string, args ...any) *RefusedError {
		return &RefusedError{Ref: c.Ref, Reason: ReasonNotFastForward, Detail: fmt.Sprintf(detail, args...), Offset: -1}
	}
	if _, ok := nodes[c.New]; !ok {
		return refuse("the push carries no commit %s (a rewind, a move to a commit the server has, or a delta of an object the pack lacks): cannot prove fast-forward from %s", short(c.New), short(c.Old))
	}
	seen := map[string]bool{c.New: true}
	queue := []string{c.New}
	left := ""
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		nd, ok := nodes[id]
		if !ok {
			if left == "" {
				left = id
			}
			continue
		}
		for _, p := range nd.links {
			if p == c.Old {
				return nil
			}
			if !seen[p] {
				if len(seen) >= maxWalk {
					return refuse("walk from %s over %d commits without reaching %s", short(c.New), maxWalk, short(c.Old))
				}
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	if left != "" {
		return refuse("the walk from %s left the pack at %s without reaching %s: cannot prove fast-forward", short(c.New), short(left), short(c.Old))
	}
	return refuse("%s does not descend from %s (history rewritten)", short(c.New), short(c.Old))
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
