package command

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// summary renders items as "action" plus " [aue]" / " [ask]" / " [deny]"
// for floors and " (w)" for wrapper items, for compact table tests.
func summary(items []Item) []string {
	var out []string
	for _, it := range items {
		s := it.Action
		if it.Wrapper {
			s += " (w)"
		}
		switch it.Floor {
		case FloorAskUnlessExplicit:
			s += " [aue]"
		case FloorAsk:
			s += " [ask]"
		case FloorDeny:
			s += " [deny]"
		}
		out = append(out, s)
	}
	return out
}

func checkShell(t *testing.T, line string, want []string) {
	t.Helper()
	items, err := ParseShell(line)
	if err != nil {
		t.Fatalf("ParseShell(%q): %v", line, err)
	}
	if got := summary(items); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseShell(%q)\n got: %q\nwant: %q", line, got, want)
	}
}

func TestShellQuotingTricks(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"git push", []string{"tool:git:push"}},
		{"'g'it push", []string{"tool:git:push"}},
		{`g\it push`, []string{"tool:git:push"}},
		{`"git" push`, []string{"tool:git:push"}},
		{`\git push`, []string{"tool:git:push"}},
		{`$'\x67it' push`, []string{"tool:git:push"}},
		{`$'\147it' push`, []string{"tool:git:push"}},
		{`$'\u0067it' "p"'u'sh`, []string{"tool:git:push"}},
		{"/usr/bin/git push", []string{"tool:git:push"}},
		{"./git push", []string{"tool:git:push"}},
		{"git${IFS}push", []string{"tool:exec:git${IFS}push [ask]"}},
		{"{git,push}", []string{"tool:exec:{git,push} [ask]"}},
		{"gi? push", []string{"tool:exec:gi? push [ask]"}},
		{"[g]it push", []string{"tool:exec:[g]it push [ask]"}},
		{"~/bin/git push", []string{"tool:exec:~/bin/git push [ask]"}},
		{"$cmd push", []string{"tool:exec:$cmd push [ask]"}},
		{`"${x}" a`, []string{`tool:exec:"${x}" a [ask]`}},
		{"$(echo rm) -rf /", []string{"tool:exec:echo rm", "tool:exec:$(echo rm) -rf / [ask]"}},
		{"git $sub", []string{"tool:git:$sub [ask]"}},
		{"git {push,pull}", []string{"tool:git:{push,pull} [ask]"}},
		{"ls $HOME", []string{"tool:exec:ls $HOME"}},
		{`echo "a b" 'c'\''d'`, []string{`tool:exec:echo 'a b' 'c'\''d'`}},
		{"git log HEAD~1 HEAD^", []string{"tool:git:log HEAD~1 HEAD^"}},
	}
	for _, tt := range tests {
		checkShell(t, tt.line, tt.want)
	}
}

