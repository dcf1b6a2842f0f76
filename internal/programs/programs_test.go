package programs

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want      Kind
		canonical string
		family    string
	}{
		{"bash", Shell | Interpreter | Policed, "bash", "bash"},
		{"/usr/bin/tcsh", Shell | Policed, "tcsh", "tcsh"},
		{"python3.12", Interpreter | Versioned, "python3", "python"},
		{"python3", Interpreter | Policed, "python3", "python"},
		{"perl5.36", Interpreter, "perl", "perl"},
		{"lua5.4", Interpreter, "lua", "lua"},
		{"pip3.11", Policed, "pip3", "pip"},
		{"busybox", Multicall | Policed, "busybox", "busybox"},
		{"gcc", 0, "gcc", "gcc"},
		{"cc1", 0, "cc1", "cc1"},
		{"x86_64-linux-gnu-gcc-12", 0, "x86_64-linux-gnu-gcc-12", "x86_64-linux-gnu-gcc-12"},
		{"", 0, "", ""},
	} {
		c, k := Canonical(tc.name)
		if k&tc.want != tc.want || (tc.want == 0 && k != 0) {
			t.Errorf("Lookup(%q) = %b, want at least %b", tc.name, k, tc.want)
		}
		if c != tc.canonical {
			t.Errorf("Canonical(%q) = %q, want %q", tc.name, c, tc.canonical)
		}
		if f := Family(tc.name); f != tc.family {
			t.Errorf("Family(%q) = %q, want %q", tc.name, f, tc.family)
		}
	}
}

func TestNeverRemember(t *testing.T) {
	for name, want := range map[string]bool{
		"sh": true, "tcsh": true, "python3.12": true, "env": true, "sudo": true, "make": true,
		"awk": true, "eval": true, "busybox": true, "find": true,
		"ls": false, "go": false, "npm": false, "git": false, "cargo": false,
	} {
		if got := NeverRemember(name); got != want {
			t.Errorf("NeverRemember(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestNamesShellsAreInterpreters(t *testing.T) {
	// Every shell runs a script file operand, so program-location rules
	// locate it by its script: the two kinds must agree.
	for _, n := range Names(Shell) {
		if !Is(n, Interpreter) {
			t.Errorf("shell %q is not an Interpreter", n)
		}
	}
	if len(Names(Policed)) < 50 {
		t.Errorf("Names(Policed) = %d names, want the full policed list", len(Names(Policed)))
	}
}

// BenchmarkCanonical is the lookup every exec decision makes: a table
// name, a path, a versioned spelling and an unknown name.
func BenchmarkCanonical(b *testing.B) {
	for _, name := range []string{"git", "/usr/bin/python3.12", "ls", "my-tool"} {
		b.Run(strings.ReplaceAll(name, "/", "_"), func(b *testing.B) {
			for b.Loop() {
				_, _ = Canonical(name)
			}
		})
	}
}
