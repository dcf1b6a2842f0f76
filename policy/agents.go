package policy

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
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

// built at first use, not at every launch's package initialisation
var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// parseAgents parses a file's `agents:` mapping.
func (p *parser) parseAgents(n *yaml.Node) []*AgentProfile {
	var out []*AgentProfile
	p.fields(n, "agents", func(name string, k, v *yaml.Node) bool {
		if !validRoleName(name) {
			p.errf(k, "invalid agent profile name %q (letters, digits, '-', '_', '.')", name)
			return true
		}
		a := &AgentProfile{Name: name, Source: p.source(k, "")}
		if p.builtin {
			a.Source = "builtin:agent:" + name
		}
		lists := a.lists()
		p.fields(v, "agent profile "+name, func(key string, kk, fv *yaml.Node) bool {
			if l, ok := lists[key]; ok {
				vals, nodes := p.strList(fv, key)
				for i, s := range vals {
					if l.check == nil {
						continue
					}
					if err := l.check(s); err != nil {
						p.errf(nodes[i], "agents.%s.%s: %q: %v", name, key, s, err)
					}
				}
				*l.dst = vals
				return true
			}
			switch key {
			case "description":
				a.Description, _ = p.str(fv, "description")
			case "set_env":
				a.SetEnv = map[string]string{}
				p.fields(fv, "agents."+name+".set_env", func(ek string, ekn, ev *yaml.Node) bool {
					if err := envVarName(ek); err != nil {
						p.errf(ekn, "agents.%s.set_env: %q: %v", name, ek, err)
					}
					a.SetEnv[ek], _ = p.str(ev, "set_env."+ek)
					return true
				})
			case "program_rights":
				a.ProgramRights = p.parsePrograms(fv, "agent profile "+name)
			case "files":
				a.Files = map[string]string{}
				p.fields(fv, "agents."+name+".files", func(fk string, fkn, fval *yaml.Node) bool {
					if err := homeRel(fk); err != nil {
						p.errf(fkn, "agents.%s.files: %q: %v", name, fk, err)
					}
					a.Files[fk], _ = p.str(fval, "files."+fk)
					return true
				})
			default:
				return false
			}
			return true
		})
		for _, sn := range a.Secrets {
			if !slices.Contains(a.Env, sn) {
				p.errf(n, "agents.%s.secrets: %s is not in its env list (only a variable passed in can be brokered)", name, sn)
			}
		}
		out = append(out, a)
		return true
	})
	return out
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

// AgentProfiles lists the agent profiles of the given layers (built-in
// and from policy files; opts.Role is ignored), sorted by name.
func AgentProfiles(opts LoadOptions) ([]*AgentProfile, error) {
	_, defs, err := loadLayers(opts)
	if err != nil {
		return nil, err
	}
	e := &Engine{agents: mergeAgents(defs)}
	return e.Agents(), nil
}

// profileList is one list of a profile: its field and the check of each
// entry (nil: any string).
type profileList struct {
	dst   *[]string
	check func(string) error
}

// lists maps a profile's list keys to their fields.
func (a *AgentProfile) lists() map[string]profileList {
	return map[string]profileList{
		"programs": {&a.Programs, commandName}, "packages": {&a.Packages, nil},
		"install": {&a.Install, absOrHome}, "read": {&a.Read, absOrHome},
		"views": {&a.Views, homeRel}, "dirs": {&a.Dirs, homeRel}, "sources": {&a.Sources, homeRel},
		"source_files": {&a.SourceFiles, homeRel},
		"guide":        {&a.Guide, homeRel}, "base_url_config": {&a.BaseURLConfig, homeRel},
		"env": {&a.Env, envVarName}, "base_url_env": {&a.BaseURLEnv, envVarName}, "secrets": {&a.Secrets, envVarName},
		"hosts":      {&a.Hosts, func(s string) error { _, err := compileHostPattern(s); return err }},
		"mcp_config": {&a.MCPConfig, mcpConfigPath},
	}
}

// mcpConfigPath checks an mcp_config entry: ~/PATH (in HOME) or a clean
// relative path (in the project directory), a .json or .toml file.
func mcpConfigPath(s string) error {
	p := strings.TrimPrefix(s, "~/")
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasPrefix(p, "..") {
		return errors.New("want ~/PATH or a clean path relative to the project directory")
	}
	if ext := path.Ext(p); ext != ".json" && ext != ".toml" {
		return errors.New("want a .json or .toml file")
	}
	return nil
}

func commandName(s string) error {
	if strings.Contains(s, "/") {
		return fmt.Errorf("a command name, not a path")
	}
	return nil
}

func absOrHome(s string) error {
	if !(strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/")) || strings.Contains(s, "..") {
		return fmt.Errorf("want an absolute path or ~/PATH without ..")
	}
	return nil
}

func homeRel(s string) error {
	if s == "" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || path.Clean(s) != s || strings.HasPrefix(s, "..") {
		return fmt.Errorf("want a clean path relative to HOME")
	}
	return nil
}

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
