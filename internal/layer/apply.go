package layer

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/fault"
	"github.com/agentbox/agentbox/internal/gitsum"
)

// ConflictError refuses an apply: these paths of the real target/ changed
// after the run started (the human, or another applied run), so the
// layer's version would overwrite work it never saw.
type ConflictError struct {
	Run   string
	Paths []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("run %s: nothing applied: %d path(s) changed in target/ since the run started: %s (look with agentbox diff %s; --force applies over them)",
		e.Run, len(e.Paths), strings.Join(e.Paths, ", "), e.Run)
}

// ApplyResult is what an apply changed.
type ApplyResult struct {
	Applied []Change
	// Left is the number of changes still in the layer (a partial apply).
	Left int
	// Notes say what the apply decided for the reader: a git index the
	// human refreshed (git status) replaced by the run's, a staging
	// directory it could not remove.
	Notes []string
}

// midway is the fault point of the commit phase: the fault suite's
// AGENTBOX_FAULT_INJECT=apply-midway fails the apply half way through
// its renames (tests in this package replace it).
var midway = func(i, n int) error {
	if i == n/2 {
		return fault.Err("apply-midway")
	}
	return nil
}

// Apply carries the layer's changes under paths (none: all) into the real
// target/, all or nothing. Each path it would change must be as it was
// when the run started (its ctime not later than the layer's making);
// otherwise nothing is applied and the paths are listed
// (*ConflictError), unless force. A git index that changed only in the
// file stats git caches (a git status by the human) is no conflict: the
// run's index replaces it (ApplyResult.Notes says so).
//
// The apply stages first: every file and symlink is written into a
// staging directory in target/ (.agentbox-apply-*). Then it renames: what
// it replaces or deletes is renamed into the staging directory, the
// staged entries into place; a failure there renames everything back, so
// target/ is as it was, and the error says so. Everything goes through an
// os.Root at target/, so no path of the layer reaches outside it. An
// applied entry stays in the layer but is no change any more (target/
// now holds the same); when no change is left the layer is removed.
func (l *Layer) Apply(paths []string, force bool) (*ApplyResult, error) {
	if l.Live() {
		return nil, &LiveError{Run: l.Meta.Run}
	}
	all, err := l.Changes()
	if err != nil {
		return nil, err
	}
	var cs []Change
	for _, c := range all {
		if within(c.Path, paths) || c.From != "" && within(c.From, paths) {
			cs = append(cs, c)
		}
	}
	if len(paths) > 0 && len(cs) == 0 {
		return nil, fmt.Errorf("run %s: the layer changes nothing under %s", l.Meta.Run, strings.Join(paths, ", "))
	}
	res := &ApplyResult{}
	if !force {
		conf, notes := l.conflicts(cs)
		if len(conf) > 0 {
			return nil, &ConflictError{Run: l.Meta.Run, Paths: conf}
		}
		res.Notes = notes
	}
	r, err := os.OpenRoot(l.Meta.Target)
	if err != nil {
		return nil, fmt.Errorf("target/: %w", err)
	}
	defer r.Close()
	owner := -1
	var tst unix.Stat_t
	if os.Geteuid() == 0 && unix.Stat(l.Meta.Target, &tst) == nil {
		owner = int(tst.Uid) // files root applies belong to target/'s owner
	}
	ap := &applier{l: l, r: r, uid: owner, gid: int(tst.Gid), stage: ".agentbox-apply-" + randHex()}
	// Deletions deepest first, then everything else shallowest first.
	sort.SliceStable(cs, func(i, j int) bool {
		di, dj := cs[i].Kind == Deleted, cs[j].Kind == Deleted
		if di != dj {
			return di
		}
		if di {
			return strings.Count(cs[i].Path, "/") > strings.Count(cs[j].Path, "/")
		}
		return strings.Count(cs[i].Path, "/") < strings.Count(cs[j].Path, "/")
	})
	if err := r.Mkdir(ap.stage, 0o700); err != nil {
		return nil, fmt.Errorf("run %s: nothing applied: making the staging directory in target/: %w", l.Meta.Run, err)
	}
	staged := make([]string, len(cs))
	for i, c := range cs {
		if staged[i], err = ap.stageOne(i, c); err != nil {
			ap.dropStage()
			return nil, fmt.Errorf("run %s: nothing applied: staging %s: %w; target/ is as it was", l.Meta.Run, c.Path, err)
		}
	}
	// The staged contents reach the disk before any rename makes them
	// target/'s: one syncfs for them all (an fsync each cost ~5 ms per
	// file here: BenchmarkApply500).
	if err := syncFS(r); err != nil {
		ap.dropStage()
		return nil, fmt.Errorf("run %s: nothing applied: writing the staged files to disk: %w; target/ is as it was", l.Meta.Run, err)
	}
	for i, c := range cs {
		err := midway(i, len(cs))
		if err == nil {
			err = ap.commit(c, staged[i])
		}
		if err != nil {
			if rerr := ap.rollback(); rerr != nil {
				return nil, fmt.Errorf("run %s: applying %s failed (%v), and putting target/ back failed: %w; the staging directory %s holds what was moved aside",
					l.Meta.Run, c.Path, err, rerr, filepath.Join(l.Meta.Target, ap.stage))
			}
			ap.dropStage()
			l.rememberRolledBack(cs)
			return nil, fmt.Errorf("run %s: nothing applied: applying %s failed: %w; target/ is as it was", l.Meta.Run, c.Path, err)
		}
		res.Applied = append(res.Applied, c)
	}
	if err := ap.dropStage(); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("applied, but the staging directory %s was not removed (%v): remove it by hand",
			filepath.Join(l.Meta.Target, ap.stage), err))
	}
	left, err := l.Changes()
	if err != nil {
		return res, err
	}
	res.Left = len(left)
	if res.Left == 0 {
		return res, removeLayerDir(l.Dir)
	}
	return res, nil
}

