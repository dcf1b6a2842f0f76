package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// testWorkspace makes a workspace with the four areas.
func testWorkspace(t testing.TB) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	for _, a := range boundary.Areas {
		if err := os.MkdirAll(filepath.Join(ws, a), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func testInput(ws string) Input {
	return Input{Workspace: ws, Role: "developer", Argv: []string{"true"}, Agent: "main",
		Policy: Selection{NoUserFile: true, NoDiscover: true}, Env: []string{"PATH=/usr/bin:/bin"},
		AgentProfile: AgentProfileNone, ExecPolicy: true}
}

// TestSummaryCountsRunGrants: the launch line names the run's --ro, --rw
// and --exec grants with their access (it read the engine's role, which
// never held them).
func TestSummaryCountsRunGrants(t *testing.T) {
	ws := testWorkspace(t)
	dirs := make([]string, 3)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	for _, c := range []struct {
		name string
		set  func(*Input)
		want string
	}{
		{"none", func(*Input) {}, ""},
		{"--ro", func(in *Input) { in.GrantRead = dirs[:1] }, " · ro " + dirs[0] + " · "},
		{"--rw", func(in *Input) { in.GrantWrite = dirs[1:2] }, " · rw " + dirs[1] + " · "},
		{"--exec", func(in *Input) { in.GrantExec = dirs[2:] }, " · rx " + dirs[2] + " · "},
		{"all three", func(in *Input) { in.GrantRead, in.GrantWrite, in.GrantExec = dirs[:1], dirs[1:2], dirs[2:] }, " · rw " + dirs[1] + ", rx " + dirs[2] + ", ro " + dirs[0] + " · "},
	} {
		in := testInput(ws)
		c.set(&in)
		p, err := Build(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := p.Summary()
		if c.want == "" && strings.Contains(got, "/tmp/") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: summary %q, want %q", c.name, got, c.want)
		}
		if !strings.Contains(p.GuideText(), p.summary(false)[len("agentbox: "):]) {
			t.Errorf("%s: the guide does not hold the launch line (the run's id aside)", c.name)
		}
	}
}

// TestExecGrantReason: a program under an --exec directory is allowed by a
// rule that says so, not as "a toolchain discovered on PATH".
func TestExecGrantReason(t *testing.T) {
	ws := testWorkspace(t)
	dir := t.TempDir()
	in := testInput(ws)
	in.GrantExec = []string{dir}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "mytool")
	res := p.Engine.Decide(policy.Query{Argv: []string{prog}, ExecContext: policy.ExecContext{Cwd: filepath.Join(ws, "target"), Exe: prog}})
	if res.Decision != policy.Allow || res.Rule == nil {
		t.Fatalf("%s under --exec: %s (%s)", prog, res.Decision, res.Reason)
	}
	if strings.Contains(res.Reason, "toolchain") || !strings.Contains(res.Reason, "--exec") {
		t.Errorf("reason %q: want the --exec grant named, not a toolchain", res.Reason)
	}
}

// TestBuildIsImmutable: the grants live in the plan's engine; an engine
// loaded for the same role without them is not changed, and the plan's
// network and limits are the effective ones.
func TestBuildIsImmutable(t *testing.T) {
	ws := testWorkspace(t)
	in := testInput(ws)
	in.AllowHosts = []string{"api.example.test"}
	in.Limits = policy.Limits{Pids: 7}
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Network.Proxy || p.Limits.Pids != 7 || p.Role.Limits.Pids != 7 {
		t.Errorf("network %+v limits %+v: want proxy and pids 7", p.Network, p.Limits)
	}
	if r := p.Engine.Decide(policy.Query{Host: "api.example.test", Port: 443}); r.Decision != policy.Allow {
		t.Errorf("granted host: %s", r.Decision)
	}
	base, err := load.Policy(Load("developer", in.Policy))
	if err != nil {
		t.Fatal(err)
	}
	if r := base.Decide(policy.Query{Host: "api.example.test", Port: 443}); r.Decision == policy.Allow {
		t.Error("a freshly loaded engine allows the host another run granted")
	}
	if !strings.Contains(p.Summary(), "api.example.test") {
		t.Errorf("summary does not list the granted host: %s", p.Summary())
	}
}

// TestBuildErrors: bad input names its option; nothing is half-built.
func TestBuildErrors(t *testing.T) {
	ws := testWorkspace(t)
	for _, c := range []struct {
		name, option string
		set          func(*Input)
	}{
		{"no command", "command", func(in *Input) { in.Argv = nil }},
		{"bad agent", "agent", func(in *Input) { in.Agent = "../x" }},
		{"bad host", "allow-host", func(in *Input) { in.AllowHosts = []string{"bad host"} }},
		{"hosts without proxy", "allow-host", func(in *Input) {
			in.AllowHosts = []string{"a.test"}
			in.Network = &policy.Network{TCPConnect: []uint16{443}}
		}},
		{"bad network host", "network", func(in *Input) { in.Network = &policy.Network{Allow: []string{"bad host"}} }},
		{"unknown profile", "agent-profile", func(in *Input) { in.AgentProfile = "nosuch" }},
	} {
		in := testInput(ws)
		c.set(&in)
		p, err := Build(in)
		var oe *OptionError
		if p != nil || err == nil || !asOption(err, &oe) || oe.Option != c.option {
			t.Errorf("%s: plan %v, error %v; want an option error naming %s", c.name, p != nil, err, c.option)
		}
	}
}

func asOption(err error, oe **OptionError) bool {
	e, ok := err.(*OptionError)
	*oe = e
	return ok
}

// TestJudgesOutOfReach: a run is refused, naming what and the grant, when
// a grant would let the sandbox write a place a later run reads its policy
// from (even if no file is there yet), agentbox's own binaries, or reach
// the identity cache at all.
func TestJudgesOutOfReach(t *testing.T) {
	ws := testWorkspace(t)
	home := t.TempDir()
	xdg := filepath.Join(home, ".config")
	os.MkdirAll(xdg, 0o755)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("XDG_STATE_HOME", "")
	self, _ := os.Executable()
	for _, c := range []struct {
		name, what string
		set        func(*Input)
	}{
		{"--rw over the user policy's directory (no file yet)", "policy file a run would read", func(in *Input) {
			in.GrantWrite = []string{xdg}
		}},
		{"--rw over ~/.codex (rules read by discovery)", "policy file a run would read", func(in *Input) {
			os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
			in.GrantWrite = []string{filepath.Join(home, ".codex")}
			in.Policy.NoDiscover = false
		}},
		{"--rw over the user settings file (limits: off)", "user settings file", func(in *Input) {
			f := filepath.Join(xdg, "agentbox", "config.yaml")
			os.MkdirAll(filepath.Dir(f), 0o755)
			os.WriteFile(f, []byte("limits: on\n"), 0o644)
			in.GrantWrite = []string{f}
		}},
		{"--rw over agentbox's own directory", "agentbox binary", func(in *Input) {
			in.GrantWrite = []string{filepath.Dir(self)}
		}},
		{"--ro over the identity cache", "identity cache", func(in *Input) {
			os.MkdirAll(filepath.Join(home, ".cache", "agentbox"), 0o700)
			in.GrantRead = []string{filepath.Join(home, ".cache")}
		}},
		// agentbox undo RUN, from any directory, finds RUN's store there
		{"--rw over the state directory (every workspace's checkpoints, the review layers)", "checkpoint and review stores", func(in *Input) {
			os.MkdirAll(filepath.Join(home, ".local", "state"), 0o755)
			in.GrantWrite = []string{filepath.Join(home, ".local", "state")}
		}},
		{"audit log in feedback/", "audit log", func(in *Input) {
			in.AuditPath = filepath.Join(ws, "feedback", "a.jsonl")
		}},
		{"run registry in target/", "run registry", func(in *Input) {
			in.RegistryDir = filepath.Join(ws, "target", "runs")
		}},
		{"--rw over another workspace's checkpoint store", "checkpoint and review stores", func(in *Input) {
			d := filepath.Join(home, ".local", "state", "agentbox", "checkpoints", "0123456789abcdef")
			os.MkdirAll(d, 0o700)
			in.GrantWrite = []string{d}
		}},
	} {
		// Each refusal with the paths the input names walked by
		// checkLayout and, as Build does when they are done in time,
		// walked ahead while the policy loads.
		for _, wait := range []bool{false, true} {
			waitAhead = wait
			in := testInput(ws)
			in.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
			in.Policy.NoUserFile = false
			c.set(&in)
			_, err := Build(in)
			var ee *ExposedError
			if !errors.As(err, &ee) || ee.What != c.what {
				t.Errorf("%s (walked ahead: %v): %v; want an ExposedError for %q", c.name, wait, err, c.what)
			}
		}
		waitAhead = false
	}
	// A read grant over the user policy is fine: `agentbox check` inside
	// reads it.
	in := testInput(ws)
	in.GrantRead = []string{xdg}
	if _, err := Build(in); err != nil {
		t.Errorf("--ro over the user policy's directory: %v", err)
	}
}

// TestSummaryTTYWithoutTerminal: --approve tty where there is no terminal
// says at launch that asks will be denied (it said "approver tty" and then
// denied every ask with "no approver").
func TestSummaryTTYWithoutTerminal(t *testing.T) {
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skip("reason: this test runs with a controlling terminal")
	}
	in := testInput(testWorkspace(t))
	in.Approve = "tty"
	p, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Summary(); !strings.Contains(s, "approver tty: no terminal") || !strings.Contains(s, "asks are denied") {
		t.Errorf("summary %q", s)
	}
}

