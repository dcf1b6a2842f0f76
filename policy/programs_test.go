package policy

import (
	"strings"
	"testing"
)

// TestProgramName: the program a process runs, as the exec policy decides
// it: a #! script and a script an interpreter or shell is given are the
// script; anything else its identity, else its file's name.
func TestProgramName(t *testing.T) {
	cases := []struct {
		argv            []string
		scriptArg       int
		identity, exe   string
		cwd             string
		wantName, wantP string
	}{
		{[]string{"/usr/bin/python3", "srv/mcp.py", "--stdio"}, 1, "python3", "/usr/bin/python3.11", "/w", "mcp.py", "/w/srv/mcp.py"},
		{[]string{"node", "/opt/mcp/index.js"}, 0, "node", "/usr/bin/node", "/w", "index.js", "/opt/mcp/index.js"},
		{[]string{"sh", "-c", "curl x"}, 0, "sh", "/usr/bin/dash", "/w", "sh", "/usr/bin/dash"},
		{[]string{"bash", "run.sh"}, 0, "bash", "/usr/bin/bash", "/w", "run.sh", "/w/run.sh"},
		{[]string{"github-mcp-server", "stdio"}, 0, "", "/usr/local/bin/github-mcp-server", "/w", "github-mcp-server", "/usr/local/bin/github-mcp-server"},
		{[]string{"g", "push"}, 0, "git", "/w/g", "/w", "git", "/w/g"},
	}
	for _, c := range cases {
		name, p := ProgramName(c.argv, c.scriptArg, c.identity, c.exe, c.cwd)
		if name != c.wantName || p != c.wantP {
			t.Errorf("ProgramName(%q, %d, %q, %q) = %q, %q; want %q, %q", c.argv, c.scriptArg, c.identity, c.exe, name, p, c.wantName, c.wantP)
		}
	}
}

// TestProgramsBlock: a role's programs: block and an agent profile's
// program_rights: load with their hosts, secrets and mode; a child role's
// block of the same name replaces its parent's; the matchers match by
// name (glob) or absolute path glob.
func TestProgramsBlock(t *testing.T) {
	e := engineWith(t, "child", `version: 1
roles:
  base:
    extends: developer
    programs:
      github-mcp-server:
        hosts: [api.github.com]
        secrets: [GITHUB_TOKEN]
      fs-mcp: {mode: only}
  child:
    extends: base
    programs:
      fs-mcp: {mode: only, hosts: [files.example.com]}
      /opt/mcp/**: {hosts: ["*.example.org"]}
agents:
  x:
    programs: [x]
    program_rights:
      "*-mcp": {mode: only}
`)
	got := map[string]ProgramGrant{}
	for _, g := range e.Role().Programs {
		got[g.Name] = g
	}
	if g := got["github-mcp-server"]; g.Only || len(g.Hosts) != 1 || g.Secrets[0] != "GITHUB_TOKEN" || !strings.Contains(g.Source, ".yaml:6") {
		t.Errorf("github-mcp-server: %+v", g)
	}
	if g := got["fs-mcp"]; !g.Only || len(g.Hosts) != 1 {
		t.Errorf("fs-mcp (the child's): %+v", g)
	}
	if m := got["/opt/mcp/**"].Matcher(); m == nil || !m("index.js", "/opt/mcp/srv/index.js") || m("index.js", "/opt/other/index.js") {
		t.Errorf("/opt/mcp/** matcher wrong")
	}
	if m := got["github-mcp-server"].Matcher(); !m("github-mcp-server", "/x") || m("github-mcp-server2", "/x") {
		t.Errorf("name matcher wrong")
	}
	if a := e.Agent("x"); a == nil || len(a.ProgramRights) != 1 || !a.ProgramRights[0].Only {
		t.Errorf("agent profile program_rights: %+v", a)
	}
}

// TestProgramsBlockErrors: a block that cannot work is an error naming the
// file and line.
func TestProgramsBlockErrors(t *testing.T) {
	cases := []struct{ name, block, want string }{
		{"relative path", "      bin/mcp: {hosts: [a.com]}\n", `:5: programs: program "bin/mcp": a path must be absolute`},
		{"directory", "      /opt/mcp/: {hosts: [a.com]}\n", `:5: programs: program "/opt/mcp/": a directory names no program`},
		{"bad glob", "      \"mcp[\": {hosts: [a.com]}\n", `:5: programs: program "mcp[": bad glob`},
		{"empty name", "      \"\": {hosts: [a.com]}\n", `:5: programs: empty program name`},
		{"bad mode", "      m: {mode: instead, hosts: [a.com]}\n", `:5: programs.m.mode "instead"`},
		{"secret without hosts", "      m: {secrets: [TOKEN]}\n", `:5: programs.m.secrets: TOKEN has no host`},
		{"bad secret name", "      m: {hosts: [a.com], secrets: [\"A-B\"]}\n", `:5: programs.m.secrets: "A-B" is not a variable name`},
		{"bad host", "      m: {hosts: [\"a b\"]}\n", `:5: programs.m.hosts`},
		{"unknown key", "      m: {host: [a.com]}\n", `:5: unknown key "host"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := writePolicy(t, "p.yaml", "version: 1\nroles:\n  r:\n    programs:\n"+c.block)
			_, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{f}})
			if err == nil || !strings.Contains(err.Error(), "p.yaml"+c.want) {
				t.Fatalf("error %v, want one with %q", err, "p.yaml"+c.want)
			}
		})
	}
}

// FuzzProgramsBlock: no programs: block makes the loader panic; a block it
// accepts has names CheckProgramName accepts and a matcher.
func FuzzProgramsBlock(f *testing.F) {
	for _, s := range []string{
		"m: {hosts: [a.com], secrets: [T]}", "/opt/**: {mode: only}", "\"*-mcp\": {hosts: [\"*.x.org:443\"]}",
		"m: {mode: add}", "[a]: 1", "m: [x]", "m: {hosts: {}}", "\"\": {}", "m: {secrets: [T]}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, block string) {
		order := 0
		data := "version: 1\nroles:\n  r:\n    programs: " + block + "\n"
		fd, errs := parseFile("fuzz.yaml", []byte(data), LayerFile, &order)
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
				t.Fatalf("error without file and line: %v", err)
			}
		}
		if fd == nil {
			return
		}
		for _, rd := range fd.roles {
			for _, g := range rd.info.Programs {
				if err := CheckProgramName(g.Name); err != nil || g.Matcher() == nil {
					t.Fatalf("accepted %q: %v", g.Name, err)
				}
				g.Matcher()("x", "/x")
			}
		}
	})
}
