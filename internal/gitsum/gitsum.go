// Package gitsum summarises what changed inside git repositories' .git
// directories in one line per repository ("git: 2 commits on main, index
// changed"), so that a list of changed paths shows the work (the files a
// commit changed) instead of every object file the commit wrote. The
// review commands (diff --stat, apply) and `agentbox changes` list the
// summary in place of the .git paths unless --git-internals.
//
// Nothing here runs git: the repositories are the agent's, and git would
// run what their config and hooks name. Refs and HEAD are read as files,
// commits as loose objects (zlib); what is packed is only counted.
package gitsum

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Change is one changed path (slash-separated, relative to whatever the
// caller lists: "proj/.git/index" or "target/proj/.git/index") and its
// kind: added, modified, deleted, renamed or mode.
type Change struct {
	Path string
	Kind string
}

// Source reads a file as it was before the changes (after false) or is
// after them; ok false when it was no regular file then. Reads are the
// caller's to bound (ReadLimit bytes are enough for every use here).
type Source interface {
	Read(p string, after bool) (data []byte, ok bool)
}

// ReadLimit is the most Summarize needs of one file: refs and HEAD are a
// line, a loose commit object's header and parents are in its first KiBs.
const ReadLimit = 256 << 10

// Summary is one repository's .git changes.
type Summary struct {
	// Repo is the repository's work tree ("" for the listing's root, else
	// "proj"), GitDir its .git directory ("proj/.git").
	Repo, GitDir string
	// Line is what changed, for a reader: "2 commits on main, index
	// changed".
	Line string
	// Paths are the .git paths it stands for.
	Paths []string
}

// String is the summary as a list shows it: "git (proj): 2 commits on
// main, index changed (14 files under proj/.git)".
func (s Summary) String() string {
	where := ""
	if s.Repo != "" {
		where = " (" + s.Repo + ")"
	}
	return fmt.Sprintf("git%s: %s (%d %s under %s/)", where, s.Line, len(s.Paths), plural(len(s.Paths), "file", "files"), s.GitDir)
}

// Listed is the summary as a list of changes shows it, after a "git"
// kind column: "proj/.git: 2 commits on main, index changed (14 files)".
func (s Summary) Listed() string {
	return fmt.Sprintf("%s: %s (%d %s)", s.GitDir, s.Line, len(s.Paths), plural(len(s.Paths), "file", "files"))
}

// GitDirOf returns the .git directory p is in ("proj/.git"), or "" when
// p is no repository's internal file.
func GitDirOf(p string) string {
	parts := strings.Split(p, "/")
	for i, e := range parts {
		if e == ".git" && i < len(parts)-1 {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}

// Split separates the changes inside .git directories from the others:
// rest keeps its order, one Summary per .git directory, sorted.
func Split(cs []Change, src Source) (rest []Change, sums []Summary) {
	byDir := map[string][]Change{}
	for _, c := range cs {
		if d := GitDirOf(c.Path); d != "" {
			byDir[d] = append(byDir[d], c)
			continue
		}
		rest = append(rest, c)
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		sums = append(sums, summarize(d, byDir[d], src))
	}
	return rest, sums
}

// summarize is one .git directory's summary.
func summarize(dir string, cs []Change, src Source) Summary {
	s := Summary{GitDir: dir, Repo: strings.TrimSuffix(strings.TrimSuffix(dir, ".git"), "/")}
	added := map[string]bool{} // object ids the changes added as loose objects
	kinds := map[string]string{}
	for _, c := range cs {
		s.Paths = append(s.Paths, c.Path)
		rel := strings.TrimPrefix(c.Path, dir+"/")
		kinds[rel] = c.Kind
		if id, ok := looseObject(rel); ok && c.Kind != "deleted" {
			added[id] = true
		}
	}
	var parts []string
	var refs []string
	for rel := range kinds {
		if strings.HasPrefix(rel, "refs/heads/") || strings.HasPrefix(rel, "refs/tags/") {
			refs = append(refs, rel)
		}
	}
	sort.Strings(refs)
	objectsUsed := 0
	for _, rel := range refs {
		kind := kinds[rel]
		if name, ok := strings.CutPrefix(rel, "refs/tags/"); ok {
			parts = append(parts, fmt.Sprintf("tag %s %s", name, kind))
			continue
		}
		name := strings.TrimPrefix(rel, "refs/heads/")
		if kind == "deleted" {
			parts = append(parts, "branch "+name+" deleted")
			continue
		}
		tip, _ := src.Read(dir+"/"+rel, true)
		n, complete := countNew(dir, strings.TrimSpace(string(tip)), added, src)
		objectsUsed += n
		switch {
		case n == 0 && kind == "added":
			parts = append(parts, "branch "+name+" created")
		case n == 0:
			parts = append(parts, name+" moved")
		default:
			more := ""
			if !complete {
				more = "+"
			}
			what := fmt.Sprintf("%d%s %s on %s", n, more, plural(n, "commit", "commits"), name)
			if kind == "added" {
				what += " (new branch)"
			}
			parts = append(parts, what)
		}
	}
	if kinds["HEAD"] == "modified" || kinds["HEAD"] == "added" {
		head, _ := src.Read(dir+"/HEAD", true)
		if b, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/"); ok {
			parts = append(parts, "switched to "+b)
		} else {
			parts = append(parts, "HEAD detached")
		}
	}
	if k, ok := kinds["index"]; ok {
		parts = append(parts, "index "+verb(k))
	}
	if k, ok := kinds["config"]; ok {
		parts = append(parts, "config "+verb(k))
	}
	if k, ok := kinds["packed-refs"]; ok {
		parts = append(parts, "packed-refs "+verb(k))
	}
	var hooks []string
	packs := 0
	for rel, k := range kinds {
		if h, ok := strings.CutPrefix(rel, "hooks/"); ok && !strings.HasSuffix(h, ".sample") {
			hooks = append(hooks, h+" "+verb(k))
		}
		if strings.HasPrefix(rel, "objects/pack/") && strings.HasSuffix(rel, ".pack") && k != "deleted" {
			packs++
		}
	}
	sort.Strings(hooks)
	for _, h := range hooks {
		parts = append(parts, "hook "+h)
	}
	if packs > 0 {
		parts = append(parts, fmt.Sprintf("%d %s written", packs, plural(packs, "pack", "packs")))
	}
	if len(parts) == 0 {
		// nothing of the above: the files themselves, when few
		var names []string
		for rel, k := range kinds {
			names = append(names, rel+" "+verb(k))
		}
		sort.Strings(names)
		if len(names) <= 3 {
			parts = names
		} else {
			parts = append(parts, fmt.Sprintf("%d internal files changed", len(names)))
		}
	}
	s.Line = strings.Join(parts, ", ")
	return s
}

func verb(kind string) string {
	switch kind {
	case "added":
		return "added"
	case "deleted":
		return "deleted"
	}
	return "changed"
}

// looseObject returns the object id of objects/ab/cdef... .
func looseObject(rel string) (string, bool) {
	dir, file := path.Split(rel)
	if len(dir) != len("objects/ab/") || !strings.HasPrefix(dir, "objects/") || len(file) < 38 {
		return "", false
	}
	id := dir[len("objects/"):len("objects/ab")] + file
	if _, err := hex.DecodeString(id); err != nil || (len(id) != 40 && len(id) != 64) {
		return "", false
	}
	return id, true
}

// maxWalk bounds the commits countNew reads.
const maxWalk = 10000

// countNew counts the commits reachable from tip that the changes added
// (loose objects among them), reading each one's parents; complete is
// false when it stopped at maxWalk.
func countNew(dir, tip string, added map[string]bool, src Source) (n int, complete bool) {
	seen := map[string]bool{}
	queue := []string{tip}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] || !added[id] {
			continue
		}
		seen[id] = true
		data, ok := src.Read(dir+"/objects/"+id[:2]+"/"+id[2:], true)
		if !ok {
			continue
		}
		parents, isCommit := commitParents(data)
		if !isCommit {
			continue
		}
		n++
		if n >= maxWalk {
			return n, false
		}
		queue = append(queue, parents...)
	}
	return n, true
}

// commitParents reads a loose object (zlib): the parents of a commit,
// isCommit false for any other object or a malformed one.
func commitParents(obj []byte) (parents []string, isCommit bool) {
	zr, err := zlib.NewReader(bytes.NewReader(obj))
	if err != nil {
		return nil, false
	}
	defer zr.Close()
	buf, _ := io.ReadAll(io.LimitReader(zr, 64<<10))
	head, body, ok := bytes.Cut(buf, []byte{0})
	if !ok || !bytes.HasPrefix(head, []byte("commit ")) {
		return nil, false
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(line) == 0 {
			break // the end of the header: the message follows
		}
		if p, ok := bytes.CutPrefix(line, []byte("parent ")); ok {
			id := string(p)
			if _, err := hex.DecodeString(id); err == nil && (len(id) == 40 || len(id) == 64) {
				parents = append(parents, id)
			}
		}
	}
	return parents, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
