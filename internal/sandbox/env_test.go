package sandbox

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/boundary"
)

func TestBuildEnv(t *testing.T) {
	plan := &boundary.Plan{Workspace: "/w", AgentID: "a1", OwnAgent: "/w/agents/a1",
		Home: "/w/agents/a1/home", Tmp: "/w/agents/a1/tmp", Cache: "/w/agents/a1/cache",
		Rules: []boundary.Rule{{Path: "/usr", Rights: boundary.RightsRead | boundary.RightsExec},
			{Path: "/w/target", Rights: boundary.RightsRead | boundary.RightsWrite}}}
	outer := []string{"GODEBUG=gctrace=1", "PATH=/root/.pyenv/shims:/usr/bin:.::/w/target/bin:/usr/bin:/usr/local/go/bin", "TERM=xterm", "LC_ALL=C", "HOME=/root", "GITHUB_TOKEN=x",
		"AWS_SECRET_ACCESS_KEY=y", "SSH_AUTH_SOCK=/s", "LD_PRELOAD=/e.so", "NPM_TOKEN=n", "AGENTBOX_AGENT=spoof", "NOEQUALS"}
	cases := []struct {
		name    string
		pass    []string
		tcp     bool
		want    []string
		notWant []string
	}{
		{"default allowlist", nil, false,
			[]string{"PATH=/usr/bin:/usr/local/go/bin", "TERM=xterm", "LC_ALL=C", "HOME=/w/agents/a1/home", "TMPDIR=/w/agents/a1/tmp",
				"GOCACHE=/w/agents/a1/cache/go-build", "AGENTBOX_AGENT=a1", "GOTOOLCHAIN=local", "GODEBUG=asyncpreemptoff=1"},
			[]string{"HOME=/root", "GITHUB_TOKEN", "AWS_SECRET", "SSH_AUTH_SOCK", "LD_PRELOAD", "NPM_TOKEN", "spoof", "NOEQUALS", "RES_OPTIONS"}},
		{"role pass-through, never the deny list", []string{"NPM_*", "SSH_AUTH_SOCK", "LD_PRELOAD", "AGENTBOX_*"}, true,
			[]string{"NPM_TOKEN=n", "RES_OPTIONS=use-vc", "AGENTBOX_AGENT=a1", "GODEBUG=asyncpreemptoff=1"},
			[]string{"SSH_AUTH_SOCK", "LD_PRELOAD", "spoof", "gctrace"}},
		{"GODEBUG passed through wins over asyncpreemptoff", []string{"GODEBUG"}, false,
			[]string{"GODEBUG=gctrace=1"},
			[]string{"asyncpreemptoff"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := buildEnv(outer, c.pass, plan, "r", c.tcp, false)
			joined := strings.Join(env, "\n")
			for _, w := range c.want {
				if !slices.Contains(env, w) {
					t.Errorf("missing %q in\n%s", w, joined)
				}
			}
			for _, n := range c.notWant {
				if strings.Contains(joined, n) {
					t.Errorf("leaks %q in\n%s", n, joined)
				}
			}
			seen := map[string]bool{}
			for _, kv := range env {
				k, _, _ := strings.Cut(kv, "=")
				if seen[k] {
					t.Errorf("duplicate %s", k)
				}
				seen[k] = true
			}
		})
	}
	if env := buildEnv(nil, nil, plan, "r", false, false); !slices.Contains(env, "PATH="+defaultPath) {
		t.Errorf("no default PATH: %v", env)
	}
	// Entries the sandbox cannot execute from are dropped; none left: default.
	if env := buildEnv([]string{"PATH=/root/bin:rel"}, nil, plan, "r", false, false); !slices.Contains(env, "PATH="+defaultPath) {
		t.Errorf("unreachable PATH not replaced by the default: %v", env)
	}
}

func TestRlimitsFor(t *testing.T) {
	rs := rlimitsFor(Limits{MaxFileSize: 1 << 20})
	got := map[int]uint64{}
	for _, r := range rs {
		got[r.Resource] = r.Cur
	}
	if v, ok := got[unix.RLIMIT_CORE]; !ok || v != 0 {
		t.Errorf("core = %v %v, want 0", v, ok)
	}
	if got[unix.RLIMIT_FSIZE] != 1<<20 || got[unix.RLIMIT_NOFILE] != defaultNoFile {
		t.Errorf("rlimits = %v", got)
	}
	for _, r := range rlimitsFor(Limits{}) {
		if r.Resource == unix.RLIMIT_FSIZE {
			t.Errorf("fsize set without a role limit")
		}
	}
}

func TestBuildEnvProxy(t *testing.T) {
	plan := &boundary.Plan{Workspace: "/w", AgentID: "a", OwnAgent: "/w/agents/a", Home: "/w/agents/a/home", Tmp: "/w/agents/a/tmp", Cache: "/w/agents/a/cache"}
	env := buildEnv([]string{"HTTPS_PROXY=http://evil:1"}, []string{"HTTPS_PROXY"}, plan, "r", false, true)
	for _, want := range []string{"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
		"ALL_PROXY=http://127.0.0.1:3128", "npm_config_https_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !slices.Contains(env, want) {
			t.Errorf("proxy env lacks %s: %v", want, env)
		}
	}
	if slices.Contains(env, "HTTPS_PROXY=http://evil:1") {
		t.Error("the caller's proxy survived")
	}
}
