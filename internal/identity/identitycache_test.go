//go:build linux

package identity

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestIdentityCache: the scan is kept and reused while nothing it was
// built from changed; a binary rewritten, an entry added to a scanned
// directory, another $PATH, or a file others can write makes it rescan.
func TestIdentityCache(t *testing.T) {
	d := t.TempDir()
	bin := filepath.Join(d, "bin")
	os.Mkdir(bin, 0o755)
	cp := func(dst string) {
		src, err := os.Open("/bin/true")
		if err != nil {
			t.Skipf("reason: %v", err)
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(out, src)
		out.Close()
	}
	cp(filepath.Join(bin, "git"))
	cache := filepath.Join(d, "cache", "identity.cache")
	key := identityKey([]string{"git"}, []string{bin})
	id := newIdentifier([]string{"git"}, []string{bin})
	id.cachePath, id.cacheKey = cache, key
	id.loadBuildIDs()
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("not saved: %v", err)
	}
	got := loadIdentityCache(cache, key)
	if got == nil || len(got.bins) != len(id.bins) || !got.knows("git") || len(got.byBID) != len(id.byBID) {
		t.Fatalf("reloaded %+v", got)
	}
	if ident, err := got.IdentifyFile(filepath.Join(bin, "git"), []string{"git"}); err != nil || ident.Name != "git" || !ident.Known {
		t.Errorf("identify from the cache: %+v %v", ident, err)
	}
	if loadIdentityCache(cache, identityKey([]string{"git"}, []string{bin, "/other"})) != nil {
		t.Error("another PATH reused the cache")
	}
	os.Chmod(cache, 0o666)
	if loadIdentityCache(cache, key) != nil {
		t.Error("a world-writable cache was used")
	}
	os.Chmod(cache, 0o600)
	time.Sleep(10 * time.Millisecond) // coarse timestamps: make the change visible
	os.WriteFile(filepath.Join(bin, "README"), []byte("x"), 0o644)
	if loadIdentityCache(cache, key) != nil {
		t.Error("an entry added to a scanned directory went unnoticed")
	}
	id = newIdentifier([]string{"git"}, []string{bin})
	id.cachePath, id.cacheKey = cache, key
	id.loadBuildIDs()
	if loadIdentityCache(cache, key) == nil {
		t.Fatal("rescan not saved")
	}
	// Rewritten in place, same size, its mtime put back: the ctime
	// still says so.
	id = newIdentifier([]string{"git"}, []string{bin})
	id.cachePath, id.cacheKey = cache, key
	id.loadBuildIDs()
	if loadIdentityCache(cache, key) == nil {
		t.Fatal("rescan not saved")
	}
	git := filepath.Join(bin, "git")
	fi, err := os.Stat(git)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	data, _ := os.ReadFile(git)
	os.WriteFile(git, data, 0o755)
	os.Chtimes(git, fi.ModTime(), fi.ModTime())
	if loadIdentityCache(cache, key) != nil {
		t.Error("a binary rewritten in place (mtime restored) went unnoticed")
	}
	time.Sleep(10 * time.Millisecond)
	os.Chtimes(git, time.Now(), time.Now())
	if loadIdentityCache(cache, key) != nil {
		t.Error("a changed binary went unnoticed")
	}
}

