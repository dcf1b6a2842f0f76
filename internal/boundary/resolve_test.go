package boundary

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolveExistingPlain: the one-walk fast path (openat2 refusing
// symlinks) answers what the component walk answers for every kind of
// path, and answers alone (no walk) exactly when no symlink is on the way
// to the nearest existing part, in one walk.
func TestResolveExistingPlain(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(dir, "a", "file"), nil, 0o600)
	os.Symlink(other, filepath.Join(dir, "a", "link"))
	os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "a", "dangling"))
	for _, tc := range []struct {
		p, want string
		fast    bool // resolvePlain answers alone
		err     bool
	}{
		{"/", "/", true, false},
		{dir + "/a/b", dir + "/a/b", true, false},
		{dir + "/a/file", dir + "/a/file", true, false},
		{dir + "/a/b/missing", dir + "/a/b/missing", true, false},
		{dir + "/a/missing/deeper/x", dir + "/a/missing/deeper/x", true, false},
		{dir + "/a/link", other, false, false},
		{dir + "/a/link/missing/x", other + "/missing/x", false, false},
		{dir + "/a/dangling", "", false, true},
		{dir + "/a/file/x", "", false, true},
		{dir + "/a//b", dir + "/a/b", false, false}, // not clean: walked
		{"/proc/self/cwd/x", "", false, false},      // a magic link: walked
	} {
		got, err := ResolveExisting(tc.p)
		walk, werr := resolveWalk(tc.p)
		var res Resolver
		for range 2 { // asked again, from its memory
			if rgot, rerr := res.ResolveExisting(tc.p); rgot != got || (rerr == nil) != (err == nil) {
				t.Errorf("Resolver.ResolveExisting(%q) = %q, %v; ResolveExisting says %q, %v", tc.p, rgot, rerr, got, err)
			}
		}
		if got != walk || (err == nil) != (werr == nil) {
			t.Errorf("ResolveExisting(%q) = %q, %v; the walk says %q, %v", tc.p, got, err, walk, werr)
		}
		if tc.err != (err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("ResolveExisting(%q) = %q, %v; want %q (error %v)", tc.p, got, err, tc.want, tc.err)
		}
		walks := 0
		counted := func(p string) (bool, bool) { walks++; return PlainPath(p) }
		if _, ok := resolvePlain(tc.p, counted); ok != tc.fast {
			t.Errorf("resolvePlain(%q) answered alone: %v, want %v", tc.p, ok, tc.fast)
		}
		// One walk answers a missing path too: it went through the
		// parents, which are not walked again.
		if walks != 1 {
			t.Errorf("resolvePlain(%q) walked %d paths, want 1", tc.p, walks)
		}
	}
	// PlainPath's two answers against filepath.EvalSymlinks: exists is
	// its own resolution, missing is a path it fails on.
	for _, tc := range []struct {
		p               string
		exists, missing bool
	}{
		{dir + "/a/b", true, false},
		{dir + "/a/file", true, false},
		{dir + "/a/b/missing", false, true},
		{dir + "/a/missing/deeper", false, true},
		{dir + "/a/link", false, false},
		{dir + "/a/link/x", false, false},
		{dir + "/a/dangling", false, false},
		{dir + "/a/file/x", false, false},
		{dir + "/a//b", false, false},
		{"a/b", false, false},
	} {
		exists, missing := PlainPath(tc.p)
		if exists != tc.exists || missing != tc.missing {
			t.Errorf("PlainPath(%q) = %v, %v; want %v, %v", tc.p, exists, missing, tc.exists, tc.missing)
		}
		want, werr := filepath.EvalSymlinks(tc.p)
		if exists && want != tc.p || missing && werr == nil {
			t.Errorf("PlainPath(%q) = %v, %v; filepath.EvalSymlinks says %q, %v", tc.p, exists, missing, want, werr)
		}
	}
}

// TestResolverRemembers: a Resolver answers from the first walk of a path
// (one check's moment), so checkLayout's repeated questions cost one
// openat2 each; a new Resolver walks again.
func TestResolverRemembers(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "policy.yaml")
	var res Resolver
	if exists, missing := res.PlainPath(p); exists || !missing {
		t.Fatalf("PlainPath(%q) = %v, %v before it exists", p, exists, missing)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if exists, missing := res.PlainPath(p); exists || !missing {
		t.Errorf("the Resolver walked %q again: %v, %v", p, exists, missing)
	}
	var fresh Resolver
	if exists, missing := fresh.PlainPath(p); !exists || missing {
		t.Errorf("a new Resolver: PlainPath(%q) = %v, %v, want it to exist", p, exists, missing)
	}
}

// BenchmarkResolveExisting: the paths checkLayout asks about at each
// launch are mostly plain, often missing (policy files a run would read).
func BenchmarkResolveExisting(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "home", "user", ".config"), 0o755)
	paths := []string{filepath.Join(dir, "home", "user", ".config"), filepath.Join(dir, "home", "user", ".config", "agentbox", "policy.yaml")}
	for _, name := range []string{"plain", "walk"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for _, p := range paths {
					if name == "plain" {
						ResolveExisting(p)
					} else {
						resolveWalk(p)
					}
				}
			}
		})
	}
}
