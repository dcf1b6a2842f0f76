package load

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/programs"
	"github.com/agentbox/agentbox/internal/yamlfields"
	"github.com/agentbox/agentbox/policy"
	"go.yaml.in/yaml/v3"
)

// parser accumulates every problem in a file rather than stopping at the first.
type parser struct {
	file  string // path as given, for messages
	base  string // file base name, for default rule ids
	layer policy.Layer
	errs  []error
	// builtin: reading the built-in roles (layer role): rule sources are
	// "builtin:<role>", command rules are named after their command
	builtin bool
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, args...)))
}

func (p *parser) source(n *yaml.Node, role string) string {
	if p.builtin {
		return "builtin:" + role
	}
	return fmt.Sprintf("%s:%d", p.file, n.Line)
}

// fields walks a mapping node, calling fn for each key; unknown keys (fn
// returns false) and duplicate keys are errors.
func (p *parser) fields(n *yaml.Node, what string, fn func(key string, k, v *yaml.Node) bool) {
	yamlfields.Fields(n, what, p.errf, fn)
}

// kindName names what a node is, for messages.
var kindName = yamlfields.KindName

func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	return yamlfields.Str(n, what, p.errf)
}

func (p *parser) strList(n *yaml.Node, what string) ([]string, []*yaml.Node) {
	return yamlfields.StrList(n, what, p.errf)
}

func (p *parser) decision(n *yaml.Node, what string) (policy.Decision, bool) {
	s, ok := p.str(n, what)
	if !ok {
		return 0, false
	}
	d, err := policy.ParseDecision(s)
	if err != nil {
		p.errf(n, "%s: %v", what, err)
		return 0, false
	}
	return d, true
}

// readPolicyFile reads path after checking its permissions.
func readPolicyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	if err := CheckFilePerms(path, fi); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	return data, nil
}

// parseFile decodes data (YAML or JSON) as a policy file at layer
// (LayerRole: the built-in roles). It returns every problem found; the
// document is nil when the file does not decode.
func parseFile(name string, data []byte, layer policy.Layer) (*policy.Document, []error) {
	p := &parser{file: name, base: filepath.Base(name), layer: layer, builtin: layer == policy.LayerRole}
	return parseFileWith(p, data)
}

func parseFileWith(p *parser, data []byte) (*policy.Document, []error) {
	name := p.file
	fd := &policy.Document{Path: name, Layer: p.layer}
	trimmed := strings.TrimSpace(string(data))
	if r := detectFormat(name, data, nil); r != nil {
		p.readForeign(r, data, nil, fd)
		return fd, p.errs
	}
	if strings.HasPrefix(trimmed, "{") || strings.HasSuffix(strings.ToLower(name), ".json") {
		// JSON allows tabs only as whitespace (never inside strings), and
		// YAML forbids tabs for indentation.
		data = []byte(strings.ReplaceAll(string(data), "\t", " "))
	}
	var doc yaml.Node
	if line, ok := versionOnly(data); ok {
		// what `agentbox init` writes: comments and the version (a launch
		// reads it every time), decoded as YAML would decode it
		if line > 0 {
			doc = versionDoc(line)
		}
		return parseDoc(p, fd, &doc)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if strings.HasPrefix(msg, "line ") {
			return nil, []error{fmt.Errorf("%s:%s", name, strings.TrimPrefix(msg, "line "))}
		}
		return nil, []error{fmt.Errorf("%s: %s", name, msg)}
	}
	return parseDoc(p, fd, &doc)
}

// versionOnly reports whether data is only comment lines, blank lines
// and at most one line "version: 1" (at its start, nothing after it),
// in printable ASCII: the project file `agentbox init` writes, which
// needs no YAML decoder. line is the version's line (1-based), 0 if none.
func versionOnly(data []byte) (line int, ok bool) {
	n := 0
	for len(data) > 0 {
		n++
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		for _, c := range l {
			if c < 0x20 || c > 0x7e {
				return 0, false
			}
		}
		t := bytes.TrimLeft(l, " ")
		switch {
		case len(t) == 0 || t[0] == '#':
		case string(l) == "version: 1" && line == 0:
			line = n
		default:
			return 0, false
		}
	}
	return line, true
}

