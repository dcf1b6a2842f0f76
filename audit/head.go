package audit

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The head file holds one fixed-length record naming the log's last line:
//
//	agentbox-audit-head v1 seq=00000000000000000042 hash=<64 hex digits>\n
//
// Fixed length means an update is a single pwrite(2) at offset 0, so a killed
// writer never leaves half a record.
const (
	headMagic = "agentbox-audit-head v1"
	headLen   = len(headMagic) + len(" seq=") + 20 + len(" hash=") + 64 + 1
)

// Head is the parsed content of a log's head file.
type Head struct {
	Seq  uint64 // seq of the last line written
	Hash string // LineHash of that line
}

// head is a Head read by the writer, with whether the file held one and its size.
type head struct {
	ok   bool
	seq  uint64
	hash string
	size int64
}

func formatHead(seq uint64, hash string) []byte {
	return fmt.Appendf(nil, "%s seq=%020d hash=%s\n", headMagic, seq, hash)
}

// ParseHead parses the content of a head file.
func ParseHead(b []byte) (Head, error) {
	s := string(b)
	if len(b) != headLen || !strings.HasPrefix(s, headMagic+" seq=") || s[len(s)-1] != '\n' {
		return Head{}, fmt.Errorf("not an agentbox audit head record (%d bytes)", len(b))
	}
	rest := strings.TrimSuffix(strings.TrimPrefix(s, headMagic+" seq="), "\n")
	seqStr, hash, ok := strings.Cut(rest, " hash=")
	if !ok || len(seqStr) != 20 || len(hash) != 64 {
		return Head{}, fmt.Errorf("malformed agentbox audit head record %q", strings.TrimSpace(s))
	}
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return Head{}, fmt.Errorf("head record seq %q: %w", seqStr, err)
	}
	if _, err := hex.DecodeString(hash); err != nil {
		return Head{}, fmt.Errorf("head record hash %q: %w", hash, err)
	}
	return Head{Seq: seq, Hash: hash}, nil
}

// ReadHeadFile reads the head file of the log at logPath. It returns
// (nil, nil) when the head file does not exist or is empty.
func ReadHeadFile(logPath string) (*Head, error) {
	b, err := os.ReadFile(logPath + HeadSuffix)
	if os.IsNotExist(err) || (err == nil && len(b) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read head file: %w", err)
	}
	h, err := ParseHead(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logPath+HeadSuffix, err)
	}
	return &h, nil
}

func readHead(f *os.File) (head, error) {
	buf := make([]byte, headLen+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return head{}, err
	}
	h := head{size: int64(n)}
	if n == 0 {
		return h, nil
	}
	p, err := ParseHead(buf[:n])
	if err != nil {
		return h, err
	}
	h.ok, h.seq, h.hash = true, p.Seq, p.Hash
	return h, nil
}

// writeHead replaces the head record with one pwrite(2) at offset 0;
// oldSize is the file's previous size (a file of another size is truncated
// first, which only happens when it was empty or damaged).
func writeHead(f *os.File, oldSize int64, seq uint64, hash string) error {
	rec := formatHead(seq, hash)
	if oldSize != 0 && oldSize != int64(len(rec)) {
		if err := f.Truncate(0); err != nil {
			return err
		}
	}
	_, err := f.WriteAt(rec, 0)
	return err
}
