// Package gitleft finds what a run leaves behind for the human's git: in
// every repository under the sandbox-writable areas, the files that make
// git run a program — a repository's config (and the files its includes
// name), worktree and submodule configs (.git/modules/**), hooks,
// info/attributes (filter, diff and merge drivers), and the commondir and
// gitdir redirects that make git read another directory's config. Landlock
// cannot keep these read-only while git may commit (internal/boundary,
// carve.go), and the agent may create new repositories, so a run takes a
// Snapshot before the command starts and compares it with one taken after
// every process of the run is gone: each file that appeared or changed and
// would make git run something is a Finding, reported before the human can
// trip over it, and Quarantine neutralises it.
package gitleft

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/command"
)

// Bounds of a scan: how deep below an area root repositories are looked
// for, how many directory entries are read in all, and how much of a file
// is read.
const (
	MaxDepth   = 2
	maxEntries = 50000
	maxFile    = command.MaxGitConfigSize
)

// leafCounts says that a directory's link count is 2 exactly when it has
// no subdirectory (true on the Linux file systems agentbox runs on; a
// file system that reports 1, such as btrfs, is simply listed).
const leafCounts = true

// Snapshot maps each program-running git file found to a fingerprint of
// its content and mode, and what in it made git run programs then.
type Snapshot map[string]fileState

type fileState struct {
	fp    string
	area  string   // the root it was found under
	finds []string // Finding.What of the file when the snapshot was taken
}

// Finding is one file that makes git run a program and appeared or
// changed during the run.
type Finding struct {
	Path string // the file (or the symbolic link)
	What string // e.g. "config core.fsmonitor", "hook pre-commit", "attributes filter=x", "commondir -> /elsewhere"
	Area string // the writable area (scan root) it was found under
}

func (f Finding) String() string { return f.Path + ": " + f.What }

// gitDirLinks are the entries of a git directory git reads programs,
// config or other repositories through: a symbolic link at one of them
// makes git run what lies wherever it points, so the link is a finding of
// its own and is never followed.
var gitDirLinks = []string{"hooks", "info", "modules", "worktrees", "config", "config.worktree", "commondir"}

// Scan walks roots (the writable areas) down to MaxDepth levels (a
// repository in the area or one or two levels below it, as the boundary
// finds the ones it carves out) for repositories and fingerprints their
// program-running files. Nothing is reached through a symbolic link: each
// path is resolved by the kernel beneath its root with no link followed
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so a link to a directory
// outside is never read as if its files were the area's. A link where git
// would follow one (.git, .git/hooks, info, modules, worktrees, config,
// commondir, a hook) is fingerprinted by its text and reported itself. A
// root below another root (a repository git init made in target/) is
// resolved through the outer one; a root whose own path passes through a
// link is reported as that link. node_modules and vendor trees are not
// entered.
func Scan(roots []string) Snapshot {
	s := Snapshot{}
	budget := maxEntries
	var clean []string
	for _, r := range roots {
		if filepath.IsAbs(r) {
			clean = append(clean, filepath.Clean(r))
		}
	}
	sort.Strings(clean) // an outer root sorts before the roots below it
	var open []*area
	defer func() {
		for _, a := range open {
			a.close()
		}
	}()
	for _, r := range clean {
		var a *area
		rel := "."
		for _, o := range open {
			if within(o.root, r) {
				a, rel = o, strings.TrimPrefix(strings.TrimPrefix(r, o.root), "/")
				break
			}
		}
		if a == nil {
			na, err := openArea(r)
			if err != nil {
				s.addOuterLink(r) // if a link on the way is why
				continue
			}
			open = append(open, na)
			a = na
		} else if st, err := a.lstat(rel); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			s.add(a, rel) // a repository the run made is itself a link
			continue
		} else if err != nil {
			s.addOuterLink(r)
			continue
		}
		s.walkRoot(a, rel, &budget)
	}
	return s
}