// versionDoc is the document YAML decodes from a file that is
// "version: 1" at line and comments (versionOnly), without the comments
// (no reader and no part of the policy reads them).
func versionDoc(line int) yaml.Node {
	return yaml.Node{Kind: yaml.DocumentNode, Line: line, Column: 1, Content: []*yaml.Node{{
		Kind: yaml.MappingNode, Tag: "!!map", Line: line, Column: 1, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: "version", Line: line, Column: 1},
			{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1", Line: line, Column: 10},
		},
	}}}
}

// parseDoc reads a decoded policy document (the built-in roles are read
// here at build time: policy/roles_gen.go holds the result).
func parseDoc(p *parser, fd *policy.Document, doc *yaml.Node) (*policy.Document, []error) {
	if len(doc.Content) == 0 {
		return fd, nil // empty file: no rules
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errf(root, "policy file must be a mapping, got %s", kindName(root))
		return nil, p.errs
	}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		keys[root.Content[i].Value] = root.Content[i+1]
	}
	perms, grants := keys["permissions"], keys["permission_grants"]
	if perms != nil && grants == nil && p.claudeUnlinked(root) {
		return nil, p.errs
	}
	if r := detectFormat(p.file, nil, root); r != nil {
		p.readForeign(r, nil, root, fd)
		return fd, p.errs
	}
	switch {
	case grants != nil:
		// Chorus's server settings: only the grant mapping is policy (and,
		// with the Chorus reader linked, an empty profile: it denies the
		// tool calls no pattern allows).
		fd.Format = "chorus"
		fd.Approvers, fd.HasApprovers = p.parsePermissionGrants(grants), true
		if r := readerNamed("chorus"); r != nil {
			p.readForeign(r, nil, &yaml.Node{Kind: yaml.MappingNode, Line: root.Line}, fd)
		}
	case perms != nil && (perms.Kind == yaml.MappingNode || perms.Kind == yaml.ScalarNode):
		// a Chorus agent.json or a Codelia config, claimed by their
		// readers (internal/policyfmt/chorus, .../codelia) when linked
		if perms.Kind == yaml.ScalarNode {
			p.errf(perms, "permissions %q: a Chorus preset, and this program cannot read Chorus's agent.json (no internal/policyfmt/chorus): refused", perms.Value)
		} else {
			p.errf(perms, "a permissions mapping, and this program cannot read Chorus's or Codelia's permissions (no internal/policyfmt/chorus, .../codelia): refused")
		}
	case perms != nil:
		p.fields(perms, "permissions", func(string, *yaml.Node, *yaml.Node) bool { return false })
	case keys["allow"] != nil || keys["ask"] != nil:
		p.errf(root, "a Chorus profile (allow and ask lists), and this program cannot read Chorus profiles (no internal/policyfmt/chorus): refused")
	default:
		p.parseNative(root, fd)
	}
	return fd, p.errs
}

// ruleRef names a rule of the file (of role, when not ""): its id, or
// one made of the file and line (a built-in command rule is named after
// its command: developer/cargo.build); inside a role, prefixed with the
// role's name.
func (p *parser) ruleRef(n *yaml.Node, id, desc, role string) policy.RuleRef {
	if id == "" && p.builtin && role != "" {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "command" {
				id = strings.Join(strings.Fields(n.Content[i+1].Value), ".")
			}
		}
	}
	if id == "" {
		id = fmt.Sprintf("%s:%d", p.base, n.Line)
		if p.builtin {
			id = fmt.Sprintf("%s:%d", role, n.Line)
		}
	}
	layer := p.layer
	if role != "" {
		layer = policy.LayerRole
		if !strings.HasPrefix(role, "_") && !strings.Contains(id, "/") {
			id = role + "/" + id
		}
	}
	return policy.RuleRef{ID: id, Layer: layer, Source: p.source(n, role), Description: desc}
}

