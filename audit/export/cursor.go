package export

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cursorRecord is where an export stands in a local audit log: the log file's
// identity (device and inode, so a rotated log is recognised), the byte
// offset just past the last line the receiver acknowledged, and that
// line's seq and chain hash. The local log is the spool: everything past
// the cursor is still to be sent, so a follower that restarts resumes
// there and the spool on disk is this one fixed-size record.
type cursorRecord struct {
	Dev, Ino uint64
	Offset   int64
	Seq      uint64
	Hash     string // audit.LineHash of the acknowledged line; "" at the start
}

const cursorMagic = "agentbox-export-cursor v1"

// Format encodes c as its one-line file record.
func (c cursorRecord) Format() []byte {
	h := c.Hash
	if h == "" {
		h = "-"
	}
	return fmt.Appendf(nil, "%s dev=%d ino=%d offset=%d seq=%d hash=%s\n", cursorMagic, c.Dev, c.Ino, c.Offset, c.Seq, h)
}

// parseCursor decodes a cursor record (Format's output). Any other content
// is an error naming what is wrong: a damaged cursor must not silently
// restart (duplicates) or skip (losses) the export.
func parseCursor(b []byte) (cursorRecord, error) {
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return cursorRecord{}, errors.New("cursor record does not end in a newline")
	}
	rest, ok := strings.CutPrefix(s, cursorMagic+" ")
	if !ok {
		return cursorRecord{}, fmt.Errorf("not an agentbox export cursor (want %q first)", cursorMagic)
	}
	var c cursorRecord
	want := []string{"dev", "ino", "offset", "seq", "hash"}
	fields := strings.Split(rest, " ")
	if len(fields) != len(want) {
		return cursorRecord{}, fmt.Errorf("cursor record has %d fields, want %d (%s)", len(fields), len(want), strings.Join(want, " "))
	}
	for i, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k != want[i] {
			return cursorRecord{}, fmt.Errorf("cursor field %d is %q, want %s=VALUE", i+1, f, want[i])
		}
		var err error
		switch k {
		case "dev":
			c.Dev, err = strconv.ParseUint(v, 10, 64)
		case "ino":
			c.Ino, err = strconv.ParseUint(v, 10, 64)
		case "offset":
			c.Offset, err = strconv.ParseInt(v, 10, 64)
			if err == nil && c.Offset < 0 {
				err = errors.New("negative")
			}
		case "seq":
			c.Seq, err = strconv.ParseUint(v, 10, 64)
		case "hash":
			if v != "-" {
				if _, herr := hex.DecodeString(v); herr != nil || len(v) != 64 {
					err = errors.New("want 64 hex digits or -")
				}
				c.Hash = v
			}
		}
		if err != nil {
			return cursorRecord{}, fmt.Errorf("cursor field %s=%q: %v", k, v, err)
		}
	}
	if (c.Offset == 0) != (c.Hash == "") || (c.Seq == 0) != (c.Hash == "") {
		return cursorRecord{}, fmt.Errorf("cursor offset=%d seq=%d hash=%q: a cursor past the start names its line's seq and hash", c.Offset, c.Seq, c.Hash)
	}
	return c, nil
}

// readCursor reads the cursor file at path; a missing or empty file is
// the start (zero cursorRecord).
func readCursor(path string) (cursorRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(b) == 0) {
		return cursorRecord{}, nil
	}
	if err != nil {
		return cursorRecord{}, fmt.Errorf("export cursor %s: %w", path, err)
	}
	c, err := parseCursor(b)
	if err != nil {
		return cursorRecord{}, fmt.Errorf("export cursor %s: %w", path, err)
	}
	return c, nil
}

// writeCursor replaces the cursor file atomically (write beside it,
// fdatasync, rename), so a crash leaves the old or the new record.
func writeCursor(path string, c cursorRecord) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("export cursor %s: %w", path, err)
	}
	_, werr := f.Write(c.Format())
	if werr == nil {
		werr = unix.Fdatasync(int(f.Fd()))
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("export cursor %s: %w", path, werr)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
