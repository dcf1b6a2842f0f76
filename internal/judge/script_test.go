package judge

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseShebang(t *testing.T) {
	for _, tc := range []struct {
		in          string
		interp, arg string
		ok          bool
	}{
		{"#!/bin/sh\necho", "/bin/sh", "", true},
		{"#! /usr/bin/env node\n", "/usr/bin/env", "node", true},
		{"#!/usr/bin/env -S node --flag x\n", "/usr/bin/env", "-S node --flag x", true},
		{"#!/bin/sh -e  \n", "/bin/sh", "-e", true},
		{"#!\t/bin/bash\t-x\n", "/bin/bash", "-x", true},
		{"#!/usr/bin/python3", "/usr/bin/python3", "", true},
		{"#!   \n", "", "", false},
		{"#!", "", "", false},
		{"# !/bin/sh", "", "", false},
		{"\x7fELF", "", "", false},
		{"", "", "", false},
	} {
		interp, arg, ok := ParseShebang([]byte(tc.in))
		if interp != tc.interp || arg != tc.arg || ok != tc.ok {
			t.Errorf("ParseShebang(%q) = %q %q %v, want %q %q %v", tc.in, interp, arg, ok, tc.interp, tc.arg, tc.ok)
		}
	}
}

// FuzzParseShebang: never panics; an interpreter is one word with no
// blank, the line's first; the argument has no newline, tab or edge blank.
func FuzzParseShebang(f *testing.F) {
	for _, s := range []string{"#!/bin/sh\n", "#! /usr/bin/env node\n", "#!/bin/sh -e -x\n", "#!\x00/x", "#!a\tb\tc"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		interp, arg, ok := ParseShebang(b)
		if !ok {
			if interp != "" || arg != "" {
				t.Fatalf("not ok but %q %q", interp, arg)
			}
			return
		}
		if interp == "" || strings.ContainsAny(interp, " \t\n\x00") {
			t.Fatalf("interp %q", interp)
		}
		if strings.ContainsAny(arg, "\n\x00\t") || arg != strings.Trim(arg, " ") {
			t.Fatalf("arg %q", arg)
		}
	})
}

// TestShebangChain: the words the kernel puts before a script's path, for
// each level of a chain, as it does them (checked against a real exec in
// supervise's TestReadExecEventScript).
func TestShebangChain(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inner := write("inner", "#!/bin/sh -e\n")
	outer := write("outer", "#!"+inner+" -x\n")
	env := write("envtool", "#!/usr/bin/env node\n")
	elf, _ := os.Executable()
	for _, tc := range []struct {
		path string
		want []string
	}{
		{outer, []string{"/bin/sh", "-e", inner, "-x"}},
		{env, []string{"/usr/bin/env", "node"}},
		{elf, nil},
		{filepath.Join(dir, "missing"), nil},
	} {
		if got := Shebang(tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("Shebang(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	// A loop ends at the kernel's depth.
	a := filepath.Join(dir, "a")
	os.WriteFile(a, []byte("#!"+a+"\n"), 0o755)
	if got := Shebang(a); len(got) != maxScriptDepth {
		t.Errorf("a #! loop gives %d words, want %d", len(got), maxScriptDepth)
	}
}

// TestScriptAliases: the links a script was found through, and its file.
func TestScriptAliases(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib", "npm-cli.js")
	os.MkdirAll(filepath.Dir(lib), 0o755)
	os.WriteFile(lib, []byte("#!/usr/bin/env node\n"), 0o755)
	bin := filepath.Join(dir, "npm")
	os.Symlink("lib/npm-cli.js", bin)
	pub := filepath.Join(dir, "pub")
	os.Symlink(bin, pub)
	if got, want := ScriptAliases(pub), []string{bin, lib}; !slices.Equal(got, want) {
		t.Errorf("ScriptAliases(pub) = %q, want %q", got, want)
	}
	if got := ScriptAliases(lib); len(got) != 0 {
		t.Errorf("ScriptAliases(file) = %q, want none", got)
	}
	c := ArgvContext([]string{"./pub", "publish"}, dir, "")
	if c.Exe != pub || !slices.Equal(c.Interp, []string{"/usr/bin/env", "node"}) || len(c.Aliases) != 2 {
		t.Errorf("ArgvContext = %+v", c)
	}
	// npm is a policed name: decided by what it is, not where it lies
	// (as the run gives it).
	c = ArgvContext([]string{"npm", "publish"}, "/", dir)
	if c.Exe != "" || len(c.Interp) != 2 || len(c.Aliases) != 1 {
		t.Errorf("ArgvContext through PATH = %+v", c)
	}
}
