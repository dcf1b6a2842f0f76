// Package remember writes an approver's standing answers into a policy
// file: "remember" saves the shortest command prefix that makes the next
// load of the policy allow the command (or nothing, saying why), "remember
// deny" a deny rule. The file is edited as YAML (or Codelia JSON), checked
// to parse, and replaced atomically; it is never left half-written.
package remember

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/programs"
	"github.com/agentbox/agentbox/internal/redact"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// subcommandTools take a subcommand as their second word, so a remembered
// rule keeps two words ("npm test", not "npm").
var subcommandTools = map[string]bool{
	"git": true, "go": true, "npm": true, "yarn": true, "pnpm": true, "cargo": true, "docker": true, "podman": true,
	"kubectl": true, "pip": true, "pip3": true, "uv": true, "poetry": true, "bundle": true, "gem": true, "mvn": true,
	"gradle": true, "dotnet": true, "rustup": true, "apt": true, "apt-get": true, "brew": true, "gh": true, "helm": true,
	"terraform": true, "systemctl": true, "conda": true,
}

// commandPrefix returns the command prefix ("git status", "ls") an
// "always" answer for action should be remembered as, Codelia-style: the
// program and, for tools with subcommands, the subcommand. ok is false when
// the action must not be remembered as a prefix (see safeToRemember).
func commandPrefix(action string) (prefix string, ok bool) {
	tool, detail, err := policy.ParseAction(action)
	if err != nil {
		return "", false
	}
	var words []string
	switch tool {
	case policy.ToolExec:
		words = strings.Fields(detail)
	case policy.ToolGit:
		words = append([]string{"git"}, strings.Fields(detail)...)
	case policy.ToolBash:
		if !policy.PlainWords(detail) {
			return "", false // compound or quoted: remember nothing
		}
		words = strings.Fields(detail)
	default:
		return "", false
	}
	if len(words) == 0 || !policy.PlainWords(detail) && tool != policy.ToolExec {
		return "", false
	}
	prog := baseName(words[0])
	if prog == "" || programs.NeverRemember(prog) || strings.ContainsAny(prog, "'\"$`\\") {
		return "", false
	}
	if subcommandTools[prog] {
		if len(words) < 2 || strings.HasPrefix(words[1], "-") || strings.ContainsAny(words[1], "'\"$`\\") {
			return "", false // bare git, or git with a global option: too broad
		}
		return prog + " " + words[1], true
	}
	return prog, true
}

// safeToRemember reports whether an "always" answer for action may be kept
// as a standing prefix rule. It is false for shells, interpreters, env,
// sudo and other wrappers, bare git (or git with options before the
// subcommand), compound shell lines and non-command actions.
func safeToRemember(action string) bool {
	_, ok := commandPrefix(action)
	return ok
}

// Allow saves a standing allow rule for action in the policy file at
// path (typically <workspace>/agentbox.yaml), for an approver's "remember"
// answer. Of the candidate prefixes — prefix when the approver chose one,
// else, for a one-word prefix, the program with its first argument
// (`chmod 600`) and then the program alone — it saves the narrowest that
// makes action decide allow when the policy is loaded again with the file
// changed. When none would (a deny, a more specific ask), the file is left
// as it was and the error names the rule that still decides.
func Allow(e *policy.Engine, path, action, prefix, description string) (string, error) {
	c, data, err := pick(e, path, action, prefix, description)
	if err != nil {
		return "", err
	}
	if err := writePolicyFile(path, data); err != nil {
		return "", err
	}
	return c, nil
}

// Preview says what a "remember" answer for action would save in the
// policy file at path (the prefix Allow would pick), and what a
// "remember deny" would (Deny's prefix), without writing anything: an
// approver is shown the exact rule before choosing. An empty prefix
// comes with the reason nothing would be saved.
func Preview(e *policy.Engine, path, action string) (allow string, allowErr error, deny string) {
	allow, _, allowErr = pick(e, path, action, "", "")
	deny, _ = commandPrefix(action)
	return allow, allowErr, deny
}

