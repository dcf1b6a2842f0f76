package load

import (
	"errors"
	"fmt"
	"os/user"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"go.yaml.in/yaml/v3"
)

// built at first use, not at every launch's package initialisation

// parseAgents parses a file's `agents:` mapping.
func (p *parser) parseAgents(n *yaml.Node) []*policy.AgentProfile {
	var out []*policy.AgentProfile
	p.fields(n, "agents", func(name string, k, v *yaml.Node) bool {
		if !validRoleName(name) {
			p.errf(k, "invalid agent profile name %q (letters, digits, '-', '_', '.')", name)
			return true
		}
		a := &policy.AgentProfile{Name: name, Source: p.source(k, "")}
		if p.builtin {
			a.Source = "builtin:agent:" + name
		}
		lists := profileLists(a)
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

// profileList is one list of a profile: its field and the check of each
// entry (nil: any string).
type profileList struct {
	dst   *[]string
	check func(string) error
}

// lists maps a profile's list keys to their fields.
func profileLists(a *policy.AgentProfile) map[string]profileList {
	return map[string]profileList{
		"programs": {&a.Programs, commandName}, "packages": {&a.Packages, nil},
		"install": {&a.Install, absOrHome}, "read": {&a.Read, absOrHome},
		"views": {&a.Views, homeRel}, "dirs": {&a.Dirs, homeRel}, "sources": {&a.Sources, homeRel},
		"source_files": {&a.SourceFiles, homeRel},
		"guide":        {&a.Guide, homeRel}, "base_url_config": {&a.BaseURLConfig, homeRel},
		"env": {&a.Env, envVarName}, "base_url_env": {&a.BaseURLEnv, envVarName}, "secrets": {&a.Secrets, envVarName},
		"hosts":      {&a.Hosts, func(s string) error { _, err := policy.NetMatcher(s); return err }},
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

// parseApprovers parses an approvers block.
func (p *parser) parseApprovers(n *yaml.Node) []policy.ApproverRole {
	var out []policy.ApproverRole
	p.fields(n, "approvers", func(name string, k, v *yaml.Node) bool {
		if !validRoleName(name) {
			p.errf(k, "approvers: invalid approver role name %q (letters, digits, '-', '_', '.')", name)
			return true
		}
		ar := policy.ApproverRole{Name: name, Source: p.source(k, "")}
		p.fields(v, "approvers."+name, func(key string, kk, fv *yaml.Node) bool {
			switch key {
			case "members":
				ms, nodes := p.strList(fv, "members")
				for i, m := range ms {
					if err := checkMember(m); err != nil {
						p.errf(nodes[i], "approvers.%s.members: %q: %v", name, m, err)
					}
				}
				ar.Members = ms
			case "grant":
				ar.Grant, _ = p.strList(fv, "grant")
			case "always":
				ar.Always = p.boolVal(fv, "approvers."+name+".always")
			default:
				return false
			}
			return true
		})
		out = append(out, ar)
		return true
	})
	return out
}

// parsePermissionGrants parses Chorus's server settings mapping (role →
// grantable profiles; members: the group of the role's name).
func (p *parser) parsePermissionGrants(n *yaml.Node) []policy.ApproverRole {
	var out []policy.ApproverRole
	p.fields(n, "permission_grants", func(name string, k, v *yaml.Node) bool {
		grant, _ := p.strList(v, "permission_grants."+name)
		out = append(out, policy.ApproverRole{Name: name, Grant: grant, Always: true, Source: p.source(k, "")})
		return true
	})
	return out
}

// checkMember validates a member: a user name, group:NAME or uid:N. A
// name that does not exist here is an error: a typo must not silently
// grant nothing (or, after a user is created, something).
func checkMember(m string) error {
	switch {
	case strings.HasPrefix(m, "uid:"):
		if n, err := strconv.Atoi(m[len("uid:"):]); err != nil || n < 0 {
			return fmt.Errorf("want uid:NUMBER")
		}
	case strings.HasPrefix(m, "group:"):
		if _, err := user.LookupGroup(m[len("group:"):]); err != nil {
			return fmt.Errorf("no such group on this machine")
		}
	default:
		if _, err := user.Lookup(m); err != nil {
			return fmt.Errorf("no such user on this machine")
		}
	}
	return nil
}

// parsePrograms parses a `programs:` mapping (what: "role R", "agent
// profile A"), checking every entry; a bad one is left out with an error
// naming its line.
func (p *parser) parsePrograms(n *yaml.Node, what string) []policy.ProgramGrant {
	var out []policy.ProgramGrant
	p.fields(n, what+" programs", func(name string, k, v *yaml.Node) bool {
		g := policy.ProgramGrant{Name: name, Source: p.source(k, what)}
		ok := true
		if err := policy.CheckProgramName(name); err != nil {
			p.errf(k, "programs: %v", err)
			ok = false
		}
		var secretNodes []*yaml.Node
		p.fields(v, "programs."+name, func(key string, _, fv *yaml.Node) bool {
			switch key {
			case "mode":
				switch fv.Value {
				case "add":
				case "only":
					g.Only = true
				default:
					p.errf(fv, "programs.%s.mode %s: want add (the run's rights and these) or only (these alone)", name, kindName(fv))
					ok = false
				}
			case "hosts":
				hosts, nodes := p.strList(fv, "programs."+name+".hosts")
				for i, h := range hosts {
					if _, err := policy.HostMatcher([]string{h}); err != nil {
						p.errf(nodes[i], "programs.%s.hosts: %v", name, err)
						ok = false
					}
				}
				g.Hosts = hosts
			case "secrets":
				g.Secrets, secretNodes = p.strList(fv, "programs."+name+".secrets")
				for i, s := range g.Secrets {
					if envVarName(s) != nil {
						p.errf(secretNodes[i], "programs.%s.secrets: %q is not a variable name", name, s)
						ok = false
					}
				}
			default:
				return false
			}
			return true
		})
		if len(g.Secrets) > 0 && len(g.Hosts) == 0 {
			p.errf(secretNodes[0], "programs.%s.secrets: %s has no host to go to (list the hosts the program may send it to under hosts)", name, g.Secrets[0])
			ok = false
		}
		if ok {
			out = append(out, g)
		}
		return true
	})
	return out
}

// envVarName checks a variable name: a letter or '_', then letters,
// digits and '_'.
func envVarName(s string) error {
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("not a variable name")
		}
	}
	if s == "" {
		return fmt.Errorf("not a variable name")
	}
	return nil
}
