// Package mcpconfig reads the MCP servers an agent CLI starts for its
// tools from the files its profile names (policy.AgentProfile.MCPConfig:
// Claude Code's .mcp.json and ~/.claude.json, Codex's config.toml, Gemini
// CLI's settings.json), so that `agentbox agents` can propose a
// program_rights block for each: its own hosts and secrets instead of the
// whole run's. It decides nothing; it imports the policy core for the
// profile type only, and nothing imports it but the CLI (arch_test.go).
package mcpconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// Server is one MCP server an agent's configuration starts.
type Server struct {
	Agent  string // the profile
	Config string // the file it was read from
	Name   string // its name in the file
	// Command and Args start it (stdio servers); URL is a remote one's.
	Command string
	Args    []string
	URL     string
	// Env are the names of the variables the file sets for it.
	Env []string
}

// maxMCPConfig bounds a configuration file read.
const maxMCPConfig = 4 << 20

// Servers reads the MCP servers profile a's configuration files name
// (home: the user's HOME; project: the directory the agent starts in). A
// file that does not exist is skipped; one that cannot be read or parsed
// is an error naming it.
func Servers(a *policy.AgentProfile, home, project string) ([]Server, []error) {
	var out []Server
	var errs []error
	for _, c := range a.MCPConfig {
		file := filepath.Join(project, c)
		if rest, ok := strings.CutPrefix(c, "~/"); ok {
			file = filepath.Join(home, rest)
		}
		st, err := os.Stat(file)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if st.Size() > maxMCPConfig {
			errs = append(errs, fmt.Errorf("%s: larger than %d bytes", file, maxMCPConfig))
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var servers []Server
		if strings.HasSuffix(file, ".toml") {
			servers, err = ParseTOML(data)
		} else {
			servers, err = ParseJSON(data, project)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		for i := range servers {
			servers[i].Agent, servers[i].Config = a.Name, file
		}
		out = append(out, servers...)
	}
	return out, errs
}

// mcpJSONServer is a server entry of the JSON files (Claude Code's
// .mcp.json and ~/.claude.json, Gemini CLI's settings.json).
type mcpJSONServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	HTTPURL string            `json:"httpUrl"`
}

// ParseJSON reads the mcpServers of a JSON settings file, and those of
// the project entry for project (~/.claude.json keeps them per project).
func ParseJSON(data []byte, project string) ([]Server, error) {
	var f struct {
		MCPServers map[string]mcpJSONServer `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers map[string]mcpJSONServer `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not JSON settings: %w", err)
	}
	var out []Server
	add := func(m map[string]mcpJSONServer) {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			s := m[n]
			u := s.URL
			if u == "" {
				u = s.HTTPURL
			}
			out = append(out, Server{Name: n, Command: s.Command, Args: s.Args, URL: u, Env: sortedKeys(s.Env)})
		}
	}
	add(f.MCPServers)
	if p, ok := f.Projects[project]; ok && project != "" {
		add(p.MCPServers)
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ParseTOML reads the [mcp_servers.NAME] tables of Codex's
// config.toml: their command, args, url and env (an inline table, or a
// [mcp_servers.NAME.env] table). Only that subset of TOML is read: basic
// and literal strings, arrays of strings on one line, inline tables of
// strings; other tables and keys are skipped, a malformed line of an
// mcp_servers table is an error naming its line.
func ParseTOML(data []byte) ([]Server, error) {
	var out []Server
	cur := -1
	inEnv := false
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			cur, inEnv = -1, false
			h := strings.TrimSpace(strings.Trim(line, "[]"))
			rest, ok := strings.CutPrefix(h, "mcp_servers.")
			if !ok || strings.HasPrefix(line, "[[") {
				continue
			}
			name, sub := rest, ""
			if j := strings.LastIndex(rest, "."); j > 0 && !strings.HasPrefix(rest, "\"") {
				name, sub = rest[:j], rest[j+1:]
			}
			if n, err := tomlKey(name); err == nil {
				name = n
			} else {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
			if sub != "" && sub != "env" {
				continue
			}
			cur = slices.IndexFunc(out, func(s Server) bool { return s.Name == name })
			if cur < 0 {
				out = append(out, Server{Name: name})
				cur = len(out) - 1
			}
			inEnv = sub == "env"
			continue
		}
		if cur < 0 {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want KEY = VALUE", i+1)
		}
		key, err := tomlKey(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		v = strings.TrimSpace(v)
		s := &out[cur]
		if inEnv {
			s.Env = append(s.Env, key)
			continue
		}
		switch key {
		case "command", "url":
			str, err := tomlString(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", i+1, key, err)
			}
			if key == "command" {
				s.Command = str
			} else {
				s.URL = str
			}
		case "args":
			if s.Args, err = tomlStrings(v); err != nil {
				return nil, fmt.Errorf("line %d: args: %v", i+1, err)
			}
		case "env":
			if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
				return nil, fmt.Errorf("line %d: env: want an inline table { NAME = \"value\", ... }", i+1)
			}
			for _, kv := range splitTop(strings.TrimSpace(v[1:len(v)-1]), ',') {
				if strings.TrimSpace(kv) == "" {
					continue
				}
				ek, _, ok := strings.Cut(kv, "=")
				name, err := tomlKey(strings.TrimSpace(ek))
				if !ok || err != nil {
					return nil, fmt.Errorf("line %d: env: bad entry %q", i+1, kv)
				}
				s.Env = append(s.Env, name)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Env)
	}
	return out, nil
}

// tomlKey is a bare or quoted key.
func tomlKey(k string) (string, error) {
	if strings.HasPrefix(k, "\"") || strings.HasPrefix(k, "'") {
		return tomlString(k)
	}
	if k == "" {
		return "", errors.New("empty key")
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", fmt.Errorf("bad key %q", k)
		}
	}
	return k, nil
}

// tomlString is a basic ("...", with escapes) or literal ('...') string.
func tomlString(v string) (string, error) {
	switch {
	case len(v) >= 2 && v[0] == '\'' && strings.IndexByte(v[1:], '\'') == len(v)-2:
		return v[1 : len(v)-1], nil
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		s, err := strconv.Unquote(v)
		if err != nil {
			return "", fmt.Errorf("bad string %s", v)
		}
		return s, nil
	}
	return "", fmt.Errorf("want a string, got %q", v)
}

// tomlStrings is a one-line array of strings.
func tomlStrings(v string) ([]string, error) {
	if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		return nil, fmt.Errorf("want an array of strings on one line, got %q", v)
	}
	var out []string
	for _, e := range splitTop(strings.TrimSpace(v[1:len(v)-1]), ',') {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		s, err := tomlString(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// splitTop splits s at sep outside quotes.
func splitTop(s string, sep byte) []string {
	var out []string
	var q byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0 && c == '\\' && q == '"':
			i++
		case q != 0 && c == q:
			q = 0
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q == 0 && c == sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// credentialVar reports whether a variable's name says it holds a
// credential (a token, key, secret or password).
func credentialVar(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PAT", "CREDENTIAL"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// launchers are commands that fetch and start a package's program: the
// program start to name is not theirs.
var launchers = map[string]bool{"npx": true, "uvx": true, "bunx": true, "pnpx": true, "docker": true, "podman": true}

// Propose is a program_rights block for the server, as YAML lines for an
// agent profile (two spaces indented): the program as the exec policy
// would name it, mode only, no host (the user lists the ones it needs),
// the variables that look like credentials as its secrets. Remote
// servers (a URL) are the agent's own connection: none is proposed.
func (s Server) Propose() string {
	if strings.TrimSpace(s.Command) == "" {
		return ""
	}
	argv := append([]string{s.Command}, s.Args...)
	name, _ := policy.ProgramName(argv, 0, filepath.Base(s.Command), s.Command, "/")
	note := "command: " + strings.Join(argv, " ")
	if launchers[filepath.Base(s.Command)] {
		note += "; started through " + filepath.Base(s.Command) + ": name the program it runs (agentbox audit shows its program start)"
		for _, a := range s.Args {
			if !strings.HasPrefix(a, "-") {
				name = path.Base(a)
				break
			}
		}
		if i := strings.LastIndex(name, "@"); i > 0 {
			name = name[:i]
		}
	}
	if policy.CheckProgramName(name) != nil || strings.ContainsAny(name, "\r\t") {
		return fmt.Sprintf("  # MCP server %q of %s: no program name to propose (%s)\n", s.Name, s.Config, strconv.Quote(note))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s:   # MCP server %s of %s (%s)\n", yamlKey(name), strconv.Quote(s.Name), s.Config, strconv.Quote(note))
	b.WriteString("    mode: only\n    hosts: []   # the hosts it needs\n")
	var secrets []string
	for _, e := range s.Env {
		if credentialVar(e) {
			secrets = append(secrets, e)
		}
	}
	if len(secrets) > 0 {
		fmt.Fprintf(&b, "    # secrets: [%s]   # brokered for it alone: list its hosts first\n", strings.Join(secrets, ", "))
	}
	return b.String()
}

// yamlKey quotes a key that YAML would not read back as itself.
func yamlKey(k string) string {
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return strconv.Quote(k)
		}
	}
	return k
}
