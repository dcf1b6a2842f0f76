// Package boundary turns a workspace and a role's filesystem grants into the
// exact list of paths and Landlock access rights a sandbox gets.
//
// A workspace W has four areas (docs/architecture.md): W/context, W/target, W/feedback
// and W/agents/<id>. Resolve checks the layout once, before anything is
// launched, and refuses — with one line naming the path — every shape that
// would let a grant reach further than it says:
//
//   - a missing area, or an area that is a symlink (landrun grants rw to a
//     symlink's outside target; we refuse instead),
//   - a workspace path or rule path that contains "..",
//   - a role's extra path that is, or passes through, a symlink,
//   - an agent id that is not a plain file name.
//
// The output (Plan) is a flat list of Rules, each a resolved absolute path
// with a set of Landlock access rights. Landlock rights are inherited by a
// whole file hierarchy and can only be added, never subtracted, so read-only
// carve-outs inside a writable area are built by granting siblings; see
// carve.go for what that can and cannot enforce.
package boundary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/agentbox/agentbox/policy"
)

// Rights is a set of Landlock filesystem access rights (the
// LANDLOCK_ACCESS_FS_* bits, as defined by go-landlock's syscall package).
type Rights uint64

// Landlock rights grouped the way roles grant them.
const (
	// RightsRead reads files and lists directories.
	RightsRead Rights = ll.AccessFSReadFile | ll.AccessFSReadDir
	// RightsExec executes files.
	RightsExec Rights = ll.AccessFSExecute
	// RightsWrite writes, truncates, creates, removes and renames regular
	// files, directories, symlinks, fifos and sockets, within and across
	// directories that also have it (refer). Never device nodes.
	RightsWrite Rights = ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSym | ll.AccessFSMakeFifo |
		ll.AccessFSMakeSock | ll.AccessFSRefer
	// RightsDevice is read+write+ioctl for character devices (tty, pty).
	RightsDevice Rights = ll.AccessFSReadFile | ll.AccessFSWriteFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev

	// fileRights are the only rights Landlock accepts on a rule whose path
	// is not a directory.
	fileRights Rights = ll.AccessFSExecute | ll.AccessFSWriteFile |
		ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// String names the rights compactly, e.g. "rwx", "r", "rw+dev".
func (r Rights) String() string {
	var b strings.Builder
	if r&ll.AccessFSReadFile != 0 || r&ll.AccessFSReadDir != 0 {
		b.WriteByte('r')
	}
	if r&(ll.AccessFSWriteFile|ll.AccessFSMakeReg) != 0 {
		b.WriteByte('w')
	}
	if r&ll.AccessFSExecute != 0 {
		b.WriteByte('x')
	}
	if r&ll.AccessFSIoctlDev != 0 {
		b.WriteString("+dev")
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// RightsFor maps a role's access level to Landlock rights.
// AccessNone (and the empty string) map to no rights at all.
func RightsFor(a policy.Access) (Rights, error) {
	switch a {
	case policy.AccessNone, "":
		return 0, nil
	case policy.AccessRead:
		return RightsRead, nil
	case policy.AccessReadExec:
		return RightsRead | RightsExec, nil
	case policy.AccessReadWrite:
		return RightsRead | RightsWrite, nil
	case policy.AccessAll:
		return RightsRead | RightsWrite | RightsExec, nil
	}
	return 0, fmt.Errorf("unknown access level %q (want none, ro, rx, rw or rwx)", a)
}

// Rule grants Rights on the file hierarchy at Path (a resolved, absolute
// path). Dir says whether Path is a directory; rules on other files carry
// only file rights.
type Rule struct {
	Path   string `json:"path"`
	Rights Rights `json:"rights"`
	Dir    bool   `json:"dir"`
	// Optional rules are skipped when the path does not exist at launch
	// (system paths that only some distributions have).
	Optional bool `json:"optional,omitempty"`
	// Why says where the rule comes from, for `policy show` and errors.
	Why string `json:"why,omitempty"`
}

// Plan is the resolved boundary of one run: every Landlock path rule, the
// agent's own directories, and the paths the sandbox can write (so callers
// can refuse to put an audit log or policy file there).
type Plan struct {
	Workspace string // resolved absolute workspace
	AgentID   string
	Context   string
	Target    string
	Feedback  string
	Agents    string // W/agents
	OwnAgent  string // W/agents/<id>
	Home      string // W/agents/<id>/home
	Tmp       string // W/agents/<id>/tmp
	Cache     string // W/agents/<id>/cache (XDG_CACHE_HOME, GOCACHE)
	// Rules is the complete filesystem allowlist: workspace rules first,
	// then the system allowlist.
	Rules []Rule
	// Notes explain carve-outs that Landlock can only enforce in part; they
	// go to the launch audit event and to `policy show`.
	Notes []string
	// Watch lists read-only paths Landlock cannot enforce (inside .git
	// directories, see carve.go): named in the launch notes; what a run
	// writes there is found by internal/gitleft when the run has ended.
	Watch []string
}

// validAgentIDChars reports whether id matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$
// (checked by hand: a compiled regexp with that bounded repetition cost
// ~0.4 ms and ~900 allocations at every process start, the sandbox
// helper's included).
func validAgentIDChars(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ValidAgentID reports whether id can name a directory under W/agents.
func ValidAgentID(id string) error {
	if !validAgentIDChars(id) {
		return fmt.Errorf("agent id %q: want 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit", id)
	}
	return nil
}

// Areas are the workspace's top-level directories, in the order `init`
// creates them.
var Areas = []string{"context", "target", "feedback", "agents"}

// DefaultReadOnly are the read-only globs applied on top of a role's own:
// git hooks and repository config, because a planted hook or
// core.hooksPath/core.fsmonitor runs code the next time a human uses the
// repository outside the sandbox. Landlock cannot enforce these while git
// may commit, so they are watched (Plan.Watch); see carve.go.
var DefaultReadOnly = []string{"target/**/.git/hooks", "target/**/.git/config"}

// Resolve checks the workspace layout and compiles fs into a Plan for agent
// agentID. It creates W/agents/<id>/{home,tmp,cache} if missing (and only
// those). Every error is one line naming the path at fault.
func Resolve(workspace, agentID string, fs policy.FSGrants) (*Plan, error) {
	return ResolveWith(workspace, agentID, fs, SystemRules)
}

// ResolveWith is Resolve taking the system allowlist's rules from system,
// called once when they are needed: SystemRules, or rules a caller began
// making beforehand on another goroutine (plan.Build makes them while the
// policy loads; they lstat ~45 paths and resolve their symlinks).
func ResolveWith(workspace, agentID string, fs policy.FSGrants, system func() []Rule) (*Plan, error) {
	if err := ValidAgentID(agentID); err != nil {
		return nil, err
	}
	if workspace == "" {
		return nil, errors.New("workspace: empty path")
	}
	if hasDotDot(workspace) {
		return nil, fmt.Errorf("workspace %s: path contains \"..\"; give it without parent references", workspace)
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", workspace, err)
	}
	w, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w (run `agentbox init %s` first)", abs, unwrapPath(err), workspace)
	}
	if st, err := os.Stat(w); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", abs)
	}
	p := &Plan{Workspace: w, AgentID: agentID}
	areas := map[string]*string{"context": &p.Context, "target": &p.Target, "feedback": &p.Feedback, "agents": &p.Agents}
	for _, name := range Areas {
		dir, err := realDirUnder(w, filepath.Join(w, name))
		if err != nil {
			return nil, fmt.Errorf("workspace area %s: %w", filepath.Join(w, name), err)
		}
		*areas[name] = dir
	}
	p.OwnAgent = filepath.Join(p.Agents, agentID)
	p.Home = filepath.Join(p.OwnAgent, "home")
	p.Tmp = filepath.Join(p.OwnAgent, "tmp")
	p.Cache = filepath.Join(p.OwnAgent, "cache")
	for _, d := range []string{p.OwnAgent, p.Home, p.Tmp, p.Cache} {
		if err := mkdirReal(d); err != nil {
			return nil, err
		}
	}

	grants := []struct {
		name   string
		path   string
		access policy.Access
	}{
		{"context", p.Context, fs.Context},
		{"target", p.Target, fs.Target},
		{"feedback", p.Feedback, fs.Feedback},
		{"other_agents", p.Agents, fs.OtherAgents},
		{"own_agent", p.OwnAgent, fs.OwnAgent},
	}
	ro := append(slices.Clone(DefaultReadOnly), fs.ReadOnly...)
	for _, g := range ro {
		if err := checkGlob(g); err != nil {
			return nil, err
		}
	}
	for _, g := range grants {
		r, err := RightsFor(g.access)
		if err != nil {
			return nil, fmt.Errorf("filesystem grant %s: %w", g.name, err)
		}
		if r == 0 {
			continue
		}
		rules, notes, watch, err := carve(w, g.path, r, ro, g.name)
		if err != nil {
			return nil, err
		}
		p.Rules = append(p.Rules, rules...)
		p.Notes = append(p.Notes, notes...)
		for _, x := range watch {
			if !slices.Contains(p.Watch, x) {
				p.Watch = append(p.Watch, x)
			}
		}
	}
	// The project policy is readable (the agent may learn its rules), never
	// writable: no rule covers W itself.
	if st, err := os.Lstat(filepath.Join(w, "agentbox.yaml")); err == nil && st.Mode().IsRegular() {
		p.Rules = append(p.Rules, Rule{Path: filepath.Join(w, "agentbox.yaml"), Rights: RightsRead & fileRights, Why: "project policy (read-only)"})
	}
	for _, g := range []struct {
		paths  []string
		field  string
		rights Rights
	}{{fs.ExtraRead, "extra_read", RightsRead}, {fs.ExtraExec, "extra_exec", RightsRead | RightsExec}, {fs.ExtraWrite, "extra_write", RightsRead | RightsWrite},
		{fs.RunRead, "--ro", RightsRead}, {fs.RunExec, "--exec", RightsRead | RightsExec}, {fs.RunWrite, "--rw", RightsRead | RightsWrite}} {
		for _, e := range g.paths {
			path, err := extraPath(e, g.field)
			if err != nil {
				return nil, err
			}
			if within(w, path) {
				return nil, fmt.Errorf("filesystem %s %s: inside the workspace; its areas are granted by the role (context, target, feedback, agents)", g.field, path)
			}
			if g.rights&RightsWrite != 0 && within(path, w) {
				return nil, fmt.Errorf("filesystem %s %s: contains the workspace, which would make every area (context/, other agents') writable", g.field, path)
			}
			if path == "/" {
				return nil, fmt.Errorf("filesystem %s /: the whole file system; grant the directories needed", g.field)
			}
			why := "role " + g.field
			if strings.HasPrefix(g.field, "--") {
				why = "run " + g.field
			}
			p.Rules = append(p.Rules, ruleFor(path, g.rights, why))
		}
	}
	p.Rules = append(p.Rules, system()...)
	return p, nil
}

// Writable reports whether the sandbox could create, modify or delete path
// (an absolute path that need not exist) under this plan, and through
// which rule. Callers use it to refuse an audit log or a policy file placed
// where the sandboxed code could edit it.
func (p *Plan) Writable(path string) (bool, string) { return p.WritableBy(nil, path) }

// WritableBy is Writable with path resolved through r (one check of many
// paths walks each once).
func (p *Plan) WritableBy(res *Resolver, path string) (bool, string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return true, "unresolvable path"
	}
	// Resolve the longest existing prefix so symlinks cannot hide a path.
	real := resolveExisting(res, abs)
	const writeish = Rights(ll.AccessFSWriteFile | ll.AccessFSMakeReg | ll.AccessFSRemoveFile | ll.AccessFSTruncate)
	for _, r := range p.Rules {
		if r.Rights&writeish == 0 {
			continue
		}
		if within(r.Path, abs) || within(r.Path, real) || (r.Path == "/" && strings.HasPrefix(abs, "/")) {
			return true, r.Path
		}
	}
	return false, ""
}

// Readable is like Writable for read access.
func (p *Plan) Readable(path string) (bool, string) {
	return p.granted(nil, path, Rights(ll.AccessFSReadFile))
}

// ReadableBy is Readable with path resolved through r.
func (p *Plan) ReadableBy(r *Resolver, path string) (bool, string) {
	return p.granted(r, path, Rights(ll.AccessFSReadFile))
}

// Executable is like Writable for execute access: whether programs under
// path could be run.
func (p *Plan) Executable(path string) (bool, string) {
	return p.granted(nil, path, Rights(ll.AccessFSExecute))
}

// granted reports whether a rule with any of the rights want covers path.
func (p *Plan) granted(res *Resolver, path string, want Rights) (bool, string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return true, "unresolvable path"
	}
	real := resolveExisting(res, abs)
	for _, r := range p.Rules {
		if r.Rights&want == 0 {
			continue
		}
		if within(r.Path, abs) || within(r.Path, real) {
			return true, r.Path
		}
	}
	return false, ""
}

