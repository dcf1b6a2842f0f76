package layer

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
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
}

// Apply carries the layer's changes under paths (none: all) into the real
// target/. Each path it would change must be as it was when the run
// started (its ctime not later than the layer's making); otherwise nothing is applied and the
// paths are listed (*ConflictError), unless force. Each file is written to
// a new file beside it and renamed into place; symlinks are created as
// links, never followed; everything goes through an os.Root at target/, so
// no path of the layer reaches outside it. An applied entry stays in the
// layer but is no change any more (target/ now holds the same); when no
// change is left the layer is removed.
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
	if !force {
		if conf := l.conflicts(cs); len(conf) > 0 {
			return nil, &ConflictError{Run: l.Meta.Run, Paths: conf}
		}
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
	ap := applier{l: l, r: r, uid: owner, gid: int(tst.Gid)}
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
	res := &ApplyResult{}
	for _, c := range cs {
		if err := ap.apply(c); err != nil {
			return res, fmt.Errorf("run %s: applying %s: %w (applied before it: %d path(s); each path is whole or untouched)", l.Meta.Run, c.Path, err, len(res.Applied))
		}
		res.Applied = append(res.Applied, c)
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
// started.
func (l *Layer) conflicts(cs []Change) []string {
	var out []string
	seen := map[string]bool{}
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
		case err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Ctim.Nano() > l.Meta.Since:
			out = append(out, p)
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
	return out
}

type applier struct {
	l        *Layer
	r        *os.Root
	uid, gid int
}

func (a *applier) own(p string) {
	if a.uid >= 0 {
		a.r.Lchown(p, a.uid, a.gid)
	}
}

func (a *applier) apply(c Change) error {
	up := filepath.Join(a.l.Upper(), c.Path)
	switch c.Kind {
	case Deleted:
		if err := a.r.Remove(c.Path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	case Mode:
		// setuid and setgid are never carried over, on files or
		// directories (a set-gid directory hands its group to what is
		// made in it)
		m := c.Mode &^ (unix.S_ISUID | unix.S_ISGID)
		return a.r.Chmod(c.Path, os.FileMode(m&0o777)|modeBits(m))
	}
	if c.Type == "dir" {
		if err := a.mkdirs(c.Path); err != nil {
			return err
		}
		m := c.Mode &^ (unix.S_ISUID | unix.S_ISGID)
		return a.r.Chmod(c.Path, os.FileMode(m&0o777)|modeBits(m))
	}
	if err := a.mkdirs(path.Dir(c.Path)); err != nil {
		return err
	}
	tmp := path.Join(path.Dir(c.Path), "."+path.Base(c.Path)+".agentbox-apply-"+randHex())
	switch c.Type {
	case "symlink":
		if err := a.r.Symlink(c.Target, tmp); err != nil {
			return err
		}
	case "file":
		if err := a.copyFile(up, tmp, c.Mode); err != nil {
			a.r.Remove(tmp)
			return err
		}
	}
	a.own(tmp)
	if err := a.r.Rename(tmp, c.Path); err != nil {
		a.r.Remove(tmp)
		return err
	}
	if c.Kind == Renamed && c.From != "" {
		if err := a.r.Remove(c.From); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
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
	if err := a.r.Mkdir(dir, mode); err != nil && !os.IsExist(err) {
		return err
	}
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
	if err := out.Sync(); err != nil {
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