// TestLoopbackForwardsAndInternalHosts: a granted 127.0.0.1:PORT is
// forwarded into the sandbox under network mode proxy; another loopback
// address or the proxy's own port is refused in one line naming the
// flag; --allow-internal-host without the proxy says which flag it lacks.
func TestLoopbackForwardsAndInternalHosts(t *testing.T) {
	ws := testWorkspace(t)
	// A role granting loopback hosts to a program only (programs:).
	progPolicy := func(host string) string {
		f := filepath.Join(t.TempDir(), "prog.yaml")
		if err := os.WriteFile(f, []byte("version: 1\nroles:\n  fwtest:\n    extends: developer\n    programs:\n      mcp-granted: {hosts: [\""+host+"\"]}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	withProgram := func(host string) func(*Input) {
		f := progPolicy(host)
		return func(in *Input) {
			in.Role, in.Policy.Files, in.AllowHosts = "fwtest", []string{f}, []string{"example.com"}
		}
	}
	for _, c := range []struct {
		name    string
		set     func(*Input)
		option  string // "": built
		want    string // in the error, or the port forwarded
		forward uint16
	}{
		{name: "loopback port", set: func(in *Input) { in.AllowHosts = []string{"127.0.0.1:5432", "example.com"} }, forward: 5432},
		{name: "asked loopback port", set: func(in *Input) { in.Network = &policy.Network{Proxy: true, Ask: []string{"127.0.0.1:11434"}} }, forward: 11434},
		{name: "ipv6 loopback", set: func(in *Input) { in.AllowHosts = []string{"[::1]:11434"} }, option: "allow-host", want: "--allow-host 127.0.0.1:11434"},
		{name: "other loopback address", set: func(in *Input) { in.AllowHosts = []string{"127.0.0.2:5432"} }, option: "allow-host", want: "only 127.0.0.1:PORT"},
		{name: "proxy port", set: func(in *Input) { in.AllowHosts = []string{"127.0.0.1:3128"} }, option: "allow-host", want: "egress proxy's port"},
		{name: "program-only loopback port", set: withProgram("127.0.0.1:7001"), forward: 7001},
		{name: "program-only proxy port", set: withProgram("127.0.0.1:3128"), option: "-", want: "programs: mcp-granted: host 127.0.0.1:3128: port 3128 is the egress proxy's port"},
		{name: "internal host alone", set: func(in *Input) {
			in.InternalHosts = []string{"db.corp.test"}
			in.Network = &policy.Network{}
		}, option: "allow-internal-host", want: "network is none: add --allow-host db.corp.test"},
		{name: "internal host with its grant", set: func(in *Input) {
			in.InternalHosts = []string{"db.corp.test"}
			in.AllowHosts = []string{"db.corp.test"}
		}},
	} {
		in := testInput(ws)
		c.set(&in)
		p, err := Build(in)
		if c.option == "-" {
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "prog.yaml:") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v; want one line naming the block's file with %q", c.name, err, c.want)
			}
			continue
		}
		if c.option != "" {
			var oe *OptionError
			if err == nil || !asOption(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v; want one line naming %s with %q", c.name, err, c.option, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		fw := p.Forwards()
		if c.forward != 0 && (len(fw) != 1 || fw[0] != c.forward) || c.forward == 0 && len(fw) != 0 {
			t.Errorf("%s: forwards %v, want %d", c.name, fw, c.forward)
		}
	}
}

// TestSecretHeaders: a brokered secret's value goes in its declared
// headers: the agent profile API's own header, the credential headers by
// default, or the ones --secret-header names; a bad declaration refuses
// the run naming the option.
func TestSecretHeaders(t *testing.T) {
	ws := testWorkspace(t)
	for _, c := range []struct {
		name    string
		secret  string
		decl    map[string][]string
		want    []string
		errWant string
	}{
		{name: "profile's own", secret: "ANTHROPIC_API_KEY", want: []string{"X-Api-Key"}},
		{name: "default", secret: "GH_TOKEN", want: defaultSecretHeaders},
		{name: "declared", secret: "GH_TOKEN", decl: map[string][]string{"GH_TOKEN": {"X-Custom-Key", "x-custom-key"}}, want: []string{"X-Custom-Key"}},
		{name: "unknown secret", secret: "GH_TOKEN", decl: map[string][]string{"OTHER": {"X-Key"}}, errWant: `secret-header "OTHER": no brokered secret`},
		{name: "not a header", secret: "GH_TOKEN", decl: map[string][]string{"GH_TOKEN": {"X Key"}}, errWant: "is not a header name"},
		{name: "framing header", secret: "GH_TOKEN", decl: map[string][]string{"GH_TOKEN": {"Host"}}, errWant: "frames the request"},
		{name: "nothing brokered", decl: map[string][]string{"GH_TOKEN": {"X-Key"}}, errWant: `secret-header "GH_TOKEN": no brokered secret`},
	} {
		in := testInput(ws)
		if c.secret != "" {
			in.Env = append(in.Env, c.secret+"=value-of-the-secret-0123456789")
			in.Secrets = []policy.SecretGrant{{Name: c.secret, Hosts: []string{"api.example.com"}}}
		}
		in.SecretHeaders = c.decl
		p, err := Build(in)
		if c.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), c.errWant) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.errWant)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		es := p.EgressSecrets()
		if len(es) != 1 || strings.Join(es[0].Headers, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %d secrets, headers %v, want %v", c.name, len(es), es[0].Headers, c.want)
		}
	}
}

// BenchmarkCheckLayout: the layout check of a launch (policy files found
// and the places a later run would read them, the binaries, caches, audit
// log and stores, each resolved), without the rest of Build.
func BenchmarkCheckLayout(b *testing.B) {
	ws := testWorkspace(b)
	in := testInput(ws)
	in.Policy.NoDiscover = false
	in.AuditPath = filepath.Join(b.TempDir(), "audit.jsonl")
	p, err := Build(in)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := p.checkLayout(in); err != nil {
			b.Fatal(err)
		}
	}
}