// conflicts lists the paths of cs the real target/ changed since the run
// started; notes say which git indexes it let the run replace.
func (l *Layer) conflicts(cs []Change) (out, notes []string) {
	seen := map[string]bool{}
	rolled := l.rolledBack()
	check := func(p string, mustExist bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		var st unix.Stat_t
		err := unix.Lstat(filepath.Join(l.Meta.Target, p), &st)
		switch {
		case err != nil && mustExist:
			out = append(out, p+" (deleted)")
		case err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Ctim.Nano() > l.Meta.Since && rolled[p] != st.Ctim.Nano():
			if note, ok := l.indexRefreshed(p); ok {
				notes = append(notes, note)
			} else if note != "" {
				out = append(out, p+" ("+note+")")
			} else {
				out = append(out, p)
			}
		}
	}
	for _, c := range cs {
		switch c.Kind {
		case Added:
			check(c.Path, false)
		case Modified, Mode, Deleted:
			check(c.Path, c.Type != "dir")
		case Renamed:
			check(c.From, true)
			check(c.Path, false)
		}
	}
	sort.Strings(out)
	return out, notes
}

// rolledBackFile (in the layer's directory) records the change times a
// rolled-back apply left on the paths it moved and put back: a rename
// changes an inode's ctime, and a retry must not take its own rollback
// for the human's change.
const rolledBackFile = "rolled-back.json"

// rememberRolledBack records the ctimes of cs's paths after a rollback.
func (l *Layer) rememberRolledBack(cs []Change) {
	m := l.rolledBack()
	for _, c := range cs {
		for _, p := range []string{c.Path, c.From} {
			var st unix.Stat_t
			if p != "" && unix.Lstat(filepath.Join(l.Meta.Target, p), &st) == nil {
				m[p] = st.Ctim.Nano()
			}
		}
	}
	if b, err := json.Marshal(m); err == nil {
		_ = os.WriteFile(filepath.Join(l.Dir, rolledBackFile), b, 0o600)
	}
}