// pick chooses the prefix Allow saves and the file's new content.
func pick(e *policy.Engine, path, action, prefix, description string) (string, []byte, error) {
	var cands []string
	if prefix != "" {
		cands = []string{prefix}
	} else {
		p, ok := commandPrefix(action)
		if !ok {
			return "", nil, errors.New("unsafe to remember as a prefix (shells, interpreters, wrappers, bare git, compound lines)")
		}
		// The narrowest first: the program with its first argument
		// ("chmod 600", not "chmod", which would also allow chmod 777),
		// then the program alone.
		if !strings.Contains(p, " ") {
			_, detail, _ := policy.ParseAction(action)
			if w := strings.Fields(detail); len(w) >= 2 && policy.PlainWords(w[1]) && !secretWord(w[1]) {
				cands = append(cands, p+" "+w[1])
			}
		}
		cands = append(cands, p)
	}
	var last policy.Result
	for _, c := range cands {
		data, err := projectRuleBytes(path, policy.Allow, c, description)
		if err != nil {
			return "", nil, err
		}
		if data == nil {
			data, _ = os.ReadFile(path) // already there: check it still wins
		}
		res, err := decideWithFile(e, data, action)
		if err != nil {
			return "", nil, err
		}
		last = res
		if res.Decision == policy.Allow {
			return c, data, nil
		}
	}
	why := last.Reason
	if last.Rule != nil {
		why = last.Rule.ID + " (" + last.Rule.Layer.String() + ") would still decide " + last.Decision.String()
	}
	return "", nil, fmt.Errorf("no remembered prefix (%s) would change the decision: %s", strings.Join(cands, ", "), why)
}

// Deny persists a "deny always" answer (Forge's FR-4.3 answer,
// saved as FR-5.4 allows): a deny rule for the action's command prefix is
// added to the policy file at path (agentbox's format, a Codelia config or
// a Forge rule file), and a session deny rule takes effect at once. A
// deny may be broader than the command (it only refuses more); the prefix
// is the one Allow would pick. It returns the prefix saved.
func Deny(e *policy.Engine, path, action, description string) (string, error) {
	e.Session().Add(policy.Deny, action)
	p, ok := commandPrefix(action)
	if !ok {
		return "", errors.New("no command prefix to save (shells, interpreters, wrappers, bare git, compound lines); denied for this run")
	}
	data, err := projectRuleBytes(path, policy.Deny, p, description)
	if err != nil {
		return "", err
	}
	if data != nil {
		if err := writePolicyFile(path, data); err != nil {
			return "", err
		}
	}
	return p, nil
}

