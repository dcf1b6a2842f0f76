// Package layer is a review run's copy-on-write layer of target/: the
// run's mount namespace shows target/ as an overlay whose lower layer is
// the real target/ and whose upper layer is a directory of this package,
// stored outside every sandbox-writable area. Every write, deletion,
// rename and mode change of the run lands in the upper layer; the real
// target/ is not changed. Afterwards Changes lists what the layer holds,
// Apply carries it (or some paths of it) into the real target/, file by
// file and atomically per file, refusing paths the human (or another
// applied run) changed since the run started, and Discard removes it.
//
// A layer directory holds upper/ and work/ (overlayfs's) and meta.json,
// which the run holds locked (flock) while it is live; its mtime is the
// run's end.
package layer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Meta describes a layer: whose run it is and where it applies.
type Meta struct {
	Run       string    `json:"run"`
	Agent     string    `json:"agent,omitempty"`
	Role      string    `json:"role,omitempty"`
	Workspace string    `json:"workspace"`
	Target    string    `json:"target"` // the real target/ (the lower layer)
	Started   time.Time `json:"started"`
	// Ended is when the run ended (meta.json's mtime; zero while it
	// runs).
	Ended time.Time `json:"-"`
	// Audit and AuditKey are the run's audit log and key: apply and
	// discard are recorded there.
	Audit    string `json:"audit,omitempty"`
	AuditKey string `json:"audit_key,omitempty"`
	// UserXattr: the overlay was mounted in a user namespace (its
	// opaque-directory marks are user.overlay.* attributes).
	UserXattr bool `json:"userxattr,omitempty"`
	// Since is the change time (ns) the kernel gave meta.json when the
	// layer was made: a file of target/ whose ctime is later was
	// changed after the run started (the same clock, so no slack).
	Since int64 `json:"since_ctime_ns"`
	// GitIndexes digests, per git index of target/ (".git/index",
	// "proj/.git/index"), what it staged when the run started: an index
	// the human only refreshed since (git status) does not block the
	// apply (Apply).
	GitIndexes map[string]string `json:"git_indexes,omitempty"`
}

// Layer is one run's layer.
type Layer struct {
	Dir  string
	Meta Meta
	lock *os.File
}

// DefaultRoot is where layers are kept unless configured: under
// $XDG_STATE_HOME/agentbox (else ~/.local/state/agentbox, else
// /var/lib/agentbox), outside every workspace.
func DefaultRoot() string {
	base := "/var/lib/agentbox"
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		base = filepath.Join(d, "agentbox")
	} else if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		base = filepath.Join(home, ".local", "state", "agentbox")
	}
	return filepath.Join(base, "layers")
}

var runIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })

// ErrNoLayer is returned for a run that has no layer (never a review run,
// one that changed nothing, discarded, or applied whole).
var ErrNoLayer = errors.New("no review layer")

// LiveError refuses an operation on a layer whose run is still running.
type LiveError struct{ Run string }

func (e *LiveError) Error() string {
	return fmt.Sprintf("run %s is still running: its layer changes until it ends (agentbox stop %s, or wait)", e.Run, e.Run)
}

// Upper is the overlay's upper directory, Work its work directory.
func (l *Layer) Upper() string { return filepath.Join(l.Dir, "upper") }
func (l *Layer) Work() string  { return filepath.Join(l.Dir, "work") }

// Paths returns the upper and work directories Create makes for run
// under root, before it has made them: a launch hands them to the
// sandbox's helper while the layer is still being created.
func Paths(root, run string) (upper, work string) {
	l := Layer{Dir: filepath.Join(root, run)}
	return l.Upper(), l.Work()
}

