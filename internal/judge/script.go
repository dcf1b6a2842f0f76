package judge

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/identity"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
)

// scriptExec is a program start whose file is a #! script: its path as
// the kernel was given it (joined to the process's cwd), the interpreter
// words the kernel put before it, and the script's other names.
type scriptExec struct {
	given   string // the path as execve was given it
	path    string
	interp  []string
	aliases []string
}

// newScriptExec reads ev's script (ev.ScriptArg > 0).
func newScriptExec(ev *supervise.ExecEvent) scriptExec {
	p := ev.Argv[ev.ScriptArg]
	if !filepath.IsAbs(p) && ev.Cwd != "" {
		p = filepath.Join(ev.Cwd, p)
	}
	return scriptExec{given: ev.Argv[ev.ScriptArg], path: p, interp: ev.Argv[:ev.ScriptArg], aliases: ScriptAliases(p)}
}

// prog0 is the name of the program the kernel mapped (the interpreter of
// a script): its identity, else its file's base name.
func prog0(ev *supervise.ExecEvent) string {
	if ev.Program != "" {
		return ev.Program
	}
	return identity.ExeBase(ev.Exe)
}

// maxScriptDepth bounds a #! chain, as the kernel does (BINPRM_MAX_RECURSION
// is 4: a fifth level fails with ELOOP).
const maxScriptDepth = 5

// maxAliases bounds the links followed to name a script's other names.
const maxAliases = 8

// ScriptAliases returns the other names of the program file at path: the
// symbolic links from path to the file itself, the last being the file
// (/usr/bin/npx → ../lib/node_modules/npm/bin/npx-cli.js gives
// "/usr/lib/node_modules/npm/bin/npx-cli.js"; a link the agent made,
// target/pub → /usr/bin/npm, gives "/usr/bin/npm" and npm-cli.js). The
// engine decides a rule naming any of them too (policy.ExecContext.Aliases).
// Reading the links is done when the program starts; the file the kernel
// ran may have been swapped since, which changes only what is asked.
func ScriptAliases(path string) []string {
	var out []string
	p := path
	for range maxAliases {
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
		out = append(out, p)
	}
	// Links in the directories above do not rename the file: the last
	// hop's name is the file's own.
	return out
}

// Shebang returns the words the kernel would run the file at path with
// when it is a #! script, for every level of a chain (interpreter first,
// as the kernel's argv has them before the script's path): a script
// `#!/usr/bin/env node` gives ["/usr/bin/env", "node"]. nil when path is
// not a script (or cannot be read). `agentbox check` and the hook use it
// for the program they decide; a run takes the same words from the new
// process's argv, where the kernel put them (supervise.ExecEvent.ScriptArg).
func Shebang(path string) []string {
	var chain []string
	p := path
	for range maxScriptDepth {
		interp, arg, ok := readShebang(p)
		if !ok {
			break
		}
		// Each level goes in front: the kernel replaces the argv[0] it
		// was given by the interpreter, its argument and that file's path
		// (which the level before put first).
		level := []string{interp}
		if arg != "" {
			level = append(level, arg)
		}
		chain = append(level, chain...)
		p = interp
	}
	return chain
}

// readShebang reads a #! line as the kernel does (binfmt_script): at most
// the first 256 bytes, the interpreter up to the first blank, one optional
// argument (the rest of the line, trimmed).
func readShebang(path string) (interp, arg string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	var buf [256]byte
	n, _ := f.Read(buf[:])
	return ParseShebang(buf[:n])
}

// ParseShebang parses the start of a file as Linux's binfmt_script does:
// "#!", blanks, the interpreter up to a blank, then at most one argument
// (everything up to the end of the line, trailing blanks cut). The line
// ends at a newline or at the end of the 256 bytes the kernel reads; a
// line with no interpreter is no script (the kernel fails that exec).
func ParseShebang(b []byte) (interp, arg string, ok bool) {
	if len(b) < 2 || b[0] != '#' || b[1] != '!' {
		return "", "", false
	}
	b = b[2:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if bytes.IndexByte(b, 0) >= 0 {
		b = b[:bytes.IndexByte(b, 0)]
	}
	line := strings.Trim(string(b), " \t")
	if line == "" {
		return "", "", false
	}
	interp, arg, _ = strings.Cut(strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		return r
	}, line), " ")
	return interp, strings.TrimLeft(strings.TrimRight(arg, " "), " "), true
}

// ArgvContext is the policy.ExecContext `agentbox check -- ARGV` decides
// a program start with, the way a run's supervisor will see it: argv[0]
// located (a path against cwd, a bare name through pathEnv) and, when that
// file is a #! script, its location, the interpreter words the kernel will
// run it with and its other names — so a rule on a script tool (deny npm
// publish) answers the same in check as in the run.
func ArgvContext(argv []string, cwd, pathEnv string) policy.ExecContext {
	c := policy.ExecContext{Cwd: cwd, Exists: Overwritable}
	if len(argv) == 0 || argv[0] == "" {
		return c
	}
	p := argv[0]
	switch {
	case !strings.Contains(p, "/"):
		p = LookPath(pathEnv, cwd)(p)
	case !filepath.IsAbs(p) && cwd != "":
		p = filepath.Join(cwd, p)
	}
	if p == "" || !filepath.IsAbs(p) {
		return c
	}
	if interp := Shebang(p); len(interp) > 0 {
		c.Interp, c.Aliases = interp, ScriptAliases(p)
		// As the run gives it: a policed program is decided by what it
		// is, never by where it lies.
		if !identity.IsPoliced(filepath.Base(p)) {
			c.Exe = p
		}
	}
	return c
}
