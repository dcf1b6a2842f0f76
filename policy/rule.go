package policy

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/programs"
)

// rule is one compiled rule. All of its conditions must hold for it to match.
// Rules are immutable after load.
type rule struct {
	ref  RuleRef
	dec  Decision
	desc string
	// instead says what to do instead of what the rule refuses; it is
	// shown to the agent with the refusal.
	instead string
	text    string // the matcher as written, e.g. `command "git push"`
	reason  string // precomputed reason text for results
	spec    int    // specificity, see specificity()
	order   int    // load order, for stable ties

	tools   []string        // subject tools this rule applies to; nil = any
	words   []string        // command prefix (1-2 words) against argv
	act     *actMatch       // regex or glob against the whole action string
	cmdGlob *glob           // glob against the command text
	cats    catSet          // any of these categories
	path    *pathGlob       // gitignore-style glob against the path of a path action
	prog    *programGlob    // glob against the program's file (see program.go)
	kind    programs.Kind   // the program has one of these kinds (internal/programs)
	host    *hostPattern    // network host pattern against tool:net actions (host.go)
	req     *requestPattern // method, host and path against tool:http actions (request.go)
	exact   string          // exact action string
	// by, at: who added a session rule and when (Session.AddBy).
	by string
	at time.Time
	// toolRe: Forge's "tool:^bash.*" tool patterns; detRe: Forge's
	// "arg:NAME:^regex" against the detail (command text for commands).
	toolRe *fullRegex
	detRe  *fullRegex
	// cmdOnly: the rule matches only command subjects (exec, git, bash).
	cmdOnly bool
	// undoable: an ask that a run with checkpoints on allows, since
	// agentbox undo puts back what the command changes (`undoable: true`).
	undoable bool
	// approver: the approver role whose members may answer the rule's
	// asks (`approver: admin`).
	approver string
}

// actMatch is a Chorus regex or a glob matched against a full action string
// (or one of its views, see Engine.eval). tool is the tool its literal prefix
// pins ("" when the pattern can match several tools).
type actMatch struct {
	re     *fullRegex
	g      *glob
	prefix string
	exact  bool
	tool   string
	// detailPrefix is the literal prefix past "tool:<tool>:".
	detailPrefix string
	// The same pattern without its leading "tool:<tool>:", so views of an
	// action can be matched without building the view string; nil when the
	// pattern does not start with that text literally.
	detRe *fullRegex
	detG  *glob
	// tools, for a regex of the form tool:(A|B|...):..., are the only tools
	// it can match (altTools): the rule is indexed under each instead of
	// being tried against every action.
	tools []string
}

func newActMatch(re *fullRegex, g *glob) *actMatch {
	a := &actMatch{re: re, g: g}
	if re != nil {
		a.prefix, a.exact = re.prefix, re.exact
	} else {
		a.prefix, a.exact = g.prefix, g.exact
	}
	if rest, ok := strings.CutPrefix(a.prefix, "tool:"); ok {
		if t, d, ok := strings.Cut(rest, ":"); ok && t != "" {
			a.tool, a.detailPrefix = t, d
		}
	}
	if a.tool == "" && re != nil && a.prefix == "tool:" {
		a.tools = altTools(re.pos)
	}
	if a.tool != "" {
		head := "tool:" + a.tool + ":"
		src := ""
		if re != nil {
			src = re.src
		} else {
			src = g.src
		}
		if rest, ok := strings.CutPrefix(src, head); ok && !(re != nil && hasTopLevelAlt(src)) {
			if re != nil {
				a.detRe, _ = lazyFullRegex(rest) // compiled at first use; see matchView
			} else {
				a.detG, _ = compileGlob(rest)
			}
		}
	}
	return a
}

// matchView reports whether head+body (a view of an action: head is
// "tool:<tool>:", or "" for the action itself) matches, checking the literal
// prefix before running the matcher, and never building the view string
// when the pattern starts with head literally.
func (a *actMatch) matchView(head, body string) bool {
	if !hasPrefix2(head, body, a.prefix) {
		return false
	}
	if head != "" {
		switch {
		case a.detRe != nil && a.detRe.compileNow() == nil:
			return a.detRe.match(body)
		case a.detG != nil:
			return a.detG.match(body)
		}
		body = head + body
	}
	if a.re != nil {
		return a.re.match(body)
	}
	return a.g.match(body)
}

// hasPrefix2 reports whether a+b starts with p, without concatenating.
func hasPrefix2(a, b, p string) bool {
	if len(p) <= len(a) {
		return strings.HasPrefix(a, p)
	}
	return strings.HasPrefix(p, a) && strings.HasPrefix(b, p[len(a):])
}

// Specificity scale: an exact action beats everything; otherwise twice the
// number of literal characters the rule pins in command-line coordinates
// (for git actions "git <detail>", so `command: git push`, regex
// `tool:git:push .*` and glob `git push *` rank alike), plus one if the rule
// pins the tool.
const specExact = 1 << 20