// resolveExisting is ResolveExisting, falling back to abs itself when a
// component cannot be examined (both spellings are checked by callers).
func resolveExisting(res *Resolver, abs string) string {
	if r, err := res.ResolveExisting(abs); err == nil {
		return r
	}
	return abs
}

func hasDotDot(p string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..")
}

// realDirUnder checks that path is a real directory (not a symlink) whose
// resolved location is inside the resolved workspace w.
func realDirUnder(w, path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errors.New("missing (run `agentbox init` on the workspace)")
		}
		return "", unwrapPath(err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		dst, _ := os.Readlink(path)
		return "", fmt.Errorf("is a symlink (to %s); areas must be real directories inside the workspace", dst)
	}
	if !st.IsDir() {
		return "", errors.New("not a directory")
	}
	// One openat2 walk refusing symlinks answers for a path with none on
	// the way (its own resolution); anything else is resolved the long way.
	real := path
	if exists, _ := PlainPath(path); !exists {
		if real, err = filepath.EvalSymlinks(path); err != nil {
			return "", unwrapPath(err)
		}
	}
	if real != path || !within(w, real) {
		return "", fmt.Errorf("resolves to %s, outside the workspace", real)
	}
	return real, nil
}

// mkdirReal creates dir (one level) unless it exists as a real directory; a
// symlink or a file in its place is an error.
func mkdirReal(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case err == nil && st.Mode()&os.ModeSymlink != 0:
		dst, _ := os.Readlink(dir)
		return fmt.Errorf("%s: is a symlink (to %s); agent directories must be real directories", dir, dst)
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s: exists and is not a directory", dir)
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			// Another run of the agent made it meanwhile: check it again.
			if st, lerr := os.Lstat(dir); lerr == nil && st.IsDir() && st.Mode()&os.ModeSymlink == 0 {
				return nil
			}
		}
		return fmt.Errorf("creating %s: %w", dir, unwrapPath(err))
	}
	return nil
}

