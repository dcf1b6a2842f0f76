package boundary

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Carve-outs: what Landlock can and cannot enforce
//
// A Landlock rule on a directory grants its rights to the whole hierarchy
// beneath it, and rights from several rules add up; nothing can be denied
// below a granted directory. To take rights R away from a path P inside an
// area granted A, carve therefore:
//
//   - grants A−R (not A) on every directory from the area root down to P's
//     parent ("the ancestors"),
//   - grants A to every other entry of those directories that exists at
//     launch (sibling subdirectories get A for their whole subtree; existing
//     regular files get A's file rights: read, write, truncate, execute),
//   - grants A−R on P itself.
//
// What holds: below P, no operation in R is possible. What it costs: entries
// created during the run directly inside an ancestor directory only get A−R.
//
// For a plain read-only carve-out (R = everything except reading) that means
// no file or directory can be created, deleted or renamed directly in the
// ancestors, though existing files there stay writable.
//
// Git is special. Committing needs make_reg, remove_file, write_file and
// truncate on the .git directory itself (git creates index.lock, HEAD.lock,
// config.lock next to the files it replaces and renames them over). Those
// rights, granted on .git, also reach .git/hooks/* and let .git/config be
// replaced by a rename. So Landlock cannot keep .git/hooks or .git/config
// read-only while git may write the repository. Taking away only EXECUTE
// below .git would need every ancestor up to the area root to lose it too,
// which makes anything built during the run at the top of target/ (./app,
// node_modules/.bin after npm install) non-executable — and it would only
// stop hooks from running inside the sandbox, where the exec policy sees
// them anyway. The danger is a planted hook or core.hooksPath/fsmonitor
// running later, outside, when a human uses the repository.
//
// So a read-only glob that matches a path strictly inside a .git directory
// (the built-in DefaultReadOnly, and roles' "target/**/.git/hooks") is not
// turned into Landlock rules: the path is put on Plan.Watch and a Note says
// so; internal/gitleft compares every repository's program-running files
// (these, and submodule configs, attributes, redirects, includes) before
// the run and after its last process is gone, and the run reports a
// "violation" audit event and a warning line for each. A glob that matches the
// .git directory itself ("target/**/.git") is enforced like any other
// carve-out: the repository becomes read-only and commits fail.

// walkLimit bounds the carve-out search per area so a launch stays fast.
const walkMaxDepth = 6

// gitWalkMaxDepth bounds the search for repositories whose .git paths are
// watched: a .git directly in the area, or one or two levels below it
// (target/proj/.git, target/group/proj/.git). Deeper repositories are not
// watched; a launch reads a few directories whatever the workspace holds.
const gitWalkMaxDepth = 2

// walkBudget is the most directory entries carve reads per area (a var so
// tests can lower it).
var walkBudget = 100000

// carve compiles one area grant (root with rights) into rules, honouring
// the read-only globs (workspace-relative) that match inside root.
func carve(w, root string, rights Rights, globs []string, area string) (rules []Rule, notes, watch []string, err error) {
	rel, err := filepath.Rel(w, root)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("area %s: %w", root, err)
	}
	removed := map[string]Rights{} // carve-out path -> rights taken away
	var relevant []string
	for _, g := range globs {
		if couldMatchUnder(g, rel) {
			relevant = append(relevant, g)
		}
	}
	if len(relevant) > 0 {
		matches, err := findMatches(root, rel, relevant)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, m := range matches {
			if g := gitDirOf(root, m); g != "" && g != m {
				watch = append(watch, m)
				r, _ := filepath.Rel(w, m)
				notes = append(notes, fmt.Sprintf("%s: watched, not enforced (Landlock cannot keep it read-only while git may write the repository); a change is reported when the run ends", r))
				continue
			}
			removed[m] |= rights &^ RightsRead
		}
	}
	for p, r := range removed {
		if r&rights == 0 {
			delete(removed, p)
		}
	}
	if len(removed) == 0 {
		return []Rule{ruleFor(root, rights, "area "+area)}, notes, watch, nil
	}
	var build func(dir string)
	build = func(dir string) {
		var below Rights
		for p, r := range removed {
			if within(dir, p) {
				below |= r
			}
		}
		if below == 0 {
			rules = append(rules, ruleFor(dir, rights, "area "+area))
			return
		}
		if _, isCarve := removed[dir]; isCarve {
			rules = append(rules, ruleFor(dir, rights&^below, "carve-out in "+area))
			return
		}
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			rules = append(rules, ruleFor(dir, rights&^below, "carve-out in "+area))
			return
		}
		rules = append(rules, Rule{Path: dir, Rights: rights &^ below, Dir: true, Why: "ancestor of a carve-out in " + area})
		ents, err := os.ReadDir(dir)
		if err != nil {
			return // the ancestor rule alone is the stricter outcome
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
				// Never hand a symlink to Landlock (it would grant its target).
			case e.IsDir():
				build(p)
			case e.Type().IsRegular():
				if r, ok := removed[p]; ok {
					rules = append(rules, Rule{Path: p, Rights: (rights &^ r) & fileRights, Why: "carve-out in " + area})
				} else {
					rules = append(rules, Rule{Path: p, Rights: rights & fileRights, Why: "file beside a carve-out in " + area})
				}
			}
		}
	}
	build(root)
	return rules, notes, watch, nil
}

