package command

import (
	"os"
	"strings"
	"testing"
)

// TestFunctionArguments: a top-level function called later is analyzed at
// each call with the call's literal arguments as $1.. and "$@"; a function
// that shifts, calls itself or is declared twice, or a call with dynamic
// arguments, leaves its parameters unknown (an unknown program).
func TestFunctionArguments(t *testing.T) {
	actions := func(line string) string {
		items, err := ParseShellIn(line, "/w/target")
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		var out []string
		for _, it := range items {
			out = append(out, strings.TrimPrefix(it.Action, "tool:exec:"))
		}
		return strings.Join(out, " | ")
	}
	for _, c := range []struct{ line, want string }{
		{`f() { "$@"; }; f wc -l`, `wc -l`},
		{"f() {\n \"$@\"\n}\nf wc -l\nf rm -rf x", `wc -l | rm -rf x | tool:delete:/w/target/x`},
		{`f() { if command -v "$1" >/dev/null; then "$@"; else command -p "$@"; fi; }; f tr -d ' '`, `tr -d ' ' | command -p | tr -d ' '`},
		{`f() { echo "$1" > "$2"; }; f hi /w/target/out`, `echo hi | tool:create_file:/w/target/out`},
		{`f() { "$@"; }; f`, ``},
		{`f() { "$@"; }; f $x`, `"$@"`},
		{`f() { shift; "$@"; }; f a rm x`, `"$@"`},
		{`f() { "$@"; f ls; }; f rm x`, `"$@"`},
		{"f() { \"$@\"; }\nf() { :; }\nf rm x", `"$@"`},
		{`f() { $1; }; f 'rm -rf x'`, `$1`},
		{`"$@"`, `"$@"`},
	} {
		if got := actions(c.line); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.line, got, c.want)
		}
	}
}

// TestCodexShellSnapshot: Codex's start-up snapshot script (as Codex
// 0.169 runs it with bash -lc) has no unknown program once its dispatch
// function is analyzed at its calls; what is left is sourcing ~/.bashrc,
// a file of unknown content, which a rule naming it may lift (the Codex
// profile's source_files; policy.TestAllowSourceFiles).
func TestCodexShellSnapshot(t *testing.T) {
	b, err := os.ReadFile("testdata/codex-snapshot.sh")
	if err != nil {
		t.Fatal(err)
	}
	items, err := ParseShellIn(string(b), "/w/target")
	if err != nil {
		t.Fatal(err)
	}
	var floors []string
	for _, it := range items {
		if it.Floor != FloorNone {
			floors = append(floors, it.Action+" ("+it.FloorReason+")")
		}
	}
	if len(floors) != 1 || !strings.Contains(floors[0], `.bashrc`) || items[0].Floor != FloorAskUnlessExplicit {
		t.Errorf("items with a floor: %q; want only the source of ~/.bashrc", floors)
	}
}

// TestPrintOnlyBuiltins: builtins that only print the shell's state, or
// only change it, make no item, called directly or through a wrapper;
// the forms that define or run something still do.
func TestPrintOnlyBuiltins(t *testing.T) {
	for _, c := range []struct {
		line  string
		items int
	}{
		{"alias -p", 0}, {"alias", 0}, {`\alias -p`, 0}, {"compgen -e", 0}, {"command -v \"$1\"", 0},
		// through a wrapper: the wrapper's own item only (tool:exec:builtin)
		{`\builtin unset X`, 1}, {"builtin set -e", 1}, {"declare -xp \"$n\"; printf x", 1},
		{"alias ls='rm -rf /'", 1}, {"compgen -C 'touch x' y", 1},
	} {
		items, err := ParseShellIn(c.line, "/w/target")
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if len(items) != c.items || (c.items == 1 && strings.Contains(c.line, "builtin") && items[0].Action != "tool:exec:builtin") {
			t.Errorf("%q: %d items %v; want %d", c.line, len(items), items, c.items)
		}
	}
}