func TestShellStructure(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"npm test && git push; ls | wc -l &", []string{"tool:exec:npm test", "tool:git:push", "tool:exec:ls", "tool:exec:wc -l"}},
		{"a || b", []string{"tool:exec:a", "tool:exec:b"}},
		{"x=$(git push)", []string{"tool:git:push"}},
		{"echo `git pull`", []string{"tool:git:pull", "tool:exec:echo `git pull`"}},
		{"diff <(git show HEAD:a) >(tee x)", []string{"tool:git:show HEAD:a", "tool:exec:tee x", "tool:create_file:x", "tool:exec:diff <(git show HEAD:a) >(tee x)"}},
		{"(git push)", []string{"tool:git:push"}},
		{"{ git push; }", []string{"tool:git:push"}},
		{"if git diff --quiet; then git push; else git reset --hard; fi", []string{"tool:git:diff --quiet", "tool:git:push", "tool:git:reset --hard"}},
		{"while true; do git pull; done", []string{"tool:git:pull"}},
		{"for b in a b; do git rebase $b; done", []string{"tool:git:rebase $b"}},
		{"for c in push pull; do git $c; done", []string{"tool:git:$c [ask]"}},
		{"case $x in a) git merge x;; esac", []string{"tool:git:merge x"}},
		{"f() { git push; }; f", []string{"tool:git:push"}},
		{"function f { sudo ls; }", []string{"tool:exec:sudo", "tool:exec:ls"}},
		{"f; f() { :; }", []string{"tool:exec:f"}},
		{"cat <<EOF\n$(git push)\nEOF", []string{"tool:exec:cat", "tool:git:push"}},
		{"cat <<'EOF'\ngit push\nEOF", []string{"tool:exec:cat"}},
		{"bash <<'EOF'\ngit push\nEOF", []string{"tool:exec:bash [aue]", "tool:git:push"}},
		{"sh <<< 'git pull'", []string{"tool:exec:sh [aue]", "tool:git:pull"}},
		{"(( $(git push) ))", []string{"tool:git:push"}},
		{"[[ -n $(git push) ]]", []string{"tool:git:push"}},
		{"declare x=$(git push)", []string{"tool:git:push"}},
		{"let x=$(git push)", []string{"tool:git:push"}},
		{"time git push", []string{"tool:git:push"}},
		{"! git push", []string{"tool:git:push"}},
		{"coproc git push", []string{"tool:git:push"}},
		{"read x; true; exit 0", nil},
		{"command -v go >/dev/null && go version", []string{"tool:exec:go version"}},
		{"alias g=git; g push", []string{"tool:exec:alias g=git [ask]", "tool:exec:g push"}},
		{"trap 'git push' EXIT", []string{"tool:exec:trap 'git push' EXIT (w)", "tool:git:push"}}, // a transparent wrapper: the handler decides
		{"hash -p /tmp/x git", []string{"tool:exec:hash -p /tmp/x git [ask]"}},
		{"exec >log 2>&1", []string{"tool:create_file:log"}},
		{"x='a[$(git push)]'; (( x )); ls", []string{"tool:bash:x='a[$(git push)]' [ask]", "tool:exec:ls"}},
		{"declare p='$(id)'; echo ${p@P}", []string{"tool:bash:p='$(id)' [ask]", "tool:exec:echo ${p@P}"}},
		{"mapfile -C 'git push' -c 1 < f", []string{"tool:exec:mapfile -C 'git push' -c 1 [ask]"}},
		{"python3 /dev/stdin <<< 'import os'", []string{"tool:exec:python3 /dev/stdin [aue]"}},
		{"bash /dev/fd/3 3< x", []string{"tool:exec:bash /dev/fd/3 [aue]"}},
	}
	for _, tt := range tests {
		checkShell(t, tt.line, tt.want)
	}
}

func TestShellRedirectionsAndCd(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"echo hi > target/out.txt", []string{"tool:exec:echo hi", "tool:create_file:target/out.txt"}},
		{"make >> a.log 2>&1 &> b.log >| c.log &>> d.log", []string{"tool:exec:make", "tool:create_file:a.log", "tool:create_file:b.log", "tool:create_file:c.log", "tool:create_file:d.log"}},
		{"ls > /dev/null 2>/dev/stderr 1>&2 3>&-", []string{"tool:exec:ls"}},
		{"echo >& file", []string{"tool:exec:echo", "tool:create_file:file"}},
		{"cat < in <> rw", []string{"tool:exec:cat", "tool:create_file:rw"}},
		{"echo x > $OUT", []string{"tool:exec:echo x", "tool:create_file:$OUT"}},
		{"exec > >(tee log) 2>&1", []string{"tool:exec:tee log", "tool:create_file:log"}},
		{"echo x > a/../../b", []string{"tool:exec:echo x", "tool:create_file:../b"}},
		{"{ ls; } > out", []string{"tool:exec:ls", "tool:create_file:out"}},
		{"cd target && echo x > a.txt; rm b", []string{"tool:exec:echo x", "tool:create_file:target/a.txt", "tool:exec:rm b", "tool:delete:target/b"}},
		{"cd .. && rm -rf x", []string{"tool:exec:rm -rf x", "tool:delete:../x"}},
		{"cd $D; rm y", []string{"tool:exec:rm y", "tool:delete:$D/y"}},
		{"cd $D; rm ../target/y; cd ..; touch z", []string{"tool:exec:rm ../target/y", "tool:delete:$D/../target/y", "tool:exec:touch z", "tool:create_file:$D/../z"}},
		{"cd; rm y", []string{"tool:exec:rm y", "tool:delete:~/y"}},
		{"(cd sub; touch z); touch w", []string{"tool:exec:touch z", "tool:create_file:sub/z", "tool:exec:touch w", "tool:create_file:w"}},
		{"mkdir -p build && cd build && cmake ..", []string{"tool:exec:mkdir -p build", "tool:exec:cmake .."}},
	}
	for _, tt := range tests {
		checkShell(t, tt.line, tt.want)
	}
}

