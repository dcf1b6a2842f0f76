package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Session holds the answers given during one run ("always" and
// "remember" answers, and denies that last the run): exact-action rules at
// the session layer that the engine consults before its own rules. It is
// the one mutable part of a run's policy and is owned by the run; the
// Engine value itself never changes after Layers.Engine or WithGrants. A Session is
// safe for concurrent use with decisions.
type Session struct {
	m  atomic.Pointer[map[string]*rule]
	mu sync.Mutex
	n  int
	// changed is called after a rule is added or removed (Notify).
	changed atomic.Pointer[func()]
}

// Notify makes f be called (outside the session's lock) after every
// change of the session's rules, so an approval inbox can show them.
func (s *Session) Notify(f func()) { s.changed.Store(&f) }

func (s *Session) notify() {
	if f := s.changed.Load(); f != nil && *f != nil {
		(*f)()
	}
}

// Session returns the session answers the engine consults.
func (e *Engine) Session() *Session { return e.sess }

func (s *Session) rule(action string) *rule {
	if s == nil {
		return nil
	}
	if m := s.m.Load(); m != nil {
		return (*m)[action]
	}
	return nil
}

func (s *Session) rules() []*rule {
	if s == nil {
		return nil
	}
	m := s.m.Load()
	if m == nil {
		return nil
	}
	out := make([]*rule, 0, len(*m))
	for _, r := range *m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rule) int { return strings.Compare(a.ref.ID, b.ref.ID) })
	return out
}

// Add adds an exact-action rule (an "always" answer). An earlier, stricter
// answer for the same action is never loosened.
func (s *Session) Add(decision Decision, action string) { s.AddBy(decision, action, "") }

// AddBy is Add recording who gave the answer (the approver as audited,
// with the answer) and when, so the rules can be listed with where each
// came from (the approval inbox's rules page).
func (s *Session) AddBy(decision Decision, action, by string) {
	s.mu.Lock()
	defer s.notify()
	defer s.mu.Unlock()
	s.n++
	r := &rule{dec: decision, exact: action, order: 1 << 30,
		ref:  RuleRef{ID: fmt.Sprintf("session:%d", s.n), Layer: LayerSession, Source: "session"},
		desc: "answered \"always\" during this session", by: by, at: time.Now()}
	r.finish()
	old := s.m.Load()
	m := make(map[string]*rule)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	if prev := m[action]; prev != nil && prev.dec > decision {
		return
	}
	m[action] = r
	s.m.Store(&m)
}

// Rules lists the answers given so far, with the ids Remove takes.
func (s *Session) Rules() []RuleInfo {
	var out []RuleInfo
	for _, r := range s.rules() {
		out = append(out, RuleInfo{ID: r.ref.ID, Layer: r.ref.Layer.String(), Source: r.ref.Source,
			Decision: r.dec.String(), Matcher: r.text, Description: r.desc, Specificity: r.spec, By: r.by, At: r.at})
	}
	return out
}

// Remove takes back the answer with this id (as Rules lists it) for the
// rest of the run: the action is decided by the policy again.
func (s *Session) Remove(id string) error {
	s.mu.Lock()
	defer s.notify()
	defer s.mu.Unlock()
	if old := s.m.Load(); old != nil {
		for k, r := range *old {
			if r.ref.ID == id {
				m := make(map[string]*rule, len(*old))
				for k2, v := range *old {
					if k2 != k {
						m[k2] = v
					}
				}
				s.m.Store(&m)
				return nil
			}
		}
	}
	return fmt.Errorf("no session rule %q (see Session.Rules)", id)
}