// compile adds a rule's spec to rs: a problem with a key is reported at
// that key's node (nodes by field name, at the position in p.errs the key
// was read at, so the file's problems stay in the order of its lines).
func (p *parser) compile(rs *policy.RuleSet, s policy.RuleSpec, nodes map[string]*yaml.Node, at map[string]int) {
	errs := rs.AddAll(s)
	// insert from the last position back, so earlier positions hold
	for i := len(errs) - 1; i >= 0; i-- {
		err := errs[i]
		f := ""
		var fe interface{ Field() string }
		if errors.As(err, &fe) {
			f = fe.Field()
		}
		line := 0
		if n := nodes[f]; n != nil {
			line = n.Line
		}
		e := fmt.Errorf("%s:%d: %v", p.file, line, err)
		pos, ok := at[f]
		if !ok || pos > len(p.errs) {
			pos = len(p.errs)
		}
		p.errs = append(p.errs[:pos], append([]error{e}, p.errs[pos:]...)...)
	}
}

// ---- agentbox native format ----

func (p *parser) parseNative(root *yaml.Node, fd *policy.Document) {
	fd.Format = "agentbox"
	p.fields(root, "policy file", func(key string, k, v *yaml.Node) bool {
		switch key {
		case "version":
			if v.Value != "1" {
				p.errf(v, "unsupported version %s (want 1)", kindName(v))
			}
		case "default":
			if d, ok := p.decision(v, "default"); ok {
				fd.Default, fd.DefaultLine = &d, v.Line
			}
		case "rules":
			fd.Rules = &policy.RuleSet{}
			p.parseRules(fd.Rules, v, "")
		case "agents":
			fd.Agents = p.parseAgents(v)
		case "approvers":
			fd.Approvers, fd.HasApprovers = p.parseApprovers(v), true
		case "roles":
			p.fields(v, "roles", func(name string, k, rv *yaml.Node) bool {
				if rd := p.parseRole(name, k, rv); rd != nil {
					fd.Roles = append(fd.Roles, rd)
				}
				return true
			})
		default:
			return false
		}
		return true
	})
}

// parseRules adds a rules: list's rules to rs.
func (p *parser) parseRules(rs *policy.RuleSet, n *yaml.Node, role string) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "rules must be a list, got %s", kindName(n))
		return
	}
	for _, rn := range n.Content {
		p.parseRule(rs, rn, role)
	}
}

func validToolName(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c <= ' ' || c == ':' || c == 0x7f {
			return false
		}
	}
	return true
}

