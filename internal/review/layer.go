package review

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/gitleft"
	"github.com/agentbox/agentbox/internal/gitsum"
	"github.com/agentbox/agentbox/internal/layer"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// A review run's target/ is a copy-on-write view of the real one, and
// everything the run writes lands in a layer of its own, kept outside the
// workspace (docs/architecture.md, "Review runs"). The real target/ is not
// changed until the layer is applied: these functions read, apply and
// discard a layer by its run id, with its events in the run's audit log.

// What these return and refuse with (layer.Change, layer.ApplyResult,
// *layer.ConflictError, *layer.LiveError, layer.ErrNoLayer) is named for
// callers once, in the module root (agentbox.LayerChange and the rest).

// Layer describes a review run's layer: its run, agent, role,
// workspace, target and audit log.
type Layer = layer.Meta

// storeOr is store, or the default store of review layers for "".
func storeOr(store string) string {
	if store == "" {
		return layer.DefaultRoot()
	}
	return store
}

// Layers lists the review layers kept in store ("" the default).
func Layers(store string) ([]Layer, error) { return layer.List(storeOr(store)) }

// LayerChanges lists what run's layer changes in target/ as it is now.
func LayerChanges(store, run string) ([]layer.Change, error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return nil, err
	}
	if l.Live() {
		return nil, &layer.LiveError{Run: run}
	}
	return l.Changes()
}

// LayerDiff is a unified diff of one change (diff -u of target/'s file
// and the layer's); a binary file is named, not shown; a symlink shows
// its target. Control characters are escaped: everything here is the
// agent's.
func LayerDiff(store, run string, c layer.Change) (string, error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return "", err
	}
	p := escapeControls(c.Path)
	var head strings.Builder
	from := c.Path
	if c.Kind == layer.Renamed {
		from = c.From
		fmt.Fprintf(&head, "rename from %s\nrename to %s\n", escapeControls(c.From), p)
	}
	if c.OldMode != 0 && c.Mode != 0 && c.OldMode != c.Mode {
		fmt.Fprintf(&head, "old mode %o\nnew mode %o\n", c.OldMode, c.Mode)
	}
	switch {
	case c.Type == "dir":
		if c.Kind == layer.Added {
			fmt.Fprintf(&head, "new directory %s\n", p)
		} else if c.Kind == layer.Deleted {
			fmt.Fprintf(&head, "deleted directory %s\n", p)
		}
		return head.String(), nil
	case c.Type == "symlink" || c.Kind == layer.Deleted && c.Type == "symlink":
		if c.Kind == layer.Deleted {
			fmt.Fprintf(&head, "deleted symlink %s\n", p)
		} else {
			fmt.Fprintf(&head, "symlink %s -> %s\n", p, escapeControls(c.Target))
		}
		return head.String(), nil
	case c.Kind == layer.Mode:
		return head.String(), nil
	case c.Binary:
		fmt.Fprintf(&head, "Binary files a/%s and b/%s differ\n", escapeControls(from), p)
		return head.String(), nil
	}
	a, b := filepath.Join(l.Meta.Target, from), filepath.Join(l.Upper(), c.Path)
	if c.Kind == layer.Added {
		a = "/dev/null"
	}
	if c.Kind == layer.Deleted {
		b = "/dev/null"
	}
	out, err := exec.Command("diff", "-u", "--label", "a/"+from, "--label", "b/"+c.Path, a, b).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return "", fmt.Errorf("diff of %s: %w", c.Path, err)
	}
	return head.String() + escapeControls(string(out)), nil
}

// Apply applies run's layer (or the paths given) to its target/,
// refusing conflicts unless force, and records it in the run's audit log.
// What would make git run a program and arrives with the apply (hooks,
// config) is reported on warnings and audited as a violation.
func Apply(store, run string, paths []string, force bool, warnings interface{ Write([]byte) (int, error) }) (*layer.ApplyResult, error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return nil, err
	}
	before := gitleft.Scan([]string{l.Meta.Target})
	res, err := l.Apply(paths, force)
	if res != nil && len(res.Applied) > 0 {
		var ps, hs []string
		for _, c := range res.Applied {
			ps = append(ps, string(c.Kind)+" "+c.Path)
			if c.Hash != "" {
				hs = append(hs, c.Path+"="+c.Hash[:16])
			}
		}
		d := map[string]string{"paths": strings.Join(ps, "\n"), "sha256": strings.Join(hs, " "), "left": strconv.Itoa(res.Left),
			"applied_by": invoker(), "target": l.Meta.Target}
		if force {
			d["force"] = "true"
		}
		reviewEvent(l.Meta, audit.EventApply, fmt.Sprintf("%d path(s) applied to target/", len(res.Applied)), d)
		for _, f := range gitleft.Compare(before, gitleft.Scan([]string{l.Meta.Target})) {
			reviewEvent(l.Meta, audit.EventViolation, f.String()+"; arrived with agentbox apply", map[string]string{"path": f.Path, "git": f.What})
			if warnings != nil {
				fmt.Fprintf(warnings, "agentbox: warning: %s: %s, arrived with the apply; git would run it: review it, or %s\n",
					shellquote.Sanitize(f.Path), shellquote.Sanitize(f.What), shellquote.Command(f.Command()))
			}
		}
	}
	return res, err
}

// GitSummary is what changed inside one repository's .git directory, in
// one line ("2 commits on main, index changed") and the paths it stands
// for.
type GitSummary = gitsum.Summary

// LayerGitSummary separates the changes of run's layer inside .git
// directories from the others (rest, in order) and summarises them per
// repository, reading refs and commits from target/ and the layer (no git
// is run).
func LayerGitSummary(store, run string, cs []layer.Change) (rest []layer.Change, sums []GitSummary, err error) {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return nil, nil, err
	}
	in := make([]gitsum.Change, len(cs))
	for i, c := range cs {
		in[i] = gitsum.Change{Path: c.Path, Kind: string(c.Kind)}
	}
	_, sums = gitsum.Split(in, l)
	for _, c := range cs {
		if gitsum.GitDirOf(c.Path) == "" {
			rest = append(rest, c)
		}
	}
	return rest, sums, nil
}

// Discard removes run's layer, recording it in the run's audit log.
func Discard(store, run string) error {
	l, err := layer.Open(storeOr(store), run)
	if err != nil {
		return err
	}
	if err := l.Discard(); err != nil {
		return err
	}
	reviewEvent(l.Meta, audit.EventDiscard, "the layer was discarded", map[string]string{"discarded_by": invoker()})
	return nil
}

// reviewEvent appends an event to the run's audit log (best effort: the
// apply itself stands).
func reviewEvent(m layer.Meta, kind, reason string, detail map[string]string) {
	if m.Audit == "" {
		return
	}
	w, err := audit.OpenKeyed(m.Audit, m.AuditKey)
	if err != nil {
		return
	}
	defer w.Close()
	_ = w.Write(audit.Event{Event: kind, Agent: m.Agent, Role: m.Role, Run: m.Run, Reason: reason, Detail: detail})
}

// invoker names who runs agentbox: user name and uid.
func invoker() string {
	uid := os.Getuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username + " (uid " + strconv.Itoa(uid) + ")"
	}
	return "uid " + strconv.Itoa(uid)
}