// addOuterLink records the first symbolic link on root's path: the scan
// does not follow it, and the human's git would.
func (s Snapshot) addOuterLink(root string) {
	link, target := firstLink(root)
	if link == "" {
		return
	}
	h := sha256.Sum256([]byte("link\n" + target))
	s[link] = fileState{fp: hex.EncodeToString(h[:]), area: filepath.Dir(link),
		finds: []string{"symbolic link to " + target + " on the way to " + root + ", not followed: git there would read whatever it points to"}}
}

// walkRoot looks for repositories in directory rel of a and below.
func (s Snapshot) walkRoot(a *area, rel string, budget *int) {
	if isBare(a, rel) {
		s.addGitDir(a, rel, 0)
	}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if *budget <= 0 {
			return
		}
		if st, err := a.lstat(dir); err == nil && st.Nlink == 2 && leafCounts {
			// No subdirectory (ext4, xfs, tmpfs count them in the link
			// count): a gitfile or a link is the only repository it can hold.
			if st, err := a.lstat(filepath.Join(dir, ".git")); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				s.add(a, filepath.Join(dir, ".git"))
			}
			return
		}
		ents, err := a.readDir(dir)
		if err != nil {
			return
		}
		*budget -= len(ents)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Name() == ".git" && e.IsDir():
				s.addGitDir(a, p, 0)
			case e.Name() == ".git" && (e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0):
				s.add(a, p) // a gitfile ("gitdir: <where>"), or a link git follows
			case e.IsDir() && depth < MaxDepth && e.Name() != "node_modules" && e.Name() != "vendor":
				if isBare(a, p) {
					s.addGitDir(a, p, 0)
					continue
				}
				walk(p, depth+1)
			}
		}
	}
	walk(rel, 0)
}

// isBare reports a bare repository (HEAD, config, objects/ and refs/).
func isBare(a *area, d string) bool {
	for _, n := range []string{"HEAD", "config", "objects", "refs"} {
		if !a.exists(filepath.Join(d, n)) {
			return false
		}
	}
	return true
}

// isLink reports whether rel is a symbolic link.
func isLink(a *area, rel string) bool {
	st, err := a.lstat(rel)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// addGitDir records a git directory's program-running files, and those
// of its worktrees and submodules (nested at most a few levels). A link
// among them is recorded as the link, and nothing is read through it.
func (s Snapshot) addGitDir(a *area, g string, nest int) {
	for _, n := range gitDirLinks {
		if isLink(a, filepath.Join(g, n)) {
			s.add(a, filepath.Join(g, n))
		}
	}
	for _, n := range []string{"config", "config.worktree", "commondir", "info/attributes"} {
		s.add(a, filepath.Join(g, n))
	}
	if ents, err := a.readDir(filepath.Join(g, "hooks")); err == nil {
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".sample") {
				s.add(a, filepath.Join(g, "hooks", e.Name()))
			}
		}
	}
	if ents, err := a.readDir(filepath.Join(g, "worktrees")); err == nil {
		for _, e := range ents {
			wt := filepath.Join(g, "worktrees", e.Name())
			if e.Type()&os.ModeSymlink != 0 {
				s.add(a, wt)
				continue
			}
			for _, n := range []string{"config.worktree", "commondir", "gitdir"} {
				s.add(a, filepath.Join(wt, n))
			}
		}
	}
	if nest < 3 {
		var walk func(d string, depth int)
		walk = func(d string, depth int) {
			ents, err := a.readDir(d)
			if err != nil || depth > 8 {
				return
			}
			for _, e := range ents {
				p := filepath.Join(d, e.Name())
				switch {
				case e.Type()&os.ModeSymlink != 0:
					s.add(a, p) // git would take it as a submodule's git dir
				case !e.IsDir():
				case isBare(a, p):
					s.addGitDir(a, p, nest+1)
				default:
					walk(p, depth+1)
				}
			}
		}
		walk(filepath.Join(g, "modules"), 0)
	}
	// Files the config includes (include.path, includeIf.*.path), when
	// they lie in the area: one outside is not read (the include itself
	// is the finding).
	for _, inc := range includes(a, filepath.Join(g, "config")) {
		if !within(a.root, inc) || inc == a.root {
			continue
		}
		s.add(a, strings.TrimPrefix(strings.TrimPrefix(inc, a.root), "/"))
	}
}

