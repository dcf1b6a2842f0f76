//go:build linux

package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The Identifier's scan — the policed binaries found in $PATH and the
// standard directories, with their file keys and GNU build IDs — costs
// ~10 ms of CPU per launch (listing bin directories, reading ~90 ELF
// headers), on the other CPU of a 2-CPU machine but in the way of the
// launch and of every parallel run. It is kept between runs in the user's
// cache directory and reused when nothing it was built from changed: the
// same $PATH and program list, every directory listed with the same
// device, inode and mtime (an entry added or removed changes the mtime),
// every binary with the same device, inode, size, mtime and ctime (a
// rewrite changes the ctime). Anything else, or any doubt, rescans.

// identityCacheVersion is the first line's version. 2: the line format
// below (1 was JSON, ~0.4 ms of CPU to decode at every launch).
const identityCacheVersion = 2

type identityCache struct {
	Version int
	Key     string // PATH and program names
	Dirs    []cacheDir
	Bins    []cacheBin
}

type cacheDir struct {
	Path  string
	Dev   uint64
	Ino   uint64
	Mtime int64
}

type cacheBin struct {
	Names []string
	Path  string
	Dev   uint64
	Ino   uint64
	Size  int64
	Mtime int64
	Ctime int64
	BID   string
}

// The cache file is lines of tab-separated fields, strings quoted as Go
// literals (a quoted string holds no tab or newline):
//
//	agentbox-identity	2	KEY
//	d	DEV	INO	MTIME	"PATH"
//	b	DEV	INO	SIZE	MTIME	CTIME	"BUILD-ID"	"PATH"	"NAME"...
const identityCacheMagic = "agentbox-identity"

// encodeIdentityCache writes c in the line format.
func encodeIdentityCache(c *identityCache) []byte {
	b := make([]byte, 0, 64*(len(c.Dirs)+2*len(c.Bins)+1))
	u := func(n uint64) { b = strconv.AppendUint(append(b, '\t'), n, 10) }
	i := func(n int64) { b = strconv.AppendInt(append(b, '\t'), n, 10) }
	q := func(s string) { b = strconv.AppendQuote(append(b, '\t'), s) }
	b = append(b, identityCacheMagic...)
	i(int64(c.Version))
	q(c.Key)
	for _, d := range c.Dirs {
		b = append(b, "\nd"...)
		u(d.Dev)
		u(d.Ino)
		i(d.Mtime)
		q(d.Path)
	}
	for _, x := range c.Bins {
		b = append(b, "\nb"...)
		u(x.Dev)
		u(x.Ino)
		i(x.Size)
		i(x.Mtime)
		i(x.Ctime)
		q(x.BID)
		q(x.Path)
		for _, n := range x.Names {
			q(n)
		}
	}
	return append(b, '\n')
}

// decodeIdentityCache parses the line format; any deviation is an error
// (the cache is then rebuilt).
func decodeIdentityCache(data []byte) (*identityCache, error) {
	text := string(data)
	if !strings.HasSuffix(text, "\n") {
		return nil, errors.New("identity cache: truncated")
	}
	lines := strings.Split(text[:len(text)-1], "\n")
	head := strings.Split(lines[0], "\t")
	if len(head) != 3 || head[0] != identityCacheMagic {
		return nil, errors.New("identity cache: not an identity cache")
	}
	nb := strings.Count(text, "\nb\t")
	c := &identityCache{Dirs: make([]cacheDir, 0, max(0, len(lines)-1-nb)), Bins: make([]cacheBin, 0, nb)}
	var err error
	var f []string // the line's fields, one slice for every line
	if c.Version, err = strconv.Atoi(head[1]); err != nil || c.Version != identityCacheVersion {
		return nil, fmt.Errorf("identity cache: version %q", head[1])
	}
	if c.Key, err = strconv.Unquote(head[2]); err != nil {
		return nil, fmt.Errorf("identity cache: key: %w", err)
	}
	for i, line := range lines[1:] {
		f = appendFields(f[:0], line)
		bad := func(what string, err error) error {
			return fmt.Errorf("identity cache: line %d: %s: %v", i+2, what, err)
		}
		var u [2]uint64
		switch {
		case len(f) == 5 && f[0] == "d":
			var d cacheDir
			for j := range u {
				if u[j], err = strconv.ParseUint(f[1+j], 10, 64); err != nil {
					return nil, bad("number", err)
				}
			}
			d.Dev, d.Ino = u[0], u[1]
			if d.Mtime, err = strconv.ParseInt(f[3], 10, 64); err != nil {
				return nil, bad("mtime", err)
			}
			if d.Path, err = strconv.Unquote(f[4]); err != nil {
				return nil, bad("path", err)
			}
			c.Dirs = append(c.Dirs, d)
		case len(f) >= 9 && f[0] == "b":
			var x cacheBin
			for j := range u {
				if u[j], err = strconv.ParseUint(f[1+j], 10, 64); err != nil {
					return nil, bad("number", err)
				}
			}
			x.Dev, x.Ino = u[0], u[1]
			for j, p := range []*int64{&x.Size, &x.Mtime, &x.Ctime} {
				if *p, err = strconv.ParseInt(f[3+j], 10, 64); err != nil {
					return nil, bad("number", err)
				}
			}
			if x.BID, err = strconv.Unquote(f[6]); err != nil {
				return nil, bad("build id", err)
			}
			if x.Path, err = strconv.Unquote(f[7]); err != nil {
				return nil, bad("path", err)
			}
			for _, q := range f[8:] {
				n, err := strconv.Unquote(q)
				if err != nil {
					return nil, bad("name", err)
				}
				x.Names = append(x.Names, n)
			}
			c.Bins = append(c.Bins, x)
		default:
			return nil, fmt.Errorf("identity cache: line %d: unknown record", i+2)
		}
	}
	return c, nil
}

