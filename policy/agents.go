package policy

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// AgentProfile describes what one coding agent CLI needs to run inside the
// sandbox: where it is installed, which of the user's files it reads
// (shown read-only in the agent's own HOME), which variables it needs
// passed through or set, and which hosts it talks to. Profiles are data in
// the policy format (`agents:`); the built-in ones are in roles.yaml and a
// policy file may add or replace one by name. A profile grants nothing by
// itself: the run applies it (agentbox.WithAgentProfile), and every
// program the agent starts is still decided by the role.
type AgentProfile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source"`
	// Programs are the command names that select the profile
	// automatically (the base name of argv[0] or of the file it resolves
	// to).
	Programs []string `json:"programs,omitempty"`
	// Packages are npm package names: when the command resolves to a file
	// inside node_modules/<package>, that package directory is granted
	// read and execute and the profile is selected.
	Packages []string `json:"packages,omitempty"`
	// Install are other install locations (absolute, or ~/ for the user's
	// HOME), granted read and execute when they exist.
	Install []string `json:"install,omitempty"`
	// Read are system paths the agent reads (managed settings), granted
	// read-only when they exist.
	Read []string `json:"read,omitempty"`
	// Views are files of the user's HOME (its login and settings, relative
	// to HOME) the agent sees read-only at the same place in its own HOME;
	// nothing else of the user's HOME is reachable.
	Views []string `json:"views,omitempty"`
	// Dirs are directories created in the agent's HOME (its own state).
	Dirs []string `json:"dirs,omitempty"`
	// Guide are the files (relative to the agent's HOME) the agent reads
	// as its own instructions (~/.claude/CLAUDE.md): agentbox writes its
	// guide there at each launch, unless a view shows the user's own file.
	Guide []string `json:"guide,omitempty"`
	// Sources are directories (relative to the agent's HOME) of the shell
	// snapshots its shell tool sources before each command (source FILE):
	// allowed, where sourcing a file otherwise asks.
	Sources []string `json:"sources,omitempty"`
	// SourceFiles are files (relative to the agent's HOME) its shell tool
	// sources at start-up (Codex's snapshot script sources ~/.bashrc):
	// allowed by their path and as "$HOME/FILE" or ~/FILE. Each program
	// such a file starts is still decided.
	SourceFiles []string `json:"source_files,omitempty"`
	// Env are variables passed through from the caller (API keys, base
	// URLs; values are redacted in the audit log).
	Env []string `json:"env,omitempty"`
	// SetEnv are set in the sandbox over the caller's values (what is true
	// there: IS_SANDBOX=1); "$HOME" in a value is the agent's HOME.
	SetEnv map[string]string `json:"set_env,omitempty"`
	// Hosts are the agent's API hosts, allowed through the egress proxy.
	Hosts []string `json:"hosts,omitempty"`
	// BaseURLEnv are variables holding an API base URL; when one is set,
	// its host:port is allowed (a loopback one is forwarded into the
	// sandbox's network namespace) and replaces Hosts.
	BaseURLEnv []string `json:"base_url_env,omitempty"`
	// BaseURLConfig are config files (relative to the user's HOME) whose
	// `base_url = "..."` settings name the API; read like BaseURLEnv.
	BaseURLConfig []string `json:"base_url_config,omitempty"`
	// Secrets are variables of Env holding the agent's API credentials:
	// brokered for the API hosts (the sandbox sees a placeholder, the
	// egress proxy puts the real value in requests to those hosts only).
	Secrets []string `json:"secrets,omitempty"`
	// Files are files written into the agent's HOME (path relative to it)
	// at launch when every ${VAR} their text names is set in the caller's
	// environment and no view shows the user's own file there: a setting
	// the CLI honours only in its config (Codex's provider for
	// OPENAI_BASE_URL). ${VAR} is replaced by the caller's value; a
	// brokered secret's never appears (its name is written, not its value).
	Files map[string]string `json:"files,omitempty"`
	// ProgramRights (`program_rights:`, as a role's `programs:`) are
	// rights of programs the agent starts (its MCP servers): hosts and
	// secrets that follow the program (programs.go), added to the role's
	// when the profile is applied.
	ProgramRights []ProgramGrant `json:"program_rights,omitempty"`
	// MCPConfig are the files the agent reads its MCP servers from
	// (~/FILE in the user's HOME, FILE in the project directory):
	// `agentbox agents` proposes a program_rights block for each server
	// (mcpconfig.go).
	MCPConfig []string `json:"mcp_config,omitempty"`
}

// mergeAgents returns the built-in profiles replaced or added to by the
// files' `agents:` (a later layer replaces a profile by name).
func mergeAgents(defs []*fileDef) map[string]*AgentProfile {
	m := map[string]*AgentProfile{}
	for k, v := range builtinOnce.agents {
		m[k] = v
	}
	for _, fd := range defs {
		for _, a := range fd.agents {
			m[a.Name] = a
		}
	}
	return m
}

// built at first use, not at every launch's package initialisation
var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// envVarName checks a variable name (a brokered secret's).
func envVarName(s string) error {
	if !envNameRe().MatchString(s) {
		return fmt.Errorf("not a variable name")
	}
	return nil
}

// Agents lists the agent profiles known to the engine (built-in, then
// replaced or added by policy files), sorted by name.
func (e *Engine) Agents() []*AgentProfile {
	var out []*AgentProfile
	for _, a := range e.agents {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Agent returns the profile named name, or nil.
func (e *Engine) Agent(name string) *AgentProfile { return e.agents[name] }

// SelectAgent picks the profile for a command from its identity: the
// command name (base name of argv[0]) and the file it resolves to (real
// path, "" if unknown): a file inside node_modules/<package> of a
// profile's package, or a base name among a profile's programs. It
// returns nil when no profile fits.
func (e *Engine) SelectAgent(argv0, resolved string) *AgentProfile {
	for _, a := range e.Agents() {
		if a.PackageDir(resolved) != "" {
			return a
		}
	}
	names := []string{path.Base(argv0)}
	if resolved != "" {
		names = append(names, path.Base(resolved))
	}
	for _, a := range e.Agents() {
		for _, n := range names {
			for _, prog := range a.Programs {
				if n == prog {
					return a
				}
			}
		}
	}
	return nil
}

// PackageDir returns the directory of one of the profile's npm packages
// that file lies in (…/node_modules/@scope/name), or "".
func (a *AgentProfile) PackageDir(file string) string {
	for _, pkg := range a.Packages {
		marker := "/node_modules/" + pkg + "/"
		if i := strings.LastIndex(file, marker); i >= 0 {
			return file[:i+len(marker)-1]
		}
	}
	return ""
}