// extraPath validates a role's absolute extra path: no "..", no symlink on
// the way, must exist.
func extraPath(p, field string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("filesystem %s %q: must be an absolute path", field, p)
	}
	if hasDotDot(p) {
		return "", fmt.Errorf("filesystem %s %q: contains \"..\"", field, p)
	}
	clean := filepath.Clean(p)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", fmt.Errorf("filesystem %s %s: %w", field, clean, unwrapPath(err))
	}
	if real != clean {
		return "", fmt.Errorf("filesystem %s %s: is or passes through a symlink (resolves to %s); name the real path", field, clean, real)
	}
	return real, nil
}

// checkGlob refuses read-only globs that are absolute or climb out with "..".
func checkGlob(g string) error {
	if g == "" || strings.HasPrefix(g, "/") || hasDotDot(g) {
		return fmt.Errorf("filesystem readonly %q: want a glob relative to the workspace without \"..\"", g)
	}
	for _, seg := range strings.Split(g, "/") {
		if _, err := filepath.Match(seg, ""); err != nil {
			return fmt.Errorf("filesystem readonly %q: bad pattern %q: %w", g, seg, err)
		}
	}
	return nil
}

func ruleFor(path string, r Rights, why string) Rule {
	st, err := os.Stat(path)
	dir := err == nil && st.IsDir()
	if !dir {
		r &= fileRights
	}
	return Rule{Path: path, Rights: r, Dir: dir, Why: why}
}