// parseRule adds one rule to rs.
func (p *parser) parseRule(rs *policy.RuleSet, n *yaml.Node, role string) {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "rule must be a mapping, got %s", kindName(n))
		return
	}
	// Forge's rule shape: its files are read by internal/policyfmt/forge
	// (asked first); such a rule anywhere else is refused.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k == "pattern" || k == "permission" {
			p.errf(n, "a Forge rule (key %s) here: Forge rules are read only from a Forge rule file's rules, and only where internal/policyfmt/forge is linked: refused", k)
			return
		}
	}
	var (
		id, desc  string
		dec       policy.Decision
		hasDec    bool
		tools     []string
		toolNode  *yaml.Node
		spec      policy.RuleSpec
		nodes     = map[string]*yaml.Node{}
		at        = map[string]int{}
		matchers  int
		errBefore = len(p.errs)
		undoNode  *yaml.Node
	)
	p.fields(n, "rule", func(key string, k, v *yaml.Node) bool {
		switch key {
		case "id":
			id, _ = p.str(v, "id")
		case "description":
			desc, _ = p.str(v, "description")
		case "instead":
			spec.Instead, _ = p.str(v, "instead")
		case "undoable":
			spec.Undoable = p.boolVal(v, "undoable")
			undoNode = v
		case "approver":
			if s, ok := p.str(v, "approver"); ok {
				if !validRoleName(s) {
					p.errf(v, "approver %q: not an approver role name", s)
				}
				spec.Approver = s
			}
		case "decision":
			dec, hasDec = p.decision(v, "decision")
			if !hasDec {
				hasDec = true // error already reported
			}
		case "tool":
			ts, tnodes := p.strList(v, "tool")
			toolNode = v
			for i, t := range ts {
				if !validToolName(t) {
					p.errf(tnodes[i], "invalid tool name %q", t)
					continue
				}
				tools = append(tools, t)
			}
		default:
			if !p.parseMatcher(key, v, &spec) {
				return false
			}
			nodes[key], at[key] = v, len(p.errs)
			matchers++
		}
		return true
	})
	if !hasDec {
		p.errf(n, "rule has no decision (allow, ask or deny)")
	}
	if matchers == 0 && tools == nil {
		p.errf(n, "rule has no matcher: give one of command, kind, regex, glob, category, path, program, host, action or tool")
	}
	if len(p.errs) > errBefore {
		p.compile(&policy.RuleSet{}, spec, nodes, at) // its problems too
		return
	}
	// Default tool filters per matcher kind.
	var toolErr string
	switch {
	case spec.Host != "" && tools == nil:
		// no tool filter: a host matcher matches connection actions only
	case spec.Command != "" || spec.CommandGlob != "" || spec.Program != "" || len(spec.Kind) > 0:
		spec.CommandOnly = true
		for _, t := range tools {
			if !commandToolName(t) {
				toolErr = fmt.Sprintf("command, command globs and program match only exec, git and bash actions, not tool %q", firstNonCommand(t))
				break
			}
		}
		tools = nil // command matchers decide by argv/command text themselves
	case spec.Path != "" && tools == nil:
		tools = []string{"files"}
	}
	spec.Tools = tools
	spec.Decision = dec
	spec.Ref = p.ruleRef(n, id, desc, role)
	if toolErr != "" {
		errBefore = len(p.errs)
		if p.compile(&policy.RuleSet{}, spec, nodes, at); len(p.errs) == errBefore {
			p.errf(toolNode, "%s", toolErr)
		}
		return
	}
	errBefore = len(p.errs)
	p.compile(rs, spec, nodes, at)
	if len(p.errs) == errBefore && spec.Undoable && dec != policy.Ask {
		p.errf(undoNode, "undoable: only an ask rule can be undoable (it is allowed when checkpoints are on)")
	}
}

// toolsOf are the tools a rule's tool: name stands for (bash: exec, git
// and bash; read: view...), as the core reads it.
func toolsOf(t string) []string {
	var rs policy.RuleSet
	if rs.Add(policy.RuleSpec{Tools: []string{t}}) != nil {
		return []string{t}
	}
	return rs.Tools(0)
}

// commandTool reports whether a tool is a command tool (exec, git, bash).
func commandTool(t string) bool {
	return t == policy.ToolExec || t == policy.ToolGit || t == policy.ToolBash
}

// commandToolName reports whether every tool a rule's tool: name stands
// for is a command tool.
func commandToolName(t string) bool {
	return !slices.ContainsFunc(toolsOf(t), func(m string) bool { return !commandTool(m) })
}

// firstNonCommand is the first tool t stands for that is not a command
// tool (for the message).
func firstNonCommand(t string) string {
	for _, m := range toolsOf(t) {
		if !commandTool(m) {
			return m
		}
	}
	return t
}

// validCategory reports whether the core knows a category name.
func validCategory(c string) bool {
	var rs policy.RuleSet
	return rs.Add(policy.RuleSpec{Categories: []string{c}}) == nil
}