// gitDirOf returns the .git directory containing m (or m itself), if any,
// inside root.
func gitDirOf(root, m string) string {
	rel, err := filepath.Rel(root, m)
	if err != nil {
		return ""
	}
	parts := strings.Split(rel, "/")
	for i, s := range parts {
		if s == ".git" {
			return filepath.Join(root, filepath.Join(parts[:i+1]...))
		}
	}
	return ""
}

// findMatches walks root (rootRel: its workspace-relative path; symlinks
// not followed) and returns the paths
// whose workspace-relative name matches one of globs. It does not descend
// into node_modules nor below the immediate children of .git directories.
//
// When every glob points inside a .git directory (the watched git paths),
// the walk also stops at the first repository on each branch: below a
// directory holding .git it only looks into that .git, and it looks for
// repositories at most gitWalkMaxDepth levels down, so a launch costs a few
// directory reads, not a tree walk, however big the workspace. (Repositories
// nested inside another repository's work tree, or deeper, are then not
// watched.)
// Running out of budget is an error only for enforced globs; watched globs
// just stop searching.
func findMatches(root, rootRel string, globs []string) ([]string, error) {
	gitOnly := true
	for _, g := range globs {
		if !strings.Contains(g, "/.git/") {
			gitOnly = false
		}
	}
	split := make([][]string, len(globs))
	for i, g := range globs {
		split[i] = strings.Split(g, "/")
	}
	// segs is the workspace-relative path of the entry being looked at, as
	// segments; the walk pushes and pops names on it instead of building
	// and splitting a path string per entry.
	segs := strings.Split(rootRel, "/")
	if gitOnly && gitWalkDirect {
		return findGitMatches(root, segs, split)
	}
	var out []string
	count := 0
	errBudget := fmt.Errorf("searching read-only carve-outs: more than %d entries under %s; narrow the role's readonly globs", walkBudget, root)
	var walk func(dir string, depth int, inGit bool) error
	walk = func(dir string, depth int, inGit bool) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("searching read-only carve-outs in %s: %w", dir, unwrapPath(err))
		}
		repoRoot := false
		if gitOnly && !inGit {
			for _, e := range ents {
				if e.Name() == ".git" && e.IsDir() && e.Type()&os.ModeSymlink == 0 {
					repoRoot = true
				}
			}
		}
		n := len(segs)
		for _, e := range ents {
			count++
			if count > walkBudget {
				return errBudget
			}
			segs = append(segs[:n], e.Name())
			for _, g := range split {
				if matchSegs(g, segs) {
					out = append(out, filepath.Join(dir, e.Name()))
					break
				}
			}
			maxDepth := walkMaxDepth
			if gitOnly && e.Name() != ".git" {
				maxDepth = gitWalkMaxDepth
			}
			descend := e.IsDir() && e.Type()&os.ModeSymlink == 0 && !inGit && depth < maxDepth && e.Name() != "node_modules"
			if descend && repoRoot && e.Name() != ".git" {
				descend = false
			}
			if descend {
				if err := walk(filepath.Join(dir, e.Name()), depth+1, e.Name() == ".git"); err != nil {
					return err
				}
			}
		}
		segs = segs[:n]
		return nil
	}
	if err := walk(root, 0, false); err != nil {
		if err == errBudget && gitOnly {
			sort.Strings(out)
			return out, nil
		}
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// gitWalkDirect selects findGitMatches for globs that point inside .git
// directories (false: the general walk, which the tests compare it with).
var gitWalkDirect = true

// findGitMatches is findMatches for globs that all point inside a .git
// directory, with the same result as the general walk (the repositories at
// most gitWalkMaxDepth levels below root, not below another repository's
// work tree nor in node_modules, symbolic links not followed) at the cost of
// a few system calls per repository instead of a listing of every
// directory on the way:
//
//   - a directory's .git is looked up, not found in a listing; where it is
//     a directory, only it is listed (its entries are what can match);
//   - a directory is listed only to find subdirectories to descend into,
//     so none is listed at the deepest level, and none whose link count
//     says it has no subdirectory (isLeafDir: a source directory of
//     hundreds of files costs one lstat).
//
// Like the general walk in this mode, it stops quietly at walkBudget
// entries and fails on a directory it cannot read.
func findGitMatches(root string, segs []string, split [][]string) ([]string, error) {
	var out []string
	count := 0
	dev, leafOK := leafFS(root)
	errBudget := errors.New("budget")
	readDir := func(dir string) ([]os.DirEntry, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("searching read-only carve-outs in %s: %w", dir, unwrapPath(err))
		}
		return ents, nil
	}
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		n := len(segs)
		defer func() { segs = segs[:n] }()
		git := filepath.Join(dir, ".git")
		fi, err := os.Lstat(git)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("searching read-only carve-outs in %s: %w", dir, unwrapPath(err))
		}
		if err == nil && fi.IsDir() {
			ents, err := readDir(git)
			if err != nil {
				return err
			}
			segs = append(segs, ".git")
			for _, e := range ents {
				if count++; count > walkBudget {
					return errBudget
				}
				segs = append(segs[:n+1], e.Name())
				for _, g := range split {
					if matchSegs(g, segs) {
						out = append(out, filepath.Join(git, e.Name()))
						break
					}
				}
			}
			return nil
		}
		if depth >= gitWalkMaxDepth {
			return nil
		}
		ents, err := readDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if count++; count > walkBudget {
				return errBudget
			}
			if !e.IsDir() || e.Name() == "node_modules" || e.Name() == ".git" {
				continue // (a .git here is not a directory: no repository)
			}
			sub := filepath.Join(dir, e.Name())
			if depth+1 < gitWalkMaxDepth && leafOK && isLeafDir(sub, dev) {
				continue
			}
			segs = append(segs[:n], e.Name())
			if err := walk(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil && err != errBudget {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// couldMatchUnder reports whether glob could match a path inside the
// workspace-relative directory rel (or rel itself).
func couldMatchUnder(glob, rel string) bool {
	gs := strings.Split(glob, "/")
	rs := strings.Split(rel, "/")
	for i, r := range rs {
		if i >= len(gs) {
			return false
		}
		if gs[i] == "**" {
			return true
		}
		if ok, _ := filepath.Match(gs[i], r); !ok {
			return false
		}
	}
	return true
}

// MatchGlob matches a workspace-relative slash path against a gitignore-style
// glob: "*", "?" and "[...]" within one segment, "**" for any number of
// segments (including none).
func MatchGlob(glob, path string) bool {
	return matchSegs(strings.Split(glob, "/"), strings.Split(path, "/"))
}

func matchSegs(g, p []string) bool {
	// A glob without "**" matches only paths of its own length, and its
	// last segment must match the path's: checked first, it rules out
	// nearly every entry of a walk without trying the prefixes.
	if len(g) > 0 && len(p) > 0 && g[len(g)-1] != "**" && !matchSeg(g[len(g)-1], p[len(p)-1]) {
		return false
	}
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if matchSegs(g[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if !matchSeg(g[0], p[0]) {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// matchSeg matches one path segment against one glob segment; a segment
// without wildcards is compared as a string.
func matchSeg(g, p string) bool {
	if !strings.ContainsAny(g, `*?[\`) {
		return g == p
	}
	ok, _ := filepath.Match(g, p)
	return ok
}
