package judge

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindGitDir(t *testing.T) {
	d := t.TempDir()
	repo := filepath.Join(d, "repo")
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	os.MkdirAll(filepath.Join(repo, "a", "b"), 0o755)
	if got := findGitDir(filepath.Join(repo, "a", "b"), ""); got != filepath.Join(repo, ".git") {
		t.Errorf("walk up: %q", got)
	}
	wt := filepath.Join(d, "wt")
	os.MkdirAll(filepath.Join(repo, ".git", "worktrees", "wt"), 0o755)
	os.WriteFile(filepath.Join(repo, ".git", "worktrees", "wt", "commondir"), []byte("../..\n"), 0o644)
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt")+"\n"), 0o644)
	if got := findGitDir(wt, ""); got != filepath.Join(repo, ".git") {
		t.Errorf("worktree: %q", got)
	}
	if got := findGitDir(d, "repo/.git"); got != filepath.Join(repo, ".git") {
		t.Errorf("--git-dir: %q", got)
	}
}