// parseMatcher reads one matcher key of a native rule (command, regex,
// glob, category, path, kind, host, program, action) into s; false when
// key is no matcher. A problem the parser sees is reported on p (the
// compile reports the others: parseRule); the key still counts as the
// rule's matcher.
func (p *parser) parseMatcher(key string, v *yaml.Node, s *policy.RuleSpec) bool {
	switch key {
	case "command":
		c, ok := p.str(v, "command")
		if !ok {
			return true
		}
		w := strings.Fields(c)
		if len(w) == 0 || len(w) > 2 {
			p.errf(v, "command %q must be 1 or 2 words (a program and optionally its subcommand); use glob: or regex: for more", c)
			return true
		}
		s.Command = c
	case "regex":
		s.Regex, _ = p.nonEmpty(v, "regex")
	case "glob":
		g, _ := p.nonEmpty(v, "glob")
		if strings.HasPrefix(g, "tool:") {
			s.ActionGlob = g
		} else {
			s.CommandGlob = g
		}
	case "category":
		cs, nodes := p.strList(v, "category")
		for i, c := range cs {
			for _, part := range strings.Split(c, ",") {
				if !validCategory(part) {
					p.errf(nodes[i], "unknown category %q (want read, write, execute, network or destructive)", part)
					continue
				}
				s.Categories = append(s.Categories, part)
			}
		}
	case "path":
		s.Path, _ = p.nonEmpty(v, "path")
	case "kind":
		ks, nodes := p.strList(v, "kind")
		for i, name := range ks {
			if _, ok := programs.ParseKind(name); !ok {
				p.errf(nodes[i], "unknown program kind %q (want one of %s)", name, strings.Join(programs.KindNames(), ", "))
				continue
			}
			s.Kind = append(s.Kind, name)
		}
	case "host":
		s.Host, _ = p.nonEmpty(v, "host")
	case "program":
		s.Program, _ = p.nonEmpty(v, "program")
	case "action":
		s.Action, _ = p.nonEmpty(v, "action")
	default:
		return false
	}
	return true
}

// emptyMatcher is the problem with an empty matcher value (a spec leaves
// an empty field out, so the parser refuses it here): a pattern matching
// only empty text, or nothing at all.
var emptyMatcher = map[string]string{
	"regex":   `regex "": an empty pattern matches no action: refused`,
	"glob":    `glob "": an empty pattern matches no command: refused`,
	"path":    `invalid path glob "": empty`,
	"host":    `invalid host pattern "": empty`,
	"program": `invalid program glob "": empty`,
	"action":  `invalid action "": must start with "tool:" (format tool:<tool>:<detail>)`,
}

// nonEmpty reads a matcher's string value, refusing an empty one.
func (p *parser) nonEmpty(v *yaml.Node, what string) (string, bool) {
	s, ok := p.str(v, what)
	if ok && s == "" {
		p.errf(v, "%s", emptyMatcher[what])
		return "", false
	}
	return s, ok
}

// chorusList adds a role's allow/ask/deny list of Chorus regexes to rs.
func (p *parser) chorusList(rs *policy.RuleSet, v *yaml.Node, dec policy.Decision, what, role string) {
	pats, nodes := p.strList(v, what)
	for i, src := range pats {
		id := ""
		if p.builtin {
			id = fmt.Sprintf("%s.%d", what, i)
		}
		s := policy.RuleSpec{Ref: p.ruleRef(nodes[i], id, "", role), Decision: dec, Regex: src}
		p.compile(rs, s, map[string]*yaml.Node{"regex": nodes[i]}, nil)
	}
}

// ---- roles ----

