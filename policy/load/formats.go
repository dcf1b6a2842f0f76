package load

import (
	"sync"

	"github.com/agentbox/agentbox/policy"
	"go.yaml.in/yaml/v3"
)

// The foreign formats, each in a package of its own (internal/policyfmt/
// ...), register their reader here from their init, as image formats
// register with package image; a program links them by importing
// policy/formats. A file is asked of the readers before it is read as
// agentbox's own format (parseFileWith, parseDoc). A program that links
// no reader refuses such files rather than misread them: Codex rules and
// settings with hooks fail as agentbox's own format, a permissions
// mapping without the Claude Code reader is refused (claudeUnlinked), and
// so are a Chorus profile, a permissions key and a Forge rule without
// their readers (parseDoc, parseRule).

// formatReaders are the registered readers, in registration order.
var formatReaders struct {
	sync.Mutex
	list []policy.FormatReader
}

// RegisterFormat makes a foreign format known to Policy, Read, Files and
// Parse (so to validate and lint); the format packages call it from
// their init.
func RegisterFormat(r policy.FormatReader) {
	formatReaders.Lock()
	defer formatReaders.Unlock()
	formatReaders.list = append(formatReaders.list, r)
}

// detectFormat returns the registered reader that claims the file. A
// reader whose Fallback is true is asked after the others (Chorus: its
// lists of strings are also what Claude Code's permissions look like).
func detectFormat(name string, data []byte, root *yaml.Node) policy.FormatReader {
	formatReaders.Lock()
	defer formatReaders.Unlock()
	for _, last := range []bool{false, true} {
		for _, r := range formatReaders.list {
			if r.Fallback() == last && r.Detect(name, data, root) {
				return r
			}
		}
	}
	return nil
}

// readerNamed returns the registered reader of that name, or nil.
func readerNamed(name string) policy.FormatReader {
	formatReaders.Lock()
	defer formatReaders.Unlock()
	for _, r := range formatReaders.list {
		if r.Name() == name {
			return r
		}
	}
	return nil
}

// claudeUnlinked refuses a permissions mapping when no Claude Code reader
// is registered: such a program cannot tell Claude Code settings from
// Codelia's permissions, and reading one as the other could allow what
// the file denies. Every agentbox command links the reader (internal/plan).
func (p *parser) claudeUnlinked(root *yaml.Node) bool {
	if readerNamed("claude") != nil {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if v := root.Content[i+1]; root.Content[i].Value == "permissions" && v.Kind == yaml.MappingNode {
			p.errf(v, "a permissions mapping, and this program cannot read Claude Code settings (no internal/policyfmt/claude): refused, not read as Codelia's")
			return true
		}
	}
	return false
}

// readForeign parses a file a registered reader claimed into fd.
func (p *parser) readForeign(r policy.FormatReader, data []byte, root *yaml.Node, fd *policy.Document) {
	fd.Format, fd.Reader = r.Name(), r
	rules, errs := r.Read(p.file, p.layer, data, root)
	fd.Foreign = rules
	p.errs = append(p.errs, errs...)
}