func TestShellEnvAssignments(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"GIT_SSH_COMMAND=evil git fetch", []string{"tool:git:fetch [ask]"}},
		{"export GIT_SSH_COMMAND=evil; git fetch", []string{"tool:git:fetch [ask]"}},
		{"LD_PRELOAD=/tmp/x.so ls", []string{"tool:exec:ls"}}, // carried as Item.Env, decided by the engine (TestItemEnv)
		{"FOO=1 ls", []string{"tool:exec:ls"}},
		{"export $x; git status", []string{"tool:git:status [ask]"}},
		{"env GIT_EXEC_PATH=/tmp git status", []string{"tool:exec:env GIT_EXEC_PATH=/tmp (w)", "tool:git:status [ask]"}},
		{"sudo LD_PRELOAD=x id", []string{"tool:exec:sudo LD_PRELOAD=x", "tool:exec:id"}},
	}
	for _, tt := range tests {
		checkShell(t, tt.line, tt.want)
	}
}

func TestShellPositions(t *testing.T) {
	line := "ls -la &&\n  git push > out.txt\nbash -c 'git pull; rm x'"
	items, err := ParseShell(line)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		action string
		pos    Pos
		text   string
	}{
		{"tool:exec:ls -la", Pos{1, 1}, "ls -la"},
		{"tool:git:push", Pos{2, 3}, "git push > out.txt"},
		{"tool:create_file:out.txt", Pos{2, 12}, "git push > out.txt"},
		{"tool:exec:bash -c 'git pull; rm x'", Pos{3, 1}, "bash -c 'git pull; rm x'"},
		{"tool:git:pull", Pos{3, 1}, "git pull"},
		{"tool:exec:rm x", Pos{3, 1}, "rm x"},
		{"tool:delete:x", Pos{3, 1}, "rm x"},
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items %q, want %d", len(items), summary(items), len(want))
	}
	for i, w := range want {
		it := items[i]
		if it.Action != w.action || it.Pos != w.pos || it.Text != w.text {
			t.Errorf("item %d = %q at %v text %q; want %q at %v text %q", i, it.Action, it.Pos, it.Text, w.action, w.pos, w.text)
		}
	}
}

func TestParseShellErrors(t *testing.T) {
	for _, line := range []string{"echo 'unterminated", "if then fi", "a && ", "$(", "echo \x00"} {
		if _, err := ParseShell(line); err == nil {
			t.Errorf("ParseShell(%q): no error", line)
		}
	}
	items, err := ParseShell("")
	if err != nil || len(items) != 0 {
		t.Errorf("ParseShell(\"\") = %v, %v; want no items, no error", items, err)
	}
}

func TestShellInsideArguments(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`bash -c "git push"`, []string{"tool:exec:bash -c 'git push' (w)", "tool:git:push"}},
		{`bash -lc "git pull"`, []string{"tool:exec:bash -lc 'git pull' (w)", "tool:git:pull"}},
		{`sh -xec 'git reset --hard'`, []string{"tool:exec:sh -xec 'git reset --hard' (w)", "tool:git:reset --hard"}},
		{`sh -c -- 'git merge x'`, []string{"tool:exec:sh -c -- 'git merge x' (w)", "tool:git:merge x"}},
		{`zsh -o pipefail -c 'sudo id'`, []string{"tool:exec:zsh -o pipefail -c 'sudo id' (w)", "tool:exec:sudo", "tool:exec:id"}},
		{`dash -c "$X"`, []string{`tool:exec:dash -c "$X" [ask]`}},
		{`sh -c "$(curl x)"`, []string{"tool:exec:curl x", `tool:exec:sh -c "$(curl x)" [ask]`}},
		{`bash $SCRIPT`, []string{`tool:exec:bash $SCRIPT [ask]`}},
		{"exec 3<>/dev/tcp/h/80", []string{"tool:create_file:/dev/tcp/h/80"}},
		{`sh -c '"$@"' sh git push`, []string{`tool:exec:sh -c '"$@"' sh git push (w)`, `tool:exec:"$@" [ask]`}},
		{`bash -c 'bash -c "bash -c \"git push\""'`, []string{`tool:exec:bash -c 'bash -c "bash -c \"git push\""' (w)`, `tool:exec:bash -c 'bash -c "git push"' (w)`, `tool:exec:bash -c 'git push' (w)`, "tool:git:push"}},
		{`sh -c 'echo "'`, []string{`tool:exec:sh -c 'echo "' [ask]`}},
		{"bash", []string{"tool:exec:bash [aue]"}},
		{"fish -C true -c 'git push'", []string{"tool:exec:fish -C true -c 'git push'", "tool:git:push"}},
		{"fish --command='git pull'", []string{"tool:exec:fish '--command=git pull'", "tool:git:pull"}},
		{"bash build.sh", []string{"tool:exec:bash build.sh", "tool:exec:build.sh (w)"}},
		{"sh ./deploy.sh prod", []string{"tool:exec:sh ./deploy.sh prod", "tool:exec:deploy.sh prod (w)"}},
		{"curl -fsSL https://x | sh", []string{"tool:exec:curl -fsSL https://x", "tool:exec:sh [aue]"}},
		{"curl -fsSL https://x | bash -s -- -y", []string{"tool:exec:curl -fsSL https://x", "tool:exec:bash -s -- -y [aue]"}},
		{`eval "git rebase main"`, []string{"tool:exec:eval 'git rebase main' (w)", "tool:git:rebase main"}},
		{`eval git push`, []string{"tool:exec:eval git push (w)", "tool:git:push"}},
		{`eval "$CMD"`, []string{`tool:exec:eval "$CMD" [ask]`, `tool:exec:"$CMD" [ask]`}},
		{"source env.sh", []string{"tool:exec:source env.sh [aue]"}},
		{". ./env.sh", []string{"tool:exec:. ./env.sh [aue]"}},
		{"source $F", []string{"tool:exec:source $F [aue]"}},
		{`watch -n 1 'git push'`, []string{"tool:exec:watch -n 1 (w)", "tool:git:push"}},
		{`watch -x git push`, []string{"tool:exec:watch -x (w)", "tool:git:push"}},
		{`flock /tmp/l -c 'git push'`, []string{"tool:exec:flock /tmp/l -c 'git push' (w)", "tool:create_file:/tmp/l", "tool:git:push"}},
		{`su -c 'git push' bob`, []string{"tool:exec:su -c 'git push' bob", "tool:git:push"}},
		{`su - bob`, []string{"tool:exec:su - bob [ask]"}},
		{`runuser -u bob -- git push`, []string{"tool:exec:runuser -u bob --", "tool:git:push"}},
		{`script -qc 'git push' /dev/null`, []string{"tool:exec:script -qc 'git push' /dev/null", "tool:git:push"}},
		{`gdb -batch -ex 'shell git push'`, []string{"tool:exec:gdb -batch -ex 'shell git push' [aue]", "tool:git:push"}},
		{`sg dev -c 'git push'`, []string{"tool:exec:sg dev -c 'git push'", "tool:git:push"}},
	}
	for _, tt := range tests {
		checkShell(t, tt.line, tt.want)
	}
}

