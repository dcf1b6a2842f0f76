package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/programs"
)

// LoadOptions selects a role and the policy files layered on top of it.
type LoadOptions struct {
	Role       string   // role name, e.g. "developer"
	Workspace  string   // "" = none; else <Workspace>/agentbox.yaml is the project layer (if it exists)
	UserFile   string   // "" = $XDG_CONFIG_HOME/agentbox/policy.yaml (or ~/.config/...) if it exists
	NoUserFile bool     // skip the user layer entirely
	Files      []string // --policy files, in order (LayerFile)
	// Discover also loads the policy files other agent tools keep, where
	// they keep them (policy/load, discover.go): in the user's HOME (layer user) and in
	// the workspace and ProjectDir (layer project): Claude Code settings,
	// Codex rules, Codelia and Forge permission files, a Chorus agent.json.
	Discover   bool
	ProjectDir string // the project the agent works in ("" = the workspace only)
	Home       string // the user's HOME for discovery ("" = $HOME)
	// Untrusted reports files the sandboxed agent could have written
	// (inside the workspace's writable areas): only their deny and ask
	// rules count, they set no default, and their allows are ignored.
	Untrusted func(path string) bool
	// Checkpoints says the run takes checkpoints (agentbox run's default):
	// undoable asks allow, unless the role turns checkpoints off.
	Checkpoints bool
}

// Engine is a compiled, immutable role policy: the merged role plus every
// rule from every layer, indexed for fast decisions. Nothing changes it
// after Layers.Engine (WithGrants returns a new one); the answers given during a run live in its
// Session. Decide and Explain are safe for concurrent use.
type Engine struct {
	info RoleInfo
	// approvers: who may grant what (approvers.go).
	approvers *Approvers
	// checkpoints: the run takes checkpoints, so undoable asks allow.
	checkpoints bool
	// overwriteRules: a rule names tool overwrite (withOverwrites).
	overwriteRules bool
	rules          []*rule            // every rule, load order
	cmdIndex       map[string][]*rule // command-prefix rules by program name
	gitIndex       map[string][]*rule // "git <sub>" rules by subcommand
	// command globs whose literal prefix holds a whole first word ("npm run *"),
	// by that word; other command globs ("rg*", "*rm -rf*") are in byTool.
	globIndex map[string][]*rule
	// regex/glob action rules pinned to a tool whose literal detail prefix
	// holds a whole first word ("tool:git:push .*"), by tool then word.
	actIndex map[string]map[string][]*rule
	byTool   map[string][]*rule
	anyRules []*rule
	exact    map[string][]*rule

	// sess holds the answers given during the run; it is the one part
	// that changes, and lives outside the engine's own (immutable) value.
	sess      *Session
	defWhy    string // why the default is what it is
	workspace string // absolute, clean; "" if none
	// workspaceReal is workspace with symlinks resolved ("" if the same):
	// the exec supervisor reports program files by their real path.
	workspaceReal string
	files         []string // policy files that were loaded, lowest layer first
	roleFrom      string   // source of the role definition
	agents        map[string]*AgentProfile
	discovered    []string // files discovery loaded (trusted)
	untrusted     []string // ... and loaded as deny/ask only
	formats       []Format // policy files in other tools' formats (formats.go)
	opts          LoadOptions
	wouldRead     func() []string // Layers.WouldRead
}

// Result is the outcome of a decision, with enough context to explain it.
// Rule points into the engine's immutable rule set; do not modify it.
type Result struct {
	Decision Decision
	Action   string
	Rule     *RuleRef // nil when the role default decided
	Reason   string
	Floor    string   // why a floor raised the decision, if it did
	Segments []Result // per-Item results for compound input
}

// Errors is a list of problems found while loading or validating policy
// files; Error joins them one per line.
type Errors []error

func (e Errors) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// ProjectFile is the project policy path for a workspace.
func ProjectFile(workspace string) string { return filepath.Join(workspace, "agentbox.yaml") }

// LoadOptions returns the options the engine was loaded with (to load it
// again with a file changed: package remember).
func (e *Engine) LoadOptions() LoadOptions { return e.opts }

// WouldRead lists every place the load of this engine, or a later one
// without --no-user-policy or --no-discover, would read a policy layer
// from, whether or not a file is there now (policy/load finds them). A
// run refuses grants that let the sandbox write any of them: a file the
// agent creates there would be trusted by the next run.
func (e *Engine) WouldRead() []string {
	if e.wouldRead == nil {
		return nil
	}
	return e.wouldRead()
}

// UnknownRoleError is returned by Layers.Engine when no layer defines the role
// asked for.
type UnknownRoleError struct {
	Role  string
	Known []string // the roles the layers define, for the message
}

func (e *UnknownRoleError) Error() string {
	return fmt.Sprintf("unknown role %q (known: %s)", e.Role, strings.Join(e.Known, ", "))
}