func (p *parser) parseRole(name string, k, n *yaml.Node) *policy.RoleSpec {
	if !validRoleName(name) {
		p.errf(k, "invalid role name %q (letters, digits, '-', '_', '.')", name)
		return nil
	}
	rd := &policy.RoleSpec{Name: name, File: p.file, Line: k.Line, Source: p.source(k, name), Hidden: strings.HasPrefix(name, "_"), Rules: &policy.RuleSet{}}
	rd.Info.Name = name
	p.fields(n, "role "+name, func(key string, kk, v *yaml.Node) bool {
		switch key {
		case "extends":
			rd.Extends, _ = p.str(v, "extends")
			rd.ExtendsLine = v.Line
		case "description":
			rd.Info.Description, _ = p.str(v, "description")
		case "default":
			if d, ok := p.decision(v, "default"); ok {
				rd.Default = &d
			}
		case "filesystem":
			rd.SetsFS = true
			p.parseFS(v, &rd.Info.FS)
		case "network":
			rd.SetsNetwork = true
			p.parseNetwork(v, &rd.Info.Network)
		case "limits":
			rd.SetsLimits = true
			p.parseLimits(v, &rd.Info.Limits)
		case "unknown_programs":
			rd.SetsUnknownPrograms = true
			switch v.Value {
			case "allow":
				rd.Info.UnknownPrograms = true
			case "ask", "default":
				rd.Info.UnknownPrograms = false
			default:
				p.errf(v, "unknown_programs %s: want allow (while the run can be undone) or default", kindName(v))
			}
		case "programs":
			rd.Info.Programs = p.parsePrograms(v, "role "+name)
		case "host_caches":
			rd.SetsHostCaches = true
			rd.Info.HostCaches = p.boolVal(v, "host_caches")
		case "review":
			rd.SetsReview = true
			rd.Info.Review = p.boolVal(v, "review")
		case "checkpoints":
			rd.SetsCheckpoints = true
			p.parseCheckpoints(v, &rd.Info.Checkpoints, &rd.SetsCheckpointsEnabled)
		case "env":
			rd.Info.Env, _ = p.strList(v, "env")
		case "inject_env":
			names, nodes := p.strList(v, "inject_env")
			for i, n := range names {
				if !command.IsInjectionVar(n) {
					p.errf(nodes[i], "inject_env: %q is not a loader or runtime variable agentbox decides (LD_LIBRARY_PATH, PYTHONPATH, ...)", n)
				}
			}
			rd.Info.InjectEnv = names
		case "git":
			rd.SetsGit = true
			p.fields(v, "git", func(key string, _, gv *yaml.Node) bool {
				switch key {
				case "max_commits":
					rd.Info.Git.MaxCommits = int(p.intVal(gv, "max_commits", 0, 1<<20))
				case "commit_message_required":
					rd.Info.Git.CommitMessageRequired = p.boolVal(gv, "commit_message_required")
				case "host_identity":
					rd.Info.Git.NoHostIdentity = !p.boolVal(gv, "host_identity")
				default:
					return false
				}
				return true
			})
		case "deletions":
			p.fields(v, "deletions", func(key string, _, dv *yaml.Node) bool {
				var dst *[]string
				switch key {
				case "forbidden":
					dst = &rd.Info.Deletions.Forbidden
				case "require_approval":
					dst = &rd.Info.Deletions.RequireApproval
				case "auto_approve":
					dst = &rd.Info.Deletions.AutoApprove
				default:
					return false
				}
				globs, nodes := p.strList(dv, "deletions."+key)
				for i, g := range globs {
					if _, err := policy.PathMatcher(g); err != nil {
						p.errf(nodes[i], "%v", err)
					}
				}
				*dst = globs
				return true
			})
		case "rules":
			p.parseRules(rd.Rules, v, name)
		case "allow", "ask", "deny":
			// Chorus lists inside a role
			d, _ := policy.ParseDecision(key)
			p.chorusList(rd.Rules, v, d, key, name)
		default:
			return false
		}
		return true
	})
	return rd
}

func validRoleName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (p *parser) parseAccess(n *yaml.Node, what string) policy.Access {
	s, ok := p.str(n, what)
	if !ok {
		return ""
	}
	switch a := policy.Access(strings.ToLower(s)); a {
	case policy.AccessNone, policy.AccessRead, policy.AccessReadExec, policy.AccessReadWrite, policy.AccessAll:
		return a
	}
	p.errf(n, "%s: invalid access %q (want none, ro, rx, rw or rwx)", what, s)
	return ""
}

func (p *parser) parseFS(n *yaml.Node, fs *policy.FSGrants) {
	p.fields(n, "filesystem", func(key string, _, v *yaml.Node) bool {
		switch key {
		case "context":
			fs.Context = p.parseAccess(v, key)
		case "target":
			fs.Target = p.parseAccess(v, key)
		case "feedback":
			fs.Feedback = p.parseAccess(v, key)
		case "own_agent":
			fs.OwnAgent = p.parseAccess(v, key)
		case "other_agents":
			fs.OtherAgents = p.parseAccess(v, key)
		case "readonly":
			globs, nodes := p.strList(v, key)
			for i, g := range globs {
				if _, err := policy.PathMatcher(g); err != nil {
					p.errf(nodes[i], "%v", err)
				}
			}
			fs.ReadOnly = globs
		case "extra_read", "extra_exec", "extra_write":
			paths, nodes := p.strList(v, key)
			for i, s := range paths {
				if !filepath.IsAbs(s) {
					p.errf(nodes[i], "%s: %q must be an absolute path", key, s)
				}
			}
			switch key {
			case "extra_read":
				fs.ExtraRead = paths
			case "extra_exec":
				fs.ExtraExec = paths
			default:
				fs.ExtraWrite = paths
			}
		default:
			return false
		}
		return true
	})
}