func TestNestingLimit(t *testing.T) {
	for _, line := range []string{
		strings.Repeat("$(", 5000) + "ls" + strings.Repeat(")", 5000),
		strings.Repeat("( ", 5000) + "git push" + strings.Repeat(" )", 5000),
		strings.Repeat("if true; then ", 3000) + "git push" + strings.Repeat("; fi", 3000),
	} {
		items, err := ParseShell(line)
		if err != nil {
			t.Fatalf("ParseShell(%.20q...): %v", line, err)
		}
		if len(items) > maxNest+1 {
			t.Errorf("ParseShell(%.20q...): %d items, want at most %d", line, len(items), maxNest+1)
		}
		found := false
		for _, it := range items {
			if it.Floor == FloorAsk && strings.Contains(it.FloorReason, "nested") {
				found = true
			}
		}
		if !found {
			t.Errorf("ParseShell(%.20q...): no FloorAsk item for the nesting", line)
		}
	}
	if _, err := ParseShell(strings.Repeat("x", maxScriptLen+1)); err == nil {
		t.Error("over-long line parsed without error")
	}
}

func TestDepthLimit(t *testing.T) {
	line := strings.Repeat("eval ", 200) + "git push"
	items, err := ParseShell(line)
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for _, it := range items {
		if it.Floor >= FloorAsk {
			asked = true
		}
	}
	if !asked {
		t.Errorf("200 nested evals: no FloorAsk item in %q", summary(items))
	}
	argv := []string{}
	for i := 0; i < 100; i++ {
		argv = append(argv, "nice")
	}
	argv = append(argv, "git", "push")
	items = FromArgv(argv, "")
	last := items[len(items)-1]
	if last.Floor != FloorAsk || !strings.Contains(last.FloorReason, "nested") {
		t.Errorf("100 nested nice: last item %q floor %d %q", last.Action, last.Floor, last.FloorReason)
	}
}

