package remember

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// Saved is one rule of a project policy file, as an approval inbox lists
// it for revoking: where it is, what it decides, and its text.
type Saved struct {
	// Key locates the rule: "rules/3" (agentbox and Forge formats) or
	// "permissions/allow/2" (Codelia).
	Key         string `json:"key"`
	Decision    string `json:"decision"`
	Match       string `json:"match"`
	Description string `json:"description,omitempty"`
	// Text is the rule as YAML: what a revoke removes.
	Text string `json:"text"`
}

// List returns the rules of the policy file at path that RemoveRule can
// take out. A missing file has none.
func List(path string) ([]Saved, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	var out []Saved
	err = eachRule(&doc, func(key string, list *yaml.Node, i int) error {
		n := list.Content[i]
		sv := Saved{Key: key, Text: nodeText(n)}
		if n.Kind == yaml.MappingNode {
			m := map[string]string{}
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j+1].Kind == yaml.ScalarNode {
					m[n.Content[j].Value] = n.Content[j+1].Value
				}
			}
			sv.Decision, sv.Description = m["decision"], m["description"]
			if sv.Decision == "" {
				sv.Decision = m["permission"]
			}
			for _, k := range []string{"command", "pattern", "match", "action", "program", "path", "host", "category"} {
				if m[k] != "" {
					sv.Match = k + " " + strconv.Quote(m[k])
					break
				}
			}
		}
		if strings.HasPrefix(key, "permissions/") {
			sv.Decision = strings.Split(key, "/")[1]
		}
		out = append(out, sv)
		return nil
	})
	return out, err
}

// eachRule calls fn for every rule node of a policy document: the items
// of `rules:` and of Codelia's permissions.allow/deny/ask.
func eachRule(doc *yaml.Node, fn func(key string, list *yaml.Node, i int) error) error {
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	get := func(m *yaml.Node, key string) *yaml.Node {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	if rules := get(root, "rules"); rules != nil && rules.Kind == yaml.SequenceNode {
		for i := range rules.Content {
			if err := fn("rules/"+strconv.Itoa(i), rules, i); err != nil {
				return err
			}
		}
	}
	if perms := get(root, "permissions"); perms != nil && perms.Kind == yaml.MappingNode {
		for _, k := range []string{"allow", "deny", "ask"} {
			if l := get(perms, k); l != nil && l.Kind == yaml.SequenceNode {
				for i := range l.Content {
					if err := fn("permissions/"+k+"/"+strconv.Itoa(i), l, i); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func nodeText(n *yaml.Node) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return ""
	}
	enc.Close()
	return buf.String()
}

// ErrChanged refuses a removal whose rule is no longer the one shown (the
// file changed since it was listed).
var ErrChanged = errors.New("the policy file changed since it was shown; list its rules again")

// RemoveRule takes the rule at key out of the policy file at path, if its
// text is still text (as List gave it), and replaces the file atomically,
// checked to parse. It returns the removed text.
func RemoveRule(path, key, text string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("policy %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("policy %s: %w", path, err)
	}
	if err := load.CheckFilePerms(path, fi); err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("policy %s: %w", path, err)
	}
	found := false
	err = eachRule(&doc, func(k string, list *yaml.Node, i int) error {
		if k != key || found {
			return nil
		}
		if nodeText(list.Content[i]) != text {
			return ErrChanged
		}
		list.Content = append(list.Content[:i], list.Content[i+1:]...)
		found = true
		return errStop
	})
	if err != nil && err != errStop {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("policy %s: no rule %s: %w", path, key, ErrChanged)
	}
	var buf bytes.Buffer
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		var v any
		if err := doc.Decode(&v); err != nil {
			return "", fmt.Errorf("policy %s: %w", path, err)
		}
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return "", fmt.Errorf("policy %s: %w", path, err)
		}
		buf.Write(append(out, '\n'))
	} else {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return "", fmt.Errorf("policy %s: %w", path, err)
		}
		enc.Close()
	}
	if _, err := load.Parse(path, buf.Bytes(), policy.LayerProject); err != nil {
		return "", fmt.Errorf("removing %s would make %s invalid: %w", key, path, err)
	}
	return text, writePolicyFile(path, buf.Bytes())
}

var errStop = errors.New("stop")