func (p *parser) parseNetwork(n *yaml.Node, nw *policy.Network) {
	if n.Kind == yaml.ScalarNode && (n.Value == "none" || n.Tag == "!!null") {
		*nw = policy.Network{}
		return
	}
	ports := func(v *yaml.Node, what string) []uint16 {
		if v.Kind != yaml.SequenceNode {
			p.errf(v, "%s must be a list of ports", what)
			return nil
		}
		var out []uint16
		for _, c := range v.Content {
			out = append(out, uint16(p.intVal(c, what+" port", 1, 65535)))
		}
		return out
	}
	if n.Kind == yaml.ScalarNode && n.Value == "proxy" {
		*nw = policy.Network{Proxy: true}
		return
	}
	hosts := func(v *yaml.Node, what string) []string {
		list, nodes := p.strList(v, what)
		for i, h := range list {
			if _, err := policy.NetMatcher(h); err != nil {
				p.errf(nodes[i], "network %s: %v", what, err)
			}
		}
		return list
	}
	p.fields(n, "network", func(key string, _, v *yaml.Node) bool {
		switch key {
		case "tcp_connect":
			nw.TCPConnect = ports(v, key)
		case "tcp_bind":
			nw.TCPBind = ports(v, key)
		case "mode":
			switch m, _ := p.str(v, "mode"); m {
			case "proxy":
				nw.Proxy = true
			case "none", "tcp":
			default:
				p.errf(v, "network mode %q: want none, proxy or tcp", m)
			}
		case "allow":
			nw.Allow, nw.Proxy = hosts(v, key), true
		case "ask":
			nw.Ask, nw.Proxy = hosts(v, key), true
		case "deny":
			nw.Deny, nw.Proxy = hosts(v, key), true
		case "internal":
			nw.Internal, nw.Proxy = hosts(v, key), true
		case "default":
			if d, ok := p.decision(v, "network default"); ok {
				nw.Default = &d
			}
		case "rate_per_minute":
			nw.RatePerMinute = int(p.intVal(v, "rate_per_minute", 1, 1<<20))
		case "inspect":
			nw.Inspect, nw.Proxy = hosts(v, key), true
		case "requests":
			nw.Requests, nw.Proxy = p.parseRequests(v), true
		case "secrets":
			nw.Secrets, nw.Proxy = p.parseSecrets(v), true
		default:
			return false
		}
		return true
	})
}

// parseRequests parses a network block's requests: list
// ({method, host, path, decision, description} each).
func (p *parser) parseRequests(n *yaml.Node) []policy.RequestRule {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "network requests must be a list of {host, method, path, decision}, got %s", kindName(n))
		return nil
	}
	var out []policy.RequestRule
	for _, e := range n.Content {
		var rr policy.RequestRule
		hasDec := false
		p.fields(e, "network requests entry", func(key string, _, v *yaml.Node) bool {
			switch key {
			case "host":
				rr.Host, _ = p.str(v, "requests host")
			case "method", "methods":
				rr.Methods, _ = p.strList(v, "requests "+key)
			case "path":
				rr.Path, _ = p.str(v, "requests path")
			case "decision":
				rr.Decision, hasDec = p.decision(v, "requests decision")
			case "description":
				rr.Description, _ = p.str(v, "requests description")
			default:
				return false
			}
			return true
		})
		if e.Kind != yaml.MappingNode {
			continue
		}
		if !hasDec {
			p.errf(e, "network requests entry needs a decision (allow, ask or deny)")
			continue
		}
		if rr.Host == "" {
			p.errf(e, "network requests entry needs a host (a pattern as in network: allow)")
			continue
		}
		if err := rr.Check(); err != nil {
			p.errf(e, "network requests entry: %v", err)
			continue
		}
		out = append(out, rr)
	}
	return out
}

