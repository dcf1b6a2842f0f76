package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// The stat cache file's encoding: a magic line, then varints and
// length-prefixed strings. A launch reads it and an end of run writes it;
// encoding/gob took ~0.2 ms of each launch to build its codecs (and its
// package initialisation another 0.16 ms), reflection this format does
// not need. The encoding is canonical (trees by key): FuzzStatCacheCodec
// holds decode-then-encode to the input.
const statCacheMagic = "agentbox-statcache 1\n"

// kindCode numbers the entry kinds in the stat cache file.
var kindCode = map[Kind]byte{File: 0, Dir: 1, Symlink: 2}

var codeKind = [...]Kind{File, Dir, Symlink}

// encodeStatCache encodes c (its entries' kinds must be known ones).
func encodeStatCache(c *statCacheFile) ([]byte, error) {
	b := make([]byte, 0, 64+len(c.Entries)*120+len(c.Trees)*100)
	b = append(b, statCacheMagic...)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(c.ID)
	str(c.Root)
	keys := make([]string, 0, len(c.Trees))
	for k := range c.Trees {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		str(c.Trees[k])
	}
	b = binary.AppendUvarint(b, uint64(len(c.Entries)))
	for _, e := range c.Entries {
		code, ok := kindCode[e.Kind]
		if !ok {
			return nil, fmt.Errorf("stat cache: entry %q of kind %q", e.Path, e.Kind)
		}
		str(e.Path)
		b = append(b, code)
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendVarint(b, e.Size)
		str(e.Hash)
		str(e.Link)
		b = binary.AppendVarint(b, e.Mtime)
		b = binary.AppendVarint(b, e.Ctime)
		b = binary.AppendUvarint(b, e.Ino)
	}
	return b, nil
}

var errStatCache = errors.New("stat cache: malformed")

// decodeStatCache decodes what encodeStatCache wrote; anything else (a
// truncated or edited file, trailing bytes) is an error.
func decodeStatCache(b []byte) (*statCacheFile, error) {
	if len(b) < len(statCacheMagic) || string(b[:len(statCacheMagic)]) != statCacheMagic {
		return nil, errStatCache
	}
	b = b[len(statCacheMagic):]
	bad := false
	// a varint whose last byte is 0 (and is not 0 alone) is overlong:
	// not what the encoder writes
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 || n > 1 && b[n-1] == 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 { // binary.AppendVarint's zigzag over a uvarint
		u := uv()
		return int64(u>>1) ^ -int64(u&1)
	}
	str := func() string {
		n := uv()
		if bad || n > uint64(len(b)) {
			bad = true
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	c := &statCacheFile{ID: str(), Root: str()}
	// each tree is at least two bytes, each entry at least nine: a count
	// beyond what the rest could hold is refused before allocating
	nt := uv()
	if bad || nt > uint64(len(b))/2 {
		return nil, errStatCache
	}
	if nt > 0 {
		c.Trees = make(map[string]string, nt)
	}
	prev := ""
	for i := uint64(0); i < nt && !bad; i++ {
		k, v := str(), str()
		if i > 0 && k <= prev {
			bad = true // not sorted, or a key twice
		}
		c.Trees[k], prev = v, k
	}
	ne := uv()
	if bad || ne > uint64(len(b))/9 {
		return nil, errStatCache
	}
	c.Entries = make([]Entry, 0, ne)
	for i := uint64(0); i < ne && !bad; i++ {
		var e Entry
		e.Path = str()
		if len(b) == 0 || int(b[0]) >= len(codeKind) {
			return nil, errStatCache
		}
		e.Kind = codeKind[b[0]]
		b = b[1:]
		mode := uv()
		if mode > 1<<32-1 {
			bad = true
		}
		e.Mode = fs.FileMode(mode)
		e.Size = sv()
		e.Hash, e.Link = str(), str()
		e.Mtime, e.Ctime, e.Ino = sv(), sv(), uv()
		c.Entries = append(c.Entries, e)
	}
	if bad || len(b) != 0 {
		return nil, errStatCache
	}
	return c, nil
}
