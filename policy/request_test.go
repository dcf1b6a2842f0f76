package policy

import (
	"strings"
	"testing"
)

// TestRequestRules: a network block's requests: decide tool:http actions by
// method, host and path; the most specific rule wins, a deny wins over an
// allow; a request no rule names keeps the connection's decision.
func TestRequestRules(t *testing.T) {
	f := writePolicy(t, "req.yaml", `version: 1
roles:
  api:
    extends: developer
    network:
      allow: [api.github.com, uploads.github.com]
      inspect: [github.com]
      secrets:
        GITHUB_TOKEN: [api.github.com, github.com]
      requests:
        - {host: api.github.com, method: [GET, HEAD], decision: allow, description: reads}
        - {host: api.github.com, decision: ask, description: "writes need approval"}
        - {host: api.github.com, method: DELETE, decision: deny}
        - {host: api.github.com, method: POST, path: "/repos/*/issues", decision: allow}
        - {host: api.github.com, path: "/gists*", decision: deny, description: "no gists"}
`)
	e, err := Load(LoadOptions{Role: "api", NoUserFile: true, Files: []string{f}})
	if err != nil {
		t.Fatal(err)
	}
	nw := e.Role().Network
	if !nw.Proxy || len(nw.Requests) != 5 || len(nw.Secrets) != 1 || nw.Secrets[0].Name != "GITHUB_TOKEN" || len(nw.Inspect) != 1 {
		t.Fatalf("network block: %+v", nw)
	}
	if !strings.Contains(nw.Secrets[0].Source, "req.yaml:") {
		t.Errorf("secret source %q does not name the file", nw.Secrets[0].Source)
	}
	for _, tc := range []struct {
		method, host, path string
		want               Decision
		rule               string
	}{
		{"GET", "api.github.com", "/repos/o/r", Allow, "api/network.requests.1"},
		{"HEAD", "api.github.com", "/", Allow, "api/network.requests.1"},
		{"PATCH", "api.github.com", "/repos/o/r", Ask, "api/network.requests.2"},
		{"DELETE", "api.github.com", "/repos/o/r", Deny, "api/network.requests.3"},
		{"POST", "api.github.com", "/repos/o/r/issues", Allow, "api/network.requests.4"},
		{"POST", "api.github.com", "/repos/o/r/pulls", Ask, "api/network.requests.2"},
		{"GET", "api.github.com", "/gists/1", Deny, "api/network.requests.5"},
		{"POST", "uploads.github.com", "/x", Allow, ""},
	} {
		res := e.Decide(Query{Action: HTTPAction(tc.method, tc.host, 443, tc.path)})
		rule := ""
		if res.Rule != nil {
			rule = res.Rule.ID
		}
		if res.Decision != tc.want || rule != tc.rule {
			t.Errorf("%s %s%s = %v by %q (%s), want %v by %q", tc.method, tc.host, tc.path, res.Decision, rule, res.Reason, tc.want, tc.rule)
		}
	}
	if res := e.Decide(Query{Action: "tool:http:GET no-path"}); res.Decision != Deny {
		t.Errorf("a malformed request action: %v", res.Decision)
	}
}

// TestNetworkSecretsAndRequestsBadInput: errors name the file and line
// and say what is wrong.
func TestNetworkSecretsAndRequestsBadInput(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"secrets:\n        TOKEN: ['*']", `matches every host`},
		{"secrets:\n        TOKEN: ['*.com']", `matches every host (or a whole top-level domain)`},
		{"secrets:\n        TOKEN: []", `name the hosts`},
		{"secrets:\n        'BAD NAME': [example.com]", `not a variable name`},
		{"requests:\n        - {host: example.com}", `needs a decision`},
		{"requests:\n        - {decision: allow}", `needs a host`},
		{"requests:\n        - {host: example.com, method: 'G T', decision: allow}", `invalid HTTP method`},
		{"requests:\n        - {host: example.com, path: 'repos', decision: allow}", `starting with /`},
		{"requests:\n        - {host: example.com, decision: allow, verb: GET}", `unknown key "verb"`},
		{"inspect: ['bad host']", `invalid host pattern`},
	} {
		f := writePolicy(t, "bad.yaml", "version: 1\nroles:\n  x:\n    network:\n      "+tc.body+"\n")
		_, err := Load(LoadOptions{Role: "x", NoUserFile: true, Files: []string{f}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.yaml:") {
			t.Errorf("%q: err %v, want one naming bad.yaml and %q", tc.body, err, tc.want)
		}
	}
}

// TestAgentProfileSecrets: a profile may broker only variables it passes
// in; the built-in profiles broker their API keys.
func TestAgentProfileSecrets(t *testing.T) {
	f := writePolicy(t, "agents.yaml", "version: 1\nagents:\n  mine:\n    env: [A_KEY]\n    secrets: [B_KEY]\n")
	if _, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{f}}); err == nil || !strings.Contains(err.Error(), "B_KEY is not in its env list") {
		t.Errorf("a secret outside env: %v", err)
	}
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]string{"claude-code": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"} {
		a := e.Agent(name)
		if a == nil || !contains(a.Secrets, key) {
			t.Errorf("profile %s does not broker %s", name, key)
		}
	}
	if c := e.Agent("codex"); !strings.Contains(c.Files[".codex/config.toml"], "${OPENAI_BASE_URL}") {
		t.Errorf("codex profile files: %v", c.Files)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzRequestRule: request rules and request actions from any input
// compile or fail with an error, and decide without panicking; a request
// action built by HTTPAction always parses back.
func FuzzRequestRule(f *testing.F) {
	f.Add("api.github.com", "GET", "/repos/*", "GET", "/repos/o/r")
	f.Add("*.example.com:443", "*", "", "POST", "/a b")
	f.Add("[::1]:8443", "delete", "/x\\*y", "DELETE", "/x*y")
	f.Fuzz(func(t *testing.T, host, method, glob, reqMethod, path string) {
		rr := RequestRule{Host: host, Methods: []string{method}, Path: glob, Decision: Allow}
		rp, err := compileRequestRule(rr)
		action := HTTPAction(reqMethod, "example.com", 443, path)
		detail := action[len("tool:http:"):]
		if _, _, _, err := splitHTTPDetail(detail); err != nil && !strings.Contains(reqMethod, " ") && reqMethod != "" {
			t.Fatalf("HTTPAction(%q, %q) = %q does not parse: %v", reqMethod, path, action, err)
		}
		if err == nil {
			rp.match(detail)
			_ = rp.spec()
			_ = rp.String()
		}
	})
}
