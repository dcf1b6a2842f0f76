package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// What a loader hands the core. Reading policy files — agentbox's own
// format, roles, agent profiles, approvers, the other tools' formats
// through their readers, and which files discovery finds — is package
// policy/load's job; it describes each file as a Document (its rules
// compiled by RuleSet.Add, as a foreign format's are) and the core
// compiles the documents with the built-in roles (roles_gen.go) into an
// Engine, a listing of roles or agent profiles, or a linter's view. The
// core reads no file and imports no loader.

// Document is one policy file as a loader read it.
type Document struct {
	Path  string
	Layer Layer
	// Format is "agentbox", a registered reader's name, or "chorus" for a
	// Chorus server settings file (its permission_grants are Approvers).
	Format string
	// Reader and Foreign: a file of a foreign format, the reader that
	// claimed it and the rules it read (decided by the reader's Format).
	Reader  FormatReader
	Foreign FormatRules
	// Rules are the file's own rules (agentbox's format), in file order;
	// Roles the roles it defines, Agents its agent profiles.
	Rules  *RuleSet
	Roles  []*RoleSpec
	Agents []*AgentProfile
	// Default is the file-level default decision, if any, set at
	// DefaultLine.
	Default     *Decision
	DefaultLine int
	// Approvers are the file's approvers block (or Chorus's
	// permission_grants); HasApprovers even when it is empty.
	Approvers    []ApproverRole
	HasApprovers bool
	// Discovered: found where another tool keeps its permissions;
	// Untrusted: such a file the sandbox could have written, of which
	// only the deny and ask rules count (LoadOptions.Untrusted).
	Discovered, Untrusted bool
	// Problems are what the loader found wrong with the file, each naming
	// file:line; a document with problems is reported, never compiled.
	Problems []error
}

// RoleSpec is one role as a policy file defines it, before extends is
// resolved.
type RoleSpec struct {
	Name   string
	Source string // "builtin:developer" or "file.yaml:12"
	File   string
	Line   int
	// Extends names the parent role, written at ExtendsLine.
	Extends     string
	ExtendsLine int
	Hidden      bool // a base role ("_base"), not listed
	Info        RoleInfo
	Default     *Decision
	Rules       *RuleSet // the role's rules and Chorus-style lists, in file order
	// Which of Info's settings the role writes; the others it inherits.
	SetsFS, SetsNetwork, SetsLimits, SetsGit, SetsCheckpoints bool
	SetsReview, SetsHostCaches, SetsUnknownPrograms           bool
	// SetsCheckpointsEnabled: checkpoints.enabled is written (it turns
	// them back on under a parent that turned them off).
	SetsCheckpointsEnabled bool
}

// Layers are the documents a loader read for Options, lowest layer first:
// what the core compiles. WouldRead, when set, lists the paths a load
// with Options (or a later one without NoUserFile or NoDiscover) would
// read a policy layer from, at the time it is called (Engine.WouldRead).
// Set the fields, then call the methods; the documents are compiled once,
// at the first call.
type Layers struct {
	Options   LoadOptions
	Documents []*Document
	WouldRead func() []string

	once sync.Once
	regs map[string]*roleDef
	defs []*fileDef
	err  error
}

// fileDef is one policy file as the engine keeps it.
type fileDef struct {
	path                  string
	layer                 Layer
	format                string
	rules                 []*rule
	agents                []*AgentProfile
	reader                FormatReader
	foreign               FormatRules
	untrusted, discovered bool
	def                   *Decision
	defLine               int
	approvers             []ApproverRole
	hasApprovers          bool
}

// roleDef is one role definition before extends is resolved.
type roleDef struct {
	name        string
	source      string // "builtin:developer" or "file.yaml:12"
	file        string
	line        int
	extends     string
	extendsLine int
	hidden      bool // internal base roles ("_base"), not listed
	info        RoleInfo
	def         *Decision
	rules       []*rule
	// fields explicitly set, so extends can inherit the rest
	hasFS, hasNet, hasLimits, hasGit bool
	hasCheckpoints                   bool
	checkpointsEnabledSet            bool // checkpoints.enabled written (not inherited)
	hasReview                        bool
	hasHostCaches                    bool
	hasUnknownPrograms               bool
}

// numbered copies rs's rules, each with the next load order from *order.
func numbered(rs *RuleSet, order *int) []*rule {
	if rs == nil {
		return nil
	}
	out := make([]*rule, len(rs.sub.rules))
	cs := make([]rule, len(rs.sub.rules)) // one allocation for the copies
	for i, r := range rs.sub.rules {
		cs[i] = *r
		*order++
		cs[i].order = *order
		out[i] = &cs[i]
	}
	return out
}

// roleDefOf is a role spec as the engine keeps it.
func roleDefOf(rs *RoleSpec, order *int) *roleDef {
	return &roleDef{name: rs.Name, source: rs.Source, file: rs.File, line: rs.Line, extends: rs.Extends,
		extendsLine: rs.ExtendsLine, hidden: rs.Hidden, info: rs.Info, def: rs.Default, rules: numbered(rs.Rules, order),
		hasFS: rs.SetsFS, hasNet: rs.SetsNetwork, hasLimits: rs.SetsLimits, hasGit: rs.SetsGit,
		hasCheckpoints: rs.SetsCheckpoints, checkpointsEnabledSet: rs.SetsCheckpointsEnabled,
		hasReview: rs.SetsReview, hasHostCaches: rs.SetsHostCaches, hasUnknownPrograms: rs.SetsUnknownPrograms}
}

