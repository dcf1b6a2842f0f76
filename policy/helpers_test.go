package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/testkit"
)

// writePolicy writes content to a private (0600) file in a temp dir.
var writePolicy = testkit.PrivateFile

// engineWith loads role with the given policy file contents as --policy layers.
func engineWith(t testing.TB, role string, files ...string) *Engine {
	t.Helper()
	var paths []string
	for i, c := range files {
		name := "p" + string(rune('0'+i)) + ".yaml"
		if strings.HasPrefix(strings.TrimSpace(c), "{") {
			name = "p" + string(rune('0'+i)) + ".json"
		}
		paths = append(paths, writePolicy(t, name, c))
	}
	e, err := Load(LoadOptions{Role: role, NoUserFile: true, Files: paths})
	if err != nil {
		t.Fatalf("Load(%s): %v", role, err)
	}
	return e
}

// exFacts joins what an explanation holds (results, the rules that
// matched, why the winner won), for tests that look for a fact in it;
// its text for humans is internal/policytext's.
func exFacts(ex Explanation) string {
	var b strings.Builder
	add := func(r Result) {
		b.WriteString(strings.ToUpper(r.Decision.String()) + " " + r.Action + "\n" + r.Reason + "\n" + r.Floor + "\n")
		if r.Rule != nil {
			b.WriteString(r.Rule.ID + "\n")
		}
	}
	add(ex.Result)
	for _, se := range ex.Segments {
		add(se.Result)
		b.WriteString(se.Text + "\n" + se.Why + "\n")
		for _, m := range se.Matches {
			b.WriteString(m.Ref.ID + " " + m.Matcher + "\n")
		}
	}
	return b.String()
}

// bareRole is a role with no rules at all and the given default.
func bareRole(def string) string {
	return "version: 1\nroles:\n  bare:\n    default: " + def + "\n"
}

// chorusProfile is a Chorus profile file ({"allow": [...], "ask": [...]})
// over a role without rules: decided as Chorus decides (allow list first,
// then ask, unmatched denied).
func chorusProfile(t testing.TB, allow, ask []string) *Engine {
	t.Helper()
	b, err := json.Marshal(map[string][]string{"allow": nonNil(allow), "ask": nonNil(ask)})
	if err != nil {
		t.Fatal(err)
	}
	return engineWith(t, "bare", bareRole("ask"), string(b))
}

// chorusRole is a native role made of Chorus allow/ask lists (default
// deny), decided by agentbox's own order (for the engine's view matching).
func chorusRole(t testing.TB, allow, ask []string) *Engine {
	t.Helper()
	q := func(l []string) string {
		var parts []string
		for _, s := range l {
			parts = append(parts, "'"+strings.ReplaceAll(s, "'", "''")+"'")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return engineWith(t, "profile", "version: 1\nroles:\n  profile:\n    default: deny\n    allow: "+q(allow)+"\n    ask: "+q(ask)+"\n")
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

type decCase struct {
	in   string // action string
	want Decision
}

func checkCases(t *testing.T, e *Engine, cases []decCase) {
	t.Helper()
	for _, c := range cases {
		got := e.Decide(Query{Action: c.in})
		if got.Decision != c.want {
			t.Errorf("Decide(%q) = %s, want %s (reason: %s; floor: %s)", c.in, got.Decision, c.want, got.Reason, got.Floor)
		}
	}
}

type itemT command.Item

func (i itemT) item() *command.Item { c := command.Item(i); return &c }

func floorOf(n int) command.Floor { return command.Floor(n) }