func TestParseShellIn(t *testing.T) {
	items, err := ParseShellIn("echo x > out.txt; cd ../other && rm -rf build; cat /etc/hosts > /tmp/h", "/w/target")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tool:exec:echo x", "tool:create_file:/w/target/out.txt", "tool:exec:rm -rf build", "tool:delete:/w/other/build", "tool:exec:cat /etc/hosts", "tool:create_file:/tmp/h"}
	if got := summary(items); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestParserReuse: a pooled parser's earlier result must survive later
// parses (analysis runs after the parser went back to the pool).
func TestParserReuse(t *testing.T) {
	f1, err := parseBash("git push origin 'a b' <<EOF\nbody $(x)\nEOF")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := parseBash(strings.Repeat("ls -la zzzzzzzzzzzz; ", 20)); err != nil {
			t.Fatal(err)
		}
	}
	a := &analyzer{}
	a.file(f1, "git push origin 'a b' <<EOF\nbody $(x)\nEOF", "", 0)
	want := []string{"tool:git:push origin 'a b'", "tool:exec:x"}
	if got := summary(a.items); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestConcurrentUse: the engine calls FromArgv and ParseShell from many
// goroutines; run with -race.
func TestConcurrentUse(t *testing.T) {
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- true }()
			for i := 0; i < 200; i++ {
				if items, err := ParseShell("timeout 5 git -C x push | tee out; bash -c 'rm -rf y'"); err != nil || len(items) != 7 {
					t.Errorf("ParseShell: %v %q", err, summary(items))
					return
				}
				if items := FromArgv([]string{"env", "git", "status"}, "/w"); len(items) != 2 {
					t.Errorf("FromArgv: %q", summary(items))
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

// TestItemEnv: loader and runtime variables a line sets travel with the
// items they apply to, with their literal values ("$" when dynamic), for
// the engine's environment rule.
func TestItemEnv(t *testing.T) {
	for _, tc := range []struct {
		line string
		want map[string][]string // item action -> Env
	}{
		{"LD_PRELOAD=/tmp/x.so git status", map[string][]string{"tool:git:status": {"LD_PRELOAD=/tmp/x.so"}}},
		{"export LD_AUDIT=./a.so; git fetch", map[string][]string{"tool:git:fetch": {"LD_AUDIT=./a.so"}}},
		{"LD_LIBRARY_PATH=$D ls", map[string][]string{"tool:exec:ls": {"LD_LIBRARY_PATH=$"}}},
		{"env PYTHONPATH=src python3 -m pytest", map[string][]string{"tool:exec:python3 -m pytest": {"PYTHONPATH=src"}}},
		{"sudo LD_PRELOAD=x id", map[string][]string{"tool:exec:id": {"LD_PRELOAD=x"}}},
		{"git status", map[string][]string{"tool:git:status": nil}},
	} {
		items, err := ParseShell(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			want, ok := tc.want[it.Action]
			if !ok {
				continue
			}
			if strings.Join(it.Env, " ") != strings.Join(want, " ") {
				t.Errorf("%q: item %s Env = %q, want %q", tc.line, it.Action, it.Env, want)
			}
			delete(tc.want, it.Action)
		}
		for a := range tc.want {
			t.Errorf("%q: no item %s", tc.line, a)
		}
	}
}

// TestBranchConstants: a variable assigned once, a literal, inside an if
// branch or a block, is known for the rest of that list (automake's
// `bs=\\; ... sed "s/$bs$bs..."`), and unknown after it or before it.
func TestBranchConstants(t *testing.T) {
	for _, c := range []struct {
		line    string
		dynamic bool
	}{
		{`if true; then :; else bs=\\; x=$(printf '%s\n' "$M" | sed "s/$bs$bs[$bs $bs]*//g"); fi`, false},
		{`{ bs=\\; sed "s/$bs//" f; }`, false},
		{`if c; then bs=\\; fi; sed "s/$bs//" f`, true},
		{`sed "s/$bs//" f; if c; then bs=\\; fi`, true},
		{`if c; then bs=\\; bs=e; sed "s/$bs//" f; fi`, true},
		{`f() { bs=x; }; sed "s/$bs//" f`, true},
	} {
		items, err := ParseShell(c.line)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		dyn := false
		for _, it := range items {
			if strings.Contains(it.Action, "sed") && it.Floor == FloorAsk {
				dyn = true
			}
		}
		if dyn != c.dynamic {
			t.Errorf("%s: sed's script dynamic %v, want %v (%+v)", c.line, dyn, c.dynamic, items)
		}
	}
}

// TestCatSlices checks the literal category table against catNames: entry
// m names exactly the categories whose bits m sets, in bit order.
func TestCatSlices(t *testing.T) {
	for m := range catSlices {
		var want []string
		for i, n := range catNames {
			if m&(1<<i) != 0 {
				want = append(want, n)
			}
		}
		if !slices.Equal(catSlices[m], want) {
			t.Errorf("catSlices[%d] = %q, want %q", m, catSlices[m], want)
		}
	}
}