// compile builds the registry of roles (built-in and the documents') and
// the engine's files, reporting every document's problems, every role
// defined twice and every broken extends chain, in file order.
func (l *Layers) compile() {
	reg, order, err := builtinRoles()
	if err != nil {
		l.err = err
		return
	}
	regs := make(map[string]*roleDef, len(reg))
	for k, v := range reg {
		regs[k] = v
	}
	var errs Errors
	var defs []*fileDef
	var fileRoles []*roleDef
	for _, d := range l.Documents {
		errs = append(errs, d.Problems...)
		for _, rs := range d.Roles {
			rd := roleDefOf(rs, &order)
			if old, ok := regs[rd.name]; ok {
				errs = append(errs, fmt.Errorf("%s:%d: role %q is already defined (%s); pick a new name and use extends: %s", rd.file, rd.line, rd.name, old.source, rd.name))
				continue
			}
			regs[rd.name] = rd
			fileRoles = append(fileRoles, rd)
		}
		defs = append(defs, &fileDef{path: d.Path, layer: d.Layer, format: d.Format, rules: numbered(d.Rules, &order),
			agents: d.Agents, reader: d.Reader, foreign: d.Foreign, untrusted: d.Untrusted, discovered: d.Discovered,
			def: d.Default, defLine: d.DefaultLine, approvers: d.Approvers, hasApprovers: d.HasApprovers})
	}
	// Check every file-defined role's extends chain, not only the selected one.
	for _, rd := range fileRoles {
		if _, err := resolveRole(regs, rd.name); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		l.err = errs
		return
	}
	l.regs, l.defs = regs, defs
}

// Check compiles the documents and reports every problem in them (as
// Errors, one per line naming file:line): what `agentbox policy validate`
// and every load report.
func (l *Layers) Check() error {
	l.once.Do(l.compile)
	return l.err
}

// Engine compiles the role Options.Role selects and every layer into an
// Engine. Nothing is half-loaded: any problem is an error.
func (l *Layers) Engine() (*Engine, error) {
	return l.engine(l.Options)
}

func (l *Layers) engine(opts LoadOptions) (*Engine, error) {
	if opts.Role == "" {
		return nil, errors.New("no role selected (use --role; see `agentbox roles`)")
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	role, err := resolveRole(l.regs, opts.Role)
	if err != nil {
		return nil, err
	}
	e := build(role, l.defs)
	e.opts = opts
	e.wouldRead = l.WouldRead
	e.agents = mergeAgents(l.defs)
	e.approvers = mergeApprovers(l.defs)
	for _, ar := range e.approvers.Roles {
		for _, g := range ar.Grant {
			if _, ok := l.regs[g]; !ok && g != "*" {
				return nil, fmt.Errorf("%s: approvers.%s.grant: no role %q (known: %s)", ar.Source, ar.Name, g, strings.Join(visibleRoles(l.regs), ", "))
			}
		}
	}
	e.checkpoints = opts.Checkpoints && !e.info.Checkpoints.Off
	if opts.Workspace != "" {
		if abs, err := filepath.Abs(opts.Workspace); err == nil {
			e.workspace = abs
			if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
				e.workspaceReal = real
			}
		}
	}
	for _, f := range e.formats {
		bindWorkspace(f, e.workspace, e.relPath)
	}
	return e, nil
}

// Agents lists the agent profiles of the layers (built-in, then replaced
// or added by policy files), sorted by name.
func (l *Layers) Agents() ([]*AgentProfile, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	e := &Engine{agents: mergeAgents(l.defs)}
	return e.Agents(), nil
}

// RoleSummary names a role and says what it is for.
type RoleSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Extends     string `json:"extends,omitempty"`
	Source      string `json:"source"`
	Default     string `json:"default"`
}

// Roles lists the built-in roles plus the roles the layers define
// (Options.Role is ignored), sorted by name.
func (l *Layers) Roles() ([]RoleSummary, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	var out []RoleSummary
	for _, name := range visibleRoles(l.regs) {
		rd, err := resolveRole(l.regs, name)
		if err != nil {
			return nil, err
		}
		def := Ask
		if rd.def != nil {
			def = *rd.def
		}
		desc := rd.info.Description
		o := l.Options
		o.Role = name
		if e, err := l.engine(o); err == nil {
			if d := deletionClause(e); d != "" && !strings.Contains(desc, "deletion") {
				desc = strings.TrimSuffix(strings.TrimSpace(desc), ";") + "; " + d
			}
		}
		out = append(out, RoleSummary{Name: name, Description: desc, Extends: l.regs[name].extends, Source: l.regs[name].source, Default: def.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RoleRules returns role's rules (built-in or defined in the layers, with
// the rules its settings derive) as a set for reading (lint), or an error
// when there is no such role.
func (l *Layers) RoleRules(role string) (*RuleSet, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	rd, err := resolveRole(l.regs, role)
	if err != nil {
		return nil, err
	}
	return ruleSetOf(append(append([]*rule(nil), rd.rules...), roleDerivedRules(rd)...)), nil
}
