// Package spec holds what the foreign formats that describe their rules
// as policy.RuleSpec values (internal/policyfmt/chorus, .../codelia,
// .../forge) share: reading one file with errors that name file:line,
// a rule's reference, a file's specs with their compiled policy.RuleSet,
// and the checks of a version, a tool name and Chorus-style string lists.
// It imports the decision core (policy) and internal/yamlfields; never the loader, lint,
// presentation or a format (arch_test.go).
package spec

import (
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/yamlfields"
	"github.com/agentbox/agentbox/policy"
)

// File is one policy file being read: every problem is collected in
// Errs, each naming the file and line.
type File struct {
	Path, base string
	Layer      policy.Layer
	Errs       []error
}

// NewFile starts reading the file at path, loaded at layer.
func NewFile(path string, layer policy.Layer) *File {
	return &File{Path: path, base: filepath.Base(path), Layer: layer}
}

// Errf records a problem at n's line ("path:line: message").
func (f *File) Errf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	f.Errs = append(f.Errs, fmt.Errorf("%s:%d: %s", f.Path, line, fmt.Sprintf(format, args...)))
}

// Version checks a version key's value: 1 is the only one.
func (f *File) Version(v *yaml.Node) {
	if v.Value != "1" {
		f.Errf(v, "unsupported version %s (want 1)", yamlfields.KindName(v))
	}
}

// Ref is the reference of the rule written at n: its id, or base:line
// when it has none; its source path:line; the file's layer.
func (f *File) Ref(n *yaml.Node, id string) policy.RuleRef {
	if id == "" {
		id = fmt.Sprintf("%s:%d", f.base, n.Line)
	}
	return policy.RuleRef{ID: id, Layer: f.Layer, Source: fmt.Sprintf("%s:%d", f.Path, n.Line)}
}

// Rules are one file's rules: the specs as read and the set the core
// compiled them into (index i of one is index i of the other).
type Rules struct {
	Specs []policy.RuleSpec
	Set   *policy.RuleSet
}

// Add compiles s into the set and keeps it; the error names the bad
// value (the caller adds the file and line).
func (rs *Rules) Add(s policy.RuleSpec) error {
	if rs.Set == nil {
		rs.Set = &policy.RuleSet{}
	}
	if err := rs.Set.Add(s); err != nil {
		return err
	}
	rs.Specs = append(rs.Specs, s)
	return nil
}

// DenyAndAsk is the rules without the allow rules (what an untrusted
// file contributes).
func (rs *Rules) DenyAndAsk() Rules {
	out := Rules{Set: &policy.RuleSet{}}
	for _, s := range rs.Specs {
		if s.Decision != policy.Allow {
			_ = out.Add(s) // compiled once already
		}
	}
	return out
}

// Infos describes every rule of set (policy show).
func Infos(set *policy.RuleSet) []policy.RuleInfo {
	var out []policy.RuleInfo
	for i := 0; i < set.Len(); i++ {
		out = append(out, set.Info(i))
	}
	return out
}

// ValidToolName: a tool name is non-empty, without spaces, controls or
// ':'.
func ValidToolName(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c == ':' || c == 0x7f {
			return false
		}
	}
	return true
}

// StringLists reports whether a permissions mapping holds Chorus's lists
// of patterns ({"allow": ["regex"...], "ask": [...]}) rather than
// Codelia's lists of rule mappings: an ask key, or a list whose first
// item is a string.
func StringLists(v *yaml.Node) bool {
	if v.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value == "ask" {
			return true
		}
		l := v.Content[i+1]
		if l.Kind == yaml.SequenceNode && len(l.Content) > 0 && l.Content[0].Kind == yaml.ScalarNode {
			return true
		}
	}
	return false
}
