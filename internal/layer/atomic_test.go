package layer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapshot describes a tree byte for byte: every path's type, mode,
// content or link target.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := os.Lstat(p)
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:8])
		case fi.Mode()&fs.ModeSymlink != 0:
			tg, _ := os.Readlink(p)
			line += " -> " + tg
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// whiteoutAt makes an overlayfs whiteout (a 0/0 character device) at p,
// as the kernel leaves one for a deletion in the upper layer.
func whiteoutAt(t *testing.T, p string) {
	t.Helper()
	if err := unix.Mknod(p, unix.S_IFCHR|0o000, 0); err != nil {
		t.Fatal(err)
	}
}

// movedDirLayer makes target/ and a layer in which the run edited a,
// added c, deleted sub/z and moved dir/ to newdir/ (overlayfs without
// redirect_dir: mv copies and whiteouts dir), as review runs do.
func movedDirLayer(t *testing.T, run string) (*Layer, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("reason: making overlayfs whiteouts (character devices) in the layer needs root")
	}
	target := t.TempDir()
	for p, c := range map[string]string{"a": "a\n", "dir/x": "x\n", "dir/y": "y\n", "sub/z": "z\n", "sub/keep": "k\n"} {
		os.MkdirAll(filepath.Join(target, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(target, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Create(filepath.Join(t.TempDir(), "layers"), Meta{Run: run, Target: target, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	up := l.Upper()
	os.WriteFile(filepath.Join(up, "a"), []byte("a, edited\n"), 0o644)
	os.WriteFile(filepath.Join(up, "c"), []byte("c\n"), 0o644)
	os.MkdirAll(filepath.Join(up, "newdir"), 0o755)
	os.WriteFile(filepath.Join(up, "newdir", "x"), []byte("x\n"), 0o644)
	os.WriteFile(filepath.Join(up, "newdir", "y"), []byte("y\n"), 0o644)
	whiteoutAt(t, filepath.Join(up, "dir"))
	os.MkdirAll(filepath.Join(up, "sub"), 0o755)
	whiteoutAt(t, filepath.Join(up, "sub", "z"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return l, target
}

// TestApplyAllOrNothing: an apply that fails half way through its
// renames (the fault point apply-midway) leaves target/ byte for byte as
// it was, says so in one line, and keeps the layer; the same apply
// without the fault carries everything, a directory the run moved
// included (which an apply path by path failed on, half applied).
func TestApplyAllOrNothing(t *testing.T) {
	l, target := movedDirLayer(t, "r-atomic")
	before := snapshot(t, target)
	cs, err := l.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 5 {
		t.Fatalf("changes %+v: want the edit, the addition, the deletion and the move", cs)
	}
	saved := midway
	t.Cleanup(func() { midway = saved })
	for _, at := range []int{0, len(cs) / 2, len(cs) - 1} {
		midway = func(i, n int) error {
			if i == at {
				return syscall.EIO
			}
			return nil
		}
		res, err := l.Apply(nil, false)
		if err == nil || !strings.Contains(err.Error(), "nothing applied") || !strings.Contains(err.Error(), "target/ is as it was") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("failing at change %d: %v (%+v); want one line saying nothing was applied", at, err, res)
		}
		if got := snapshot(t, target); got != before {
			t.Fatalf("failing at change %d changed target/:\n%s\nwas:\n%s", at, got, before)
		}
	}
	midway = saved
	res, err := l.Apply(nil, false)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if res.Left != 0 || len(res.Applied) != len(cs) {
		t.Errorf("applied %d of %d, %d left", len(res.Applied), len(cs), res.Left)
	}
	for p, want := range map[string]string{"a": "a, edited\n", "c": "c\n", "newdir/x": "x\n", "newdir/y": "y\n", "sub/keep": "k\n"} {
		if b, err := os.ReadFile(filepath.Join(target, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"dir", "sub/z"} {
		if _, err := os.Lstat(filepath.Join(target, p)); err == nil {
			t.Errorf("%s is still in target/", p)
		}
	}
	ents, _ := os.ReadDir(target)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".agentbox-apply") {
			t.Errorf("the staging directory %s was left in target/", e.Name())
		}
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestApplyIndexRefreshed: a run committed (its layer holds a new index,
// objects and ref); the human ran git status in target/, which rewrote
// the index's cached stats. The apply is not blocked: the run's index
// replaces the human's, a note says why, and git sees a clean tree at
// the run's commit. When the human staged a file instead, the index
// stays a conflict, named with the reason, and nothing is applied.
func TestApplyIndexRefreshed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git is not installed")
	}
	for _, human := range []string{"status", "stage"} {
		t.Run(human, func(t *testing.T) {
			target := t.TempDir()
			proj := filepath.Join(target, "proj")
			os.MkdirAll(proj, 0o755)
			gitIn(t, proj, "init", "-q", "-b", "main")
			gitIn(t, proj, "config", "gc.auto", "0")
			os.WriteFile(filepath.Join(proj, "a"), []byte("a\n"), 0o644)
			gitIn(t, proj, "add", "a")
			gitIn(t, proj, "commit", "-qm", "a")
			gitIn(t, proj, "status", "--short") // settle the index's racy stats
			l, err := Create(filepath.Join(t.TempDir(), "layers"), Meta{Run: "r-" + human, Target: target, Started: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if l.Meta.GitIndexes["proj/.git/index"] == "" {
				t.Fatalf("no digest of proj/.git/index at the run's start: %v", l.Meta.GitIndexes)
			}
			// The run: a commit, made in a copy, its changed files put in
			// the layer as the overlay would hold them.
			run := filepath.Join(t.TempDir(), "proj")
			if out, err := exec.Command("cp", "-a", proj, run).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			os.WriteFile(filepath.Join(run, "b"), []byte("b\n"), 0o644)
			gitIn(t, run, "add", "b")
			gitIn(t, run, "commit", "-qm", "b")
			filepath.WalkDir(run, func(p string, d fs.DirEntry, err error) error {
				rel, _ := filepath.Rel(run, p)
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				old, oerr := os.ReadFile(filepath.Join(proj, rel))
				now, _ := os.ReadFile(p)
				if oerr == nil && string(old) == string(now) {
					return nil
				}
				dst := filepath.Join(l.Upper(), "proj", rel)
				os.MkdirAll(filepath.Dir(dst), 0o755)
				fi, _ := d.Info()
				return os.WriteFile(dst, now, fi.Mode().Perm())
			})
			l.Close()
			// The human, after the run started.
			time.Sleep(10 * time.Millisecond) // a later mtime for git's racy check: not a wait for a condition
			os.Chtimes(filepath.Join(proj, "a"), time.Now(), time.Now())
			var st0 unix.Stat_t
			unix.Stat(filepath.Join(proj, ".git", "index"), &st0)
			if human == "status" {
				gitIn(t, proj, "status", "--short")
			} else {
				os.WriteFile(filepath.Join(proj, "h"), []byte("h\n"), 0o644)
				gitIn(t, proj, "add", "h")
			}
			var st1 unix.Stat_t
			unix.Stat(filepath.Join(proj, ".git", "index"), &st1)
			if st1.Ctim.Nano() <= l.Meta.Since {
				t.Fatalf("git %s did not rewrite the index (ctime %d, run started %d)", human, st1.Ctim.Nano(), l.Meta.Since)
			}
			before := snapshot(t, target)
			res, err := l.Apply(nil, false)
			if human == "stage" {
				if err == nil || !strings.Contains(err.Error(), "proj/.git/index (you staged changes since the run started)") {
					t.Fatalf("Apply over a staged index: %v; want a conflict naming it", err)
				}
				if snapshot(t, target) != before {
					t.Fatal("the refused apply changed target/")
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply after git status: %v", err)
			}
			if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "took the run's git index") {
				t.Errorf("notes %q: want one saying the run's index was taken and why", res.Notes)
			}
			if out := gitIn(t, proj, "status", "--porcelain"); out != "" {
				t.Errorf("git status after the apply: %q, want a clean tree", out)
			}
			if out := gitIn(t, proj, "log", "--format=%s"); out != "b\na\n" {
				t.Errorf("git log after the apply: %q", out)
			}
		})
	}
}

// FuzzIndexDigest: any bytes as a git index: an error or a digest, no
// panic.
func FuzzIndexDigest(f *testing.F) {
	if b, err := os.ReadFile("testdata/index-v2"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02" + strings.Repeat("\x00", 62) + "a\x00" + strings.Repeat("\x00", 62) + "\x01b\x00"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01" + strings.Repeat("\x00", 62) + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		indexDigest(b)
	})
}
