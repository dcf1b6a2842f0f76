package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/layer"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/internal/userconf"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/boundary"
)

// checkLayout refuses a run in which the sandbox could edit what judges it:
// the policy files, the audit log (or read it), the approval socket and the
// run registry must all lie outside the areas the sandbox can write.
func (p *Plan) checkLayout(in Input) error {
	b := p.Boundary
	// One Resolver for the whole check: the same paths and their parents
	// are asked about several times (untrusted, then writable; write, then
	// read), each walked once. The paths the input names were walked
	// while the policy loaded, when that is done by now.
	res := &boundary.Resolver{}
	var self string
	var ahead *layoutAhead
	if waitAhead && p.ahead != nil {
		ahead = <-p.ahead
	} else {
		select {
		case ahead = <-p.ahead:
		default:
		}
	}
	if ahead != nil {
		res, self = ahead.res, ahead.self
	} else {
		self, _ = os.Executable()
	}
	for _, f := range p.Engine.Files() {
		if w, area := b.WritableBy(res, f); w {
			return &ExposedError{What: "policy file", Path: f, Area: area, Access: "write"}
		}
	}
	// Every place a policy layer would be read from, by this run or a
	// later one, existing or not: a file the agent creates there would be
	// trusted next time. Files in the workspace's writable areas are read
	// as untrusted (they only restrict) and are the agent's to write.
	untrusted := untrustedIn(b.Workspace, res.PlainPath)
	for _, f := range p.Engine.WouldRead() {
		if untrusted(f) {
			continue
		}
		if w, area := b.WritableBy(res, f); w {
			return &ExposedError{What: "policy file a run would read", Path: f, Area: area, Access: "write"}
		}
	}
	// agentbox itself and its helper: a replaced helper would run as the
	// next run's launcher (root, perhaps).
	for _, f := range []string{self, sandbox.HelperPath(in.HelperExe)} {
		if f == "" {
			continue
		}
		if w, area := b.WritableBy(res, f); w {
			return &ExposedError{What: "agentbox binary", Path: f, Area: area, Access: "write"}
		}
	}
	// The user settings file can turn limits off for later runs.
	if f := userconf.Path(); f != "" {
		if w, area := b.WritableBy(res, f); w {
			return &ExposedError{What: "user settings file", Path: f, Area: area, Access: "write"}
		}
	}
	// The push token commands run outside the sandbox, as the user: one
	// the sandbox could replace would run its code there.
	for _, f := range in.PushCommands {
		for _, g := range []string{f, realPath(f)} {
			if w, area := b.WritableBy(res, g); w {
				return &ExposedError{What: "push token command", Path: f, Area: area, Access: "write"}
			}
		}
	}
	// The identity cache says which files are git: no grant may cover it.
	if c := identity.CachePath(); c != "" {
		if w, area := b.WritableBy(res, c); w {
			return &ExposedError{What: "identity cache", Path: c, Area: area, Access: "write"}
		}
		if rd, area := b.ReadableBy(res, c); rd {
			return &ExposedError{What: "identity cache", Path: c, Area: area, Access: "read"}
		}
	}
	if a := in.AuditPath; a != "" && a != "-" && !in.HasAuditWriter {
		if w, area := b.WritableBy(res, a); w {
			return &ExposedError{What: "audit log", Path: a, Area: area, Access: "write"}
		}
		if rd, area := b.ReadableBy(res, a); rd {
			return &ExposedError{What: "audit log", Path: a, Area: area, Access: "read"}
		}
	}
	if kp := audit.KeyPath(in.AuditPath, in.AuditKey); kp != "" && !in.HasAuditWriter && in.AuditPath != "" {
		if w, area := b.WritableBy(res, kp); w {
			return &ExposedError{What: "audit key", Path: kp, Area: area, Access: "write"}
		}
		if rd, area := b.ReadableBy(res, kp); rd {
			return &ExposedError{What: "audit key", Path: kp, Area: area, Access: "read"}
		}
	}
	if w := in.AuditWriterPath; in.HasAuditWriter && w != "" && w != "-" {
		if ok, area := b.WritableBy(res, w); ok {
			return &ExposedError{What: "audit log", Path: w, Area: area, Access: "write"}
		}
	}
	if sock, ok := strings.CutPrefix(in.Approve, "socket:"); ok {
		if w, area := b.WritableBy(res, sock); w {
			return &ExposedError{What: "approval socket", Path: sock, Area: area, Access: "write"}
		}
		if rd, area := b.ReadableBy(res, sock); rd {
			return &ExposedError{What: "approval socket", Path: sock, Area: area, Access: "read"}
		}
	}
	// Where agentbox finds a run by its id alone (agentbox undo RUN from
	// any directory): every workspace's default checkpoint store and the
	// default review layers. A store the sandbox wrote, its own or
	// another workspace's, would be read back by an undo or an apply.
	for _, d := range []string{filepath.Dir(checkpoint.DefaultDir("/")), layer.DefaultRoot()} {
		if w, area := b.WritableBy(res, d); w {
			return &ExposedError{What: "checkpoint and review stores", Path: d, Area: area, Access: "write"}
		}
		for _, g := range append(p.WritableRoots(), p.Role.FS.ExtraWrite...) {
			if within(g, d) {
				return &ExposedError{What: "checkpoint and review stores", Path: d, Area: g, Access: "write"}
			}
		}
	}
	if in.RegistryDir != "" {
		if w, area := b.WritableBy(res, in.RegistryDir); w {
			return &ExposedError{What: "run registry", Path: in.RegistryDir, Area: area, Access: "write"}
		}
		if rd, area := b.ReadableBy(res, in.RegistryDir); rd {
			return &ExposedError{What: "run registry", Path: in.RegistryDir, Area: area, Access: "read"}
		}
	}
	return nil
}

