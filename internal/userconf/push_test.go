package userconf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePush(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     *PushTokens
		err      string
	}{
		{"full", "push:\n  tokens:\n    mint: [/bin/mint, --app, '12']\n    revoke: [/bin/revoke]\n    timeout: 3s\n    hosts: [github.com, '*.example.com']\n    protected: [main, refs/heads/release]\n",
			&PushTokens{Mint: []string{"/bin/mint", "--app", "12"}, Revoke: []string{"/bin/revoke"}, Timeout: 3 * time.Second,
				Hosts: []string{"github.com", "*.example.com"}, Protected: []string{"main", "refs/heads/release"}, Line: 2}, ""},
		{"defaults", "push: {tokens: {mint: [/m], hosts: [h.test]}}\n",
			&PushTokens{Mint: []string{"/m"}, Timeout: DefaultPushTimeout, Hosts: []string{"h.test"}, Protected: []string{"main", "master"}, Line: 1}, ""},
		{"unknown field", "push:\n  tokens:\n    mint: [/m]\n    hosts: [h]\n    scope: repo\n", nil, "config.yaml:5: unknown setting push.tokens.scope (known: mint, revoke, timeout, hosts, protected)"},
		{"unknown push key", "push:\n  token: {}\n", nil, "config.yaml:2: unknown setting push.token (known: push.tokens)"},
		{"relative mint", "push:\n  tokens:\n    mint: [gh, auth, token]\n    hosts: [h]\n", nil, `config.yaml:3: push.tokens.mint: the command's first word "gh" is not an absolute path`},
		{"mint a string", "push:\n  tokens:\n    mint: /bin/mint --x\n    hosts: [h]\n", nil, `config.yaml:3: push.tokens.mint: want a list of words ([a, b]), got "/bin/mint --x"`},
		{"no mint", "push:\n  tokens:\n    hosts: [h]\n", nil, "config.yaml:2: push.tokens: no mint command"},
		{"no hosts", "push:\n  tokens:\n    mint: [/m]\n", nil, "config.yaml:2: push.tokens: no hosts"},
		{"host a URL", "push:\n  tokens:\n    mint: [/m]\n    hosts: [https://github.com/x]\n", nil, `config.yaml:4: push.tokens.hosts: "https://github.com/x": want a host name`},
		{"bad timeout", "push:\n  tokens:\n    mint: [/m]\n    hosts: [h]\n    timeout: forever\n", nil, `config.yaml:5: push.tokens.timeout: want a duration above 0`},
		{"huge timeout", "push:\n  tokens:\n    mint: [/m]\n    hosts: [h]\n    timeout: 1h\n", nil, `config.yaml:5: push.tokens.timeout: want a duration above 0 and at most 5m0s`},
		{"empty word", "push:\n  tokens:\n    mint: [/m, '']\n    hosts: [h]\n", nil, `config.yaml:3: push.tokens.mint: want a word, got ""`},
		{"twice", "push:\n  tokens:\n    mint: [/m]\n    mint: [/n]\n    hosts: [h]\n", nil, "config.yaml:4: push.tokens.mint set again (first on line 3)"},
		{"bad protected", "push:\n  tokens:\n    mint: [/m]\n    hosts: [h]\n    protected: ['a..b']\n", nil, `config.yaml:5: push.tokens.protected: "a..b": want a branch name`},
		{"not a mapping", "push: [x]\n", nil, "config.yaml:1: push: want a mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("config.yaml", []byte(c.in))
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("error %v, want one starting %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Push, c.want) {
				t.Fatalf("got %+v, want %+v", s.Push, c.want)
			}
		})
	}
}

func FuzzParsePush(f *testing.F) {
	f.Add([]byte("push: {tokens: {mint: [/m], hosts: [h.test]}}\n"))
	f.Add([]byte("push:\n  tokens:\n    mint: [/bin/mint, x]\n    revoke: [/bin/r]\n    timeout: 3s\n    hosts: [github.com]\n    protected: [main]\n"))
	f.Add([]byte("push:\n  tokens:\n    mint: [&a /m]\n    revoke: [*a]\n    hosts: [h]\n"))
	f.Add([]byte("push: {tokens: {mint: [/m], hosts: [h], timeout: -1s}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse("config.yaml", b)
		if err != nil {
			if !strings.Contains(err.Error(), "config.yaml") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		if p := s.Push; p != nil {
			if len(p.Mint) == 0 || !strings.HasPrefix(p.Mint[0], "/") || len(p.Hosts) == 0 || p.Timeout <= 0 || p.Timeout > maxPushTimeout || p.Line == 0 {
				t.Fatalf("accepted an incomplete block: %+v", p)
			}
		}
	})
}
