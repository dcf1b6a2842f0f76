package gitwire

import (
	"fmt"
	"strings"
)

// DefaultProtected are the refs no push may delete when Approval.Protected
// is nil: the usual default branches and every tag.
var DefaultProtected = []string{"refs/heads/main", "refs/heads/master", "refs/tags/*"}

// Approval is what a push was approved to do. The zero value approves
// nothing: every update is refused.
//
// Refs and Protected are full ref names or patterns with one '*', which
// matches any run of characters, slashes included (git's refspec glob):
// "refs/heads/feature/*" matches refs/heads/feature/a/b.
type Approval struct {
	// Refs are the refs the push may update.
	Refs []string
	// Create allows an update that creates one of Refs.
	Create bool
	// Delete allows deleting one of Refs that is not protected; a
	// protected ref is never deleted.
	Delete bool
	// Protected are the refs never deleted; nil means DefaultProtected,
	// an empty non-nil slice means none.
	Protected []string
}

// Match reports whether ref matches pattern: equal, or, for a pattern with
// one '*', the same text before and after it with anything in between.
func Match(pattern, ref string) bool {
	before, after, glob := strings.Cut(pattern, "*")
	if !glob {
		return pattern == ref
	}
	return len(ref) >= len(before)+len(after) && strings.HasPrefix(ref, before) && strings.HasSuffix(ref, after)
}

// validate refuses patterns Match would read wrongly.
func (a *Approval) validate() error {
	for _, list := range [][]string{a.Refs, a.Protected} {
		for _, p := range list {
			if strings.Count(p, "*") > 1 {
				return fmt.Errorf("approval pattern %q: at most one '*'", p)
			}
			if !strings.HasPrefix(p, "refs/") {
				return fmt.Errorf("approval pattern %q: not a full ref under refs/", p)
			}
		}
	}
	return nil
}

func (a *Approval) approved(ref string) bool {
	for _, p := range a.Refs {
		if Match(p, ref) {
			return true
		}
	}
	return false
}

// IsProtected reports whether ref is one no push may delete under a.
func (a *Approval) IsProtected(ref string) bool {
	prot := a.Protected
	if prot == nil {
		prot = DefaultProtected
	}
	for _, p := range prot {
		if Match(p, ref) {
			return true
		}
	}
	return false
}

// CheckCommands holds the commands of req against a, everything but the
// fast-forward (which needs the pack: Guard and Check do both). It returns
// the first refusal, or nil.
func (a *Approval) CheckCommands(req *Request) error {
	if err := a.validate(); err != nil {
		return &RefusedError{Reason: ReasonNotApproved, Detail: err.Error(), Offset: -1}
	}
	seen := map[string]bool{}
	for _, c := range req.Commands {
		if seen[c.Ref] {
			return &RefusedError{Ref: c.Ref, Reason: ReasonMalformed, Detail: "ref updated twice in one push", Offset: -1}
		}
		seen[c.Ref] = true
		switch {
		case c.IsDelete() && a.IsProtected(c.Ref):
			return &RefusedError{Ref: c.Ref, Reason: ReasonDeleteProtected, Detail: "protected", Offset: -1}
		case !a.approved(c.Ref):
			return &RefusedError{Ref: c.Ref, Reason: ReasonNotApproved, Detail: "approved: " + approvedList(a.Refs), Offset: -1}
		case c.IsDelete() && !a.Delete:
			return &RefusedError{Ref: c.Ref, Reason: ReasonDelete, Offset: -1}
		case c.IsCreate() && !a.Create:
			return &RefusedError{Ref: c.Ref, Reason: ReasonCreate, Offset: -1}
		}
	}
	return nil
}

func approvedList(refs []string) string {
	if len(refs) == 0 {
		return "none"
	}
	return strings.Join(refs, ", ")
}