// TestStatAt: a name stat'ed through its directory's descriptor is what
// stat(2) of the joined path says, through symlinked directories and
// names, and where the directory is missing or a file.
func TestStatAt(t *testing.T) {
	d := t.TempDir()
	real := filepath.Join(d, "real")
	os.Mkdir(real, 0o755)
	os.WriteFile(filepath.Join(real, "prog"), []byte("x"), 0o755)
	os.Symlink(real, filepath.Join(d, "linkdir"))
	os.Symlink(filepath.Join(real, "prog"), filepath.Join(real, "alias"))
	os.Symlink(filepath.Join(d, "gone"), filepath.Join(real, "dangling"))
	var at statAt
	defer at.close()
	for _, tc := range []struct{ dir, name string }{
		{real, "prog"}, {real, "alias"}, {real, "dangling"}, {real, "missing"},
		{filepath.Join(d, "linkdir"), "prog"}, {filepath.Join(d, "linkdir"), "alias"},
		{filepath.Join(d, "nodir"), "prog"}, {filepath.Join(real, "prog"), "x"},
	} {
		for range 2 { // the descriptor opened, then reused
			var got, want unix.Stat_t
			err := at.stat(tc.dir, tc.name, &got)
			werr := unix.Stat(filepath.Join(tc.dir, tc.name), &want)
			if (err == nil) != (werr == nil) || err == nil && (got.Dev != want.Dev || got.Ino != want.Ino || got.Ctim != want.Ctim) {
				t.Errorf("stat %s/%s through its directory: %v (ino %d); stat(2) says %v (ino %d)", tc.dir, tc.name, err, got.Ino, werr, want.Ino)
			}
		}
		gotD, okG := at.dirStamp(tc.dir)
		wantD, okW := dirStamp(tc.dir)
		if gotD != wantD || okG != okW {
			t.Errorf("dirStamp(%s) through its descriptor = %+v %v; by path %+v %v", tc.dir, gotD, okG, wantD, okW)
		}
	}
}