// within reports whether p is root or lies under it (p has the prefix
// root+"/", spelled without building it: checkLayout asks this of every
// rule for every path it checks).
func within(root, p string) bool {
	return p == root || len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root
}

// unwrapPath strips *PathError's op/path so callers can name the path once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// FindWorkspace walks up from dir (inclusive) to the nearest directory that
// is an agentbox workspace — one holding every area (context/, target/,
// feedback/, agents/) as a real directory — and returns it. An agent's hook
// runs in the project under target/, so the workspace is found above it.
//
// A workspace found inside a writable area (target/, feedback/, agents/)
// of another workspace is refused with an *UntrustedWorkspaceError: a
// sandboxed agent can make one there, with an agentbox.yaml that would
// then be trusted as the owner's project policy. Only naming it
// (--workspace) trusts it.
func FindWorkspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isWorkspace(d) {
			for p := filepath.Dir(d); ; p = filepath.Dir(p) {
				if isWorkspace(p) {
					rel, _ := filepath.Rel(p, d)
					area, _, _ := strings.Cut(rel, string(filepath.Separator))
					if area != "context" {
						return "", &UntrustedWorkspaceError{Dir: d, Outer: p, Area: area}
					}
				}
				if p == filepath.Dir(p) {
					break
				}
			}
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no agentbox workspace (context/, target/, feedback/, agents/) at or above %s", abs)
		}
	}
}

// isWorkspace reports whether d holds every area as a real directory.
func isWorkspace(d string) bool {
	for _, a := range Areas {
		st, err := os.Lstat(filepath.Join(d, a))
		if err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// UntrustedWorkspaceError is a workspace discovery refused: Dir looks like
// a workspace but lies inside the Area (target, feedback, agents) of the
// workspace Outer, which a sandboxed agent can write.
type UntrustedWorkspaceError struct {
	Dir, Outer, Area string
}

func (e *UntrustedWorkspaceError) Error() string {
	return fmt.Sprintf("%s looks like a workspace but lies inside %s/ of the workspace %s, which a sandboxed agent can write: not trusted (its agentbox.yaml would decide the policy); give --workspace %s to trust it, or run from %s",
		e.Dir, e.Area, e.Outer, e.Dir, e.Outer)
}
