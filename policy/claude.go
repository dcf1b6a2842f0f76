package policy

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/command"
)

// Claude Code's permission rules (settings.json "permissions": allow, ask,
// deny lists of Tool or Tool(specifier)), decided as Claude Code decides
// them: deny, then ask, then allow; a Bash command line is allowed only
// when every command in it is; nothing matching leaves the decision to
// the role (Claude Code would prompt).
//
//	Bash                    every command
//	Bash(npm run test:*)    commands starting with "npm run test" (word boundary for allow, plain prefix for deny)
//	Bash(npm run build)     exactly that command
//	Bash(git * main)        '*' matches anything
//	Read(./secrets/**)      a gitignore-style path: relative to the project (the directory holding .claude/);
//	Edit(/src/**)           "/x" is relative to the project too, "//x" absolute, "~/x" the HOME
//	WebFetch(domain:x.com)  fetches (and proxy connections) to that host
//	WebSearch, Task, mcp__server, mcp__server__tool   tools by name

// claudeRule is one permission rule string.
type claudeRule struct {
	dec    Decision
	tool   string // Bash, Read, Edit, Write, WebFetch, ... or mcp__...
	spec   string // the specifier; "" = the whole tool
	prefix string // Bash(x:*): the prefix x
	exact  string // Bash(x): the command
	glob   *glob  // Bash(x * y)
	path   *pathGlob
	// inWS is path anchored at the project, relative to the workspace
	// (bound once the workspace is known: bindPaths).
	inWS   *pathGlob
	abs    *glob // //abs or ~/home paths (on the absolute path)
	domain *hostPattern
	ref    RuleRef
	text   string
}

