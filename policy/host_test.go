package policy

import (
	"strings"
	"testing"
)

func TestHostPatterns(t *testing.T) {
	for _, tc := range []struct {
		pat    string
		detail string
		want   bool
	}{
		{"example.com", "example.com:443", true},
		{"example.com", "EXAMPLE.com.:80", true},
		{"example.com", "www.example.com:443", false},
		{"example.com:443", "example.com:80", false},
		{"*.example.com", "api.example.com:443", true},
		{"*.example.com", "a.b.example.com:443", true},
		{"*.example.com", "example.com:443", false},
		{"*.example.com", "evilexample.com:443", false},
		{"*", "anything.test:1", true},
		{"10.0.0.1", "10.0.0.1:22", true},
		{"[::1]:443", "[::1]:443", true},
	} {
		p, err := compileHostPattern(tc.pat)
		if err != nil {
			t.Fatalf("%q: %v", tc.pat, err)
		}
		if got := p.match(tc.detail); got != tc.want {
			t.Errorf("%q vs %q = %v, want %v", tc.pat, tc.detail, got, tc.want)
		}
	}
	for _, bad := range []string{"", "ex*ample.com", "*.", "a..b", "host:0", "host:70000", "::1", "bad_char$.com", "*.*.com"} {
		if _, err := compileHostPattern(bad); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

// TestNetworkBlock: the role's network block and file host: rules decide
// tool:net actions; unlisted hosts are denied; a deny wins over a more
// specific allow; --allow-host adds hosts for the session.
func TestNetworkBlock(t *testing.T) {
	f := writePolicy(t, "net.yaml", `version: 1
roles:
  netdev:
    extends: developer
    network:
      allow: ["*.npmjs.org", "api.example.com:443"]
      ask: [github.com]
      deny: ["*.pastebin.com"]
      rate_per_minute: 30
rules:
  - {decision: deny, host: "evil.npmjs.org"}
  - {decision: allow, host: "files.pythonhosted.org:443"}
`)
	e, err := Load(LoadOptions{Role: "netdev", NoUserFile: true, Files: []string{f}})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Role().Network.Proxy || e.Role().Network.RatePerMinute != 30 {
		t.Errorf("network block: %+v", e.Role().Network)
	}
	for _, tc := range []struct {
		host string
		port int
		want Decision
		why  string
	}{
		{"registry.npmjs.org", 443, Allow, "network.allow"},
		{"api.example.com", 443, Allow, ""},
		{"api.example.com", 80, Deny, "not in the network allowlist"},
		{"github.com", 443, Ask, ""},
		{"paste.pastebin.com", 443, Deny, ""},
		{"evil.npmjs.org", 443, Deny, ""}, // a file's deny beats the role's broader allow
		{"files.pythonhosted.org", 443, Allow, ""},
		{"unknown.test", 443, Deny, "not in the network allowlist"},
	} {
		r := e.Decide(Query{Host: tc.host, Port: tc.port})
		if r.Decision != tc.want || !strings.Contains(r.Reason+" "+ruleID(r), tc.why) {
			t.Errorf("%s:%d = %s (%s %s); want %s", tc.host, tc.port, r.Decision, ruleID(r), r.Reason, tc.want)
		}
	}
	if r := e.Decide(Query{Action: "tool:net:not a host"}); r.Decision != Deny {
		t.Errorf("malformed net action = %s", r.Decision)
	}
	base := e
	if e, err = e.WithGrants(Grants{Hosts: []HostGrant{{Decision: Allow, Source: "--allow-host", Patterns: []string{"unknown.test", "paste.pastebin.com"}}}}); err != nil {
		t.Fatal(err)
	}
	if r := base.Decide(Query{Host: "unknown.test", Port: 8443}); r.Decision != Deny {
		t.Errorf("WithGrants changed the engine it was called on: unknown.test %s", r.Decision)
	}
	if r := e.Decide(Query{Host: "unknown.test", Port: 8443}); r.Decision != Allow {
		t.Errorf("--allow-host unknown.test: %s", r.Decision)
	}
	if r := e.Decide(Query{Host: "paste.pastebin.com", Port: 443}); r.Decision != Deny {
		t.Errorf("--allow-host over a role deny: %s; a deny must win", r.Decision)
	}
	if _, err := e.WithGrants(Grants{Hosts: []HostGrant{{Decision: Allow, Source: "--allow-host", Patterns: []string{"bad host"}}}}); err == nil {
		t.Error("--allow-host with a bad pattern accepted")
	}
	// policy show's data (its text: internal/policytext)
	if nw := e.Effective().Role.Network; !strings.HasPrefix(strings.Join(nw.Allow, " "), "*.npmjs.org api.example.com:443") || nw.RatePerMinute != 30 {
		t.Errorf("policy show: network %+v", nw)
	}
	bad := writePolicy(t, "bad.yaml", "version: 1\nroles:\n  x:\n    network:\n      allow: [\"ex*ample.com\"]\n")
	if _, err := Load(LoadOptions{Role: "x", NoUserFile: true, Files: []string{bad}}); err == nil || !strings.Contains(err.Error(), "bad.yaml:5") {
		t.Errorf("bad host pattern: %v; want an error naming bad.yaml:5", err)
	}
}

func ruleID(r Result) string {
	if r.Rule == nil {
		return ""
	}
	return r.Rule.ID
}

func FuzzHostPattern(f *testing.F) {
	f.Add("*.example.com:443", "a.example.com:443")
	f.Add("[::1]", "[::1]:80")
	f.Fuzz(func(t *testing.T, pat, detail string) {
		if p, err := compileHostPattern(pat); err == nil {
			_ = p.match(detail)
			_ = p.spec()
		}
		_, _, _ = splitHostPort(detail)
	})
}
