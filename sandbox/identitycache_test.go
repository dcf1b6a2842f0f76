//go:build linux

package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	cache := filepath.Join(d, "cache", "identity.json")
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
	time.Sleep(10 * time.Millisecond)
	os.Chtimes(filepath.Join(bin, "git"), time.Now(), time.Now())
	if loadIdentityCache(cache, key) != nil {
		t.Error("a changed binary went unnoticed")
	}
}