// add fingerprints one file, if it is there (a symlink by its target
// text: git follows it, the scan does not).
func (s Snapshot) add(a *area, rel string) {
	st, err := a.lstat(rel)
	if err != nil {
		return
	}
	h := sha256.New()
	fmt.Fprintf(h, "%o\n", st.Mode)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		t, _ := a.readlink(rel)
		h.Write([]byte(t))
	case unix.S_IFREG:
		data, _ := a.readFile(rel, maxFile)
		h.Write(data)
	}
	st2 := fileState{fp: hex.EncodeToString(h.Sum(nil)), area: a.top}
	for _, f := range examine(a, rel) {
		st2.finds = append(st2.finds, f.What)
	}
	s[a.abs(rel)] = st2
}

// includes lists the files a config's include.path and includeIf.*.path
// name, as clean absolute paths (relative ones against the config's
// directory).
func includes(a *area, config string) []string {
	entries := parse(a, config)
	var out []string
	for _, e := range entries {
		k := strings.ToLower(e.Key)
		if (k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path")) && e.Value != "" {
			p := e.Value
			if strings.HasPrefix(p, "~/") {
				continue // the human's HOME, not the sandbox's to write
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(a.abs(config)), p)
			}
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

func parse(a *area, rel string) []command.GitConfigEntry {
	data, err := a.readFile(rel, maxFile)
	if err != nil {
		return nil
	}
	entries, _ := command.ParseGitConfig(data, a.abs(rel))
	return entries
}

// Compare returns what after holds that before did not, or held
// differently, and would make git run a program, by path.
func Compare(before, after Snapshot) []Finding {
	var paths []string
	for p, st := range after {
		if before[p].fp != st.fp {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []Finding
	for _, p := range paths {
		had := before[p].finds
		for _, w := range after[p].finds {
			if !slices.Contains(had, w) { // what was there before is the owner's
				out = append(out, Finding{Path: p, What: w, Area: after[p].area})
			}
		}
	}
	return out
}

// examine says what in one file (rel, in a) would make git run a program.
// A symbolic link is described by where it points, never followed.
func examine(a *area, rel string) []Finding {
	st, err := a.lstat(rel)
	if err != nil {
		return nil
	}
	p := a.abs(rel)
	base, dir := filepath.Base(p), filepath.Base(filepath.Dir(p))
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		t, _ := a.readlink(rel)
		what := "symbolic link to " + t
		if dir == "hooks" {
			what = "hook " + base + " (git runs it), a " + what
		}
		if linkOutside(a.top, p, t) {
			return []Finding{{Path: p, What: what + ", outside " + a.top + ": git would run programs from there"}}
		}
		if dir == "hooks" {
			return []Finding{{Path: p, What: what}}
		}
		return []Finding{{Path: p, What: what + " (git reads it as " + base + ")"}}
	}
	switch {
	case dir == "hooks":
		return []Finding{{Path: p, What: "hook " + base + " (git runs it)"}}
	case base == "commondir" || base == "gitdir" || base == ".git":
		data, _ := a.readFile(rel, maxFile)
		target := strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir:"))
		return []Finding{{Path: p, What: base + " -> " + target + " (git reads that directory's config and hooks)"}}
	case base == "attributes":
		var out []Finding
		data, _ := a.readFile(rel, maxFile)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			for _, f := range strings.Fields(sc.Text()) {
				for _, drv := range []string{"filter=", "diff=", "merge="} {
					if strings.HasPrefix(f, drv) {
						out = append(out, Finding{Path: p, What: "attributes " + f + " (a driver git runs)"})
					}
				}
			}
		}
		return out
	}
	var out []Finding
	for _, e := range parse(a, rel) {
		k := strings.ToLower(e.Key)
		switch {
		case k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path"):
			out = append(out, Finding{Path: p, What: "config " + e.Key + " = " + e.Value + " (git reads that file as config)"})
		case command.GitKeyRunsPrograms(e.Key) != "":
			out = append(out, Finding{Path: p, What: "config " + e.Key + " = " + e.Value + " (" + command.GitKeyRunsPrograms(e.Key) + ")"})
		}
	}
	return out
}
