package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file reads what git's configuration and environment make a git run
// do, so the exec policy can decide `git p` by what alias p really runs.
//
// Why parse the config here instead of running `git config --get` outside
// the sandbox: the files are written by the sandboxed agent (.git/config,
// ~/.gitconfig in its own area, files named by include.path). Running git on
// them as the supervisor means running a large parser with the supervisor's
// privileges on hostile input, reading include targets anywhere on the host,
// and copying the tracee's environment (HOME, GIT_CONFIG_*) into it. The
// parser below is small, reads only files under the roots the caller allows,
// and is conservative: every include (also conditional includeIf) is
// followed and every value of alias.<name> is decided, the strictest wins.
//
// It is not the enforcement point: git runs an alias that expands to a
// builtin as a new `git <expansion>` process and a `!` alias through a
// shell, and each of those is an exec the supervisor decides race-free from
// its own argv. Resolving the alias at the first exec gives the early,
// explained deny ("alias p runs git push") and closes nothing that the
// second exec would leave open.

// gitConfigEntry is one variable from a git config source.
type gitConfigEntry struct {
	Key   string // section[.subsection].name; section and name lower-cased
	Value string
	Src   string // file:line, "-c", or the environment variable
}

const maxGitConfigSize = 1 << 20

// parseGitConfig parses git config file syntax. It never panics; on a
// syntax error it returns the entries before the error and the error.
func parseGitConfig(data []byte, src string) ([]gitConfigEntry, error) {
	var out []gitConfigEntry
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
			entry := gitConfigEntry{Key: section + "." + name, Src: src + ":" + strconv.Itoa(line)}
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

// parseConfigParameters parses GIT_CONFIG_PARAMETERS: space-separated
// single-quoted items, either 'key=value' (old form) or 'key'='value'.
func parseConfigParameters(s string) ([]gitConfigEntry, error) {
	var out []gitConfigEntry
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
			out = append(out, gitConfigEntry{Key: normalizeConfigKey(k), Value: v, Src: "GIT_CONFIG_PARAMETERS"})
			continue
		}
		key, v, _ := strings.Cut(k, "=")
		out = append(out, gitConfigEntry{Key: normalizeConfigKey(key), Value: v, Src: "GIT_CONFIG_PARAMETERS"})
	}
}

// normalizeConfigKey lower-cases section and variable name of
// section[.subsection].name, keeping the subsection's case (as git does).
func normalizeConfigKey(k string) string {
	first := strings.IndexByte(k, '.')
	last := strings.LastIndexByte(k, '.')
	if first < 0 {
		return strings.ToLower(k)
	}
	return strings.ToLower(k[:first]) + k[first:last] + "." + strings.ToLower(k[last+1:])
}

// gitConfigLoader collects config entries from files, following includes
// only into allowed roots.
type gitConfigLoader struct {
	roots   []string // absolute directories include targets must be under
	home    string
	entries []gitConfigEntry
	notes   []string // files skipped or unreadable, for explanations
	seen    map[string]bool
}

func (l *gitConfigLoader) allowed(p string) bool {
	for _, r := range l.roots {
		if r != "" && (p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/")) {
			return true
		}
	}
	return false
}

// loadFile reads one config file and its includes (depth-limited). Files
// outside the allowed roots are skipped (noted) unless top is set (the
// system and global files git itself always reads).
func (l *gitConfigLoader) loadFile(path string, top bool, depth int) {
	if depth > 10 || path == "" {
		return
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if l.seen[path] {
		return
	}
	if !top && !l.allowed(path) {
		l.notes = append(l.notes, "include outside the workspace not read: "+path)
		return
	}
	l.seen[path] = true
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	data := make([]byte, min(st.Size(), maxGitConfigSize))
	n, _ := f.Read(data)
	entries, perr := parseGitConfig(data[:n], path)
	if perr != nil {
		l.notes = append(l.notes, perr.Error())
	}
	for _, e := range entries {
		l.entries = append(l.entries, e)
		if e.Key == "include.path" || (strings.HasPrefix(e.Key, "includeif.") && strings.HasSuffix(e.Key, ".path")) {
			inc := e.Value
			if strings.HasPrefix(inc, "~/") && l.home != "" {
				inc = filepath.Join(l.home, inc[2:])
			} else if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			l.loadFile(inc, false, depth+1)
		}
	}
}

// findGitDir finds the git directory for a run in dir: GIT_DIR/--git-dir
// when given, else the nearest .git (directory or "gitdir:" file) or bare
// repository going up from dir. It returns the directory whose "config"
// file is the repository config (the common dir for worktrees), or "".
func findGitDir(dir, gitDirOpt string) string {
	if gitDirOpt != "" {
		if !filepath.IsAbs(gitDirOpt) {
			gitDirOpt = filepath.Join(dir, gitDirOpt)
		}
		return commonDir(gitDirOpt)
	}
	for d := dir; ; {
		dotgit := filepath.Join(d, ".git")
		if st, err := os.Stat(dotgit); err == nil {
			if st.IsDir() {
				return commonDir(dotgit)
			}
			if b, err := os.ReadFile(dotgit); err == nil {
				if g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
					g = strings.TrimSpace(g)
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					return commonDir(g)
				}
			}
		}
		if isBareRepo(d) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func isBareRepo(d string) bool {
	for _, f := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			return false
		}
	}
	return true
}

// commonDir follows a worktree's "commondir" file.
func commonDir(gitDir string) string {
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		return filepath.Clean(c)
	}
	return gitDir
}

// splitAliasCmdline splits an alias value into words the way git's
// split_cmdline does: blanks separate, single and double quotes group,
// backslash escapes the next character.
func splitAliasCmdline(s string) ([]string, error) {
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
