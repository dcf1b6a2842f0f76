package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"

	"golang.org/x/sys/unix"
)

// Contents are read by extents and copied sparse: only the file's data
// extents (SEEK_DATA/SEEK_HOLE) are read, and of those only the 64 KiB
// chunks that are not all zeros are written to the store, at their
// offsets, the object then truncated to the file's length. A sparse file
// (or one full of zeros) takes in the store about what its data takes, not
// its length, and restoring it writes the same way, so it stays sparse.
//
// A file's content hash is the SHA-256 of its bytes below chunkedMin. From
// chunkedMin on it is the chunked hash: the SHA-256 of a header (the
// scheme's name and the length) followed by, for each chunk that is not
// all zeros, its index and its bytes. Both are functions of the content
// alone (where the holes are does not matter), but the chunked one skips
// holes without reading them: a thousand 48 MiB sparse files are hashed
// in what their data costs, not in 48 GiB of zeros.

const (
	chunkSize  = 64 << 10
	chunkedMin = 1 << 20
	// chunkedMagic starts the chunked hash's input; no plain content
	// hash is over a shorter file, and the header fixes the scheme.
	chunkedMagic = "agentbox-chunked-sha256-v1\x00"
)

// ErrOverBudget is returned (wrapped) when a checkpoint would store more
// bytes on disk than Options.MaxStored allows: copying stops, and the
// checkpoint is not taken.
var ErrOverBudget = errors.New("the checkpoint needs more than the store's budget")

var zeroChunk [chunkSize]byte

// digest reads the first size bytes of f by extents and returns their
// content hash. With dst, every chunk that is not all zeros is written to
// dst at its offset and dst is truncated to size; written counts those
// bytes, and more than limit (> 0) of them stops with ErrOverBudget.
// A file shorter than size reads as zeros past its end (the caller
// compares the file's stat before and after).
func digest(f *os.File, size int64, dst *os.File, limit int64) (sum string, written int64, err error) {
	fd := int(f.Fd())
	chunked := size >= chunkedMin
	h := sha256.New()
	if chunked {
		var hdr [8]byte
		binary.BigEndian.PutUint64(hdr[:], uint64(size))
		h.Write([]byte(chunkedMagic))
		h.Write(hdr[:])
	}
	buf := make([]byte, chunkSize)
	var hashed int64 // plain: bytes fed to h so far
	chunk := func(off int64) error {
		n := int(min(chunkSize, size-off))
		b := buf[:n]
		got := 0
		for got < n {
			k, err := unix.Pread(fd, b[got:], off+int64(got))
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if k == 0 {
				clear(b[got:]) // shorter than its stat said
				break
			}
			got += k
		}
		zero := bytes.Equal(b, zeroChunk[:n])
		if chunked {
			if zero {
				return nil
			}
			var idx [8]byte
			binary.BigEndian.PutUint64(idx[:], uint64(off/chunkSize))
			h.Write(idx[:])
			h.Write(b)
		} else {
			feedZeros(h, off-hashed)
			h.Write(b)
			hashed = off + int64(n)
		}
		if dst == nil || zero {
			return nil
		}
		written += int64(n)
		if limit > 0 && written > limit {
			return ErrOverBudget
		}
		if _, err := dst.WriteAt(b, off); err != nil {
			return err
		}
		return nil
	}
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // a hole to the end
		}
		hole := size
		if err != nil {
			data = off // no SEEK_DATA here: all of it is data
		} else if e, err := unix.Seek(fd, data, unix.SEEK_HOLE); err == nil && e < size {
			hole = e
		}
		c := max(data/chunkSize*chunkSize, off)
		for ; c < hole && c < size; c += chunkSize {
			if err := chunk(c); err != nil {
				return "", written, err
			}
		}
		off = c
	}
	if !chunked {
		feedZeros(h, size-hashed)
	}
	if dst != nil {
		if err := dst.Truncate(size); err != nil {
			return "", written, err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), written, nil
}

func feedZeros(h hash.Hash, n int64) {
	for n > 0 {
		k := min(n, chunkSize)
		h.Write(zeroChunk[:k])
		n -= k
	}
}

// hashObject is the content hash of the store's object p in the scheme
// its length selects; an object of chunkedMin or more stored before the
// chunked hash existed is named by its plain SHA-256, which is tried
// second.
func hashObject(p, want string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	got, _, err := digest(f, fi.Size(), nil, 0)
	if err != nil || got == want || fi.Size() < chunkedMin {
		return got, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return "", err
	}
	return hashOf(f)
}

// onDisk is the bytes st takes on disk (its blocks).
func onDisk(st *unix.Stat_t) int64 { return st.Blocks * 512 }

// copySparse writes src's first size bytes to dst as digest does and
// returns their hash (for Restore: what was written is checked against
// the name it was stored under).
func copySparse(src, dst *os.File, size int64) (string, error) {
	sum, _, err := digest(src, size, dst, 0)
	if err != nil {
		return "", fmt.Errorf("copying: %w", err)
	}
	return sum, nil
}
