package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/internal/programs"
)

// A foreign format whose rules have the shape of agentbox's own (a tool, a
// command prefix, a glob over the command text, an exact action) does not
// build the engine's rules itself: it describes each as a RuleSpec, the
// core compiles the specs into a RuleSet (the same matchers, specificity
// and reason text a native rule gets), and the format asks the set which
// rules match a query and applies its own order to them (first match,
// deny before allow, most specific...). Chorus profiles, Codelia's
// permissions and Forge's rule files (internal/policyfmt/chorus,
// .../codelia, .../forge) are read this way.

// RuleSpec is one rule as a format describes it, for RuleSet.Add to
// compile: a foreign format's rule, or one of agentbox's own (the native
// parser fills the same fields from a rule's keys). All the conditions
// given must hold for the rule to match; each is read as the native rule
// key of the same name reads it (docs/policy.md).
type RuleSpec struct {
	// Ref names the rule in results and explanations (ID, Layer, Source:
	// file:line); its Description is the rule's description.
	Ref      RuleRef
	Decision Decision
	// Tools are the tools the rule applies to, as a rule's tool: names
	// them (bash and shell mean every command tool, read means view...),
	// taken as given (the format checks the names); nil: any tool.
	Tools []string
	// Command is a command prefix of one or two words (command:).
	Command string
	// CommandGlob is a glob over the command text (glob: without tool:).
	CommandGlob string
	// ActionGlob is a glob over the whole action string (glob: tool:...).
	ActionGlob string
	// Action is one exact action string (action:).
	Action string
	// CommandOnly: the rule matches only command subjects (exec, git and
	// bash actions), as command and glob rules do.
	CommandOnly bool
	// ToolRegex is a regex the tool name must match as a whole (Forge's
	// tool:^bash.*, given with its tail); DetailRegex one the action's
	// detail must match as a whole (the command text for commands, the
	// path for path tools).
	ToolRegex, DetailRegex string
	// Categories: the action has one of these categories (read, write,
	// execute, network, destructive; also Forge's *_operations).
	Categories []string
	// Regex is a regex the whole action string must match (regex:, a
	// Chorus pattern), with the lookahead forms Go's RE2 lacks translated.
	Regex string
	// Path is a gitignore-style glob over a path action's
	// workspace-relative path (path:).
	Path string
	// Program is a glob over the file the program runs from (program:).
	Program string
	// Kind: the program is of one of these kinds (kind:, the names of
	// internal/programs: read-only, interpreter, ...).
	Kind []string
	// Host is a host pattern over connection actions (host:).
	Host string
	// Instead says what to do instead of what the rule refuses (instead:).
	Instead string
	// Approver is the approver role whose members may answer the rule's
	// asks (approver:).
	Approver string
	// Undoable: an ask that a run with checkpoints on allows (undoable:).
	Undoable bool
}

// RuleSet is a format's rules compiled by the core: Add them in load
// order, then ask Match. Rules are addressed by their index in Add
// order. A set is immutable once Match was first called, and then safe
// for concurrent use.
type RuleSet struct {
	sub   Engine
	index sync.Once
}

