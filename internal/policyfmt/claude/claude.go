// Package claude reads Claude Code's permission rules (settings.json
// "permissions": allow, ask and deny lists of Tool or Tool(specifier)) and
// decides them as Claude Code does: deny, then ask, then allow; a Bash
// command line is allowed only when every command in it is; nothing
// matching leaves the decision to the role (Claude Code would prompt).
//
//	Bash                    every command
//	Bash(npm run test:*)    commands starting with "npm run test" (word boundary for allow, plain prefix for deny)
//	Bash(npm run build)     exactly that command
//	Bash(git * main)        '*' matches anything
//	Read(./secrets/**)      a gitignore-style path: relative to the project (the directory holding .claude/);
//	Edit(/src/**)           "/x" is relative to the project too, "//x" absolute, "~/x" the HOME
//	WebFetch(domain:x.com)  fetches (and proxy connections) to that host
//	WebSearch, Task, mcp__server, mcp__server__tool   tools by name
//
// It owns how such a file is recognised, read, linted and decided, and
// reaches the policy loader only through load.RegisterFormat: it imports
// the decision core (policy) for its types and matchers, internal/command
// to split a shell line, internal/yamlfields to read the file; never the
// loader, lint or presentation, and the core never imports it
// (arch_test.go).
package claude

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/yamlfields"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// name is how results and explanations name the format.
const name = "Claude Code permissions"

func init() { load.RegisterFormat(reader{}) }

// rule is one permission rule string.
type rule struct {
	dec    policy.Decision
	tool   string            // Bash, Read, Edit, Write, WebFetch, ... or mcp__...
	spec   string            // the specifier; "" = the whole tool
	prefix string            // Bash(x:*): the prefix x
	exact  string            // Bash(x): the command
	glob   func(string) bool // Bash(x * y)
	path   func(string) bool
	// inWS is path anchored at the project, relative to the workspace
	// (bound once the workspace is known: BindWorkspace).
	inWS   func(string) bool
	abs    func(string) bool // //abs or ~/home paths (on the absolute path)
	domain func(string) bool
	ref    policy.RuleRef
	text   string
}

// built at first use, not at every launch's package initialisation
var ruleRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*)(?:\((.*)\))?$`) })

// reader is the format's policy.FormatReader.
type reader struct{}

// Name implements policy.FormatReader.
func (reader) Name() string { return "claude" }

// Fallback implements policy.FormatReader: asked with the other readers,
// in registration order.
func (reader) Fallback() bool { return false }

// Detect implements policy.FormatReader: a decoded document with Claude
// Code permission lists, hooks, or a $schema and no version.
func (reader) Detect(_ string, _ []byte, root *yaml.Node) bool {
	if root == nil {
		return false
	}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		keys[root.Content[i].Value] = root.Content[i+1]
	}
	perms := keys["permissions"]
	return perms != nil && isPermissions(perms) || keys["hooks"] != nil || keys["$schema"] != nil && keys["version"] == nil
}

// isPermissions reports whether a "permissions" mapping holds Claude
// Code rule strings (Bash(...), Read, mcp__x) rather than Chorus regexes.
func isPermissions(v *yaml.Node) bool {
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
			if it.Kind == yaml.ScalarNode && !strings.HasPrefix(it.Value, "tool:") && ruleRe().MatchString(it.Value) &&
				it.Value[0] >= 'A' && it.Value[0] <= 'Z' || strings.HasPrefix(it.Value, "mcp__") {
				return true
			}
		}
	}
	return false
}

// lists maps a permissions list to its decision.
var lists = map[string]policy.Decision{"allow": policy.Allow, "ask": policy.Ask, "deny": policy.Deny}

// rules are one settings file's rules.
type rules []*rule

// Read implements policy.FormatReader: the file's "permissions" lists;
// every other setting (hooks, env, model...) belongs to Claude Code and is
// left alone.
func (reader) Read(file string, layer policy.Layer, _ []byte, root *yaml.Node) (policy.FormatRules, []error) {
	var errs []error
	errf := func(n *yaml.Node, format string, args ...any) {
		line := 0
		if n != nil {
			line = n.Line
		}
		errs = append(errs, fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, args...)))
	}
	project := projectOf(file)
	base := filepath.Base(file)
	var out rules
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "permissions" {
			continue
		}
		yamlfields.Fields(root.Content[i+1], "permissions", errf, func(key string, k, lv *yaml.Node) bool {
			switch key {
			case "defaultMode", "additionalDirectories", "disableBypassPermissionsMode":
				return true // Claude Code's own modes
			}
			dec, ok := lists[key]
			if !ok {
				return false
			}
			specs, nodes := yamlfields.StrList(lv, "permissions."+key, errf)
			for j, s := range specs {
				if r, err := parseRule(s, dec, project); err != nil {
					errf(nodes[j], "permissions.%s: %q: %v", key, s, err)
				} else if r != nil {
					r.ref = policy.RuleRef{ID: fmt.Sprintf("%s:%d", base, nodes[j].Line), Layer: layer, Source: fmt.Sprintf("%s:%d", file, nodes[j].Line)}
					r.text = s
					out = append(out, r)
				}
			}
			return true
		})
	}
	return out, errs
}

// userHome is the HOME "~/" paths of rules refer to.
func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// projectOf is the project directory of a settings file: the directory
// holding its .claude/ (else the file's own directory).
func projectOf(file string) string {
	dir := filepath.Dir(file)
	if filepath.Base(dir) == ".claude" {
		return filepath.Dir(dir)
	}
	return dir
}

// parseRule parses one rule string.
func parseRule(s string, dec policy.Decision, project string) (*rule, error) {
	m := ruleRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return nil, fmt.Errorf("want Tool or Tool(specifier)")
	}
	r := &rule{dec: dec, tool: m[1], spec: m[2]}
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
			g, err := policy.GlobMatcher(sp)
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
			g, err := policy.GlobMatcher(strings.ReplaceAll(sp[1:], "**", "*"))
			if err != nil {
				return nil, err
			}
			r.abs = g
		case strings.HasPrefix(sp, "~/"):
			home := userHome()
			if home == "" {
				return nil, fmt.Errorf("~ in a path, but no HOME")
			}
			g, err := policy.GlobMatcher(strings.ReplaceAll(filepath.Join(home, sp[2:]), "**", "*"))
			if err != nil {
				return nil, err
			}
			r.abs = g
		default:
			rel := strings.TrimPrefix(strings.TrimPrefix(sp, "./"), "/")
			if strings.Contains("/"+rel+"/", "/../") {
				return nil, fmt.Errorf("'..' in a path rule")
			}
			g, err := policy.PathMatcher(rel)
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
		hp, err := policy.NetMatcher(d)
		if err != nil {
			return nil, err
		}
		r.domain = hp
	default:
		if !strings.HasPrefix(r.tool, "mcp__") {
			// A specifier agentbox does not understand: an allow is left
			// out (never broadened), a deny or ask covers the whole tool.
			if dec == policy.Allow {
				return nil, nil
			}
			r.spec = ""
		}
	}
	return r, nil
}
