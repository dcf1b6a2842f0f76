package layer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/gitsum"
)

// Kind is what a change does to one path of target/.
type Kind string

// Change kinds.
const (
	Added    Kind = "added"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
	Renamed  Kind = "renamed" // a deletion and an addition of the same content
	Mode     Kind = "mode"    // only the permission bits changed
)

// Change is one path the layer changes, relative to target/.
type Change struct {
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// From is a rename's old path.
	From string `json:"from,omitempty"`
	// Type is what the path is in the layer (file, dir, symlink) or was
	// (for a deletion).
	Type string `json:"type"`
	// Mode and OldMode are permission bits (octal), OldMode 0 when new.
	Mode    uint32 `json:"mode,omitempty"`
	OldMode uint32 `json:"old_mode,omitempty"`
	// Target is a symlink's target in the layer (never followed).
	Target string `json:"link_target,omitempty"`
	Binary bool   `json:"binary,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Hash and OldHash are SHA-256 of the content (files) or the link
	// target (symlinks).
	Hash    string `json:"sha256,omitempty"`
	OldHash string `json:"old_sha256,omitempty"`
}

// Changes lists what the layer changes in the real target/ as it is now,
// sorted by path; renames are a deletion and an addition of the same
// content, reported once.
func (l *Layer) Changes() ([]Change, error) {
	var out []Change
	if err := l.walk("", &out); err != nil {
		return nil, err
	}
	out = pairRenames(out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// opaque reports a directory of the upper layer that hides the lower's.
func (l *Layer) opaque(p string) bool {
	name := "trusted.overlay.opaque"
	if l.Meta.UserXattr {
		name = "user.overlay.opaque"
	}
	buf := make([]byte, 4)
	n, err := unix.Lgetxattr(p, name, buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

func whiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

func typeOf(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFREG:
		return "file"
	}
	return "other"
}

// walk lists the changes below rel ("" the root).
func (l *Layer) walk(rel string, out *[]Change) error {
	updir := filepath.Join(l.Upper(), rel)
	ents, err := os.ReadDir(updir)
	if err != nil {
		return fmt.Errorf("reading the layer: %w", err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
		p := path.Join(rel, e.Name())
		up := filepath.Join(l.Upper(), p)
		low := filepath.Join(l.Meta.Target, p)
		var ust, lst unix.Stat_t
		if err := unix.Lstat(up, &ust); err != nil {
			return fmt.Errorf("reading the layer: %w", err)
		}
		lowErr := unix.Lstat(low, &lst)
		lowExists := lowErr == nil
		switch {
		case whiteout(&ust):
			if lowExists {
				l.deleted(p, &lst, out)
			}
		case ust.Mode&unix.S_IFMT == unix.S_IFDIR:
			lowDir := lowExists && lst.Mode&unix.S_IFMT == unix.S_IFDIR
			if lowExists && !lowDir {
				l.deleted(p, &lst, out) // a file replaced by a directory
			}
			if !lowDir {
				*out = append(*out, Change{Path: p, Kind: Added, Type: "dir", Mode: ust.Mode & 0o7777})
			} else if ust.Mode&0o7777 != lst.Mode&0o7777 {
				*out = append(*out, Change{Path: p, Kind: Mode, Type: "dir", Mode: ust.Mode & 0o7777, OldMode: lst.Mode & 0o7777})
			}
			if lowDir && l.opaque(up) {
				// Everything the lower directory had is hidden: what the
				// upper one does not hold again is deleted.
				lents, _ := os.ReadDir(low)
				upNames := map[string]bool{}
				uents, _ := os.ReadDir(up)
				for _, u := range uents {
					upNames[u.Name()] = true
				}
				for _, le := range lents {
					if !upNames[le.Name()] {
						var st unix.Stat_t
						if unix.Lstat(filepath.Join(low, le.Name()), &st) == nil {
							l.deleted(path.Join(p, le.Name()), &st, out)
						}
					}
				}
			}
			if err := l.walk(p, out); err != nil {
				return err
			}
		case ust.Mode&unix.S_IFMT == unix.S_IFREG || ust.Mode&unix.S_IFMT == unix.S_IFLNK:
			c := Change{Path: p, Type: typeOf(ust.Mode), Mode: ust.Mode & 0o7777, Size: ust.Size}
			var err error
			if c.Hash, c.Binary, c.Target, err = describe(up, c.Type); err != nil {
				return err
			}
			switch {
			case !lowExists:
				c.Kind = Added
			case lst.Mode&unix.S_IFMT == unix.S_IFDIR:
				l.deleted(p, &lst, out)
				c.Kind = Added
			default:
				c.OldMode = lst.Mode & 0o7777
				c.OldHash, _, _, _ = describe(low, typeOf(lst.Mode))
				switch {
				case c.OldHash != c.Hash || typeOf(lst.Mode) != c.Type:
					c.Kind = Modified
				case c.OldMode != c.Mode && c.Type == "file":
					c.Kind = Mode
				default:
					continue // copied up, not changed (opened for writing, touched)
				}
			}
			*out = append(*out, c)
		default:
			return fmt.Errorf("the layer holds %s, neither file, directory nor symlink: not applied", p)
		}
	}
	return nil
}

// deleted records the deletion of p (st: what the real target has there);
// a directory's files are each listed.
func (l *Layer) deleted(p string, st *unix.Stat_t, out *[]Change) {
	t := typeOf(st.Mode)
	if t == "dir" {
		ents, _ := os.ReadDir(filepath.Join(l.Meta.Target, p))
		for _, e := range ents {
			var cst unix.Stat_t
			if unix.Lstat(filepath.Join(l.Meta.Target, p, e.Name()), &cst) == nil {
				l.deleted(path.Join(p, e.Name()), &cst, out)
			}
		}
	}
	c := Change{Path: p, Kind: Deleted, Type: t, OldMode: st.Mode & 0o7777}
	if t != "dir" {
		c.OldHash, c.Binary, _, _ = describe(filepath.Join(l.Meta.Target, p), t)
	}
	*out = append(*out, c)
}

// describe hashes a file's content or a symlink's target.
func describe(p, typ string) (hash string, binary bool, link string, err error) {
	h := sha256.New()
	switch typ {
	case "symlink":
		link, err = os.Readlink(p)
		if err != nil {
			return "", false, "", err
		}
		h.Write([]byte(link))
	case "file":
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return "", false, "", err
		}
		defer f.Close()
		head := make([]byte, 8<<10)
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		binary = bytes.IndexByte(head, 0) >= 0 || !utf8Valid(head)
		h.Write(head)
		if _, err := io.Copy(h, f); err != nil {
			return "", false, "", err
		}
	default:
		return "", false, "", nil
	}
	return hex.EncodeToString(h.Sum(nil)), binary, link, nil
}

// utf8Valid is utf8.Valid tolerating a sequence cut at the end of head.
func utf8Valid(b []byte) bool {
	for i := 0; i < 3 && len(b) > 0; i++ {
		if validUTF8(b) {
			return true
		}
		b = b[:len(b)-1]
	}
	return validUTF8(b)
}

// pairRenames turns a deletion and an addition of the same file content
// (or link target) into one rename.
func pairRenames(cs []Change) []Change {
	added := map[string]int{}
	for i, c := range cs {
		if c.Kind == Added && c.Hash != "" {
			if _, dup := added[c.Type+c.Hash]; !dup {
				added[c.Type+c.Hash] = i
			}
		}
	}
	drop := map[int]bool{}
	for i, c := range cs {
		if c.Kind != Deleted || c.OldHash == "" {
			continue
		}
		j, ok := added[c.Type+c.OldHash]
		if !ok || drop[j] {
			continue
		}
		cs[j].Kind, cs[j].From, cs[j].OldMode, cs[j].OldHash = Renamed, c.Path, c.OldMode, c.OldHash
		delete(added, c.Type+c.OldHash)
		drop[i] = true
	}
	out := cs[:0]
	for i, c := range cs {
		if !drop[i] {
			out = append(out, c)
		}
	}
	return out
}

// within reports whether p is one of paths or below one ("" or no paths:
// everything).
func within(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, q := range paths {
		q = strings.Trim(path.Clean("/"+q), "/")
		if q == "" || p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func validUTF8(b []byte) bool { return utf8.Valid(b) }

// Read reads p (relative to target/) as target/ holds it (after false) or
// as the layer would make it (after true), at most gitsum.ReadLimit bytes,
// never through a symlink: the layer as a gitsum.Source.
func (l *Layer) Read(p string, after bool) ([]byte, bool) {
	file := filepath.Join(l.Meta.Target, p)
	if after {
		var st unix.Stat_t
		up := filepath.Join(l.Upper(), p)
		if err := unix.Lstat(up, &st); err == nil {
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				return nil, false // a whiteout, a link, a directory
			}
			file = up
		}
	}
	f, err := os.OpenFile(file, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, gitsum.ReadLimit))
	return b, err == nil
}