// Add compiles s as the set's next rule. The error names the bad value
// (the caller adds the file and line); a spec with several bad values
// gives the first (AddAll gives each).
func (rs *RuleSet) Add(s RuleSpec) error {
	if errs := rs.AddAll(s); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// AddAll compiles s as the set's next rule and returns every problem
// with it, in the order of RuleSpec's fields; each error has a method
// Field() string naming the rule key it is about (command, glob, action,
// regex, category, path, program, kind, host), so a parser can point at
// that key's line. Nothing is added when there is a problem.
func (rs *RuleSet) AddAll(s RuleSpec) []error {
	r, errs := compileSpec(s, len(rs.sub.rules))
	if len(errs) > 0 {
		return errs
	}
	rs.sub.rules = append(rs.sub.rules, r)
	return nil
}

// fieldError is a problem with one key of a rule spec (AddAll).
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// Field names the rule key the problem is about.
func (e *fieldError) Field() string { return e.field }

// compileSpec compiles s into a rule with the given load order: the one
// place a rule's matchers are built from their text.
func compileSpec(s RuleSpec, order int) (*rule, []error) {
	r := &rule{dec: s.Decision, desc: s.Ref.Description, ref: s.Ref, cmdOnly: s.CommandOnly, order: order,
		instead: s.Instead, approver: s.Approver, undoable: s.Undoable}
	var errs []error
	bad := func(field string, err error) { errs = append(errs, &fieldError{field, err}) }
	for _, t := range s.Tools {
		r.tools = append(r.tools, mapToolName(t)...)
	}
	if s.Command != "" {
		w := strings.Fields(s.Command)
		if len(w) > 2 {
			bad("command", fmt.Errorf("command %q must be 1 or 2 words", s.Command))
		}
		r.words = w
	}
	for _, x := range []struct {
		field, src string
		dst        **glob
	}{{"glob", s.CommandGlob, &r.cmdGlob}, {"glob", s.ActionGlob, nil}} {
		if x.src == "" {
			continue
		}
		g, err := compileGlob(x.src)
		switch {
		case err != nil:
			bad(x.field, err)
		case x.dst != nil:
			*x.dst = g
		default:
			r.act = newActMatch(nil, g)
		}
	}
	if s.Action != "" {
		if _, _, err := ParseAction(s.Action); err != nil {
			bad("action", err)
		}
		r.exact = s.Action
	}
	for _, x := range []struct {
		src string
		re  **fullRegex
	}{{s.ToolRegex, &r.toolRe}, {s.DetailRegex, &r.detRe}} {
		if x.src == "" {
			continue
		}
		re, err := compileFullRegex(x.src)
		if err != nil {
			bad("pattern", err)
			continue
		}
		*x.re = re
	}
	if s.Regex != "" {
		if re, err := compileFullRegex(s.Regex); err != nil {
			bad("regex", err)
		} else {
			r.act = newActMatch(re, nil)
		}
	}
	for _, c := range s.Categories {
		b, ok := parseCategory(c)
		if !ok {
			bad("category", fmt.Errorf("unknown category %q", c))
		}
		r.cats |= b
	}
	if s.Path != "" {
		if g, err := compilePathGlob(s.Path); err != nil {
			bad("path", err)
		} else {
			r.path = g
		}
	}
	for _, name := range s.Kind {
		k, ok := programs.ParseKind(name)
		if !ok {
			bad("kind", fmt.Errorf("unknown program kind %q (want one of %s)", name, strings.Join(programs.KindNames(), ", ")))
		}
		r.kind |= k
	}
	if s.Host != "" {
		if hp, err := compileHostPattern(s.Host); err != nil {
			bad("host", err)
		} else {
			r.host = hp
		}
	}
	if s.Program != "" {
		if g, err := compileProgramGlob(s.Program); err != nil {
			bad("program", err)
		} else {
			r.prog = g
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	r.finish()
	return r, nil
}

// AddRolePatterns adds the regex rules of the built-in role named role
// (the Chorus presets open, standard and locked are those roles), those
// keep accepts (nil: all), with their built-in references; false when
// there is no such role.
func (rs *RuleSet) AddRolePatterns(role string, keep func(Decision) bool) bool {
	roles, _, _ := builtinRoles()
	rd := roles[role]
	if rd == nil {
		return false
	}
	for _, r := range rd.rules {
		if r.act != nil && r.act.re != nil && (keep == nil || keep(r.dec)) {
			c := *r // shares the (lazily compiled) matcher; only the index is the set's
			c.order = len(rs.sub.rules)
			rs.sub.rules = append(rs.sub.rules, &c)
		}
	}
	return true
}

// MatchAction reports whether rule i's regex matches the whole action
// string (false for a rule without one).
func (rs *RuleSet) MatchAction(i int, action string) bool {
	r := rs.sub.rules[i]
	return r.act != nil && r.act.matchView("", action)
}

// Pattern is rule i's regex as written ("" for a rule without one).
func (rs *RuleSet) Pattern(i int) string {
	if r := rs.sub.rules[i]; r.act != nil && r.act.re != nil {
		return r.act.re.src
	}
	return ""
}

// Len is the number of rules in the set (a nil set has none).
func (rs *RuleSet) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.sub.rules)
}

// Ref is rule i's reference (shared, not to be changed: a FormatVerdict
// carries it).
func (rs *RuleSet) Ref(i int) *RuleRef { return &rs.sub.rules[i].ref }

// Decision is rule i's decision.
func (rs *RuleSet) Decision(i int) Decision { return rs.sub.rules[i].dec }

// Reason is the text a result decided by rule i gives, as for a native
// rule: "denied by ID (matcher): description".
func (rs *RuleSet) Reason(i int) string { return rs.sub.rules[i].reason }

// Info describes rule i (policy show); Specificity ranks it as the
// engine does.
func (rs *RuleSet) Info(i int) RuleInfo {
	r := rs.sub.rules[i]
	return RuleInfo{ID: r.ref.ID, Layer: r.ref.Layer.String(), Source: r.ref.Source,
		Decision: r.dec.String(), Matcher: r.text, Description: r.desc, Specificity: r.spec}
}

// Covers reports whether rule d matches every action rule a matches, in
// the cases lint can decide exactly (false when unsure).
func (rs *RuleSet) Covers(d, a int) bool { return covers(rs.sub.rules[d], rs.sub.rules[a]) }

// CoversIn is Covers for rule d of rs and rule a of another set.
func (rs *RuleSet) CoversIn(d int, other *RuleSet, a int) bool {
	return covers(rs.sub.rules[d], other.sub.rules[a])
}

// Tools are the tools rule i applies to, its tool: names as the core
// reads them (nil: any).
func (rs *RuleSet) Tools(i int) []string { return rs.sub.rules[i].tools }

// BindWorkspace makes path actions inside workspace match as
// workspace-relative paths, as native path rules see them.
func (rs *RuleSet) BindWorkspace(workspace string) { rs.sub.workspace = workspace }

// Match appends to dst the index of every rule that matches q, and returns
// it: q.Line (when set) as the format's shell tool sees a command — q.Argv
// as one program start, else the line as a bash action — otherwise
// q.Action. A malformed action is an error.
func (rs *RuleSet) Match(dst []int, q FormatQuery) ([]int, error) {
	var s subject
	if q.Line != "" {
		s = rs.commandSubject(&q)
	} else {
		tool, detail, err := ParseAction(q.Action)
		if err != nil {
			return dst, err
		}
		if isPathTool(tool) {
			detail = rs.sub.relPath(detail)
		}
		s = subject{action: q.Action, tool: tool, detail: detail, cats: toolCategories(tool)}
	}
	return rs.match(dst, &s), nil
}

// MatchSegment appends to dst the index of every rule that matches one
// simple command of a shell line: argv is its words (argv[0] the
// program), seg its text as written, which command globs match.
func (rs *RuleSet) MatchSegment(dst []int, seg string, argv []string) []int {
	items := fromArgv(argv, "")
	if len(items) == 0 {
		return dst
	}
	s, ok := rs.sub.itemSubject(&items[0])
	if !ok {
		return dst
	}
	s.detail, s.cmdline, s.hasCmd = seg, seg, true
	if s.tool == ToolGit {
		s.detail = strings.TrimPrefix(seg, "git ")
	}
	return rs.match(dst, &s)
}

// commandSubject is the subject of a whole command (shell line or argv)
// as a format's shell tool sees it.
func (rs *RuleSet) commandSubject(q *FormatQuery) subject {
	if q.Argv != nil {
		items := fromArgv(q.Argv, "")
		if len(items) > 0 {
			if s, ok := rs.sub.itemSubject(&items[0]); ok {
				return s
			}
		}
	}
	return subject{action: FormatAction(ToolBash, q.Line), tool: ToolBash, detail: q.Line, cats: catExecute}
}

// match appends the indexes of the rules matching s, in Add order.
func (rs *RuleSet) match(dst []int, s *subject) []int {
	rs.index.Do(rs.sub.index)
	var buf [8]*rule
	all := buf[:0]
	st := evalState{trace: &all}
	rs.sub.eval(s, &st)
	start := len(dst)
	for _, r := range all {
		dst = append(dst, r.order)
	}
	// eval visits rules by index, not in order: callers take the first
	slices.Sort(dst[start:])
	return dst
}