// rolledBack reads rolledBackFile (none: empty).
func (l *Layer) rolledBack() map[string]int64 {
	m := map[string]int64{}
	if b, err := os.ReadFile(filepath.Join(l.Dir, rolledBackFile)); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// indexRefreshed decides a conflict on a git index (p is a .git/index):
// ok when what it stages (paths, modes, object ids) is what it staged
// when the run started, so only the file stats git caches changed (git
// status rewrites them): the run's index replaces it, and the note says
// so. Otherwise the note (if any) says why it stays a conflict.
func (l *Layer) indexRefreshed(p string) (note string, ok bool) {
	if gitsum.GitDirOf(p) == "" || path.Base(p) != "index" || path.Dir(p) != gitsum.GitDirOf(p) {
		return "", false
	}
	was, recorded := l.Meta.GitIndexes[p]
	if !recorded {
		return "", false
	}
	now, err := indexDigestFile(filepath.Join(l.Meta.Target, p))
	if err != nil || now != was {
		return "you staged changes since the run started", false
	}
	return fmt.Sprintf("%s: took the run's git index over yours: yours had changed only in the file stats git caches (as git status leaves them), "+
		"not in what it stages; the run's matches its commits and files (git refreshes its stats on its next command)", p), true
}

type applier struct {
	l        *Layer
	r        *os.Root
	uid, gid int
	// stage is the staging directory (relative to target/): staged
	// entries, then what the apply moved aside.
	stage string
	// undo holds how to take back each step of the commit phase, in order.
	undo  []func() error
	aside int
}

func (a *applier) own(p string) {
	if a.uid >= 0 {
		a.r.Lchown(p, a.uid, a.gid)
	}
}

// stageOne writes change i's file or symlink into the staging directory
// and returns its name there ("" when the change has no content).
func (a *applier) stageOne(i int, c Change) (string, error) {
	if c.Kind == Deleted || c.Kind == Mode || c.Type == "dir" {
		return "", nil
	}
	tmp := path.Join(a.stage, fmt.Sprintf("new-%d", i))
	switch c.Type {
	case "symlink":
		if err := a.r.Symlink(c.Target, tmp); err != nil {
			return "", err
		}
	case "file":
		if err := a.copyFile(filepath.Join(a.l.Upper(), c.Path), tmp, c.Mode); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("the layer holds %s, neither file, directory nor symlink", c.Path)
	}
	a.own(tmp)
	return tmp, nil
}

// moveAside renames p (when it exists) into the staging directory, to be
// removed with it or put back by rollback.
func (a *applier) moveAside(p string) error {
	if _, err := a.r.Lstat(p); os.IsNotExist(err) {
		return nil
	}
	a.aside++
	to := path.Join(a.stage, fmt.Sprintf("old-%d", a.aside))
	if err := a.r.Rename(p, to); err != nil {
		return err
	}
	a.undo = append(a.undo, func() error { return a.r.Rename(to, p) })
	return nil
}

// chmod sets p's mode, remembering the old one.
func (a *applier) chmod(p string, m uint32) error {
	st, err := a.r.Lstat(p)
	if err != nil {
		return err
	}
	old := st.Mode()
	if err := a.r.Chmod(p, os.FileMode(m&0o777)|modeBits(m)); err != nil {
		return err
	}
	a.undo = append(a.undo, func() error { return a.r.Chmod(p, old) })
	return nil
}

// commit carries one change into place (staged: its staged entry).
func (a *applier) commit(c Change, staged string) error {
	// setuid and setgid are never carried over, on files or directories
	// (a set-gid directory hands its group to what is made in it)
	m := c.Mode &^ (unix.S_ISUID | unix.S_ISGID)
	switch {
	case c.Kind == Deleted:
		return a.moveAside(c.Path)
	case c.Kind == Mode:
		return a.chmod(c.Path, m)
	case c.Type == "dir":
		if err := a.mkdirs(c.Path); err != nil {
			return err
		}
		return a.chmod(c.Path, m)
	}
	if err := a.mkdirs(path.Dir(c.Path)); err != nil {
		return err
	}
	if c.Kind == Renamed && c.From != "" {
		if err := a.moveAside(c.From); err != nil {
			return err
		}
	}
	if st, err := a.r.Lstat(c.Path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory in target/", c.Path)
	}
	if err := a.moveAside(c.Path); err != nil {
		return err
	}
	if err := a.r.Rename(staged, c.Path); err != nil {
		return err
	}
	a.undo = append(a.undo, func() error { return a.r.Rename(c.Path, staged) })
	return nil
}

// rollback takes back the commit phase's steps, last first; it goes on
// past a failure and returns the first.
func (a *applier) rollback() error {
	var first error
	for i := len(a.undo) - 1; i >= 0; i-- {
		if err := a.undo[i](); err != nil && first == nil {
			first = err
		}
	}
	a.undo = nil
	return first
}

// dropStage removes the staging directory and what it holds.
func (a *applier) dropStage() error {
	return a.r.RemoveAll(a.stage)
}

// mkdirs creates dir and its parents in target/ with the layer's modes.
func (a *applier) mkdirs(dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	if st, err := a.r.Lstat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory in target/", dir)
		}
		return nil
	}
	if err := a.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	mode := os.FileMode(0o755)
	if st, err := os.Lstat(filepath.Join(a.l.Upper(), dir)); err == nil && st.IsDir() {
		mode = st.Mode().Perm()
	}
	if err := a.r.Mkdir(dir, mode); err != nil {
		return err
	}
	a.undo = append(a.undo, func() error { return a.r.Remove(dir) })
	a.r.Chmod(dir, mode)
	a.own(dir)
	return nil
}

// copyFile copies the layer's file src (never through a symlink) to dst
// in target/.
func (a *applier) copyFile(src, dst string, mode uint32) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := a.r.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// setuid and setgid are not carried over: a file the sandbox made
	// (as root, perhaps) must not become a privilege for whoever runs it.
	return a.r.Chmod(dst, os.FileMode(mode&0o777)|modeBits(mode&^(unix.S_ISUID|unix.S_ISGID)))
}

// syncFS flushes the file system target/ is on.
func syncFS(r *os.Root) error {
	f, err := r.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// modeBits maps setuid, setgid and sticky permission bits to os.FileMode.
func modeBits(m uint32) os.FileMode {
	var f os.FileMode
	if m&unix.S_ISUID != 0 {
		f |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		f |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		f |= os.ModeSticky
	}
	return f
}

func randHex() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
