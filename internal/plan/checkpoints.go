package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/checkpoint"
)

// Checkpoints is how a run's checkpoints are taken: the store, the areas
// (target/ and feedback/), what is left out and the store's budget.
type Checkpoints struct {
	Dir     string
	Areas   []checkpoint.Area
	Options checkpoint.Options
	Budget  checkpoint.Budget
}

// planCheckpoints fills p.Checkpoints from the input and the role. The
// store must lie outside the workspace and every writable grant: what a
// sandbox can write, an undo would read back as the adversary wrote it.
func (p *Plan) planCheckpoints(in Input) error {
	c := p.Role.Checkpoints.Overlay(in.CheckpointLimits)
	if !in.Checkpoints || (c.Off && !in.CheckpointsExplicit) {
		return nil
	}
	dir := in.CheckpointStore
	if dir == "" {
		dir = checkpoint.DefaultDir(p.Boundary.Workspace)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &OptionError{Option: "checkpoint-store", Value: dir, Err: err}
	}
	real := abs
	if r, err := boundary.ResolveExisting(abs); err == nil {
		real = r
	}
	exposed := func(w string) error {
		return &OptionError{Option: "checkpoint-store", Value: dir,
			Err: fmt.Errorf("the checkpoint store must lie outside the workspace and every writable area (%s): the agent could rewrite what an undo puts back", w)}
	}
	// the sandbox must not write into the store (any grant: the boundary
	// decides), nor the store hold an area it restores into
	if w, area := p.Boundary.Writable(real); w {
		return exposed(area)
	}
	for _, w := range append([]string{p.Boundary.Workspace}, append(p.WritableRoots(), p.Role.FS.ExtraWrite...)...) {
		if within(real, w) || within(w, real) {
			return exposed(w)
		}
	}
	cp := &Checkpoints{Dir: abs, Budget: checkpoint.DefaultBudget,
		Options: checkpoint.Options{ExcludeNames: checkpoint.DefaultExcludeNames, MaxFileSize: checkpoint.DefaultMaxFileSize}}
	if c.Exclude != nil {
		cp.Options.ExcludeNames = c.Exclude
	}
	if c.MaxFileSize > 0 {
		cp.Options.MaxFileSize = c.MaxFileSize
	}
	if c.MaxBytes > 0 {
		cp.Budget.MaxBytes = c.MaxBytes
	}
	if c.MaxAge > 0 {
		cp.Budget.MaxAge = c.MaxAge
	}
	for _, a := range []checkpoint.Area{{Name: "target", Dir: p.Boundary.Target}, {Name: "feedback", Dir: p.Boundary.Feedback}} {
		if fi, err := os.Stat(a.Dir); err == nil && fi.IsDir() {
			cp.Areas = append(cp.Areas, a)
		}
	}
	if len(cp.Areas) == 0 {
		return &OptionError{Option: "checkpoints", Err: errors.New("the workspace has neither target/ nor feedback/ to checkpoint")}
	}
	p.Checkpoints = cp
	return nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (rel == "." || len(rel) < 3 || rel[:3] != "../")
}
