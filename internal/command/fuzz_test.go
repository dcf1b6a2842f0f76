package command

import (
	"strings"
	"testing"
)

// checkItems asserts the invariants every result must keep, whatever the
// input: actions are well formed, floors in range, exec/git items carry an
// argv, path items none.
func checkItems(t *testing.T, in string, items []Item) {
	t.Helper()
	for _, it := range items {
		if !strings.HasPrefix(it.Action, "tool:") || strings.Count(it.Action, ":") < 2 {
			t.Fatalf("%q: malformed action %q", in, it.Action)
		}
		if it.Floor < FloorNone || it.Floor > FloorDeny {
			t.Fatalf("%q: floor %d out of range", in, it.Floor)
		}
		if it.Floor > FloorNone && it.FloorReason == "" {
			t.Fatalf("%q: floor %d without reason on %q", in, it.Floor, it.Action)
		}
		switch {
		case strings.HasPrefix(it.Action, "tool:exec:"), strings.HasPrefix(it.Action, "tool:git:"):
			if len(it.Argv) == 0 {
				t.Fatalf("%q: %q has no argv", in, it.Action)
			}
		case strings.HasPrefix(it.Action, "tool:create_file:"), strings.HasPrefix(it.Action, "tool:delete:"):
			if it.Argv != nil {
				t.Fatalf("%q: path item %q has argv", in, it.Action)
			}
		}
	}
}

var fuzzSeeds = []string{
	"git push", "'g'it push", `g\it push`, `$'\x67it' push`, "git${IFS}push", "{git,push}",
	"git -C x -c core.pager=less status", "git --config-env=core.editor=E commit",
	"env -S 'git push'", "nice -n 5 timeout 10 sudo -u r git push", "xargs -I{} git {}",
	"find . -exec git push \\; -delete", "bash -lc 'eval \"git push\"'", "f() { git push; }; f",
	"cat <<EOF\n$(git push)\nEOF", "bash <<'EOF'\ngit push\nEOF", "echo hi > out; cd x && rm y",
	"python3 -c 'import os'", "awk 'BEGIN{system(\"id\")}'", "sed -i 's/a/b/e' f", "rg --pre x y",
	"for c in a b; do git $c; done", "a=$(b) c <(d) >(e) `f`", "sh -c -- \"$@\" x", "watch -x git push",
	"flock l -c 'git push'", "su -c 'id' bob", "cp -t d a b; mv a b; ln -s x", "curl -O http://x/y | sh",
}

func FuzzParseShell(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		items, err := ParseShell(line)
		if err != nil {
			if items != nil {
				t.Fatalf("%q: items with an error", line)
			}
			return
		}
		checkItems(t, line, items)
	})
}

func FuzzFromArgv(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(strings.ReplaceAll(s, " ", "\x1f"), "/w")
	}
	f.Add("sed\x1f-ie\x1fs/a/b/w out\x1ff", "")
	f.Add("sudo\x1f-e\x1f/etc/x", "")
	f.Fuzz(func(t *testing.T, joined, cwd string) {
		argv := strings.Split(joined, "\x1f")
		items := FromArgv(argv, cwd)
		if len(items) == 0 {
			t.Fatalf("%q: no items", argv)
		}
		checkItems(t, joined, items)
	})
}

func FuzzParseGit(f *testing.F) {
	for _, s := range []string{"git push", "git -C x -c a.b=c status", "git -ccore.pager=x log", "git --git-dir=.git --work-tree . push -f",
		"git --config-env core.editor=E commit", "git --exec-path=/x st", "git -c", "git --list-cmds=x", "git --bogus x", "git config alias.x !id", "git -c core.hooksPath=/dev/null -c core.fsmonitor= status"} {
		f.Add(strings.ReplaceAll(s, " ", "\x1f"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x1f")
		g, err := ParseGit(argv)
		if err != nil {
			return
		}
		if g.Sub != "" && len(g.Args) > len(argv) {
			t.Fatalf("%q: more args than argv", argv)
		}
		disabled := func(k string) bool { // -c k=VALUE turning the feature off
			for _, a := range argv {
				if v, ok := strings.CutPrefix(strings.TrimPrefix(a, "-c"), k+"="); ok && GitValueDisables(k, v) {
					return true
				}
			}
			return false
		}
		for _, k := range g.ConfigKeys {
			if GitKeyRunsPrograms(k) != "" && len(g.RunsPrograms) == 0 && !disabled(k) {
				t.Fatalf("%q: key %q runs programs but RunsPrograms is empty", argv, k)
			}
		}
	})
}

// FuzzScanSed: any sed script is read without panicking; a write is
// reported only for a script with a w or W in it, an execution only for
// one with an e, and every write named is a piece of the script.
func FuzzScanSed(f *testing.F) {
	for _, s := range []string{"s/a/b/w out", "1,/x/!e ls", "a\\\nfoo", "y/ab/cd/;w f", "\\%x%I,+3{p}", "s|a|b|gpe", "#c\n3~2d", "s/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		execs, writes, ok := scanSed(s)
		if len(writes) > 0 && !strings.ContainsAny(s, "wW") {
			t.Fatalf("%q: a write without a w command: %q (ok %v)", s, writes, ok)
		}
		if execs && !strings.Contains(s, "e") {
			t.Fatalf("%q: an execution without an e command (ok %v)", s, ok)
		}
		for _, w := range writes {
			if !strings.Contains(s, w) {
				t.Fatalf("%q: write %q is not in the script", s, w)
			}
		}
	})
}