// built at first use, not at every launch's package initialisation
var claudeRuleRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*)(?:\((.*)\))?$`) })

// isClaudePermissions reports whether a "permissions" mapping holds Claude
// Code rule strings (Bash(...), Read, mcp__x) rather than Chorus regexes.
func isClaudePermissions(v *yaml.Node) bool {
	if v.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		switch v.Content[i].Value {
		case "defaultMode", "additionalDirectories", "disableBypassPermissionsMode":
			return true
		}
		l := v.Content[i+1]
		if l.Kind != yaml.SequenceNode {
			continue
		}
		for _, it := range l.Content {
			if it.Kind == yaml.ScalarNode && !strings.HasPrefix(it.Value, "tool:") && claudeRuleRe().MatchString(it.Value) &&
				it.Value[0] >= 'A' && it.Value[0] <= 'Z' || strings.HasPrefix(it.Value, "mcp__") {
				return true
			}
		}
	}
	return false
}

// parseClaude reads a Claude Code settings file: its "permissions" lists;
// every other setting (hooks, env, model...) belongs to Claude Code and is
// left alone.
func (p *parser) parseClaude(root *yaml.Node, fd *fileDef) {
	fd.format = "claude"
	project := claudeProject(p.file)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "permissions" {
			continue
		}
		perms := root.Content[i+1]
		p.fields(perms, "permissions", func(key string, k, lv *yaml.Node) bool {
			dec, ok := listDecision(key)
			switch {
			case key == "defaultMode" || key == "additionalDirectories" || key == "disableBypassPermissionsMode":
				return true // Claude Code's own modes
			case !ok || key == "confirm":
				return false
			}
			specs, nodes := p.strList(lv, "permissions."+key)
			for j, s := range specs {
				if r, err := parseClaudeRule(s, dec, project); err != nil {
					p.errf(nodes[j], "permissions.%s: %q: %v", key, s, err)
				} else if r != nil {
					r.ref = RuleRef{ID: fmt.Sprintf("%s:%d", p.base, nodes[j].Line), Layer: p.layer, Source: p.source(nodes[j], "")}
					r.text = s
					fd.claude = append(fd.claude, r)
				}
			}
			return true
		})
	}
}

// userHome is the HOME "~/" paths of rules refer to.
func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// claudeProject is the project directory of a settings file: the
// directory holding its .claude/ (else the file's own directory).
func claudeProject(file string) string {
	dir := filepath.Dir(file)
	if filepath.Base(dir) == ".claude" {
		return filepath.Dir(dir)
	}
	return dir
}

// parseClaudeRule parses one rule string.
func parseClaudeRule(s string, dec Decision, project string) (*claudeRule, error) {
	m := claudeRuleRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return nil, fmt.Errorf("want Tool or Tool(specifier)")
	}
	r := &claudeRule{dec: dec, tool: m[1], spec: m[2]}
	if r.spec == "" {
		return r, nil
	}
	switch r.tool {
	case "Bash":
		switch sp := strings.Join(strings.Fields(r.spec), " "); {
		case strings.HasSuffix(sp, ":*"):
			r.prefix = strings.TrimSuffix(sp, ":*")
			if r.prefix == "" {
				return nil, fmt.Errorf("empty command prefix")
			}
		case strings.Contains(sp, "*"):
			g, err := compileGlob(sp)
			if err != nil {
				return nil, err
			}
			r.glob = g
		default:
			r.exact = sp
		}
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS":
		sp := r.spec
		switch {
		case strings.HasPrefix(sp, "//"):
			g, err := compileGlob(strings.ReplaceAll(sp[1:], "**", "*"))
			if err != nil {
				return nil, err
			}
			r.abs = g
		case strings.HasPrefix(sp, "~/"):
			home := userHome()
			if home == "" {
				return nil, fmt.Errorf("~ in a path, but no HOME")
			}
			g, err := compileGlob(strings.ReplaceAll(filepath.Join(home, sp[2:]), "**", "*"))
			if err != nil {
				return nil, err
			}
			r.abs = g
		default:
			rel := strings.TrimPrefix(strings.TrimPrefix(sp, "./"), "/")
			if strings.Contains("/"+rel+"/", "/../") {
				return nil, fmt.Errorf("'..' in a path rule")
			}
			g, err := compilePathGlob(rel)
			if err != nil {
				return nil, err
			}
			r.path = g
			r.spec = path.Clean(filepath.ToSlash(filepath.Join(project, rel)))
			if !strings.Contains(rel, "/") && !strings.HasPrefix(sp, "/") && !strings.HasPrefix(sp, "./") {
				r.spec = rel // a bare name matches at any depth, like gitignore
			}
		}
	case "WebFetch":
		d, ok := strings.CutPrefix(r.spec, "domain:")
		if !ok {
			return nil, fmt.Errorf("WebFetch takes domain:HOST")
		}
		hp, err := compileHostPattern(d)
		if err != nil {
			return nil, err
		}
		r.domain = hp
	default:
		if !strings.HasPrefix(r.tool, "mcp__") {
			// A specifier agentbox does not understand: an allow is left
			// out (never broadened), a deny or ask covers the whole tool.
			if dec == Allow {
				return nil, nil
			}
			r.spec = ""
		}
	}
	return r, nil
}

// bindPaths anchors the layer's project-relative path rules in the
// workspace of e, once, so deciding compiles nothing.
func (fl *formatLayer) bindPaths(e *Engine) {
	for _, r := range fl.claude {
		if r.path != nil && strings.Contains(r.spec, "/") {
			r.inWS, _ = compilePathGlob(e.relPath(r.spec))
		}
	}
}

// claudeTools are the agentbox tools each Claude Code tool's path rules
// cover (Read rules cover every reading tool, Edit every editing tool).
var claudeTools = map[string][]string{
	"Read": {ToolView}, "Glob": {ToolView}, "Grep": {ToolView}, "LS": {ToolView},
	"Edit": {ToolCreateFile, ToolStrReplace}, "MultiEdit": {ToolStrReplace}, "NotebookEdit": {ToolStrReplace},
	"Write": {ToolCreateFile},
}

// matchCommand reports whether a Bash rule matches one command's text.
func (r *claudeRule) matchCommand(c string) bool {
	if r.tool != "Bash" {
		return false
	}
	switch {
	case r.spec == "":
		return true
	case r.prefix != "":
		if r.dec == Deny {
			return strings.HasPrefix(c, r.prefix) // refusals: the plain prefix
		}
		return c == r.prefix || strings.HasPrefix(c, r.prefix+" ") || strings.HasPrefix(c, r.prefix+":")
	case r.glob != nil:
		return r.glob.match(c)
	}
	return c == r.exact
}

// matchAction reports whether a rule matches a non-command action.
func (r *claudeRule) matchAction(e *Engine, tool, detail string) bool {
	switch tool {
	case ToolView, ToolCreateFile, ToolStrReplace, ToolDelete:
		ts := claudeTools[r.tool]
		if tool == ToolDelete {
			ts = claudeTools["Edit"]
			if r.tool == "Edit" {
				ts = []string{ToolDelete}
			}
		}
		ok := false
		for _, t := range ts {
			ok = ok || t == tool
		}
		if !ok {
			return false
		}
		switch {
		case r.spec == "":
			return true
		case r.abs != nil:
			abs := detail
			if !strings.HasPrefix(abs, "/") && e.workspace != "" {
				abs = path.Join(e.workspace, detail)
			}
			return r.abs.match(abs)
		case r.path != nil:
			rel := e.relPath(detail)
			if !strings.Contains(r.spec, "/") {
				return r.path.match(rel)
			}
			return r.inWS != nil && r.inWS.match(rel)
		}
	case ToolNet:
		return r.tool == "WebFetch" && (r.domain == nil || r.domain.match(detail))
	case "web_fetch":
		if r.tool != "WebFetch" {
			return false
		}
		if r.domain == nil {
			return true
		}
		u, err := url.Parse(detail)
		return err == nil && r.domain.match(NetAction(u.Hostname(), 443)[len("tool:net:"):])
	case "web_search":
		return r.tool == "WebSearch"
	default:
		return r.tool == tool || strings.HasPrefix(r.tool, "mcp__") && strings.HasPrefix(tool, r.tool+"__")
	}
	return false
}

// claudeDecide applies the layer's Claude Code rules to q.
func (fl *formatLayer) claudeDecide(q *FormatQuery) formatVerdict {
	pick := func(match func(r *claudeRule) bool) (*claudeRule, Decision, bool) {
		for _, d := range []Decision{Deny, Ask, Allow} {
			for _, r := range fl.claude {
				if r.dec == d && match(r) {
					return r, d, true
				}
			}
		}
		return nil, 0, false
	}
	verdict := func(r *claudeRule, what string) formatVerdict {
		return formatVerdict{dec: r.dec, crule: r, reason: fmt.Sprintf("%s %s: %s %s (rule %q; deny, then ask, then allow)%s",
			formatName[fl.format], fl.path, map[Decision]string{Allow: "allowed", Ask: "needs approval", Deny: "denied"}[r.dec], what, r.text, ""), fl: fl}
	}
	if q.Line != "" {
		cmds := commandTexts(q)
		var allowedBy *claudeRule
		var ask *claudeRule
		allAllowed := len(cmds) > 0
		for _, c := range cmds {
			r, d, ok := pick(func(r *claudeRule) bool { return r.matchCommand(c) })
			switch {
			case ok && d == Deny:
				return verdict(r, fmt.Sprintf("%q", c))
			case ok && d == Ask:
				if ask == nil {
					ask = r
				}
			case ok:
				if allowedBy == nil {
					allowedBy = r
				}
				continue
			}
			allAllowed = false
		}
		if ask != nil {
			return verdict(ask, "a command of the line")
		}
		if allAllowed && allowedBy != nil {
			return verdict(allowedBy, "every command of the line")
		}
		return formatVerdict{dec: Ask, reason: "no Claude Code rule decides every command", fl: fl, none: true}
	}
	tool, detail, err := ParseAction(q.Action)
	if err != nil {
		return formatVerdict{none: true, fl: fl}
	}
	if r, _, ok := pick(func(r *claudeRule) bool { return r.matchAction(fl.sub, tool, detail) }); ok {
		return verdict(r, tool+" "+detail)
	}
	return formatVerdict{none: true, fl: fl}
}

// commandTexts are the commands of a command query, as their text.
func commandTexts(q *FormatQuery) []string {
	if q.Argv != nil {
		return []string{command.Join(q.Argv)}
	}
	items, err := parseShell(q.Line)
	if err != nil {
		return []string{q.Line}
	}
	var out []string
	for _, it := range items {
		if it.Argv != nil && !it.Wrapper {
			out = append(out, strings.Join(it.Argv, " "))
		}
	}
	return out
}
