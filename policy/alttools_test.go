package policy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/command"
)

// TestAltTools: which regexes are indexed under their tools, and under
// which.
func TestAltTools(t *testing.T) {
	for _, c := range []struct {
		pos  string
		want []string
	}{
		{`tool:(Task|Agent|SendMessage):.*`, []string{"Agent", "SendMessage", "Task"}},
		{`tool:(TodoWrite|TodoRead|TaskCreate|TaskGet):.*`, []string{"TaskCreate", "TaskGet", "TodoRead", "TodoWrite"}}, // the parser factors these
		{`tool:(?:exec|bash):rm .*`, []string{"bash", "exec"}},
		{`tool:(a|a|b):x`, []string{"a", "b"}},
		{`tool:(view)(er|):.*`, []string{"view", "viewer"}},
		{`tool:(Task|Agent).*`, nil},                      // no ':' after the tools
		{`tool:(a|b:c):x`, nil},                           // a name with ':'
		{`(?i)tool:(a|b):x`, nil},                         // case folding
		{`tool:(?i:a|b):x`, []string{"A", "B", "a", "b"}}, // one-letter names fold into a class
		{`tool:(a|[bc]):x`, []string{"a", "b", "c"}},
		{`tool:(a|[^b]):x`, nil},       // a large class
		{`tool:(ex|[a-z]+):x`, nil},    // a repetition
		{`tool:(a|b)+:x`, nil},         // a repetition
		{`tool:(|a):x`, nil},           // an empty name
		{`tool:exec:ls`, nil},          // one literal: indexed by its tool already
		{`tool:(a|b):x|tool:c:y`, nil}, // top-level alternation
		{`tool:.*`, nil},               // any tool
	} {
		if got := altTools(c.pos); !reflect.DeepEqual(got, c.want) {
			t.Errorf("altTools(%q) = %q, want %q", c.pos, got, c.want)
		}
	}
}

// FuzzAltTools: a tool outside the set altTools returns never matches.
func FuzzAltTools(f *testing.F) {
	f.Add(`tool:(Task|Agent):.*`, "exec", "ls")
	f.Add(`tool:(a|ab|abc):(x|y)`, "abcd", "x")
	f.Add(`tool:(view)(er|):.*`, "vie", "")
	f.Fuzz(func(t *testing.T, pos, tool, rest string) {
		set := altTools(pos)
		if set == nil || strings.Contains(tool, ":") {
			return
		}
		for _, s := range set {
			if s == tool {
				return
			}
		}
		fr, err := compileFullRegex(pos)
		if err != nil {
			return
		}
		if a := "tool:" + tool + ":" + rest; fr.match(a) {
			t.Fatalf("%q matches %q, whose tool is not in %q", pos, a, set)
		}
	})
}

// TestAltToolIndexSameDecisions: indexing tool:(A|B):... regexes under
// their tools decides every action (and its bash/exec views) exactly as
// trying them against every action did, for the built-in roles and for
// Chorus profiles made of such patterns.
func TestAltToolIndexSameDecisions(t *testing.T) {
	actions := append([]string{
		"tool:TodoWrite:x", "tool:TodoRead:", "tool:Task:do it", "tool:Agent:a", "tool:SendMessage:m",
		"tool:EnterPlanMode:", "tool:BashOutput:1", "tool:KillShell:2", "tool:TaskOutput:3",
		"tool:exec:rm -rf build", "tool:exec:ls", "tool:bash:rm -rf /tmp/x", "tool:git:push origin main",
		"tool:view:target/a.go", "tool:create_file:target/b.go", "tool:net:example.com:443",
	}, stdinActions...)
	engines := map[string]func() *Engine{}
	for _, role := range builtinRoleNames() {
		role := role
		engines["role "+role] = func() *Engine {
			e, err := Load(LoadOptions{Role: role, NoUserFile: true})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
	}
	engines["chorus"] = func() *Engine {
		return chorusProfile(t, []string{`tool:(exec|bash):ls.*`, `tool:(TodoWrite|TodoRead):.*`},
			[]string{`tool:(git|exec):push.*`, `tool:(view|create_file):target/.*`})
	}
	engines["native"] = func() *Engine {
		return chorusRole(t, []string{`tool:(exec|bash):rm .*`, `tool:(Task|Agent):.*`}, []string{`tool:(git):.*`})
	}
	for name, mk := range engines {
		altToolIndex = true
		on := mk()
		altToolIndex = false
		off := mk()
		altToolIndex = true
		for _, a := range actions {
			tool := strings.SplitN(a, ":", 3)[1]
			it := command.Item{Action: a}
			if tool == ToolExec || tool == ToolBash {
				it.Argv = strings.Fields(strings.SplitN(a, ":", 3)[2])
			}
			r1, r2 := on.decideItem(&it, nil), off.decideItem(&it, nil)
			id := func(r Result) string {
				if r.Rule == nil {
					return ""
				}
				return r.Rule.ID
			}
			if fmt.Sprint(r1.Decision, r1.Reason, id(r1)) != fmt.Sprint(r2.Decision, r2.Reason, id(r2)) {
				t.Errorf("%s, %s: indexed %v (%s), tried everywhere %v (%s)", name, a, r1.Decision, r1.Reason, r2.Decision, r2.Reason)
			}
		}
	}
}