// appendFields appends line's tab-separated fields to f (strings.Split
// without a slice per line).
func appendFields(f []string, line string) []string {
	for {
		i := strings.IndexByte(line, '\t')
		if i < 0 {
			return append(f, line)
		}
		f = append(f, line[:i])
		line = line[i+1:]
	}
}

// maxIdentityCache bounds the cache file read (a few hundred programs take
// tens of KiB).
const maxIdentityCache = 4 << 20

// CachePath is where the scan is kept ("" when there is no cache
// directory). Nothing the sandbox can reach may cover it: it says which
// files are git.
func CachePath() string { return identityCachePath() }

// identityCachePath is where the scan is kept ("" when there is no cache
// directory).
func identityCachePath() string {
	d, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(d) {
		return ""
	}
	return filepath.Join(d, "agentbox", "identity.cache")
}

func identityKey(names, dirs []string) string {
	h := sha256.Sum256([]byte(strings.Join(dirs, "\x00") + "\x01" + strings.Join(names, "\x00")))
	return hex.EncodeToString(h[:])
}

func dirStamp(path string) (cacheDir, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return cacheDir{}, false
	}
	return cacheDir{Path: path, Dev: st.Dev, Ino: st.Ino, Mtime: st.Mtim.Nano()}, true
}

// readCacheFile reads the cache file at path in one read of its size, or
// nil: only the user's own, private file (it says which files are git),
// at most maxIdentityCache bytes.
func readCacheFile(path string) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) || st.Mode&0o022 != 0 ||
		st.Size <= 0 || st.Size > maxIdentityCache {
		return nil
	}
	// One byte more than its size: a file that grew since the fstat is
	// read to its end below, never cut short.
	data := make([]byte, 0, st.Size+1)
	for len(data) <= maxIdentityCache {
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if n == 0 {
			return data
		}
		data = data[:len(data)+n]
		if len(data) == cap(data) {
			data = slices.Grow(data, 4096)
		}
	}
	return nil
}

// statAt stats names in directories through a descriptor of each
// directory opened once (O_PATH): the cache's check stats ~90 binaries,
// most of them in two or three directories, and ~30 of their other names,
// and the walk of each binary's directory from / was a quarter of it.
// Following symlinks as stat(2) does (the directory's open, then the
// name's fstatat), the answer is stat(2)'s of the joined path.
type statAt struct {
	fds map[string]int // directory -> descriptor, or -1 when it cannot be opened
}

// stat is unix.Stat of dir/name.
func (a *statAt) stat(dir, name string, st *unix.Stat_t) error {
	fd, ok := a.fds[dir]
	if !ok {
		var err error
		if fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			fd = -1
		}
		if a.fds == nil {
			a.fds = make(map[string]int, 16)
		}
		a.fds[dir] = fd
	}
	if fd < 0 {
		return unix.Stat(filepath.Join(dir, name), st)
	}
	return unix.Fstatat(fd, name, st, 0)
}

// dirStamp is dirStamp, from the directory's descriptor when one is
// open (a directory whose binaries were stat'ed through it before).
func (a *statAt) dirStamp(path string) (cacheDir, bool) {
	fd, ok := a.fds[path]
	if !ok || fd < 0 {
		return dirStamp(path)
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return cacheDir{}, false
	}
	return cacheDir{Path: path, Dev: st.Dev, Ino: st.Ino, Mtime: st.Mtim.Nano()}, true
}