func (r *rule) computeSpec() {
	best := 0
	up := func(v int) {
		if v > best {
			best = v
		}
	}
	pinned := 0
	if r.tools != nil {
		pinned = 1
	}
	up(pinned)
	if r.exact != "" {
		up(specExact + len(r.exact))
	}
	if len(r.words) > 0 {
		n := len(strings.Join(r.words, " ")) + 1 // word boundary counts
		up(2*n + 1)
	}
	if r.act != nil {
		switch {
		case r.act.exact:
			up(specExact + len(r.act.prefix))
		case r.act.tool != "":
			n := len(r.act.detailPrefix)
			if r.act.tool == ToolGit {
				n += len("git ")
			}
			up(2*n + 1)
		}
	}
	if r.detRe != nil {
		up(2*len(r.detRe.prefix) + pinned)
	}
	if r.cmdGlob != nil {
		if r.cmdGlob.exact {
			up(specExact + len(r.cmdGlob.prefix))
		} else {
			up(2*len(r.cmdGlob.prefix) + 1)
		}
	}
	if r.path != nil {
		up(2*r.path.literal + pinned)
	}
	if r.prog != nil {
		up(2*r.prog.g.literal + 1)
	}
	if r.host != nil {
		up(r.host.spec())
	}
	if r.req != nil {
		up(r.req.spec())
	}
	if r.kind != 0 {
		// Below every rule naming a program: a command rule for one of
		// the kind's programs (find -delete asks) is more specific.
		up(3)
	}
	r.spec = best
}

// bareProgramSpec is the specificity of a command rule naming just prog: an
// allow rule must beat it to lift a FloorAskUnlessExplicit floor.
func bareProgramSpec(prog string) int { return 2*(len(prog)+1) + 1 }

// appliesTo reports whether the rule's tool filter admits tool.
func (r *rule) appliesTo(tool string) bool {
	if r.tools == nil {
		return true
	}
	for _, t := range r.tools {
		if t == tool {
			return true
		}
	}
	return false
}

// matchWords: the first len(r.words) argv words equal the rule's words
// (argv[0] compared by base name, so "/bin/rm" is "rm").
func (r *rule) matchWords(s *subject) bool {
	words := s.words
	if s.tool == ToolGit {
		// Argv keeps git's global options ("git -C x push"); the detail
		// starts at the subcommand.
		if r.words[0] != "git" {
			return false
		}
		if len(r.words) == 1 {
			return true
		}
		sub, _, _ := strings.Cut(s.detail, " ")
		return sub == r.words[1]
	}
	if len(words) < len(r.words) {
		return false
	}
	if baseName(words[0]) != r.words[0] {
		return false
	}
	for i := 1; i < len(r.words); i++ {
		if words[i] != r.words[i] {
			return false
		}
	}
	return true
}

// matchRest checks every condition except act/exact (which the caller has
// checked against the right view) and the tool filter.
func (r *rule) matchRest(s *subject) bool {
	if r.cmdOnly && !isCommandTool(s.tool) {
		return false
	}
	if len(r.words) > 0 && !r.matchWords(s) {
		return false
	}
	if r.kind != 0 && !programs.Any(s.program(), r.kind) {
		return false
	}
	if r.host != nil && (s.tool != ToolNet || !r.host.match(s.detail)) {
		return false
	}
	if r.req != nil && (s.tool != ToolHTTP || !r.req.match(s.detail)) {
		return false
	}
	if r.cmdGlob != nil || r.detRe != nil {
		txt := s.detail
		if isCommandTool(s.tool) {
			txt = s.cmdText()
		}
		if r.cmdGlob != nil && !r.cmdGlob.match(txt) {
			return false
		}
		if r.detRe != nil && !r.detRe.match(txt) {
			return false
		}
	}
	if r.cats != 0 && r.cats&s.cats == 0 {
		return false
	}
	if r.path != nil {
		if !isPathTool(s.tool) || !r.path.match(s.detail) {
			return false
		}
	}
	if r.prog != nil && !r.prog.match(s.progAbs, s.progRel) {
		return false
	}
	if r.toolRe != nil && !r.toolRe.match(s.tool) && !(isCommandTool(s.tool) && r.toolRe.match(ToolBash)) {
		return false
	}
	return true
}

