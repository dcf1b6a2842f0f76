package gitsum

import (
	"bytes"
	"compress/zlib"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dirs is a Source over two copies of a tree: before and after.
type dirs struct{ before, after string }

func (d dirs) Read(p string, after bool) ([]byte, bool) {
	root := d.before
	if after {
		root = d.after
	}
	b, err := os.ReadFile(filepath.Join(root, p))
	return b, err == nil
}

// treeDiff lists what differs between two trees, as a layer or a
// checkpoint would.
func treeDiff(t *testing.T, before, after string) []Change {
	t.Helper()
	files := func(root string) map[string]string {
		m := map[string]string{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(root, p)
				m[filepath.ToSlash(rel)] = string(b)
			}
			return nil
		})
		return m
	}
	a, b := files(before), files(after)
	var out []Change
	for p, v := range b {
		if old, ok := a[p]; !ok {
			out = append(out, Change{p, "added"})
		} else if old != v {
			out = append(out, Change{p, "modified"})
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, Change{p, "deleted"})
		}
	}
	return out
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestSummaries: real repositories changed by real git commands; the
// summary names the commits per branch, the index, HEAD, config and
// hooks, and keeps the work tree's files out of it.
func TestSummaries(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git is not installed")
	}
	for _, tc := range []struct {
		name, script string
		want         string
		rest         int
	}{
		{"two commits", "echo b > b; git add b; git commit -qm b; echo c > c; git add c; git commit -qm c", "git (proj): 2 commits on main, index changed", 2},
		{"git status only", "touch a; git status --short", "git (proj): index changed", 0},
		{"new branch", "git checkout -qb topic; echo d > d; git add d; git commit -qm d", "git (proj): 1 commit on topic (new branch), switched to topic, index changed", 1},
		{"hook and config", "printf '#!/bin/sh\\n' > .git/hooks/pre-commit; git config core.fsmonitor x", "git (proj): config changed, hook pre-commit added", 0},
		{"tag", "git tag v1", "git (proj): tag v1 added", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			before, after := filepath.Join(d, "before", "proj"), filepath.Join(d, "after", "proj")
			os.MkdirAll(before, 0o755)
			git(t, before, "init", "-q", "-b", "main")
			os.WriteFile(filepath.Join(before, "a"), []byte("a\n"), 0o644)
			git(t, before, "add", "a")
			git(t, before, "commit", "-qm", "a")
			git(t, before, "config", "gc.auto", "0")
			os.MkdirAll(after, 0o755)
			if out, err := exec.Command("cp", "-a", before+"/.", after).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			cmd := exec.Command("sh", "-c", tc.script)
			cmd.Dir = after
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
				"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.script, err, out)
			}
			cs := treeDiff(t, filepath.Join(d, "before"), filepath.Join(d, "after"))
			rest, sums := Split(cs, dirs{filepath.Join(d, "before"), filepath.Join(d, "after")})
			if len(sums) != 1 {
				t.Fatalf("summaries %+v of %v", sums, cs)
			}
			if got := sums[0].String(); !strings.HasPrefix(got, tc.want+" (") || !strings.HasSuffix(got, "under proj/.git/)") {
				t.Errorf("summary %q, want %q (...)", got, tc.want)
			}
			if len(rest) != tc.rest {
				t.Errorf("rest %v, want %d work tree files", rest, tc.rest)
			}
			for _, c := range rest {
				if strings.Contains(c.Path, ".git/") {
					t.Errorf("rest holds %s", c.Path)
				}
			}
		})
	}
}

// TestGitDirOf: which paths are a repository's internals.
func TestGitDirOf(t *testing.T) {
	for p, want := range map[string]string{
		".git/index":              ".git",
		"proj/.git/objects/ab/cd": "proj/.git",
		"target/p/.git/HEAD":      "target/p/.git",
		".git":                    "",
		"a.git/x":                 "",
		"proj/.gitignore":         "",
		"x/.git":                  "",
	} {
		if got := GitDirOf(p); got != want {
			t.Errorf("GitDirOf(%q) = %q, want %q", p, got, want)
		}
	}
}

// FuzzCommitParents: any bytes as a loose object: no panic, and parents
// only of a commit, each a hex object id.
func FuzzCommitParents(f *testing.F) {
	z := func(s string) []byte {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	f.Add(z("commit 10\x00tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nmsg\nparent x\n"))
	f.Add(z("blob 3\x00abc"))
	f.Add([]byte("not zlib"))
	f.Add(z("commit 0"))
	f.Fuzz(func(t *testing.T, obj []byte) {
		ps, isCommit := commitParents(obj)
		if !isCommit && len(ps) > 0 {
			t.Fatal("parents of a non-commit")
		}
		for _, p := range ps {
			if len(p) != 40 && len(p) != 64 {
				t.Fatalf("parent %q", p)
			}
		}
	})
}
