// Package userconf reads agentbox's user settings file
// ($XDG_CONFIG_HOME/agentbox/config.yaml, else ~/.config/agentbox/config.yaml):
// defaults a user sets once for every run on a machine. It holds two
// settings: limits: off, which makes --no-limits the default where the
// machine cannot give a regular user cgroup limits (cgroup v1, or no
// systemd to delegate a cgroup), audit: {export: ...}, the OTLP
// endpoint every run's audit events are sent to (as with --audit-export),
// and push: {tokens: ...}, the command that mints a token per approved
// git push (push.go).
// The file is the user's own: a run refuses
// grants that would let the sandbox write it (internal/plan), as for the
// user policy file.
package userconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Key is the setting that turns limits off, as the refusal line names it.
const Key = "limits"

// Settings are the user's defaults. The zero value is "nothing set".
type Settings struct {
	// NoLimits makes runs start as with --no-limits (limits: off):
	// no memory, CPU or process limits, rlimits only.
	NoLimits bool
	// Line is where the limits setting is, for messages (0: not set).
	Line int
	// Export is audit.export: where runs send their audit events (nil:
	// not set).
	Export *Export
	// Push is push.tokens: the command that mints a token for each
	// approved git push (nil: not set; push.go).
	Push *PushTokens
}

// Path is the settings file's path ("" when there is no home directory).
// $XDG_CONFIG_HOME counts only when absolute, as for the user policy.
func Path() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", "config.yaml")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".config", "agentbox", "config.yaml")
	}
	return ""
}

// maxSize bounds the file: it holds a few settings.
const maxSize = 64 << 10

// Load reads the settings file at Path. A missing file is no settings;
// an unreadable or malformed one is an error naming the file (and line).
func Load() (Settings, string, error) {
	p := Path()
	if p == "" {
		return Settings{}, "", nil
	}
	s, err := LoadFile(p)
	return s, p, err
}

// LoadFile reads the settings file at path (missing: no settings).
func LoadFile(path string) (Settings, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("user settings: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxSize+1)); err != nil {
		return Settings{}, fmt.Errorf("user settings %s: %w", path, err)
	}
	if buf.Len() > maxSize {
		return Settings{}, fmt.Errorf("user settings %s: larger than %d bytes", path, maxSize)
	}
	s, err := Parse(path, buf.Bytes())
	if err != nil {
		return s, err
	}
	if s.Export != nil && len(s.Export.Headers) > 0 {
		// Headers carry credentials (an Authorization token): as for an
		// ssh key, a file others may read is refused.
		if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
			return Settings{}, fmt.Errorf("%s:%d: audit.export.headers hold credentials, but the file's mode %04o lets others read it (chmod 600 %s)", path, s.Export.HeadersLine, st.Mode().Perm(), path)
		}
	}
	return s, nil
}

// Parse reads settings from data; name is the file's name for errors,
// which say "name:line: what". The document is a mapping of known keys;
// an empty file (or only comments) sets nothing.
func Parse(name string, data []byte) (Settings, error) {
	var s Settings
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return s, fmt.Errorf("user settings %s: %v", name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return s, nil
	}
	m := doc.Content[0]
	if m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
		return s, nil
	}
	if m.Kind != yaml.MappingNode {
		return s, fmt.Errorf("%s:%d: want settings as `key: value` lines (e.g. `limits: off`)", name, m.Line)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return s, fmt.Errorf("%s:%d: a setting's name must be a plain word", name, k.Line)
		}
		if prev, dup := seen[k.Value]; dup {
			return s, fmt.Errorf("%s:%d: %q set again (first on line %d)", name, k.Line, k.Value, prev)
		}
		seen[k.Value] = k.Line
		switch k.Value {
		case Key:
			if v.Kind != yaml.ScalarNode || (v.Value != "on" && v.Value != "off") {
				return s, fmt.Errorf("%s:%d: %s: want on or off, got %s", name, v.Line, Key, describe(v))
			}
			s.NoLimits, s.Line = v.Value == "off", k.Line
		case AuditKey:
			e, err := parseAudit(name, v)
			if err != nil {
				return Settings{}, err
			}
			s.Export = e
		case PushKey:
			pt, err := parsePush(name, v)
			if err != nil {
				return Settings{}, err
			}
			s.Push = pt
		default:
			return s, fmt.Errorf("%s:%d: unknown setting %q (known: %s, %s, %s)", name, k.Line, k.Value, Key, AuditKey, PushKey)
		}
	}
	return s, nil
}

// describe quotes a value for an error message.
func describe(v *yaml.Node) string {
	if v.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", v.Value)
	}
	return "a " + map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list", yaml.AliasNode: "alias"}[v.Kind]
}
