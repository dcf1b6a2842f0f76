package command

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Git configuration syntax: config files, GIT_CONFIG_PARAMETERS and alias
// command lines. Reading the files a git run would read (and following
// includes safely) is the exec policy's job (execpolicy/git.go); this file
// only parses.

// GitConfigEntry is one variable from a git config source.
type GitConfigEntry struct {
	Key   string // section[.subsection].name; section and name lower-cased
	Value string
	Src   string // file:line, "-c", or the environment variable
}

const MaxGitConfigSize = 1 << 20

// ParseGitConfig parses git config file syntax. It never panics; on a
// syntax error it returns the entries before the error and the error.
func ParseGitConfig(data []byte, src string) ([]GitConfigEntry, error) {
	var out []GitConfigEntry
	section := ""
	line := 1
	i := 0
	n := len(data)
	errf := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", src, line, fmt.Sprintf(format, a...))
	}
	for i < n {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#' || c == ';':
			for i < n && data[i] != '\n' {
				i++
			}
		case c == '[':
			s, j, err := parseSectionHeader(data, i+1)
			if err != nil {
				return out, errf("%v", err)
			}
			section, i = s, j
		case isKeyChar(c):
			if section == "" {
				return out, errf("variable outside a section")
			}
			start := i
			for i < n && isKeyChar(data[i]) {
				i++
			}
			name := strings.ToLower(string(data[start:i]))
			for i < n && (data[i] == ' ' || data[i] == '\t') {
				i++
			}
			entry := GitConfigEntry{Key: section + "." + name, Src: src + ":" + strconv.Itoa(line)}
			if i >= n || data[i] == '\n' || data[i] == '#' || data[i] == ';' || data[i] == '\r' {
				entry.Value = "true" // boolean shorthand
				out = append(out, entry)
				continue
			}
			if data[i] != '=' {
				return out, errf("expected '=' after %s", name)
			}
			v, j, nl, err := parseConfigValue(data, i+1)
			if err != nil {
				return out, errf("%v", err)
			}
			entry.Value = v
			line += nl
			i = j
			out = append(out, entry)
		default:
			return out, errf("unexpected character %q", c)
		}
	}
	return out, nil
}

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// parseSectionHeader parses after '[' up to ']'. Returns the section key
// prefix ("section" or "section.Subsection").
func parseSectionHeader(data []byte, i int) (string, int, error) {
	n := len(data)
	start := i
	for i < n && (isKeyChar(data[i]) || data[i] == '.') {
		i++
	}
	name := strings.ToLower(string(data[start:i]))
	if name == "" {
		return "", i, fmt.Errorf("empty section name")
	}
	if i < n && data[i] == ']' {
		return name, i + 1, nil // [section] or deprecated [section.sub]
	}
	for i < n && (data[i] == ' ' || data[i] == '\t') {
		i++
	}
	if i >= n || data[i] != '"' {
		return "", i, fmt.Errorf("bad section header")
	}
	i++
	var sub bytes.Buffer
	for {
		if i >= n || data[i] == '\n' {
			return "", i, fmt.Errorf("unterminated subsection")
		}
		c := data[i]
		if c == '"' {
			i++
			break
		}
		if c == '\\' && i+1 < n && data[i+1] != '\n' {
			i++
			c = data[i]
		}
		sub.WriteByte(c)
		i++
	}
	if i >= n || data[i] != ']' {
		return "", i, fmt.Errorf("bad section header")
	}
	return name + "." + sub.String(), i + 1, nil
}

