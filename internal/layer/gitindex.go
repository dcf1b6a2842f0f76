package layer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxIndexSize bounds the git index read (a repository of a million
// files has an index of ~100 MiB; more is no index agentbox compares).
const maxIndexSize = 256 << 20

// indexDigestFile is indexDigest of the git index file p (never through
// a symlink).
func indexDigestFile(p string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexSize+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxIndexSize {
		return "", fmt.Errorf("%s: larger than %d MiB", p, maxIndexSize>>20)
	}
	d, err := indexDigest(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return d, nil
}

var errIndex = errors.New("not a git index of version 2, 3 or 4 (SHA-1)")

// indexDigest hashes what a git index stages — each entry's path, mode,
// object id and stage — and nothing of the file stats git caches in it
// (ctime, mtime, dev, inode, uid, gid, size), which git status rewrites.
// Two indexes with the same digest stage the same. The index's
// extensions (the cache tree, among them) are left out: they are caches
// of the entries.
func indexDigest(b []byte) (string, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return "", errIndex
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return "", fmt.Errorf("%w: version %d", errIndex, version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	h := sha256.New()
	h.Write(b[4:12])
	off := 12
	var prev []byte
	const fixed = 40 + 20 + 2 // stats and mode, object id, flags
	for i := uint32(0); i < n; i++ {
		start := off
		if len(b)-off < fixed {
			return "", fmt.Errorf("%w: entry %d cut short", errIndex, i)
		}
		mode := b[off+24 : off+28]
		oid := b[off+40 : off+60]
		flags := binary.BigEndian.Uint16(b[off+60 : off+62])
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 || len(b)-off < 2 {
				return "", fmt.Errorf("%w: entry %d: extended flags", errIndex, i)
			}
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, k := indexVarint(b[off:])
			if k == 0 || strip > uint64(len(prev)) {
				return "", fmt.Errorf("%w: entry %d: path prefix", errIndex, i)
			}
			off += k
			end := indexNUL(b[off:])
			if end < 0 {
				return "", fmt.Errorf("%w: entry %d: path", errIndex, i)
			}
			name = append(append([]byte{}, prev[:uint64(len(prev))-strip]...), b[off:off+end]...)
			off += end + 1
		} else {
			end := indexNUL(b[off:])
			if end < 0 {
				return "", fmt.Errorf("%w: entry %d: path", errIndex, i)
			}
			name = b[off : off+end]
			off += end + 1
			// entries are padded with NULs to a multiple of 8 bytes
			for (off-start)%8 != 0 {
				if off >= len(b) {
					return "", fmt.Errorf("%w: entry %d: padding", errIndex, i)
				}
				off++
			}
		}
		prev = name
		h.Write(mode)
		h.Write(oid)
		h.Write([]byte{byte(flags >> 12 & 3)}) // the stage (merge conflicts)
		h.Write(name)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// indexVarint reads git's offset varint (index version 4's prefix
// length): the value and the bytes it took (0: malformed).
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	v := uint64(b[0] & 127)
	k := 1
	for b[k-1]&128 != 0 {
		if k >= len(b) || k > 9 {
			return 0, 0
		}
		v = (v+1)<<7 | uint64(b[k]&127)
		k++
	}
	return v, k
}

// gitIndexes digests the git indexes of target/ and of its top-level
// directories' repositories ("proj/.git/index"), as a review run starts.
func gitIndexes(target string) map[string]string {
	cands := []string{".git/index"}
	if ents, err := os.ReadDir(target); err == nil {
		for _, e := range ents {
			if e.IsDir() && e.Name() != ".git" {
				cands = append(cands, e.Name()+"/.git/index")
			}
		}
	}
	out := map[string]string{}
	for _, c := range cands {
		if d, err := indexDigestFile(filepath.Join(target, c)); err == nil {
			out[c] = d
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
