package plan

import (
	"fmt"
	"path/filepath"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/layer"
)

// Review is how a review run keeps its writes: target/ is an overlay whose
// upper layer is a directory of the run's own under Root.
type Review struct {
	Root string // the layers' directory
}

// planReview fills p.Review when the run reviews (--review, or the role's
// review: true). The layers' directory must be out of the sandbox's reach:
// an apply reads back what it holds, and the agent must not be able to
// put anything there but through the overlay.
func (p *Plan) planReview(in Input) error {
	if !in.Review && !p.Role.Review {
		return nil
	}
	dir := in.ReviewDir
	if dir == "" {
		dir = layer.DefaultRoot()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &OptionError{Option: "review-store", Value: dir, Err: err}
	}
	real := abs
	if r, err := boundary.ResolveExisting(abs); err == nil {
		real = r
	}
	if w, area := p.Boundary.Writable(real); w {
		return &ExposedError{What: "review layer store", Path: abs, Area: area, Access: "write"}
	}
	if rd, area := p.Boundary.Readable(real); rd {
		return &ExposedError{What: "review layer store", Path: abs, Area: area, Access: "read"}
	}
	for _, w := range append([]string{p.Boundary.Workspace}, p.WritableRoots()...) {
		if within(real, w) || within(w, real) {
			return &OptionError{Option: "review-store", Value: dir,
				Err: fmt.Errorf("the review layers must lie outside the workspace and every writable area (%s)", w)}
		}
	}
	p.Review = &Review{Root: abs}
	return nil
}
