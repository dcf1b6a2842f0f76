package policy

import (
	"go.yaml.in/yaml/v3"
)

// The foreign formats, each in a package of its own (Claude Code
// settings, Codex rules, Chorus profiles, Codelia permissions, Forge rule
// files: internal/policyfmt/...), reach the loader (policy/load) through
// load.RegisterFormat, as image formats reach package image: the engine
// names no format and imports none. A program that loads policy links
// them by importing policy/formats (internal/plan does, for every
// agentbox command; so does policy/remember). A program that does not
// refuses such files rather than misread them (policy/load). The core
// keeps what the engine asks of a format's files: the reader's Merge
// into one Format per layer (buildFormats), and the matchers of the
// policy language as tests.

// FormatReader reads the policy files of one foreign format.
type FormatReader interface {
	// Name is the format's name ("claude", "codex", "chorus", "codelia",
	// "forge").
	Name() string
	// Detect reports whether a file is in this format: first asked with
	// root nil, from the file's name and text before any YAML decoding;
	// then, for a file that decodes as YAML or JSON, with its root mapping
	// (data nil). Readers are asked before agentbox's own format, in
	// registration order; those whose Fallback is true after the others
	// (policy/load).
	Detect(name string, data []byte, root *yaml.Node) bool
	// Fallback reports whether the reader is asked after the others
	// (Chorus: its lists of strings are also what Claude Code's
	// permissions look like). A method of the interface, not an optional
	// one the loader asserts: each such assertion made the Go runtime add
	// an itab at the first load, and past the table's load factor that
	// grows the whole table on the launch's critical path.
	Fallback() bool
	// Read parses one file at layer (root as in Detect). Each error names
	// path:line.
	Read(path string, layer Layer, data []byte, root *yaml.Node) (FormatRules, []error)
	// Merge makes the one layer the files of this format form, in load
	// order (settings files merge, as the tool itself merges them). A
	// reader whose every file is a layer of its own (a Chorus profile
	// decides alone) has a method LayerPerFile() bool returning true, and
	// Merge gets one file at a time.
	Merge(files []FormatSource) Format
}

// FormatRules are one file's rules as its reader parsed them.
type FormatRules interface {
	// Lint returns the rules that can never decide (policy validate).
	Lint() []Finding
	// DenyAndAsk returns the rules without the allow rules: what an
	// untrusted file contributes (LoadOptions.Untrusted).
	DenyAndAsk() FormatRules
}

// FormatSource is one file of a format layer, as the loader hands it to
// FormatReader.Merge.
type FormatSource struct {
	Path  string
	Layer Layer
	// Order is the file's position among all policy files: a later file
	// wins a tie at the same layer (Format.Where).
	Order int
	// Untrusted: a file the sandbox could have written (LoadOptions.
	// Untrusted): Rules are only its deny and ask rules (DenyAndAsk), and
	// the engine keeps only the merged layer's deny and ask verdicts.
	Untrusted bool
	Rules     FormatRules
}

// untrustedFormat is a merged layer holding an untrusted file: only its
// rules' deny and ask verdicts count, never an allow or its default.
type untrustedFormat struct{ Format }

// Decide implements Format.
func (u untrustedFormat) Decide(q FormatQuery) FormatVerdict {
	v := u.Format.Decide(q)
	if v.Rule == nil || v.Decision == Allow {
		v.None = true
	}
	return v
}

// BindWorkspace passes the workspace on to the layer.
func (u untrustedFormat) BindWorkspace(workspace string, rel func(string) string) {
	bindWorkspace(u.Format, workspace, rel)
}

// bindWorkspace tells a format layer that resolves paths (Claude Code's
// project-relative rules) the run's workspace and how the engine makes a
// path relative to it.
func bindWorkspace(f Format, workspace string, rel func(string) string) {
	if b, ok := f.(interface {
		BindWorkspace(workspace string, rel func(string) string)
	}); ok {
		b.BindWorkspace(workspace, rel)
	}
}

// GlobMatcher compiles a glob of the policy language ('*' matches any
// run of characters, on the whole text) into a test, for the formats of
// other tools whose rules use the same shape.
func GlobMatcher(pattern string) (func(string) bool, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	return g.match, nil
}

// PathMatcher compiles a path rule of the policy language (gitignore
// style: '*' within a name, '**' across directories, a bare name at any
// depth) into a test of a workspace-relative path.
func PathMatcher(pattern string) (func(rel string) bool, error) {
	g, err := compilePathGlob(pattern)
	if err != nil {
		return nil, err
	}
	return g.match, nil
}

// NetMatcher compiles one host pattern (example.com, *.example.com,
// host:port) into a test of a connection action's detail (host:port, as
// NetAction writes it).
func NetMatcher(pattern string) (func(detail string) bool, error) {
	p, err := compileHostPattern(pattern)
	if err != nil {
		return nil, err
	}
	return p.match, nil
}
