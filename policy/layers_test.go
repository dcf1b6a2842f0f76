package policy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// layered builds an engine with a user file, a project file and --policy files.
func layered(t *testing.T, role, user, project string, files ...string) *Engine {
	t.Helper()
	ws := t.TempDir()
	opts := LoadOptions{Role: role, Workspace: ws, NoUserFile: user == ""}
	if user != "" {
		opts.UserFile = writePolicy(t, "user.yaml", user)
	}
	if project != "" {
		if err := os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte(project), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		opts.Files = append(opts.Files, writePolicy(t, "file.yaml", f))
	}
	e, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func rules(rs ...string) string { return "version: 1\nrules:\n" + strings.Join(rs, "\n") + "\n" }

func TestLayerPrecedence(t *testing.T) {
	t.Run("deny from a lower layer beats allow from a higher one", func(t *testing.T) {
		e := layered(t, "developer", rules(`  - {decision: deny, command: curl}`), rules(`  - {decision: allow, command: curl}`), rules(`  - {decision: allow, regex: "tool:exec:curl .*"}`))
		r := e.Decide(Query{Action: "tool:exec:curl https://x"})
		if r.Decision != Deny || r.Rule.Layer != LayerUser {
			t.Fatalf("got %s by %+v", r.Decision, r.Rule)
		}
	})
	t.Run("more specific allow beats broader ask", func(t *testing.T) {
		e := layered(t, "developer", "", rules(`  - {decision: allow, command: curl localhost}`))
		checkCases(t, e, []decCase{{"tool:exec:curl localhost", Allow}, {"tool:exec:curl example.com", Ask}})
	})
	// Equal specificity, allow against ask: the owner's layers (user,
	// project, --policy) win over the built-in role either way — a project
	// can allow what the role only asks about, and ask about what it
	// allows; between rules of the owner's layers the stricter wins.
	t.Run("equal specificity: the owner's layer over the role's", func(t *testing.T) {
		e := layered(t, "developer", rules(`  - {decision: ask, command: make}`), "")
		r := e.Decide(Query{Action: "tool:exec:make all"})
		if r.Decision != Ask || r.Rule.Layer != LayerUser {
			t.Fatalf("got %s by %+v", r.Decision, r.Rule)
		}
		e = layered(t, "developer", "", "", rules(`  - {decision: allow, command: curl}`))
		r = e.Decide(Query{Action: "tool:exec:curl x"}) // role asks for curl at the same specificity
		if r.Decision != Allow || r.Rule.Layer != LayerFile {
			t.Fatalf("got %s by %+v", r.Decision, r.Rule)
		}
		e = layered(t, "developer", rules(`  - {decision: ask, command: curl}`), rules(`  - {decision: allow, command: curl}`))
		if r = e.Decide(Query{Action: "tool:exec:curl x"}); r.Decision != Ask {
			t.Fatalf("user ask vs project allow: got %s by %+v; the stricter of the owner's wins", r.Decision, r.Rule)
		}
		e = layered(t, "developer", "", rules(`  - {decision: allow, command: git push}`))
		if r = e.Decide(Query{Action: "tool:git:push origin main"}); r.Decision != Deny {
			t.Fatalf("project allow over the role's deny: got %s; a deny stays absolute", r.Decision)
		}
	})
	t.Run("equal specificity and decision: higher layer reported", func(t *testing.T) {
		e := layered(t, "developer", rules(`  - {id: u, decision: allow, command: make}`), rules(`  - {id: p, decision: allow, command: make}`), rules(`  - {id: f, decision: allow, command: make}`))
		r := e.Decide(Query{Action: "tool:exec:make"})
		if r.Decision != Allow || r.Rule.ID != "f" || r.Rule.Layer != LayerFile {
			t.Fatalf("got %s by %+v", r.Decision, r.Rule)
		}
	})
	t.Run("file default overrides role default", func(t *testing.T) {
		e := layered(t, "developer", "", "version: 1\ndefault: deny\n")
		checkCases(t, e, []decCase{{"tool:exec:frobnicate", Deny}, {"tool:exec:ls", Allow}})
		if !strings.Contains(e.Decide(Query{Action: "tool:exec:frobnicate"}).Reason, "agentbox.yaml:2") {
			t.Errorf("reason %q does not name the file", e.Decide(Query{Action: "tool:exec:frobnicate"}).Reason)
		}
	})
	t.Run("user file at XDG_CONFIG_HOME", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", dir)
		os.MkdirAll(filepath.Join(dir, "agentbox"), 0o755)
		os.WriteFile(filepath.Join(dir, "agentbox", "policy.yaml"), []byte(rules(`  - {id: xdg, decision: deny, command: ls}`)), 0o600)
		e, err := Load(LoadOptions{Role: "developer"})
		if err != nil {
			t.Fatal(err)
		}
		if r := e.Decide(Query{Action: "tool:exec:ls"}); r.Decision != Deny || r.Rule.ID != "xdg" || r.Rule.Layer != LayerUser {
			t.Fatalf("got %+v", r)
		}
		e, _ = Load(LoadOptions{Role: "developer", NoUserFile: true})
		checkCases(t, e, []decCase{{"tool:exec:ls", Allow}})
	})
}

