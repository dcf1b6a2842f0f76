package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/command"
)

// fiftyUserRules is a realistic user layer: command prefixes, regexes,
// globs, categories and path rules.
func fiftyUserRules() string {
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "  - {decision: allow, command: tool%d sub}\n", i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "  - {decision: ask, regex: \"tool:exec:deploy%d .*\"}\n", i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "  - {decision: deny, glob: \"danger%d *\"}\n", i)
	}
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, "  - {decision: allow, tool: create_file, path: \"gen%d/**\"}\n", i)
	}
	b.WriteString("  - {decision: ask, category: network}\n")
	b.WriteString("  - {decision: deny, regex: \"tool:git:push .*--force.*\"}\n")
	b.WriteString("  - {decision: allow, command: go test}\n")
	b.WriteString("  - {decision: ask, glob: \"tool:bash:*curl*\"}\n")
	b.WriteString("  - {decision: deny, command: nmap}\n")
	return b.String()
}

func benchEngine(b *testing.B) (*Engine, string) {
	b.Helper()
	ws := b.TempDir()
	user := filepath.Join(b.TempDir(), "user.yaml")
	if err := os.WriteFile(user, []byte(fiftyUserRules()), 0o600); err != nil {
		b.Fatal(err)
	}
	e, err := Load(LoadOptions{Role: "developer", Workspace: ws, UserFile: user})
	if err != nil {
		b.Fatal(err)
	}
	return e, ws
}

// BenchmarkDecideExec: one program start, parser included (developer role +
// 50 user rules). Goal: median <= 2 µs.
func BenchmarkDecideExec(b *testing.B) {
	e, ws := benchEngine(b)
	cwd := ws + "/target"
	for _, argv := range [][]string{
		{"go", "test", "./..."},
		{"git", "push", "origin", "main"},
		{"ls", "-la"},
		{"gcc", "-O2", "-o", "a", "a.c"},
	} {
		b.Run(strings.Join(argv[:2], "_"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				e.Decide(Query{Argv: argv, ExecContext: ExecContext{Cwd: cwd}})
			}
		})
	}
}

// BenchmarkDecideItem: the engine alone on an already parsed item — the
// part this package owns. Goal: zero allocations.
func BenchmarkDecideItem(b *testing.B) {
	e, _ := benchEngine(b)
	for _, it := range []command.Item{
		{Action: "tool:exec:go test ./...", Argv: []string{"go", "test", "./..."}, Categories: []string{"execute"}},
		{Action: "tool:git:push origin main", Argv: []string{"git", "push", "origin", "main"}, Categories: []string{"write", "network"}},
		{Action: "tool:create_file:target/src/a.go", Categories: []string{"write"}},
	} {
		b.Run(strings.SplitN(it.Action, ":", 3)[1], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				e.decideItem(&it, nil)
			}
		})
	}
}

var stdinActions = []string{
	"tool:exec:ls -la",
	"tool:exec:go test ./...",
	"tool:git:status",
	"tool:git:push origin main",
	"tool:exec:rm -rf build",
	"tool:view:target/src/main.go",
	"tool:create_file:target/src/main.go",
	"tool:exec:curl https://example.com",
	"tool:exec:python3 script.py",
	"tool:git:commit -m fix",
	"tool:exec:make -j4",
	"tool:exec:tool7 sub x",
	"tool:exec:danger3 now",
	"tool:self_edit:system_prompt",
	"tool:exec:npm test",
	"tool:str_replace:target/README.md",
}

// BenchmarkCheckStdin models `agentbox check --stdin`: decide one action
// string and append its JSON line. Goal: >= 300k decisions/s on one core.
func BenchmarkCheckStdin(b *testing.B) {
	e, _ := benchEngine(b)
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := e.Decide(Query{Action: stdinActions[i%len(stdinActions)]})
		buf = r.AppendJSON(buf)
		buf = append(buf, '\n')
		if len(buf) > 60000 {
			buf = buf[:0]
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkLoad1000Rules: loading a 1000-rule policy file. Goal: < 50 ms.
func BenchmarkLoad1000Rules(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("version: 1\nrules:\n")
	for i := 0; i < 1000; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "  - {id: r%d, decision: allow, command: prog%d sub}\n", i, i)
		case 1:
			fmt.Fprintf(&sb, "  - {id: r%d, decision: ask, regex: \"tool:exec:prog%d (a|b|c) .*\", description: rule %d}\n", i, i, i)
		case 2:
			fmt.Fprintf(&sb, "  - {id: r%d, decision: deny, glob: \"prog%d *--force*\"}\n", i, i)
		case 3:
			fmt.Fprintf(&sb, "  - {id: r%d, decision: allow, tool: [create_file, str_replace], path: \"target/mod%d/**/*.go\"}\n", i, i)
		}
	}
	p := filepath.Join(b.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{p}})
		if err != nil {
			b.Fatal(err)
		}
		if len(e.rules) < 1000 {
			b.Fatal("rules missing")
		}
	}
}

// BenchmarkLoadRole is what a launch pays for its policy with no policy
// file: the built-in roles, the selected role's extends chain merged and
// its engine indexed (the once-only cache of the built-in roles is reset
// each iteration, as in a new process).
func BenchmarkLoadRole(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		builtinOnce.Once = sync.Once{}
		if _, err := Load(LoadOptions{Role: "developer", NoUserFile: true}); err != nil {
			b.Fatal(err)
		}
	}
	builtinOnce.Once = sync.Once{}
}

// BenchmarkBuiltinRoles is what every launch pays for the built-in roles:
// indexing the values roles_gen.go holds (the once-only cache is reset each
// iteration).
func BenchmarkBuiltinRoles(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		builtinOnce.Once = sync.Once{}
		if _, _, err := builtinRoles(); err != nil {
			b.Fatal(err)
		}
	}
	builtinOnce.Once = sync.Once{}
}

// BenchmarkParseBuiltin is what the built-in roles would cost a launch
// parsed at run time (YAML scan and policy parser): what roles_gen.go saves.
func BenchmarkParseBuiltin(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := parseBuiltin(); err != nil {
			b.Fatal(err)
		}
	}
}