// Create makes run's layer under root and holds its lock until Close.
// The directories are 0700 and owned by the caller; root itself must be
// outside every sandbox-writable area (the plan checks).
func Create(root string, m Meta) (*Layer, error) {
	if !runIDRe().MatchString(m.Run) {
		return nil, fmt.Errorf("layer: bad run id %q", m.Run)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("review layer: %w", err)
	}
	l := &Layer{Dir: filepath.Join(root, m.Run), Meta: m}
	l.Meta.GitIndexes = gitIndexes(m.Target)
	if err := os.Mkdir(l.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("review layer: %w", err)
	}
	for _, d := range []string{l.Upper(), l.Work()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(l.Dir)
			return nil, fmt.Errorf("review layer: %w", err)
		}
	}
	// The upper directory's root takes the real target's mode: it is the
	// merged view's root directory.
	if st, err := os.Stat(m.Target); err == nil {
		os.Chmod(l.Upper(), st.Mode().Perm())
	}
	// meta.json is also the lock: one file to create (each create costs
	// ~0.13 ms on a journaled file system, and this is launch time).
	f, err := os.OpenFile(filepath.Join(l.Dir, "meta.json"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		os.RemoveAll(l.Dir)
		return nil, fmt.Errorf("review layer lock: %w", err)
	}
	l.lock = f
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		os.RemoveAll(l.Dir)
		return nil, fmt.Errorf("review layer lock: %w", err)
	}
	l.Meta.Since = st.Ctim.Nano()
	b, err := json.MarshalIndent(l.Meta, "", "  ")
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if err != nil {
		f.Close()
		os.RemoveAll(l.Dir)
		return nil, fmt.Errorf("review layer: %w", err)
	}
	return l, nil
}

// Close records the run's end and releases the lock: the layer can then
// be read, applied and discarded.
func (l *Layer) Close() error {
	if l.lock == nil {
		return nil
	}
	// The end is the lock file's mtime: rewriting meta.json (a rename over
	// it) would make ext4 flush it, ~0.5 ms of every review run.
	now := time.Now()
	err := unix.Futimes(int(l.lock.Fd()), []unix.Timeval{unix.NsecToTimeval(now.UnixNano()), unix.NsecToTimeval(now.UnixNano())})
	l.Meta.Ended = now.UTC()
	l.lock.Close()
	l.lock = nil
	return err
}

// Open opens run's layer under root.
func Open(root, run string) (*Layer, error) {
	if !runIDRe().MatchString(run) {
		return nil, fmt.Errorf("%q is not a run id", run)
	}
	dir := filepath.Join(root, run)
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr == nil {
			return nil, fmt.Errorf("run %s: layer %s has no meta.json: %w (remove it by hand)", run, dir, ErrNoLayer)
		}
		return nil, fmt.Errorf("run %s: %w under %s (not a review run, a review run that changed nothing, or applied or discarded already)", run, ErrNoLayer, root)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run, err)
	}
	l := &Layer{Dir: dir}
	if err := json.Unmarshal(b, &l.Meta); err != nil {
		return nil, fmt.Errorf("run %s: %s: %w", run, filepath.Join(dir, "meta.json"), err)
	}
	if l.Meta.Run != run || !filepath.IsAbs(l.Meta.Target) {
		return nil, fmt.Errorf("run %s: %s does not describe this run's layer", run, filepath.Join(dir, "meta.json"))
	}
	if _, err := os.Stat(l.Upper()); err != nil {
		return nil, fmt.Errorf("run %s: the layer's upper directory: %w", run, err)
	}
	if !l.Live() {
		if st, err := os.Stat(filepath.Join(dir, "meta.json")); err == nil {
			l.Meta.Ended = st.ModTime().UTC()
		}
	}
	return l, nil
}

// Live reports whether the layer's run still holds its lock.
func (l *Layer) Live() bool {
	if l.lock != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(l.Dir, "meta.json"), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// List returns the layers under root, oldest first.
func List(root string) ([]Meta, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Meta
	for _, e := range ents {
		if l, err := Open(root, e.Name()); err == nil {
			out = append(out, l.Meta)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// Discard removes the layer (refused while its run is live).
func (l *Layer) Discard() error {
	if l.lock == nil && l.Live() {
		return &LiveError{Run: l.Meta.Run}
	}
	return removeLayerDir(l.Dir)
}

// removeLayerDir removes a layer directory: overlayfs leaves its work
// directory's subdirectory mode 000, which RemoveAll cannot descend into
// as a regular user.
func removeLayerDir(dir string) error {
	filepath.WalkDir(filepath.Join(dir, "work"), func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the layer %s: %w", dir, err)
	}
	return nil
}
