package boundary

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// randomRepoTree fills root with a random tree of directories, files and
// repositories: .git directories (with hooks/ and config), .git files and
// .git symbolic links, node_modules holding repositories, symbolic links
// to repositories, nested repositories, empty and crowded directories.
func randomRepoTree(t *testing.T, rng *rand.Rand, root string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var fill func(dir string, depth int)
	fill = func(dir string, depth int) {
		switch rng.Intn(6) {
		case 0, 1:
			g := filepath.Join(dir, ".git")
			must(os.MkdirAll(filepath.Join(g, "hooks"), 0o755))
			must(os.WriteFile(filepath.Join(g, "config"), nil, 0o644))
			if rng.Intn(2) == 0 {
				must(os.MkdirAll(filepath.Join(g, "objects", "pack"), 0o755))
			}
		case 2:
			must(os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: /elsewhere\n"), 0o644))
		case 3:
			must(os.Symlink(root, filepath.Join(dir, ".git")))
		}
		for i, n := 0, rng.Intn(8); i < n; i++ {
			must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o644))
		}
		if depth >= 4 {
			return
		}
		for i, n := 0, rng.Intn(4); i < n; i++ {
			name := fmt.Sprintf("d%d", i)
			switch rng.Intn(8) {
			case 0:
				name = "node_modules"
			case 1:
				must(os.Symlink(dir, filepath.Join(dir, fmt.Sprintf("l%d", i))))
				continue
			}
			sub := filepath.Join(dir, name)
			if err := os.Mkdir(sub, 0o755); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			fill(sub, depth+1)
		}
	}
	fill(root, 0)
}

// TestGitWalkMatchesGeneralWalk: findGitMatches (a .git lookup per
// directory, listings only to find subdirectories, leaf directories
// skipped by link count) finds exactly what the general walk finds, on
// random trees, on the file system of the test's temporary directory and
// on a tmpfs.
func TestGitWalkMatchesGeneralWalk(t *testing.T) {
	dirs := map[string]string{"temp dir": t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		d, err := os.MkdirTemp("/dev/shm", "gitwalk-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dirs["tmpfs"] = d
	} else {
		t.Log("no writable /dev/shm: the tmpfs case is skipped")
	}
	globs := [][]string{
		{"target/**/.git/hooks", "target/**/.git/config"},
		{"target/*/.git/hooks"},
		{"target/**/.git/*"},
	}
	for name, base := range dirs {
		t.Run(name, func(t *testing.T) {
			if _, ok := leafFS(base); !ok {
				t.Logf("%s: link counts not trusted here; leaf skipping is not exercised", base)
			}
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < 60; i++ {
				w := filepath.Join(base, fmt.Sprint(i))
				tg := filepath.Join(w, "target")
				if err := os.MkdirAll(tg, 0o755); err != nil {
					t.Fatal(err)
				}
				randomRepoTree(t, rng, tg)
				for _, gs := range globs {
					gitWalkDirect = true
					fast, err1 := findMatches(tg, "target", gs)
					gitWalkDirect = false
					slow, err2 := findMatches(tg, "target", gs)
					gitWalkDirect = true
					if err1 != nil || err2 != nil {
						t.Fatalf("tree %d %v: errors %v / %v", i, gs, err1, err2)
					}
					if strings.Join(fast, "\n") != strings.Join(slow, "\n") {
						t.Fatalf("tree %d %v:\ndirect walk: %q\ngeneral walk: %q", i, gs, fast, slow)
					}
				}
			}
		})
	}
}

// TestIsLeafDir: on a file system whose link counts leafFS trusts, a
// directory without subdirectories is a leaf whatever it holds, one with a
// subdirectory (even only .git) is not, nor a symbolic link or a file.
func TestIsLeafDir(t *testing.T) {
	base := t.TempDir()
	dev, ok := leafFS(base)
	if !ok {
		t.Skipf("%s: not a file system whose directory link counts agentbox trusts (ext4, xfs, tmpfs)", base)
	}
	mk := func(p string) string {
		if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(base, p)
	}
	leaf := mk("leaf")
	for i := 0; i < 50; i++ {
		os.WriteFile(filepath.Join(leaf, fmt.Sprint(i)), nil, 0o644)
	}
	mk("repo/.git")
	mk("deep/a/b")
	os.Symlink(leaf, filepath.Join(base, "link"))
	for p, want := range map[string]bool{"leaf": true, "repo": false, "deep": false, "deep/a": false, "deep/a/b": true, "link": false, "leaf/1": false, "missing": false} {
		if got := isLeafDir(filepath.Join(base, p), dev); got != want {
			t.Errorf("isLeafDir(%s) = %v, want %v", p, got, want)
		}
	}
	if isLeafDir(leaf, dev+1) {
		t.Error("a directory on another device counted as a leaf")
	}
}
