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
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/policy/command"
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
	finds []string // Finding.What of the file when the snapshot was taken
}

// Finding is one file that makes git run a program and appeared or
// changed during the run.
type Finding struct {
	Path string // the file
	What string // e.g. "config core.fsmonitor", "hook pre-commit", "attributes filter=x", "commondir -> /elsewhere"
}

func (f Finding) String() string { return f.Path + ": " + f.What }

// Scan walks roots (the writable areas) down to MaxDepth levels (a
// repository in the area or one or two levels below it, as the boundary
// finds the ones it carves out) for repositories
// and fingerprints their program-running files. Symbolic links are not
// followed (a link to a repository outside is not the agent's to make
// trusted); node_modules and vendor trees are not entered.
func Scan(roots []string) Snapshot {
	s := Snapshot{}
	budget := maxEntries
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if budget <= 0 {
			return
		}
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil && st.Nlink == 2 && leafCounts {
			// No subdirectory (ext4, xfs, tmpfs count them in the link
			// count): a gitfile is the only repository it can hold.
			if fi, err := os.Lstat(filepath.Join(dir, ".git")); err == nil && fi.Mode().IsRegular() {
				s.add(filepath.Join(dir, ".git"))
			}
			return
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		budget -= len(ents)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Name() == ".git" && e.IsDir():
				s.addGitDir(p, 0)
			case e.Name() == ".git" && e.Type().IsRegular():
				s.add(p) // a gitfile: "gitdir: <where>"
			case e.IsDir() && depth < MaxDepth && e.Name() != "node_modules" && e.Name() != "vendor":
				if isBare(p) {
					s.addGitDir(p, 0)
					continue
				}
				walk(p, depth+1)
			}
		}
	}
	for _, r := range roots {
		if isBare(r) {
			s.addGitDir(r, 0)
		}
		walk(r, 0)
	}
	return s
}

// isBare reports a bare repository (HEAD, config, objects/ and refs/).
func isBare(d string) bool {
	for _, n := range []string{"HEAD", "config", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(d, n)); err != nil {
			return false
		}
	}
	return true
}

// addGitDir records a git directory's program-running files, and those
// of its worktrees and submodules (nested at most a few levels).
func (s Snapshot) addGitDir(g string, nest int) {
	for _, n := range []string{"config", "config.worktree", "commondir", "info/attributes"} {
		s.add(filepath.Join(g, n))
	}
	if ents, err := os.ReadDir(filepath.Join(g, "hooks")); err == nil {
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".sample") {
				s.add(filepath.Join(g, "hooks", e.Name()))
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(g, "worktrees")); err == nil {
		for _, e := range ents {
			wt := filepath.Join(g, "worktrees", e.Name())
			for _, n := range []string{"config.worktree", "commondir", "gitdir"} {
				s.add(filepath.Join(wt, n))
			}
		}
	}
	if nest < 3 {
		filepath.WalkDir(filepath.Join(g, "modules"), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != filepath.Join(g, "modules") && isBare(p) {
				s.addGitDir(p, nest+1)
				return filepath.SkipDir
			}
			return nil
		})
	}
	// Files the config includes (include.path, includeIf.*.path).
	for _, inc := range includes(filepath.Join(g, "config")) {
		s.add(inc)
	}
}

// add fingerprints one file, if it is there (a symlink by its target
// text: git follows it).
func (s Snapshot) add(p string) {
	st, err := os.Lstat(p)
	if err != nil {
		return
	}
	h := sha256.New()
	fmt.Fprintf(h, "%v\n", st.Mode())
	switch {
	case st.Mode()&os.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		h.Write([]byte(t))
	case st.Mode().IsRegular():
		if f, err := os.Open(p); err == nil {
			io.Copy(h, io.LimitReader(f, maxFile))
			f.Close()
		}
	}
	st2 := fileState{fp: hex.EncodeToString(h.Sum(nil))}
	for _, f := range examine(p) {
		st2.finds = append(st2.finds, f.What)
	}
	s[p] = st2
}

// includes lists the files a config's include.path and includeIf.*.path
// name (relative ones against the config's directory).
func includes(config string) []string {
	entries := parse(config)
	var out []string
	for _, e := range entries {
		k := strings.ToLower(e.Key)
		if (k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path")) && e.Value != "" {
			p := e.Value
			if strings.HasPrefix(p, "~/") {
				continue // the human's HOME, not the sandbox's to write
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(config), p)
			}
			out = append(out, p)
		}
	}
	return out
}

func parse(path string) []command.GitConfigEntry {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > maxFile {
		return nil
	}
	entries, _ := command.ParseGitConfig(data, path)
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
				out = append(out, Finding{p, w})
			}
		}
	}
	return out
}

// examine says what in one file would make git run a program.
func examine(p string) []Finding {
	st, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	base, dir := filepath.Base(p), filepath.Base(filepath.Dir(p))
	switch {
	case dir == "hooks":
		return []Finding{{p, "hook " + base + " (git runs it)"}}
	case base == "commondir" || base == "gitdir" || base == ".git":
		data, _ := os.ReadFile(p)
		target := strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir:"))
		return []Finding{{p, base + " -> " + target + " (git reads that directory's config and hooks)"}}
	case base == "attributes":
		var out []Finding
		sc := bufio.NewScanner(io.LimitReader(openOrEmpty(p), maxFile))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			for _, f := range strings.Fields(line) {
				for _, drv := range []string{"filter=", "diff=", "merge="} {
					if strings.HasPrefix(f, drv) {
						out = append(out, Finding{p, "attributes " + f + " (a driver git runs)"})
					}
				}
			}
		}
		return out
	case st.Mode()&os.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return []Finding{{p, "symbolic link to " + t + " (git reads it as " + base + ")"}}
	}
	var out []Finding
	for _, e := range parse(p) {
		k := strings.ToLower(e.Key)
		switch {
		case k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path"):
			out = append(out, Finding{p, "config " + e.Key + " = " + e.Value + " (git reads that file as config)"})
		case command.GitKeyRunsPrograms(e.Key) != "":
			out = append(out, Finding{p, "config " + e.Key + " = " + e.Value + " (" + command.GitKeyRunsPrograms(e.Key) + ")"})
		}
	}
	return out
}

func openOrEmpty(p string) io.Reader {
	data, err := os.ReadFile(p)
	if err != nil {
		return bytes.NewReader(nil)
	}
	return bytes.NewReader(data)
}

// QuarantineSuffix is appended to a file Quarantine moves aside.
const QuarantineSuffix = ".agentbox-quarantine"

// Quarantine neutralises the program-running git file at path by moving
// it aside (PATH.agentbox-quarantine): git no longer runs the hook, reads
// the config, attributes or redirect, and the human can review it and
// move it back. A path that holds nothing git would run is refused, so
// an ordinary file is never moved.
func Quarantine(path string) (string, error) {
	fs := examine(path)
	if len(fs) == 0 {
		return "", fmt.Errorf("%s: nothing in it makes git run a program; not moved", path)
	}
	dst := path + QuarantineSuffix
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("%s: %s already exists; not moved", path, dst)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", err
	}
	return dst, nil
}