func TestSessionRules(t *testing.T) {
	e := engineWith(t, "developer")
	checkCases(t, e, []decCase{{"tool:exec:curl https://api.example.com", Ask}})
	e.Session().Add(Allow, "tool:exec:curl https://api.example.com")
	e.Session().Add(Allow, "tool:git:push origin main")
	e.Session().Add(Deny, "tool:exec:make clean")
	checkCases(t, e, []decCase{
		{"tool:exec:curl https://api.example.com", Allow},
		{"tool:exec:curl https://other.example.com", Ask}, // exact action only
		{"tool:git:push origin main", Deny},               // nothing overrides a deny
		{"tool:exec:make clean", Deny},
		{"tool:exec:make", Allow},
	})
	r := e.Decide(Query{Action: "tool:exec:curl https://api.example.com"})
	if r.Rule == nil || r.Rule.Layer != LayerSession {
		t.Fatalf("rule = %+v", r.Rule)
	}
	// a later, looser answer never replaces a stricter one
	e.Session().Add(Allow, "tool:exec:make clean")
	checkCases(t, e, []decCase{{"tool:exec:make clean", Deny}})
}

func TestSessionRulesConcurrent(t *testing.T) {
	e := engineWith(t, "developer")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 500; j++ {
				e.Decide(Query{Action: "tool:exec:curl x"})
			}
		}()
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				e.Session().Add(Allow, "tool:exec:curl "+string(rune('a'+i))+string(rune('a'+j%26)))
			}
		}(i)
	}
	wg.Wait()
	checkCases(t, e, []decCase{{"tool:exec:curl ab", Allow}, {"tool:exec:curl x", Ask}})
}

func TestFloors(t *testing.T) {
	// Items with floors come from internal/command; build them directly.
	e := engineWith(t, "developer", rules(`  - {decision: allow, command: python3 -c}`, `  - {decision: allow, command: perl}`))
	cases := []struct {
		action string
		floor  int
		want   Decision
	}{
		{"tool:exec:python3 -c print(1)", 1, Allow}, // explicit 2-word allow lifts AskUnlessExplicit
		{"tool:exec:perl -e print", 1, Ask},         // bare program allow does not
		{"tool:exec:node -e x", 1, Ask},
		{"tool:exec:ls", 2, Ask},      // FloorAsk
		{"tool:git:push", 2, Deny},    // floors never lower a deny
		{"tool:exec:ls", 3, Deny},     // FloorDeny
		{"tool:exec:unknown", 1, Ask}, // default ask stays ask
	}
	for _, c := range cases {
		s, _ := itemSubject(itemT{Action: c.action, Argv: strings.Fields(strings.SplitN(c.action, ":", 3)[2])}.item())
		if s.tool == ToolGit {
			s.words = append([]string{"git"}, s.words...)
		}
		r := e.decideSubject(&s, floorOf(c.floor), "test floor", nil)
		if r.Decision != c.want {
			t.Errorf("%s floor %d = %s, want %s (%s)", c.action, c.floor, r.Decision, c.want, r.Reason)
		}
		if c.want != Deny && r.Decision == Ask && c.floor > 0 && r.Floor == "" && c.action != "tool:exec:unknown" {
			t.Errorf("%s: floor reason missing", c.action)
		}
	}
}

// TestIndexRebuilt: adding session rules rebuilds the rule index from
// scratch: no rule is indexed twice (rules no index covers were appended
// again at every rebuild), and a rule added is decided.
func TestIndexRebuilt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(p, []byte("version: 1\nrules:\n  - {decision: deny, category: destructive}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
	if err != nil {
		t.Fatal(err)
	}
	count := func() map[*rule]int {
		seen := map[*rule]int{}
		for _, rs := range []map[string][]*rule{e.cmdIndex, e.gitIndex, e.globIndex, e.byTool, e.exact} {
			for _, l := range rs {
				for _, r := range l {
					seen[r]++
				}
			}
		}
		for _, m := range e.actIndex {
			for _, l := range m {
				for _, r := range l {
					seen[r]++
				}
			}
		}
		for _, r := range e.anyRules {
			seen[r]++
		}
		return seen
	}
	before := count()
	if len(e.anyRules) == 0 {
		t.Fatal("test policy has no rule in anyRules")
	}
	nAny := len(e.anyRules)
	for i := 0; i < 3; i++ {
		var err error
		if e, err = e.WithGrants(Grants{Programs: []PathGrant{{Source: "test", Dirs: []string{"/opt/tool" + strconv.Itoa(i) + "/bin"}}}}); err != nil {
			t.Fatal(err)
		}
		if e, err = e.WithGrants(Grants{Writes: []PathGrant{{Source: "test"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.anyRules) != nAny {
		t.Errorf("anyRules grew from %d to %d over rebuilds", nAny, len(e.anyRules))
	}
	after := count()
	for r, n := range after {
		if before[r] != 0 && n != before[r] {
			t.Errorf("rule %s indexed %d times, %d before", r.ref.ID, n, before[r])
		}
	}
	if r := e.Decide(Query{Argv: []string{"/opt/tool2/bin/x"}, ExecContext: ExecContext{Cwd: "/w"}}); r.Decision != Allow {
		t.Errorf("program under an added toolchain dir = %v: %s", r.Decision, r.Reason)
	}
}