// resolveRole merges name's extends chain, base first.
func resolveRole(regs map[string]*roleDef, name string) (*roleDef, error) {
	var chain []*roleDef
	seen := map[string]bool{}
	cur := name
	var from *roleDef
	for cur != "" {
		rd, ok := regs[cur]
		if !ok {
			if from == nil {
				return nil, &UnknownRoleError{Role: cur, Known: visibleRoles(regs)}
			}
			return nil, fmt.Errorf("%s:%d: role %q extends unknown role %q", from.file, from.extendsLine, from.name, cur)
		}
		if seen[cur] {
			return nil, fmt.Errorf("%s:%d: role %q: extends cycle through %q", from.file, from.extendsLine, from.name, cur)
		}
		seen[cur] = true
		chain = append(chain, rd)
		from = rd
		cur = rd.extends
	}
	merged := chain[len(chain)-1]
	for i := len(chain) - 2; i >= 0; i-- {
		merged = mergeRole(merged, chain[i])
	}
	return merged, nil
}

func visibleRoles(regs map[string]*roleDef) []string {
	var out []string
	for n, rd := range regs {
		if !rd.hidden {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// mergeRole applies child on top of parent: scalar fields the child sets win,
// lists of restrictions (read-only carve-outs, deletion rules, env) are
// unioned, and the child's rules come after the parent's (decisions between
// them follow the normal specificity order; a parent's deny still denies).
func mergeRole(parent, child *roleDef) *roleDef {
	out := *child
	out.info = parent.info
	out.info.Name = child.name
	out.info.Extends = child.extends
	if child.info.Description != "" {
		out.info.Description = child.info.Description
	}
	out.def = parent.def
	if child.def != nil {
		out.def = child.def
	}
	c := child.info
	if child.hasFS {
		fs := &out.info.FS
		for _, p := range []struct {
			dst *Access
			src Access
		}{{&fs.Context, c.FS.Context}, {&fs.Target, c.FS.Target}, {&fs.Feedback, c.FS.Feedback}, {&fs.OwnAgent, c.FS.OwnAgent}, {&fs.OtherAgents, c.FS.OtherAgents}} {
			if p.src != "" {
				*p.dst = p.src
			}
		}
		fs.ReadOnly = union(fs.ReadOnly, c.FS.ReadOnly)
		fs.ExtraRead = union(fs.ExtraRead, c.FS.ExtraRead)
		fs.ExtraExec = union(fs.ExtraExec, c.FS.ExtraExec)
		fs.ExtraWrite = union(fs.ExtraWrite, c.FS.ExtraWrite)
	}
	out.hasFS = parent.hasFS || child.hasFS
	if child.hasNet {
		out.info.Network = c.Network
	}
	if child.hasHostCaches {
		out.info.HostCaches, out.hasHostCaches = c.HostCaches, true
	}
	out.info.Programs = mergePrograms(parent.info.Programs, c.Programs)
	if child.hasUnknownPrograms {
		out.info.UnknownPrograms, out.hasUnknownPrograms = c.UnknownPrograms, true
	}
	if child.hasReview {
		out.info.Review, out.hasReview = c.Review, true
	}
	if child.hasCheckpoints {
		out.info.Checkpoints = out.info.Checkpoints.Overlay(c.Checkpoints)
		if child.checkpointsEnabledSet {
			out.info.Checkpoints.Off = c.Checkpoints.Off // enabled: true turns them back on
		}
		out.hasCheckpoints = true
	}
	if child.hasLimits {
		l := &out.info.Limits
		if c.Limits.MemoryBytes != 0 {
			l.MemoryBytes = c.Limits.MemoryBytes
		}
		if c.Limits.CPUs != 0 {
			l.CPUs = c.Limits.CPUs
		}
		if c.Limits.Pids != 0 {
			l.Pids = c.Limits.Pids
		}
		if c.Limits.MaxFileSize != 0 {
			l.MaxFileSize = c.Limits.MaxFileSize
		}
		if c.Limits.NoFile != 0 {
			l.NoFile = c.Limits.NoFile
		}
		if c.Limits.Timeout != 0 {
			l.Timeout = c.Limits.Timeout
		}
		if c.Limits.ApprovalWait != 0 {
			l.ApprovalWait = c.Limits.ApprovalWait
		}
	}
	if child.hasGit {
		out.info.Git = c.Git
	}
	out.info.Env = union(out.info.Env, c.Env)
	out.info.InjectEnv = union(out.info.InjectEnv, c.InjectEnv)
	out.info.Deletions.Forbidden = union(out.info.Deletions.Forbidden, c.Deletions.Forbidden)
	out.info.Deletions.RequireApproval = union(out.info.Deletions.RequireApproval, c.Deletions.RequireApproval)
	out.info.Deletions.AutoApprove = union(out.info.Deletions.AutoApprove, c.Deletions.AutoApprove)
	rules := make([]*rule, 0, len(parent.rules)+len(child.rules))
	var copies []rule // a hidden parent's rules, renamed: one allocation
	builtinSrc := "builtin:" + child.name
	if parent.hidden {
		copies = make([]rule, len(parent.rules))
	}
	for i, r := range parent.rules {
		if parent.hidden {
			cp := &copies[i]
			*cp = *r
			cp.ref.ID = child.name + "/" + r.ref.ID
			if strings.HasPrefix(cp.ref.Source, "builtin:") {
				cp.ref.Source = builtinSrc
			}
			cp.setReason() // text, specificity: as the parent's
			r = cp
		}
		rules = append(rules, r)
	}
	out.rules = append(rules, child.rules...)
	return &out
}

func union(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append([]string(nil), a...)
	for _, s := range b {
		dup := false
		for _, t := range out {
			if s == t {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}

// build compiles the merged role and the file layers into an Engine.
func build(role *roleDef, defs []*fileDef) *Engine {
	e := &Engine{info: role.info, roleFrom: role.source, sess: &Session{}}
	e.info.Default = Ask
	e.defWhy = fmt.Sprintf("role %s default", role.name)
	if role.def != nil {
		e.info.Default = *role.def
	}
	var rules []*rule
	rules = append(rules, role.rules...)
	rules = append(rules, roleDerivedRules(role)...)
	for _, fd := range defs {
		e.files = append(e.files, fd.path)
		if fd.format != "agentbox" && fd.format != "" {
			continue // decided by its own document: a format layer (formats.go)
		}
		rules = append(rules, fd.rules...)
		if fd.def != nil {
			e.info.Default = *fd.def
			e.defWhy = fmt.Sprintf("default set at %s:%d", fd.path, fd.defLine)
		}
	}
	e.rules = rules
	for _, r := range rules {
		if slices.Contains(r.tools, ToolOverwrite) {
			e.overwriteRules = true
		}
	}
	e.index()
	e.formats = buildFormats(defs)
	var files []string
	for _, fd := range defs {
		switch {
		case fd.untrusted:
			e.untrusted = append(e.untrusted, fd.path)
			continue // not a policy file the run relies on: it only restricts
		case fd.discovered:
			e.discovered = append(e.discovered, fd.path)
		}
		files = append(files, fd.path)
	}
	e.files = files
	return e
}

// roleDerivedRules turns the role's deletion safety lists and read-only
// carve-outs into rules, so decisions and explanations cover them.
func roleDerivedRules(role *roleDef) []*rule {
	var out []*rule
	mk := func(dec Decision, glob, id string, tools []string, desc string) {
		g, err := compilePathGlob(glob)
		if err != nil {
			return // validated at parse time
		}
		r := &rule{dec: dec, path: g, tools: tools, desc: desc,
			ref: RuleRef{ID: role.name + "/" + id + ":" + glob, Layer: LayerRole, Source: role.source}}
		r.finish()
		out = append(out, r)
	}
	del := []string{ToolDelete}
	for _, g := range role.info.Deletions.Forbidden {
		mk(Deny, g, "deletions.forbidden", del, "deleting this file is forbidden")
	}
	for _, g := range role.info.Deletions.RequireApproval {
		mk(Ask, g, "deletions.require_approval", del, "deleting this file needs approval")
	}
	for _, g := range role.info.Deletions.AutoApprove {
		mk(Allow, g, "deletions.auto_approve", del, "deleting this file is always fine")
	}
	for _, g := range role.info.FS.ReadOnly {
		desc := "read-only carve-out (also enforced by Landlock)"
		if insideGitDir(g) {
			desc = "read-only carve-out inside .git: refused here when the write is seen (a file tool, a shell redirect, cp, tee, sed -i); Landlock cannot hold it while git may write the repository, so a program that writes there itself is reported after the run, not stopped"
		}
		mk(Deny, g, "filesystem.readonly", []string{ToolCreateFile, ToolStrReplace, ToolDelete}, desc)
	}
	nw := role.info.Network
	host := func(dec Decision, pat, id, desc string) {
		hp, err := compileHostPattern(pat)
		if err != nil {
			return // validated at parse time
		}
		r := &rule{dec: dec, host: hp, tools: []string{ToolNet}, desc: desc,
			ref: RuleRef{ID: role.name + "/" + id + ":" + pat, Layer: LayerRole, Source: role.source}}
		r.finish()
		out = append(out, r)
	}
	for _, h := range nw.Allow {
		host(Allow, h, "network.allow", "host in the role's network allowlist")
	}
	for _, h := range nw.Ask {
		host(Ask, h, "network.ask", "connections to this host need approval")
	}
	for _, h := range nw.Deny {
		host(Deny, h, "network.deny", "host denied by the role's network block")
	}
	if nw.Default != nil {
		host(*nw.Default, "*", "network.default", "hosts the role's network block does not list")
	}
	return append(out, requestRules(role.name, role.source, nw.Requests)...)
}

// insideGitDir reports whether a read-only glob names paths strictly
// inside a .git directory ("target/**/.git/hooks"): internal/boundary
// watches those instead of making Landlock rules (git needs write rights
// on .git itself), so only the exec policy and the end-of-run scan
// (internal/gitleft) hold them.
func insideGitDir(glob string) bool {
	parts := strings.Split(strings.Trim(glob, "/"), "/")
	for i, p := range parts {
		if p == ".git" && i < len(parts)-1 {
			return true
		}
	}
	return false
}

// decideNet is Decide for tool:net actions.
func (e *Engine) decideNet(action, detail string) Result {
	if _, _, err := splitHostPort(detail); err != nil {
		return Result{Decision: Deny, Action: action, Reason: err.Error()}
	}
	res := e.decideSubject(&subject{action: action, tool: ToolNet, detail: detail, cats: catNetwork}, command.FloorNone, "", nil)
	if res.Rule == nil && res.Decision != Deny {
		res.Decision = Deny
		res.Reason = "host not in the network allowlist (network: allow/ask lists, policy host: rules, --allow-host)"
	}
	// Of the other formats only Claude Code's WebFetch(domain:...) names
	// hosts; a pattern like Chorus's tool:.* is not a network grant.
	return e.applyFormats(res, FormatQuery{Action: action, Net: true})
}

// altToolIndex indexes regex rules of the form tool:(A|B):... under their
// tools (false: in anyRules, tried against every action; the tests compare
// the two).
var altToolIndex = true

// firstWord returns s up to its first space and whether there was one.
func firstWord(s string) (string, bool) {
	w, _, ok := strings.Cut(s, " ")
	return w, ok
}

func (e *Engine) index() {
	n := len(e.rules)
	e.cmdIndex = make(map[string][]*rule, n/2)
	e.gitIndex = make(map[string][]*rule, n/8)
	e.globIndex = map[string][]*rule{}
	e.actIndex = map[string]map[string][]*rule{}
	e.byTool = make(map[string][]*rule, 16)
	e.exact = map[string][]*rule{}
	e.anyRules = nil
	for _, r := range e.rules {
		switch {
		case r.exact != "":
			e.exact[r.exact] = append(e.exact[r.exact], r)
		case len(r.words) == 2 && r.words[0] == "git":
			e.gitIndex[r.words[1]] = append(e.gitIndex[r.words[1]], r)
		case len(r.words) > 0:
			e.cmdIndex[r.words[0]] = append(e.cmdIndex[r.words[0]], r)
		case r.kind != 0:
			// A kind rule is a command rule for every program of the kind.
			for _, name := range programs.Names(r.kind) {
				e.cmdIndex[name] = append(e.cmdIndex[name], r)
			}
		case r.cmdOnly && r.cmdGlob != nil && r.act == nil && r.detRe == nil && r.tools == nil && strings.Contains(r.cmdGlob.prefix, " "):
			w, _ := firstWord(r.cmdGlob.prefix)
			e.globIndex[w] = append(e.globIndex[w], r)
		case r.act != nil && r.act.tool != "" && strings.Contains(r.act.detailPrefix, " "):
			w, _ := firstWord(r.act.detailPrefix)
			m := e.actIndex[r.act.tool]
			if m == nil {
				m = map[string][]*rule{}
				e.actIndex[r.act.tool] = m
			}
			m[w] = append(m[w], r)
		case r.act != nil && r.act.tool != "":
			e.byTool[r.act.tool] = append(e.byTool[r.act.tool], r)
		case r.tools != nil:
			for _, t := range r.tools {
				e.byTool[t] = append(e.byTool[t], r)
			}
		case r.cmdOnly:
			for _, t := range commandTools {
				e.byTool[t] = append(e.byTool[t], r)
			}
		case r.act != nil && len(r.act.tools) > 0 && altToolIndex:
			// tool:(A|B):... can match only tools A and B (and views
			// of them: views look up byTool too).
			for _, t := range r.act.tools {
				e.byTool[t] = append(e.byTool[t], r)
			}
		default:
			e.anyRules = append(e.anyRules, r)
		}
	}
}

// Role returns the effective merged role (for the sandbox).
func (e *Engine) Role() RoleInfo { return e.info }

// SetCheckpoints says whether the run takes checkpoints: then rules marked
// undoable (asks about deleting or discarding work) allow. Set once,
// before the engine decides anything.
func (e *Engine) SetCheckpoints(on bool) { e.checkpoints = on }

// Checkpoints reports whether undoable asks allow (SetCheckpoints).
func (e *Engine) Checkpoints() bool { return e.checkpoints }

// Files lists the policy files that were loaded, lowest layer first.
func (e *Engine) Files() []string { return e.files }

// evalState collects the best deny and the best allow/ask among matching rules.
type evalState struct {
	deny, best *rule
	trace      *[]*rule // when explaining: every matching rule
}

// beats reports whether a wins over b: more specific; then, between an
// allow and an ask of the owner's layers (user, project, --policy) and the
// built-in roles, the owner's (a project file can allow what a role only
// asks about: docs/policy.md "Precedence"); then stricter; then higher
// layer; then later in load order. Denies are kept apart (evalState.deny):
// nothing here lets an allow win over a deny.
func beats(a, b *rule) bool {
	w, _ := outranks(a, b)
	return w
}

// tieBreak names the step of the decision order that settled between two
// matching rules (outranks), so explanations say what the engine did.
type tieBreak uint8

const (
	bySpecificity   tieBreak = iota // the more specific rule
	byOwnerOverRole                 // an owner's layer's allow or ask over a built-in role's
	byStrictness                    // the stricter decision
	byLayer                         // the higher layer
	byOrder                         // the later rule in load order
)

// outranks is beats with the step that decided it; beats is defined by it,
// so an explanation's "why" cannot drift from the decision.
func outranks(a, b *rule) (bool, tieBreak) {
	if a.spec != b.spec {
		return a.spec > b.spec, bySpecificity
	}
	if a.dec != b.dec && a.dec != Deny && b.dec != Deny && ownerOverRole(a, b) != ownerOverRole(b, a) {
		return ownerOverRole(a, b), byOwnerOverRole
	}
	if a.dec != b.dec {
		return a.dec > b.dec, byStrictness
	}
	if a.ref.Layer != b.ref.Layer {
		return a.ref.Layer > b.ref.Layer, byLayer
	}
	return a.order > b.order, byOrder
}

// ownerOverRole reports whether a is a rule of an owner's layer (user,
// project, --policy file) and b one of the built-in roles.
func ownerOverRole(a, b *rule) bool {
	owner := func(l Layer) bool { return l == LayerUser || l == LayerProject || l == LayerFile }
	return owner(a.ref.Layer) && b.ref.Layer <= LayerRole
}

func (st *evalState) consider(r *rule) {
	if st.trace != nil {
		for _, t := range *st.trace {
			if t == r {
				return
			}
		}
		*st.trace = append(*st.trace, r)
	}
	if r.dec == Deny {
		if st.deny == nil || beats(r, st.deny) {
			st.deny = r
		}
		return
	}
	if st.best == nil || beats(r, st.best) {
		st.best = r
	}
}

// Views: a command also matches rules written for the other command tools,
// so Chorus' "tool:bash:npm .*" covers "npm test" run by any means and a
// "tool:exec:git push.*" rule covers the git action.
const (
	viewBash = "tool:bash:"
	viewExec = "tool:exec:"
)

func (e *Engine) tryRule(r *rule, s *subject, st *evalState) {
	if r.act != nil && !r.act.matchView("", s.action) {
		return
	}
	if !r.appliesTo(s.tool) || !r.matchRest(s) {
		return
	}
	st.consider(r)
}

// tryView tries r against s seen as a viewTool action: head is
// "tool:<viewTool>:", body the command text (for git "git <detail>").
func (e *Engine) tryView(r *rule, s *subject, viewTool, head, body string, st *evalState) {
	if r.act == nil || !r.appliesTo(viewTool) {
		return
	}
	if !r.act.matchView(head, body) || !r.matchRest(s) {
		return
	}
	st.consider(r)
}

// eval finds every rule matching s. Indexes keep the work proportional to
// the rules that could match: command rules by program, pinned action rules
// by tool (and first word), everything else by tool or in anyRules.
func (e *Engine) eval(s *subject, st *evalState) {
	for _, r := range e.exact[s.action] {
		st.consider(r)
	}
	if r := e.sess.rule(s.action); r != nil {
		st.consider(r)
	}
	// prog is the command's program as command rules and globs see it.
	prog := ""
	switch s.tool {
	case ToolGit:
		prog = "git"
	case ToolExec:
		if len(s.words) > 0 {
			prog = baseName(s.words[0])
		} else {
			prog, _ = firstWord(s.detail)
		}
	case ToolBash:
		prog = "-" // whole lines: only command globs apply
	}
	dw, _ := firstWord(s.detail) // first word of the detail (and of the command text)
	if prog != "" {
		for _, r := range e.cmdIndex[prog] {
			if r.matchRest(s) {
				st.consider(r)
			}
		}
		if prog == "git" {
			sub := dw
			if s.tool == ToolExec {
				sub = ""
				if len(s.words) > 1 {
					sub = s.words[1]
				}
			}
			for _, r := range e.gitIndex[sub] {
				if r.matchRest(s) {
					st.consider(r)
				}
			}
		}
		gw := dw
		if s.tool == ToolGit {
			gw = "git"
		}
		for _, r := range e.globIndex[gw] {
			if r.matchRest(s) {
				st.consider(r)
			}
		}
	}
	for _, r := range e.actIndex[s.tool][dw] {
		e.tryRule(r, s, st)
	}
	for _, r := range e.byTool[s.tool] {
		e.tryRule(r, s, st)
	}
	switch s.tool {
	case ToolExec:
		e.views(s, ToolBash, viewBash, dw, st)
	case ToolGit:
		e.views(s, ToolBash, viewBash, "git", st)
		e.views(s, ToolExec, viewExec, "git", st)
	}
	for _, r := range e.anyRules {
		e.tryRule(r, s, st)
		if r.act != nil {
			switch s.tool {
			case ToolExec:
				e.tryView(r, s, ToolBash, viewBash, s.detail, st)
			case ToolGit:
				e.tryView(r, s, ToolBash, viewBash, s.cmdText(), st)
				e.tryView(r, s, ToolExec, viewExec, s.cmdText(), st)
			}
		}
	}
}

// views tries the action rules pinned to viewTool against s seen as that
// tool's action (head + command text); word is the view's first word.
func (e *Engine) views(s *subject, viewTool, head, word string, st *evalState) {
	idx := e.actIndex[viewTool][word]
	any := e.byTool[viewTool]
	if len(idx) == 0 && len(any) == 0 {
		return
	}
	body := s.detail
	if s.tool == ToolGit {
		body = s.cmdText()
	}
	for _, r := range idx {
		e.tryView(r, s, viewTool, head, body, st)
	}
	for _, r := range any {
		e.tryView(r, s, viewTool, head, body, st)
	}
}

// decideSubject applies the decision order to one subject and its floor.
func (e *Engine) decideSubject(s *subject, floor command.Floor, floorWhy string, trace *[]*rule) Result {
	st := evalState{trace: trace}
	e.eval(s, &st)
	res := Result{Action: s.action}
	switch {
	case st.deny != nil:
		res.Decision, res.Rule, res.Reason = Deny, &st.deny.ref, st.deny.reason
	case st.best != nil:
		res.Decision, res.Rule, res.Reason = st.best.dec, &st.best.ref, st.best.reason
		if st.best.prog != nil {
			res.Reason += " [program file " + s.progAbs + "]"
		}
		if st.best.undoable && res.Decision == Ask && e.checkpoints {
			res.Decision = Allow
			res.Reason += "; allowed: checkpoints are on, agentbox undo puts back what it changes"
		}
	default:
		res.Decision = e.info.Default
		res.Reason = "no rule matched; " + e.defWhy + " is " + e.info.Default.String()
		// Only a program file that exists (the supervisor's, or found on
		// PATH by check and explain): a name the parser made up of a
		// line it misread ("-", "\\command") keeps the default.
		if res.Decision == Ask && e.info.UnknownPrograms && e.checkpoints && s.tool == ToolExec && s.progAbs != "" && harmlessUnknown(s.program()) {
			res.Decision = Allow
			res.Reason = "no rule names this program; allowed while the run can be undone (the role's unknown_programs: allow; network clients, privilege, signals, device tools and inline code still ask)"
		}
	}
	switch floor {
	case command.FloorDeny:
		if res.Decision < Deny {
			res.Decision, res.Floor = Deny, floorText(floorWhy, "input cannot be judged safely")
		}
	case command.FloorAsk:
		if res.Decision < Ask {
			res.Decision, res.Floor = Ask, floorText(floorWhy, "cannot be resolved statically")
		}
	case command.FloorAskUnlessExplicit:
		// A program: rule says where code may run from, not that inline
		// code is fine: it never lifts this floor.
		if res.Decision == Allow && (st.best == nil || st.best.prog != nil || st.best.spec <= bareProgramSpec(s.program())) {
			res.Decision = Ask
			res.Floor = floorText(floorWhy, "runs code given inline") + "; allow it with a rule more specific than the bare program name"
		}
	}
	return e.selfEdit(s, res, trace)
}

// selfEditWhy starts the reason of a write decided by its self-edit action.
const selfEditWhy = "a write to a permission file is a self-edit: "

// selfEdit is the decision of a write to a file agentbox (or the agent
// CLI itself) reads its permissions from: the agent changing its own
// permissions, decided as tool:self_edit:permissions:PATH (the built-in
// self_edit.permissions rule denies it) and never less strict than the
// write's own decision.
func (e *Engine) selfEdit(s *subject, res Result, trace *[]*rule) Result {
	switch s.tool {
	case ToolCreateFile, ToolStrReplace, ToolDelete:
	default:
		return res
	}
	if !permissionFile(s.detail) {
		return res
	}
	action := FormatAction(ToolSelfEdit, "permissions:"+s.detail)
	se := subject{action: action, tool: ToolSelfEdit, detail: "permissions:" + s.detail, cats: toolCategories(ToolSelfEdit)}
	r := e.decideSubject(&se, command.FloorNone, "", trace)
	if r.Decision > res.Decision {
		r.Action = res.Action
		r.Reason = selfEditWhy + r.Reason
		return r
	}
	return res
}

func floorText(why, def string) string {
	if why == "" {
		return def
	}
	return why
}

// itemSubject turns a parsed command Item into a subject.
func itemSubject(it *command.Item) (subject, bool) { return (*Engine)(nil).itemSubject(it) }

// relPath maps an absolute path inside the workspace to a workspace-relative
// one ("/ws/target/a.go" -> "target/a.go"); other paths are unchanged.
func (e *Engine) relPath(p string) string {
	if e == nil || e.workspace == "" || len(p) == 0 || p[0] != '/' {
		return p
	}
	if rest, ok := strings.CutPrefix(p, e.workspace); ok {
		if rest == "" {
			return "."
		}
		if rest[0] == '/' {
			return rest[1:]
		}
	}
	return p
}

func (e *Engine) itemSubject(it *command.Item) (subject, bool) {
	tool, detail, err := ParseAction(it.Action)
	if err != nil {
		return subject{action: it.Action}, false
	}
	if isPathTool(tool) {
		detail = e.relPath(detail)
	}
	s := subject{action: it.Action, tool: tool, detail: detail, words: it.Argv}
	for _, c := range it.Categories {
		if b, ok := parseCategory(c); ok {
			s.cats |= b
		}
	}
	if s.cats == 0 {
		s.cats = toolCategories(tool)
	}
	return s, true
}

func (e *Engine) decideItem(it *command.Item, trace *[]*rule) Result {
	return e.decideItemAt(it, "", trace)
}

// decideItemAt decides an item whose program location (see program.go) is
// loc ("" if none).
func (e *Engine) decideItemAt(it *command.Item, loc string, trace *[]*rule) Result {
	s, ok := e.itemSubject(it)
	if !ok {
		return Result{Decision: Ask, Action: it.Action, Reason: "command parser produced an invalid action", Floor: "invalid action"}
	}
	s.setProgram(e, loc)
	return e.itemResult(it, e.decideSubject(&s, it.Floor, it.FloorReason, trace))
}

// itemResult finishes an item's decision from its subject's: the
// environment it sets, and a transparent wrapper carried by what it runs.
// Decide and Explain both go through it, so they cannot disagree.
func (e *Engine) itemResult(it *command.Item, res Result) Result {
	wrapper := it.Wrapper
	if len(it.Env) > 0 && len(it.Argv) > 0 {
		if env := e.DecideEnv(it.Argv[0], it.Env, ""); env.Decision > res.Decision {
			res.Decision, res.Reason, res.Floor, res.Rule = env.Decision, env.Reason, env.Floor, nil
			wrapper = false
		}
	}
	if wrapper && res.Rule == nil && res.Floor == "" {
		// A transparent wrapper (env, nice, timeout, sh -c with a fully
		// parsed script...) that no rule names does not fall to the role
		// default: its inner command's items, decided on their own, carry
		// the decision. A rule naming the wrapper still applies.
		res.Decision = Allow
		res.Reason = "transparent wrapper; the command it runs is decided on its own"
	}
	return res
}

// decide decides any action string. Command actions are understood first:
// tool:exec:<argv> and tool:git:<args> are split into argv (looking through
// wrappers), tool:bash:<line> is parsed as a shell line; every resulting item
// is decided and the strictest wins. An invalid action string is denied.
func (e *Engine) decide(action string, trace *[]*rule) Result {
	tool, detail, err := ParseAction(action)
	if err != nil {
		return Result{Decision: Deny, Action: action, Reason: err.Error()}
	}
	switch tool {
	case ToolBash:
		return e.decideShell(action, detail, ExecContext{}, trace)
	case ToolExec, ToolGit:
		items, perr := splitCommandAction(tool, detail)
		locs := e.actionLocations(tool, detail, items)
		var res Result
		if perr == nil && len(items) == 1 && items[0].Action == action {
			res = e.decideItemAt(&items[0], locs[0], trace)
		} else {
			res = e.compoundAt(action, items, locs, nil, perr, trace)
		}
		q := FormatQuery{Action: action, Line: detail, ToolCall: true}
		if tool == ToolGit {
			q.Line = "git " + detail
		}
		if perr == nil && len(items) > 0 && items[0].Argv != nil && len(items) == 1 {
			q.Argv = items[0].Argv
		}
		return e.applyFormats(res, q)
	case ToolNet:
		return e.decideNet(action, detail)
	case ToolHTTP:
		return e.decideHTTP(action, detail)
	}
	if isPathTool(tool) {
		detail = e.relPath(detail)
	}
	s := subject{action: action, tool: tool, detail: detail, cats: toolCategories(tool)}
	return e.applyFormats(e.decideSubject(&s, command.FloorNone, "", trace), FormatQuery{Action: action, ToolCall: true})
}

// splitCommandAction turns an exec/git action's detail into command items.
// Plain words take a fast path straight to the argv parser; anything with
// shell syntax (quotes, $, operators) goes through the shell parser.
func splitCommandAction(tool, detail string) ([]command.Item, error) {
	if PlainWords(detail) {
		argv := strings.Fields(detail)
		if tool == ToolGit {
			argv = append([]string{"git"}, argv...)
		}
		if len(argv) == 0 {
			return nil, nil
		}
		return fromArgv(argv, ""), nil
	}
	if tool == ToolGit {
		detail = "git " + detail
	}
	return parseShell(detail)
}

// PlainWords reports whether s is words of characters no shell treats
// specially, so splitting on blanks gives the same argv a shell would.
func PlainWords(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == ' ', c == '-', c == '_', c == '.', c == '/', c == '=', c == ':', c == ',', c == '@', c == '%', c == '+':
		default:
			return false
		}
	}
	return true
}

func (e *Engine) decideShell(action, line string, c ExecContext, trace *[]*rule) Result {
	var items []command.Item
	var err error
	if c.Cwd != "" {
		items, err = parseShellIn(line, c.Cwd)
	} else {
		items, err = parseShell(line)
	}
	items = e.withOverwrites(items, c)
	whole := &subject{action: action, tool: ToolBash, detail: line, cats: catExecute}
	res := e.compoundAt(action, items, e.shellLocations(items, c.LookPath), whole, err, trace)
	return e.applyFormats(res, FormatQuery{Action: action, Line: line, ToolCall: true})
}

// compoundAt decides every item (at its program location; locs may be
// nil) and the whole line (for tool:bash input): the strictest part wins.
// Whole-line rules may only make the result stricter (a glob like "rg*"
// must not allow "rg x; rm -rf /").
func (e *Engine) compoundAt(action string, items []command.Item, locs []string, whole *subject, perr error, trace *[]*rule) Result {
	res := Result{Action: action}
	segs := make([]Result, 0, len(items)+1)
	for i := range items {
		loc := ""
		if i < len(locs) {
			loc = locs[i]
		}
		segs = append(segs, e.decideItemAt(&items[i], loc, trace))
	}
	e.liftAutoApprovedDeletes(items, segs)
	if whole != nil {
		st := evalState{trace: trace}
		e.eval(whole, &st)
		var r *rule
		if st.deny != nil {
			r = st.deny
		} else if st.best != nil && st.best.dec > Allow {
			r = st.best
		}
		if r != nil {
			segs = append(segs, Result{Decision: r.dec, Action: action, Rule: &r.ref, Reason: r.reason + " (whole command line)"})
		} else if len(items) == 0 && perr == nil {
			if st.best != nil {
				segs = append(segs, Result{Decision: st.best.dec, Action: action, Rule: &st.best.ref, Reason: st.best.reason})
			} else if strings.TrimSpace(whole.detail) != "" {
				// The line parsed and starts nothing: only builtins that
				// change the shell's own state (true, cd DIR, x=1, exit).
				segs = append(segs, Result{Decision: Allow, Action: action, Reason: "runs no program (shell builtins only)"})
			} else {
				segs = append(segs, Result{Decision: e.info.Default, Action: action, Reason: "empty command; " + e.defWhy + " is " + e.info.Default.String()})
			}
		}
	}
	if perr != nil {
		segs = append(segs, Result{Decision: Ask, Action: action, Reason: "the command line could not be parsed", Floor: "unparseable input: " + perr.Error()})
	}
	if len(segs) == 0 {
		res.Decision = e.info.Default
		res.Reason = "empty command; " + e.defWhy + " is " + e.info.Default.String()
		return res
	}
	top := 0
	for i := range segs {
		if segs[i].Decision > segs[top].Decision {
			top = i
		}
	}
	res.Decision = segs[top].Decision
	res.Rule = segs[top].Rule
	res.Reason = segs[top].Reason
	res.Floor = segs[top].Floor
	if len(segs) > 1 || whole != nil || segs[0].Action != action {
		res.Segments = segs
	}
	return res
}

// deletingCommands are the programs whose only effect is deleting their
// operands (shred also overwrites, and keeps its ask).
var deletingCommands = map[string]bool{"rm": true, "rmdir": true, "unlink": true}

// liftAutoApprovedDeletes applies the role's deletions.auto_approve list
// to deleting commands: an rm (rmdir, unlink) that the role's own rule asks
// about is allowed when every path it deletes matches an auto-approved
// pattern and none is denied — `rm -rf __pycache__`, `rm -f *.o` in a make
// clean. A rule of a policy file (any layer above the role) that asks, a
// floor, or any other path still asks.
func (e *Engine) liftAutoApprovedDeletes(items []command.Item, segs []Result) {
	for i := range items {
		it := &items[i]
		if len(it.Argv) == 0 || !deletingCommands[baseName(it.Argv[0])] || segs[i].Decision != Ask ||
			segs[i].Floor != "" || segs[i].Rule == nil || segs[i].Rule.Layer != LayerRole {
			continue
		}
		var paths []int
		for j := i + 1; j < len(items) && items[j].Argv == nil && items[j].Text == it.Text && items[j].Pos == it.Pos; j++ {
			paths = append(paths, j)
		}
		if len(paths) == 0 {
			continue
		}
		var by *rule
		for _, j := range paths {
			r := e.autoApproved(&items[j])
			if r == nil || segs[j].Decision == Deny {
				by = nil
				break
			}
			by = r
		}
		if by != nil {
			segs[i] = Result{Decision: Allow, Action: it.Action, Rule: &by.ref,
				Reason: "every path it deletes is auto-approved by the role's deletions block (" + by.ref.ID + ")"}
		}
	}
}

// autoApproved returns the role's deletions.auto_approve rule matching the
// delete item it, or nil.
func (e *Engine) autoApproved(it *command.Item) *rule {
	if !strings.HasPrefix(it.Action, "tool:delete:") || it.Floor != command.FloorNone {
		return nil
	}
	s, ok := e.itemSubject(it)
	if !ok {
		return nil
	}
	for _, r := range e.byTool[ToolDelete] {
		if r.dec == Allow && r.ref.Layer == LayerRole && strings.Contains(r.ref.ID, "/deletions.auto_approve:") && r.matchRest(&s) {
			return r
		}
	}
	return nil
}

// deviceTools are programs that reach devices and mounts: a program no
// rule names that is one of them still asks (unknown_programs).
var deviceTools = map[string]bool{"mount": true, "umount": true, "losetup": true, "mknod": true, "insmod": true, "modprobe": true,
	"rmmod": true, "fdisk": true, "sfdisk": true, "parted": true, "blkdiscard": true, "hdparm": true, "dmsetup": true,
	"swapon": true, "swapoff": true, "mkfs": true, "dd": true, "setcap": true, "chroot": true}

// harmlessUnknown reports a program no rule names that unknown_programs:
// allow lets run: not a network client, privilege changer, signal sender
// or device tool (inline code keeps its floor separately).
func harmlessUnknown(prog string) bool {
	base := baseName(prog)
	if base == "" || deviceTools[base] || strings.HasPrefix(base, "mkfs.") {
		return false
	}
	return !programs.Any(base, programs.Network|programs.Privilege|programs.Signals)
}