// TestIdentityCacheVersionedNames: a scan that names python2 and
// python3.11 "python" (versioned spellings) is a cache the next launch
// takes: the check of a cached file's names accepts what the scan gives
// (it once refused python2 and pyenv's shims, so every launch rescanned).
func TestIdentityCacheVersionedNames(t *testing.T) {
	d := t.TempDir()
	bin := filepath.Join(d, "bin")
	os.Mkdir(bin, 0o755)
	for i, n := range []string{"python2", "python3", "python3.11"} {
		// distinct content: each file is a program of its own
		if err := os.WriteFile(filepath.Join(bin, n), []byte(fmt.Sprintf("#!/bin/sh\n# %d\n", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"python", "python2", "python3"}
	cache := filepath.Join(d, "cache", "identity.cache")
	key := identityKey(names, []string{bin})
	id := newIdentifier(names, []string{bin})
	id.cachePath, id.cacheKey = cache, key
	id.loadBuildIDs()
	named := map[string]string{}
	for _, b := range id.bins {
		named[filepath.Base(b.path)] = strings.Join(b.names, ",")
	}
	for file, want := range map[string]string{"python2": "python,python2", "python3": "python,python3", "python3.11": "python,python3"} {
		if named[file] != want {
			t.Errorf("the scan named %s %q, want %q", file, named[file], want)
		}
	}
	if loadIdentityCache(cache, key) == nil {
		t.Fatal("the scan's own cache was refused")
	}
}

func sampleIdentityCache() *identityCache {
	return &identityCache{Version: identityCacheVersion, Key: "k\tey\n\"", Dirs: []cacheDir{
		{Path: "/usr/bin", Dev: 65024, Ino: 12, Mtime: 1790052780000000000},
		{Path: "/opt/odd dir/\ttab\nnl/é", Dev: 1, Ino: 1 << 62, Mtime: -5},
	}, Bins: []cacheBin{
		{Names: []string{"git"}, Path: "/usr/bin/git", Dev: 65024, Ino: 99, Size: 4 << 20, Mtime: 1, Ctime: 2, BID: "0123abcd"},
		{Names: []string{"cc", "gcc", "x\ty"}, Path: "/usr/bin/x86_64-linux-gnu-gcc-12", Dev: 3, Ino: 4, Size: 5, Mtime: 6, Ctime: 7},
	}}
}

// TestIdentityCacheFormat: the line format gives back what was written,
// strings with tabs, newlines, quotes and non-ASCII included, and refuses
// a truncated file, another version and a stray line.
func TestIdentityCacheFormat(t *testing.T) {
	c := sampleIdentityCache()
	data := encodeIdentityCache(c)
	got, err := decodeIdentityCache(data)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("decode(encode(c)) = %+v, %v\nwant %+v\nfile:\n%s", got, err, c, data)
	}
	for name, bad := range map[string]string{
		"truncated":     string(data[:len(data)-3]),
		"empty":         "",
		"json":          `{"version":1}` + "\n",
		"other version": strings.Replace(string(data), "\t2\t", "\t1\t", 1),
		"stray line":    string(data) + "x\t1\n",
		"bad number":    strings.Replace(string(data), "65024", "65O24", 1),
		"unquoted":      strings.Replace(string(data), `"/usr/bin/git"`, `/usr/bin/git`, 1),
	} {
		if _, err := decodeIdentityCache([]byte(bad)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// FuzzIdentityCache: decoding any bytes never panics, and what decodes
// encodes back to bytes that decode to the same cache.
func FuzzIdentityCache(f *testing.F) {
	f.Add(encodeIdentityCache(sampleIdentityCache()))
	f.Add([]byte("agentbox-identity\t2\t\"\"\n"))
	f.Add([]byte("agentbox-identity\t2\t\"k\"\nd\t1\t2\t3\t\"/x\"\nb\t1\t2\t3\t4\t5\t\"\"\t\"/x/y\"\t\"y\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeIdentityCache(data)
		if err != nil {
			return
		}
		again, err := decodeIdentityCache(encodeIdentityCache(c))
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", data, again, err, c)
		}
	})
}

// TestIdentityCacheRelabel: a cache edited to give a binary another name
// (git relabelled as curl, or as a program the scan does not look for)
// is not trusted: the next launch rescans.
func TestIdentityCacheRelabel(t *testing.T) {
	d := t.TempDir()
	bin := filepath.Join(d, "bin")
	os.Mkdir(bin, 0o755)
	data, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("reason: %v", err)
	}
	os.WriteFile(filepath.Join(bin, "git"), data, 0o755)
	cache := filepath.Join(d, "cache", "identity.cache")
	key := identityKey([]string{"git"}, []string{bin})
	id := newIdentifier([]string{"git"}, []string{bin})
	id.cachePath, id.cacheKey = cache, key
	id.loadBuildIDs()
	if loadIdentityCache(cache, key) == nil {
		t.Fatal("the genuine cache is not used")
	}
	orig, _ := os.ReadFile(cache)
	for _, name := range []string{"curl", "cat", "ld.so"} {
		forged := strings.Replace(string(orig), "\t\"git\"\n", "\t\""+name+"\"\n", 1)
		if forged == string(orig) {
			t.Fatalf("no name field to relabel in %q", orig)
		}
		os.WriteFile(cache, []byte(forged), 0o600)
		if got := loadIdentityCache(cache, key); got != nil {
			t.Errorf("a cache calling git %q was trusted", name)
		}
	}
}

// BenchmarkIdentityCacheLoad: what a launch pays to take the identity
// cache of this machine's scan (the default program list and directories)
// instead of rescanning: the file read and parsed, every directory and
// binary stat'ed, every name checked. Reports the stats per load.
func BenchmarkIdentityCacheLoad(b *testing.B) {
	dirs := append(filepath.SplitList(os.Getenv("PATH")), "/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin",
		"/usr/lib/git-core", "/usr/libexec/git-core")
	cache := filepath.Join(b.TempDir(), "identity.cache")
	key := identityKey(policedPrograms(), dirs)
	id := newIdentifier(policedPrograms(), dirs)
	id.cachePath, id.cacheKey = cache, key
	id.loadBuildIDs()
	if loadIdentityCache(cache, key) == nil {
		b.Fatal("the scan's cache was not taken back")
	}
	names := 0
	for _, x := range id.bins {
		names += len(x.names)
	}
	for b.Loop() {
		if loadIdentityCache(cache, key) == nil {
			b.Fatal("cache refused")
		}
	}
	b.ReportMetric(float64(len(id.bins)), "bins")
	b.ReportMetric(float64(names), "names")
}