// parseConfigValue parses a value after '=' to the end of its (possibly
// continued) line. It returns the value, the index after it and the number
// of newlines consumed by continuations.
func parseConfigValue(data []byte, i int) (string, int, int, error) {
	n := len(data)
	var v bytes.Buffer
	quoted := false
	nl := 0
	pendingSpace := 0 // whitespace kept only if followed by more value
	for i < n {
		c := data[i]
		if c == '\n' {
			if quoted {
				return "", i, nl, fmt.Errorf("newline in quoted value")
			}
			break
		}
		if !quoted && (c == '#' || c == ';') {
			for i < n && data[i] != '\n' {
				i++
			}
			break
		}
		if !quoted && (c == ' ' || c == '\t' || c == '\r') {
			if v.Len() > 0 {
				pendingSpace++
			}
			i++
			continue
		}
		for ; pendingSpace > 0; pendingSpace-- {
			v.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
			i++
		case '\\':
			if i+1 >= n {
				return "", i, nl, fmt.Errorf("backslash at end of input")
			}
			e := data[i+1]
			i += 2
			switch e {
			case '\n':
				nl++ // continuation
			case '\r':
				if i < n && data[i] == '\n' {
					i++
				}
				nl++
			case 'n':
				v.WriteByte('\n')
			case 't':
				v.WriteByte('\t')
			case 'b':
				v.WriteByte('\b')
			case '"', '\\':
				v.WriteByte(e)
			default:
				return "", i, nl, fmt.Errorf("bad escape \\%c", e)
			}
		default:
			v.WriteByte(c)
			i++
		}
	}
	if quoted {
		return "", i, nl, fmt.Errorf("unterminated quote")
	}
	return v.String(), i, nl, nil
}

// ParseGitConfigParameters parses GIT_CONFIG_PARAMETERS: space-separated
// single-quoted items, either 'key=value' (old form) or 'key'='value'.
func ParseGitConfigParameters(s string) ([]GitConfigEntry, error) {
	var out []GitConfigEntry
	i := 0
	word := func() (string, bool, error) {
		if i >= len(s) || s[i] != '\'' {
			return "", false, nil
		}
		i++
		var b strings.Builder
		for {
			if i >= len(s) {
				return "", false, fmt.Errorf("GIT_CONFIG_PARAMETERS: unterminated quote")
			}
			if s[i] == '\'' {
				i++
				// '\'' sequence: close, escaped quote, reopen
				if strings.HasPrefix(s[i:], "\\''") {
					b.WriteByte('\'')
					i += 3
					continue
				}
				return b.String(), true, nil
			}
			b.WriteByte(s[i])
			i++
		}
	}
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		k, ok, err := word()
		if err != nil {
			return out, err
		}
		if !ok {
			return out, fmt.Errorf("GIT_CONFIG_PARAMETERS: expected a quoted item at offset %d", i)
		}
		if i < len(s) && s[i] == '=' {
			i++
			v, ok, err := word()
			if err != nil {
				return out, err
			}
			if !ok {
				return out, fmt.Errorf("GIT_CONFIG_PARAMETERS: expected a quoted value at offset %d", i)
			}
			out = append(out, GitConfigEntry{Key: NormalizeGitConfigKey(k), Value: v, Src: "GIT_CONFIG_PARAMETERS"})
			continue
		}
		key, v, _ := strings.Cut(k, "=")
		out = append(out, GitConfigEntry{Key: NormalizeGitConfigKey(key), Value: v, Src: "GIT_CONFIG_PARAMETERS"})
	}
}

// NormalizeGitConfigKey lower-cases section and variable name of
// section[.subsection].name, keeping the subsection's case (as git does).
func NormalizeGitConfigKey(k string) string {
	first := strings.IndexByte(k, '.')
	last := strings.LastIndexByte(k, '.')
	if first < 0 {
		return strings.ToLower(k)
	}
	return strings.ToLower(k[:first]) + k[first:last] + "." + strings.ToLower(k[last+1:])
}

// SplitGitAlias splits an alias value into words the way git's
// split_cmdline does: blanks separate, single and double quotes group,
// backslash escapes the next character.
func SplitGitAlias(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	have := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		case c == '\\' && quote != '\'':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("alias %q: trailing backslash", s)
			}
			i++
			cur.WriteByte(s[i])
			have = true
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
			have = true
		case quote != 0 && c == quote:
			quote = 0
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("alias %q: unclosed quote", s)
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}
