package policytext

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
	_ "github.com/agentbox/agentbox/policy/formats" // a Chorus profile among the layers
	"github.com/agentbox/agentbox/policy/load"
)

// TestRuleLineIsFmt: the rule lines of the effective policy (digested at
// every launch as policy_digest) are what fmt's padding verbs would print,
// also for matchers longer than the column and with multi-byte runes.
func TestRuleLineIsFmt(t *testing.T) {
	for _, ru := range []policy.RuleInfo{
		{Decision: "allow", Matcher: `command "git status"`, ID: "developer/git.status", Layer: "role", Source: "builtin:developer"},
		{Decision: "ask", Matcher: "x", ID: "a", Layer: "user", Source: "/p.yaml:3", Description: "needs a human"},
		{Decision: "deny", Matcher: strings.Repeat("é", 39) + "ü", ID: "u", Layer: "project", Source: "s", Description: "ç"},
		{Decision: "", Matcher: strings.Repeat("long matcher ", 5), ID: "", Layer: "", Source: ""},
	} {
		var b textBuf
		ruleLine(&b, ru, true)
		want := fmt.Sprintf("  %-5s %-40s %s  [%s, %s]", ru.Decision, ru.Matcher, ru.ID, ru.Layer, ru.Source)
		if ru.Description != "" {
			want += fmt.Sprintf(" - %s", ru.Description)
		}
		if got := string(b.buf); got != want+"\n" {
			t.Errorf("ruleLine(%+v) = %q, want %q", ru, got, want+"\n")
		}
	}
}

// engine loads role with files (name: content) as --policy layers.
func engine(t *testing.T, role string, files map[string]string) *policy.Engine {
	t.Helper()
	var paths []string
	for name, content := range files {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	e, err := load.Policy(policy.LoadOptions{Role: role, NoUserFile: true, Files: paths})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDigestIsTextHash: Digest is the SHA-256 of the text Effective
// prints, for every built-in role and for an engine with a file in another
// tool's format.
func TestDigestIsTextHash(t *testing.T) {
	var effs []policy.Effective
	l, err := load.Read(policy.LoadOptions{NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	roles, err := l.Roles()
	if err != nil || len(roles) < 3 {
		t.Fatalf("roles %v: %v", roles, err)
	}
	for _, role := range roles {
		effs = append(effs, engine(t, role.Name, nil).Effective())
	}
	effs = append(effs, engine(t, "developer", map[string]string{"p.json": `{"allow": ["tool:view:src/.*\\.go"], "ask": ["tool:.*"]}`}).Effective())
	for _, ef := range effs {
		if got, want := Digest(ef), sha256.Sum256([]byte(Effective(ef))); got != want {
			t.Errorf("role %s: Digest %x, hash of the text %x", ef.Role.Name, got, want)
		}
	}
	if s := Effective(effs[len(effs)-1]); !strings.Contains(s, "\nChorus profile ") || !strings.Contains(s, `ask   regex "tool:.*"`) {
		t.Errorf("the Chorus layer is not shown:\n%s", s)
	}
}

// TestDigestUnchanged: the text a launch digests (policy_digest) is byte
// for byte what it was before Digest stopped going through bufio and the
// rule lines' brackets stopped being concatenated: the digests of every
// built-in role, and of one with a project-style file and a Chorus
// profile (its temporary directory written as DIR), as the earlier code
// printed them. A change to policy/roles.yaml or to the text on purpose
// changes them: print the new ones (Digest of each) and update.
func TestDigestUnchanged(t *testing.T) {
	want := map[string]string{
		"developer":    "fbaabfd044d411c1e7d74cc4aad8fbab499123b5144c5f69f33a5ab6a21f1642",
		"documenter":   "7e490c94c84cc33fe507433ddfffcf00399d1b980586f6bcfd99be7271c9dd21",
		"investigator": "bc9b0cdd3f5c07c26049dee90b3e3a5311dbe8a2faf56eda9b7eab8e4a5cf568",
		"locked":       "bb1fc037c271c40e875354b46a2313aa9c9eaccf37e88bc49b88eba5d809c172",
		"open":         "45559f51ab6db1c765cb587d1dc0349f4238b94bfdd981a2330dec4434a339be",
		"standard":     "9dbbdcf42a64d5c0632cedaf780193628ba3f0c78f1210f95924e828a686a6ba",
		"tester":       "b9b57e38722d4f8a712b72a4f008158e38fd37d249e26dc4d02ceea78389dbec",
	}
	for role, w := range want {
		if got := fmt.Sprintf("%x", Digest(engine(t, role, nil).Effective())); got != w {
			t.Errorf("role %s: digest %s, was %s", role, got, w)
		}
	}
	dir := t.TempDir()
	var files []string
	for _, f := range [][2]string{
		{"p.yaml", "version: 1\nrules:\n  - decision: ask\n    command: curl\n    description: net é\n"},
		{"profile.json", `{"allow": ["git *"], "ask": ["rm *"]}`},
	} {
		files = append(files, filepath.Join(dir, f[0]))
		if err := os.WriteFile(files[len(files)-1], []byte(f[1]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	ef := e.Effective()
	s := Effective(ef)
	s = strings.ReplaceAll(s, dir, "DIR")
	if got := fmt.Sprintf("%x", sha256.Sum256([]byte(s))); got != "66d0725fe1b2a26477b357c08bbb340cbc80a2732e42e2fb1ef63952c6d44414" {
		t.Errorf("developer with a file and a Chorus profile: digest %s, was 66d0725f…; the text:\n%s", got, s)
	}
}

// TestText: what policy show and explain print of the data the engine
// builds — the network grants, the winner marked and why it won, an exact
// match named so.
func TestText(t *testing.T) {
	e := engine(t, "developer", map[string]string{"p.yaml": "version: 1\nrules:\n  - {id: my-make, decision: ask, command: make install}\n  - {id: one, decision: allow, action: 'tool:view:README.md'}\n"})
	s := Explanation(e.Explain(policy.Query{Action: "tool:bash:make install && git push origin main"}))
	for _, want := range []string{"DENY: tool:bash:make install && git push origin main\n", "developer/git.push", " * ask   my-make  [command \"make install\"]", "developer/make", "why: the most specific", "a matching deny rule always wins"} {
		if !strings.Contains(s, want) {
			t.Errorf("explanation lacks %q:\n%s", want, s)
		}
	}
	if s := Explanation(e.Explain(policy.Query{Action: "tool:view:README.md"})); !strings.Contains(s, "specificity exact") {
		t.Errorf("an exact match is not named so:\n%s", s)
	}
	show := Effective(engine(t, "net", map[string]string{"p.yaml": "version: 1\nroles:\n  net:\n    extends: developer\n    network:\n      allow: ['*.npmjs.org']\n      rate_per_minute: 30\n"}).Effective())
	if !strings.Contains(show, "allow hosts: *.npmjs.org") || !strings.Contains(show, "rate limit:  30") || !strings.Contains(show, "role net (extends developer)") {
		t.Errorf("policy show:\n%s", show)
	}
}

// BenchmarkLaunchDigest: what a launch pays for its policy_digest
// (internal/plan's LaunchDetail): the developer role's effective policy,
// digested.
func BenchmarkLaunchDigest(b *testing.B) {
	e, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Digest(e.Effective())
	}
}