// close closes the directories' descriptors.
func (a *statAt) close() {
	for _, fd := range a.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// loadIdentityCache returns the Identifier kept at path for key, or nil
// when there is none or anything it was built from changed.
func loadIdentityCache(path, key string) *Identifier {
	if path == "" {
		return nil
	}
	data := readCacheFile(path)
	if data == nil {
		return nil
	}
	c, err := decodeIdentityCache(data)
	if err != nil || c.Key != key {
		return nil
	}
	var at statAt
	defer at.close()
	id := &Identifier{
		byFile: make(map[[2]uint64]*knownBin, len(c.Bins)),
		bySize: make(map[int64][]*knownBin, len(c.Bins)),
		byBID:  make(map[string]*knownBin, len(c.Bins)),
		cache:  map[fileKey]fileIdent{},
		dirs:   c.Dirs,
		bins:   make([]*knownBin, 0, len(c.Bins)),
	}
	kb := make([]knownBin, len(c.Bins)) // one allocation for every entry
	for i, cb := range c.Bins {
		var fs unix.Stat_t
		if at.stat(filepath.Dir(cb.Path), filepath.Base(cb.Path), &fs) != nil {
			return nil
		}
		k := keyOf(&fs)
		if k.dev != cb.Dev || k.ino != cb.Ino || k.size != cb.Size || k.mtime.Nano() != cb.Mtime || k.ctime.Nano() != cb.Ctime || len(cb.Names) == 0 {
			return nil
		}
		if !namesHold(&at, cb, k, c.Dirs) {
			return nil // relabelled: the file says which programs are git
		}
		b := &kb[i]
		*b = knownBin{names: cb.Names, path: cb.Path, key: k, bid: cb.BID}
		id.byFile[[2]uint64{k.dev, k.ino}] = b
		id.bySize[k.size] = append(id.bySize[k.size], b)
		id.bins = append(id.bins, b)
		if cb.BID != "" {
			if _, dup := id.byBID[cb.BID]; !dup {
				id.byBID[cb.BID] = b
			}
		}
	}
	// The directories last: most are the binaries' own, their
	// descriptors open by now.
	for _, d := range c.Dirs {
		now, ok := at.dirStamp(d.Path)
		if !ok {
			now = cacheDir{Path: d.Path} // missing then and now is unchanged
		}
		if now != d {
			return nil
		}
	}
	id.bidOnce.Do(func() {}) // the build-ID index came with the cache
	return id
}

// namesHold re-checks what the cache says a binary is: every name must be
// one the scan looks for, found as that file the way the scan finds it —
// the cached path itself is the name or a versioned spelling of it, or
// the name in one of the scanned directories is the same file. A cache
// edited to call /usr/bin/git "cat" fails here (the file is only
// agentbox's to write; this is the second line).
func namesHold(at *statAt, cb cacheBin, k fileKey, dirs []cacheDir) bool {
	base := filepath.Base(cb.Path)
	for _, n := range cb.Names {
		if n == LoaderName {
			ok := false
			for _, g := range LoaderGlobs {
				m, _ := filepath.Match(g, cb.Path)
				ok = ok || m
			}
			if !ok {
				return false
			}
			continue
		}
		if !policedNames(n) {
			return false
		}
		if base == n || versionedProgram(n) && spellsVersionOf(base, n) {
			continue
		}
		if !nameInDirs(at, n, k, filepath.Dir(cb.Path), dirs) {
			return false
		}
	}
	return true
}

// nameInDirs says whether name in one of the scanned dirs is the file k.
// The binary's own directory is asked first when the scan read it: a
// program's other names are links beside it (/usr/bin/git-receive-pack,
// /usr/lib/git-core/git-upload-pack), and asking the ~20 scanned
// directories in turn took ~100 stats more per load here (221 against
// 121 with 89 binaries, 122 names; BenchmarkIdentityCacheLoad).
func nameInDirs(at *statAt, name string, k fileKey, own string, dirs []cacheDir) bool {
	is := func(dir string) bool {
		var st unix.Stat_t
		return at.stat(dir, name, &st) == nil && st.Dev == k.dev && st.Ino == k.ino
	}
	ownScanned := slices.ContainsFunc(dirs, func(d cacheDir) bool { return d.Path == own })
	if ownScanned && is(own) {
		return true
	}
	for _, d := range dirs {
		if (!ownScanned || d.Path != own) && is(d.Path) {
			return true
		}
	}
	return false
}

// saveIdentityCache keeps id's scan at path (atomically, 0600).
func saveIdentityCache(id *Identifier, path, key string) {
	if path == "" || len(id.dirs) == 0 {
		return
	}
	c := identityCache{Version: identityCacheVersion, Key: key, Dirs: id.dirs}
	bids := map[*knownBin]string{}
	id.mu.Lock()
	for bid, b := range id.byBID {
		bids[b] = bid
	}
	id.mu.Unlock()
	for _, b := range id.bins {
		c.Bins = append(c.Bins, cacheBin{Names: b.names, Path: b.path, Dev: b.key.dev, Ino: b.key.ino, Size: b.key.size,
			Mtime: b.key.mtime.Nano(), Ctime: b.key.ctime.Nano(), BID: bids[b]})
	}
	data := encodeIdentityCache(&c)
	// The JSON cache of earlier versions is not read any more.
	_ = os.Remove(filepath.Join(filepath.Dir(path), "identity.json"))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".identity-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}
