//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
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

const identityCacheVersion = 1

type identityCache struct {
	Version int        `json:"version"`
	Key     string     `json:"key"` // PATH and program names
	Dirs    []cacheDir `json:"dirs"`
	Bins    []cacheBin `json:"bins"`
}

type cacheDir struct {
	Path  string `json:"path"`
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Mtime int64  `json:"mtime"`
}

type cacheBin struct {
	Names []string `json:"names"`
	Path  string   `json:"path"`
	Dev   uint64   `json:"dev"`
	Ino   uint64   `json:"ino"`
	Size  int64    `json:"size"`
	Mtime int64    `json:"mtime"`
	Ctime int64    `json:"ctime"`
	BID   string   `json:"bid,omitempty"`
}

// identityCachePath is where the scan is kept ("" when there is no cache
// directory).
func identityCachePath() string {
	d, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(d) {
		return ""
	}
	return filepath.Join(d, "agentbox", "identity.json")
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

// loadIdentityCache returns the Identifier kept at path for key, or nil
// when there is none or anything it was built from changed.
func loadIdentityCache(path, key string) *Identifier {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var st unix.Stat_t
	// Only the user's own, private file: it says which files are git.
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Uid != uint32(os.Geteuid()) || st.Mode&0o022 != 0 {
		return nil
	}
	var c identityCache
	if json.NewDecoder(f).Decode(&c) != nil || c.Version != identityCacheVersion || c.Key != key {
		return nil
	}
	for _, d := range c.Dirs {
		now, ok := dirStamp(d.Path)
		if !ok {
			now = cacheDir{Path: d.Path} // missing then and now is unchanged
		}
		if now != d {
			return nil
		}
	}
	id := &Identifier{
		byFile: map[[2]uint64]*knownBin{},
		bySize: map[int64][]*knownBin{},
		byBID:  map[string]*knownBin{},
		cache:  map[fileKey]fileIdent{},
		dirs:   c.Dirs,
	}
	for _, cb := range c.Bins {
		var fs unix.Stat_t
		if unix.Stat(cb.Path, &fs) != nil {
			return nil
		}
		k := keyOf(&fs)
		if k.dev != cb.Dev || k.ino != cb.Ino || k.size != cb.Size || k.mtime.Nano() != cb.Mtime || k.ctime.Nano() != cb.Ctime || len(cb.Names) == 0 {
			return nil
		}
		b := &knownBin{names: cb.Names, path: cb.Path, key: k, bid: cb.BID}
		id.byFile[[2]uint64{k.dev, k.ino}] = b
		id.bySize[k.size] = append(id.bySize[k.size], b)
		id.bins = append(id.bins, b)
		if cb.BID != "" {
			if _, dup := id.byBID[cb.BID]; !dup {
				id.byBID[cb.BID] = b
			}
		}
	}
	id.bidOnce.Do(func() {}) // the build-ID index came with the cache
	return id
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
	data, err := json.Marshal(c)
	if err != nil {
		return
	}
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