// waitAhead makes checkLayout wait for Build's walks ahead (a var so
// tests can hold both ways of answering to the same refusals).
var waitAhead = false

// layoutAhead is what checkLayout can learn before the policy is loaded:
// agentbox's own path and a Resolver that walked the paths the run's
// input names (binaries, settings, identity cache, audit log and key,
// stores, registry). The walks are those of the same check, a
// millisecond earlier; the policy's files are walked by checkLayout.
type layoutAhead struct {
	res  *boundary.Resolver
	self string
}

// resolveAhead walks the paths of checkLayout that in alone names (a path
// it does not list is walked by checkLayout itself).
func resolveAhead(in Input) *layoutAhead {
	a := &layoutAhead{res: &boundary.Resolver{}}
	a.self, _ = os.Executable()
	paths := []string{a.self, sandbox.HelperPath(in.HelperExe), userconf.Path(), identity.CachePath(),
		filepath.Dir(checkpoint.DefaultDir("/")), layer.DefaultRoot(), in.RegistryDir, in.AuditWriterPath}
	if in.AuditPath != "" {
		paths = append(paths, in.AuditPath, audit.KeyPath(in.AuditPath, in.AuditKey))
	}
	for _, f := range paths {
		if f == "" || f == "-" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			a.res.ResolveExisting(abs)
		}
	}
	return a
}

// workDir resolves the caller's directory: symlinks resolved, when it lies
// inside the workspace and the sandbox can read it ("" otherwise: W/target,
// or an error when strict).
func workDir(b *boundary.Plan, dir string, strict bool) (string, error) {
	if dir == "" {
		return "", nil
	}
	bad := func(why string) (string, error) {
		if !strict {
			return "", nil // the caller's directory is outside: W/target
		}
		return "", &OptionError{Option: "cwd", Value: dir, Err: errors.New(why)}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return bad(err.Error())
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return bad(err.Error())
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return bad("not a directory")
	}
	if real != b.Workspace && !strings.HasPrefix(real, b.Workspace+"/") {
		return bad("outside the workspace " + b.Workspace)
	}
	if ok, _ := b.Readable(real); !ok {
		return bad("not inside an area the sandbox can read (context/, target/, feedback/, the agent's own area)")
	}
	return real, nil
}