// decideWithFile decides action with the engine's layers plus a policy
// file holding data (what the project file would become).
func decideWithFile(e *policy.Engine, data []byte, action string) (policy.Result, error) {
	tmp, err := os.CreateTemp("", "agentbox-remember-*.yaml")
	if err != nil {
		return policy.Result{}, fmt.Errorf("remember rule: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return policy.Result{}, fmt.Errorf("remember rule: %w", err)
	}
	o := e.LoadOptions()
	o.Files = append(slices.Clone(o.Files), tmp.Name())
	fresh, err := load.Policy(o)
	if err != nil {
		return policy.Result{}, fmt.Errorf("remember rule: reloading the policy: %w", err)
	}
	return fresh.Decide(policy.Query{Action: action}), nil
}

// appendProjectRule adds a command-prefix rule to the policy file at path
// (typically <workspace>/agentbox.yaml), creating it if needed, and keeps
// the file valid: the result is parsed before it replaces the old file
// (atomically, mode 0644). Supported files are agentbox's own format and
// Codelia configs (where the rule becomes {tool: bash, command: ...}).
// An identical rule already present is not added twice.
func appendProjectRule(path string, d policy.Decision, cmd string, description string) error {
	data, err := projectRuleBytes(path, d, cmd, description)
	if err != nil || data == nil {
		return err
	}
	return writePolicyFile(path, data)
}

// projectRuleBytes returns the policy file at path with the rule added
// (nil when an identical rule is already there), checked to parse.
func projectRuleBytes(path string, d policy.Decision, cmd string, description string) ([]byte, error) {
	words := strings.Fields(cmd)
	if len(words) == 0 || len(words) > 2 {
		return nil, fmt.Errorf("remember %q: a remembered rule is a 1-2 word command prefix", cmd)
	}
	cmd = strings.Join(words, " ")
	if programs.NeverRemember(words[0]) {
		return nil, fmt.Errorf("remember %q: %s runs arbitrary code; refusing a standing rule", cmd, words[0])
	}
	var doc yaml.Node
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = []byte("# agentbox project policy (see `agentbox policy show`)\nversion: 1\nrules: []\n")
	case err != nil:
		return nil, fmt.Errorf("remember rule: %w", err)
	default:
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("remember rule: %w", err)
		}
		if err := load.CheckFilePerms(path, fi); err != nil {
			return nil, err
		}
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("remember rule: %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		doc.Kind = yaml.DocumentNode
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("remember rule: %s: top level is not a mapping", path)
	}
	scalar := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }
	get := func(m *yaml.Node, key string) *yaml.Node {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	has := func(seq *yaml.Node, want map[string]string) bool {
		for _, n := range seq.Content {
			match := n.Kind == yaml.MappingNode
			for k, v := range want {
				if x := get(n, k); x == nil || x.Value != v {
					match = false
				}
			}
			if match {
				return true
			}
		}
		return false
	}
	if perms := get(root, "permissions"); perms != nil {
		// Codelia: permissions.allow / permissions.deny (ask is Codelia's default).
		key := map[policy.Decision]string{policy.Allow: "allow", policy.Deny: "deny", policy.Ask: "ask"}[d]
		list := get(perms, key)
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode}
			perms.Content = append(perms.Content, scalar(key), list)
		}
		if has(list, map[string]string{"tool": "bash", "command": cmd}) {
			return nil, nil
		}
		list.Style = 0
		list.Content = append(list.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			scalar("tool"), scalar("bash"), scalar("command"), scalar(cmd)}})
	} else {
		if get(root, "allow") != nil || get(root, "ask") != nil {
			return nil, fmt.Errorf("remember rule: %s is a Chorus profile; add a regex to it by hand", path)
		}
		rules := get(root, "rules")
		if rules == nil || rules.Tag == "!!null" {
			if rules == nil {
				rules = &yaml.Node{Kind: yaml.SequenceNode}
				root.Content = append(root.Content, scalar("rules"), rules)
			} else {
				*rules = yaml.Node{Kind: yaml.SequenceNode}
			}
		}
		if rules.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("remember rule: %s: rules is not a list", path)
		}
		forge := false
		for _, r := range rules.Content {
			if r.Kind == yaml.MappingNode && get(r, "pattern") != nil {
				forge = true
			}
		}
		rules.Style = 0
		if forge {
			// A Forge rule file (FR-5.3): the prefix as a command pattern.
			pat := "tool:bash,arg:command:" + cmd + "*"
			if has(rules, map[string]string{"pattern": pat, "permission": d.String()}) {
				return nil, nil
			}
			m := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				scalar("pattern"), scalar(pat), scalar("permission"), scalar(d.String())}}
			if description != "" {
				m.Content = append(m.Content, scalar("description"), scalar(description))
			}
			rules.Content = append(rules.Content, m)
		} else {
			if has(rules, map[string]string{"decision": d.String(), "command": cmd}) {
				return nil, nil
			}
			m := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				scalar("decision"), scalar(d.String()), scalar("command"), scalar(cmd)}}
			if description != "" {
				m.Content = append(m.Content, scalar("description"), scalar(description))
			}
			rules.Content = append(rules.Content, m)
		}
	}
	var buf bytes.Buffer
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		var v any
		if err := doc.Decode(&v); err != nil {
			return nil, fmt.Errorf("remember rule: %s: %w", path, err)
		}
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("remember rule: encode %s: %w", path, err)
		}
		buf.Write(append(out, '\n'))
	} else {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return nil, fmt.Errorf("remember rule: encode %s: %w", path, err)
		}
		enc.Close()
	}
	if _, err := load.Parse(path, buf.Bytes(), policy.LayerProject); err != nil {
		return nil, fmt.Errorf("bug: remembered rule would make %s invalid: %w", path, err)
	}
	return buf.Bytes(), nil
}

// writePolicyFile replaces the policy file at path with data atomically
// (mode 0644).
func writePolicyFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".agentbox-policy-*")
	if err != nil {
		return fmt.Errorf("remember rule: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("remember rule: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("remember rule: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("remember rule: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("remember rule: %w", err)
	}
	return nil
}

// secretWord reports whether w looks like a credential (it must not be
// saved in a policy file as part of a remembered prefix).
func secretWord(w string) bool {
	_, rules := redact.Text(w)
	return len(rules) > 0
}

// baseName is the last element of a slash-separated path ("" after a
// trailing slash).
func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
