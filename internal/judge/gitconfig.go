package judge

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
)

// This file reads what git's configuration and environment make a git run
// do, so the exec policy can decide `git p` by what alias p really runs.
//
// Why parse the config here instead of running `git config --get` outside
// the sandbox: the files are written by the sandboxed agent (.git/config,
// ~/.gitconfig in its own area, files named by include.path). Running git on
// them as the supervisor means running a large parser with the supervisor's
// privileges on hostile input, reading include targets anywhere on the host,
// and copying the tracee's environment (HOME, GIT_CONFIG_*) into it. The
// parser below is small, reads only files under the roots the caller allows,
// and is conservative: every include (also conditional includeIf) is
// followed and every value of alias.<name> is decided, the strictest wins.
//
// It is not the enforcement point: git runs an alias that expands to a
// builtin as a new `git <expansion>` process and a `!` alias through a
// shell, and each of those is an exec the supervisor decides race-free from
// its own argv. Resolving the alias at the first exec gives the early,
// explained deny ("alias p runs git push") and closes nothing that the
// second exec would leave open.

// gitConfigLoader collects config entries from files, following includes
// only into allowed roots.
type gitConfigLoader struct {
	roots   []string // absolute directories include targets must be under
	home    string
	entries []command.GitConfigEntry
	notes   []string // files skipped or unreadable, for explanations
	seen    map[string]bool
}

func (l *gitConfigLoader) allowed(p string) bool {
	for _, r := range l.roots {
		if r != "" && (p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/")) {
			return true
		}
	}
	return false
}

// loadFile reads one config file and its includes (depth-limited). Files
// outside the allowed roots are skipped (noted) unless top is set (the
// system and global files git itself always reads).
func (l *gitConfigLoader) loadFile(path string, top bool, depth int) {
	if depth > 10 || path == "" {
		return
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if l.seen[path] {
		return
	}
	if !top && !l.allowed(path) {
		l.notes = append(l.notes, "include outside the workspace not read: "+path)
		return
	}
	l.seen[path] = true
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	data := make([]byte, min(st.Size(), command.MaxGitConfigSize))
	n, _ := f.Read(data)
	entries, perr := command.ParseGitConfig(data[:n], path)
	if perr != nil {
		l.notes = append(l.notes, perr.Error())
	}
	for _, e := range entries {
		l.entries = append(l.entries, e)
		if e.Key == "include.path" || (strings.HasPrefix(e.Key, "includeif.") && strings.HasSuffix(e.Key, ".path")) {
			inc := e.Value
			if strings.HasPrefix(inc, "~/") && l.home != "" {
				inc = filepath.Join(l.home, inc[2:])
			} else if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			l.loadFile(inc, false, depth+1)
		}
	}
}

// findGitDir finds the git directory for a run in dir: GIT_DIR/--git-dir
// when given, else the nearest .git (directory or "gitdir:" file) or bare
// repository going up from dir. It returns the directory whose "config"
// file is the repository config (the common dir for worktrees), or "".
func findGitDir(dir, gitDirOpt string) string {
	if gitDirOpt != "" {
		if !filepath.IsAbs(gitDirOpt) {
			gitDirOpt = filepath.Join(dir, gitDirOpt)
		}
		return commonDir(gitDirOpt)
	}
	for d := dir; ; {
		dotgit := filepath.Join(d, ".git")
		if st, err := os.Stat(dotgit); err == nil {
			if st.IsDir() {
				return commonDir(dotgit)
			}
			if b, err := os.ReadFile(dotgit); err == nil {
				if g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
					g = strings.TrimSpace(g)
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					return commonDir(g)
				}
			}
		}
		if isBareRepo(d) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func isBareRepo(d string) bool {
	for _, f := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			return false
		}
	}
	return true
}

// commonDir follows a worktree's "commondir" file.
func commonDir(gitDir string) string {
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		return filepath.Clean(c)
	}
	return gitDir
}