// describe renders the matcher for explanations and `policy show`.
func (r *rule) describe() string {
	var parts []string
	if r.tools != nil {
		parts = append(parts, "tool "+strings.Join(r.tools, ","))
	}
	if r.exact != "" {
		parts = append(parts, fmt.Sprintf("action %q", r.exact))
	}
	if len(r.words) > 0 {
		parts = append(parts, fmt.Sprintf("command %q", strings.Join(r.words, " ")))
	}
	if r.act != nil {
		if r.act.re != nil {
			parts = append(parts, fmt.Sprintf("regex %q", r.act.re.src))
		} else {
			parts = append(parts, fmt.Sprintf("glob %q", r.act.g.src))
		}
	}
	if r.cmdGlob != nil {
		parts = append(parts, fmt.Sprintf("command_glob %q", r.cmdGlob.src))
	}
	if r.cats != 0 {
		parts = append(parts, "category "+strings.Join(catNames(r.cats), ","))
	}
	if r.path != nil {
		parts = append(parts, fmt.Sprintf("path %q", r.path.src))
	}
	if r.prog != nil {
		parts = append(parts, fmt.Sprintf("program %q", r.prog.g.src))
	}
	if r.kind != 0 {
		parts = append(parts, "kind "+r.kind.String())
	}
	if r.host != nil {
		parts = append(parts, fmt.Sprintf("host %q", r.host.src))
	}
	if r.req != nil {
		parts = append(parts, r.req.String())
	}
	if r.toolRe != nil {
		parts = append(parts, fmt.Sprintf("tool regex %q", r.toolRe.src))
	}
	if r.detRe != nil {
		parts = append(parts, fmt.Sprintf("argument regex %q", r.detRe.src))
	}
	if len(parts) == 0 {
		return "any action"
	}
	return strings.Join(parts, " ")
}

func (r *rule) finish() {
	r.text = r.describe()
	r.ref.Description, r.ref.Instead, r.ref.Approver = r.desc, r.instead, r.approver
	r.computeSpec()
	r.setReason()
}

// setReason writes the reason a decision by r gives: its verb, id,
// matcher text and description. Of a finished rule only the reason
// depends on its id (mergeRole renames a hidden parent's rules).
func (r *rule) setReason() {
	verb := ""
	switch r.dec {
	case Allow:
		verb = "allowed"
	case Ask:
		verb = "needs approval"
	case Deny:
		verb = "denied"
	}
	if r.desc != "" {
		r.reason = verb + " by " + r.ref.ID + " (" + r.text + "): " + r.desc
	} else {
		r.reason = verb + " by " + r.ref.ID + " (" + r.text + ")"
	}
}

// hasTopLevelAlt reports whether a regex has a '|' outside every group and
// class ("a|b"): cutting a literal off its front would then change its
// meaning.
// altTools returns the tool names a regex of the form
// tool:(A|B|...):REST can match — the alternatives expanded to literal
// strings, each without ':' — or nil when the pattern has any other shape
// (case folding, a repetition or a large class in the tool part, no ':'
// after it).
// The names are exact: the action "tool:T:..." can match only if T is one
// of them.
func altTools(pos string) []string {
	re, err := syntax.Parse(pos, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 3 {
		return nil
	}
	lit := func(r *syntax.Regexp) (string, bool) {
		if r.Op != syntax.OpLiteral || r.Flags&syntax.FoldCase != 0 {
			return "", false
		}
		return string(r.Rune), true
	}
	if head, ok := lit(re.Sub[0]); !ok || head != "tool:" {
		return nil
	}
	// The tool part runs up to the first literal that starts with ':'.
	k := 1
	for ; k < len(re.Sub); k++ {
		if next, ok := lit(re.Sub[k]); ok && strings.HasPrefix(next, ":") {
			break
		}
	}
	if k == 1 || k == len(re.Sub) {
		return nil
	}
	names, ok := literalSet(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1:k]}, 64)
	if !ok || len(names) == 0 {
		return nil
	}
	for _, n := range names {
		if n == "" || strings.Contains(n, ":") {
			return nil
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// literalSet returns every string re matches when that is a finite set of
// at most limit strings built from literals, small classes, concatenation,
// alternation, optional parts and groups; ok is false otherwise.
func literalSet(re *syntax.Regexp, limit int) (set []string, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpCapture:
		return literalSet(re.Sub[0], limit)
	case syntax.OpQuest:
		s, ok := literalSet(re.Sub[0], limit-1)
		if !ok {
			return nil, false
		}
		return append(s, ""), true
	case syntax.OpCharClass:
		// A class of a few runes ("a|b" parses as [ab]).
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(set) == limit {
					return nil, false
				}
				set = append(set, string(r))
			}
		}
		return set, true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := literalSet(sub, limit)
			if !ok || len(set)+len(s) > limit {
				return nil, false
			}
			set = append(set, s...)
		}
		return set, true
	case syntax.OpConcat:
		set = []string{""}
		for _, sub := range re.Sub {
			s, ok := literalSet(sub, limit)
			if !ok || len(set)*len(s) > limit {
				return nil, false
			}
			var next []string
			for _, a := range set {
				for _, b := range s {
					next = append(next, a+b)
				}
			}
			set = next
		}
		return set, true
	}
	return nil, false
}

func hasTopLevelAlt(src string) bool {
	depth, alt := 0, false
	walkRegex(src, func(_ int, c byte) bool {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			alt = depth == 0
		}
		return alt
	})
	return alt
}
