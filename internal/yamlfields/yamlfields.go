// Package yamlfields reads the nodes of a decoded YAML (or JSON) document
// strictly: mappings whose unknown and duplicate keys are errors, strings,
// lists of strings, each problem reported at its node's line. It is shared
// by the policy loader and the foreign-format readers (internal/policyfmt)
// so a bad file reads the same in every format. It imports nothing of
// agentbox (arch_test.go).
package yamlfields

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Errf reports a problem at node n (n may be nil: no line).
type Errf func(n *yaml.Node, format string, args ...any)

// KindName names what a node is, for messages: "a mapping", "a list",
// "null", or a scalar's value quoted.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// Fields walks a mapping node, calling fn for each key; unknown keys (fn
// returns false) and duplicate keys are errors, as is a node that is not
// a mapping (what names it).
func Fields(n *yaml.Node, what string, errf Errf, fn func(key string, k, v *yaml.Node) bool) {
	if n.Kind != yaml.MappingNode {
		errf(n, "%s must be a mapping, got %s", what, KindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if seen[key] {
			errf(k, "duplicate key %q in %s", key, what)
			continue
		}
		seen[key] = true
		if !fn(key, k, v) {
			errf(k, "unknown key %q in %s", key, what)
		}
	}
}

// Str is a scalar node's string; anything else (null too) is an error.
func Str(n *yaml.Node, what string, errf Errf) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		errf(n, "%s must be a string, got %s", what, KindName(n))
		return "", false
	}
	return n.Value, true
}

// StrList is a list of strings with each entry's node (a single string
// counts as a list of one); entries that are not strings are errors.
func StrList(n *yaml.Node, what string, errf Errf) ([]string, []*yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value}, []*yaml.Node{n}
	}
	if n.Kind != yaml.SequenceNode {
		errf(n, "%s must be a list of strings, got %s", what, KindName(n))
		return nil, nil
	}
	var out []string
	var nodes []*yaml.Node
	for _, c := range n.Content {
		if s, ok := Str(c, what+" entry", errf); ok {
			out = append(out, s)
			nodes = append(nodes, c)
		}
	}
	return out, nodes
}

// Lookup returns the value of key in the mapping n, or nil when n is not
// a mapping or has no such key: how a format's Detect looks at a
// document's top-level keys without reading the whole file.
func Lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