// parseSecrets parses a network block's secrets: mapping (NAME: [host
// patterns]).
func (p *parser) parseSecrets(n *yaml.Node) []policy.SecretGrant {
	var out []policy.SecretGrant
	p.fields(n, "network secrets", func(name string, k, v *yaml.Node) bool {
		hosts, nodes := p.strList(v, "secrets."+name)
		sg := policy.SecretGrant{Name: name, Hosts: hosts, Source: p.source(k, "")}
		if err := policy.CheckSecretGrant(sg); err != nil {
			at := k
			if len(nodes) > 0 {
				at = nodes[0]
			}
			p.errf(at, "network secrets: %v", err)
			return true
		}
		out = append(out, sg)
		return true
	})
	return out
}

func (p *parser) intVal(n *yaml.Node, what string, lo, hi int64) int64 {
	s, ok := p.str(n, what)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		p.errf(n, "%s: invalid number %q (want %d..%d)", what, s, lo, hi)
		return 0
	}
	return v
}

func (p *parser) boolVal(n *yaml.Node, what string) bool {
	switch n.Value {
	case "true":
		return true
	case "false":
		return false
	}
	p.errf(n, "%s must be true or false, got %s", what, kindName(n))
	return false
}

func (p *parser) parseLimits(n *yaml.Node, l *policy.Limits) {
	p.fields(n, "limits", func(key string, _, v *yaml.Node) bool {
		s, ok := p.str(v, key)
		if !ok {
			return true
		}
		var err error
		switch key {
		case "memory":
			l.MemoryBytes, err = policy.ParseSize(s)
		case "max_file_size":
			l.MaxFileSize, err = policy.ParseSize(s)
		case "cpus":
			l.CPUs, err = strconv.ParseFloat(s, 64)
			if err == nil && (l.CPUs <= 0 || l.CPUs > 4096 || math.IsNaN(l.CPUs)) {
				err = errors.New("want a positive number of CPUs")
			}
		case "pids":
			l.Pids = p.intVal(v, key, 1, 1<<22)
		case "nofile":
			l.NoFile = uint64(p.intVal(v, key, 1, 1<<30))
		case "timeout":
			l.Timeout, err = parseDuration(s)
		case "approval_timeout":
			l.ApprovalWait, err = parseDuration(s)
		default:
			return false
		}
		if err != nil {
			p.errf(v, "limits.%s: invalid value %q: %v", key, s, err)
		}
		return true
	})
}

func (p *parser) parseCheckpoints(n *yaml.Node, c *policy.Checkpoints, enabledSet *bool) {
	p.fields(n, "checkpoints", func(key string, _, v *yaml.Node) bool {
		if key == "enabled" {
			c.Off = !p.boolVal(v, "checkpoints.enabled")
			*enabledSet = true
			return true
		}
		if key == "exclude" {
			names, nodes := p.strList(v, "checkpoints.exclude")
			for i, name := range names {
				if name == "" || strings.ContainsAny(name, "/\\*?[") || name == "." || name == ".." {
					p.errf(nodes[i], "checkpoints.exclude: %q is not a directory name (names like node_modules, no paths or patterns)", name)
				}
			}
			c.Exclude = append([]string{}, names...)
			return true
		}
		s, ok := p.str(v, key)
		if !ok {
			return true
		}
		var err error
		switch key {
		case "max_size":
			c.MaxBytes, err = policy.ParseSize(s)
		case "max_file_size":
			c.MaxFileSize, err = policy.ParseSize(s)
		case "max_age":
			c.MaxAge, err = parseDuration(s)
		default:
			return false
		}
		if err != nil {
			p.errf(v, "checkpoints.%s: invalid value %q: %v", key, s, err)
		}
		return true
	})
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("want a duration like 30s, 2m or 1h")
	}
	if d < 0 {
		return 0, errors.New("negative duration")
	}
	return d, nil
}
