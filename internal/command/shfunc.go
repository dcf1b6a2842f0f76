package command

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Functions: a function declared at the top level of a script and called
// later in it is analyzed at each call, with that call's arguments as its
// positional parameters when they are literal words. Codex's start-up
// shell snapshot dispatches every helper through
//
//	__codex_snapshot_command() { if command -v "$1" ...; then "$@"; else command -p "$@"; fi; }
//	... | __codex_snapshot_command wc -l
//
// and analyzed once where it is declared, "$@" is an unknown program (ask:
// a refusal for a headless agent, on every Codex start). Analyzed at the
// call, "$@" is `wc -l`, decided as such. A function that is never called
// from outside its own body, is declared twice, calls itself, or changes
// its parameters (shift, set) is analyzed once where it is declared, with
// unknown parameters, as before.

// shFuncs are the call-site-analyzed functions of a script.
type shFuncs struct {
	decls  map[string]*syntax.FuncDecl
	active map[string]bool
	// args are the positional parameters of the function body being
	// analyzed (bound says whether they are known).
	args  []string
	bound bool
}

// scriptFuncs finds f's functions to be analyzed at their calls.
func scriptFuncs(f *syntax.File) shFuncs {
	out := shFuncs{}
	count := map[string]int{}
	decls := map[string]*syntax.FuncDecl{}
	for _, s := range f.Stmts {
		if fd, ok := s.Cmd.(*syntax.FuncDecl); ok && fd.Name != nil && fd.Body != nil {
			count[fd.Name.Value]++
			decls[fd.Name.Value] = fd
		}
	}
	for name, fd := range decls {
		if count[name] != 1 || !calledOutside(f, name, fd) || !plainBody(fd, decls) {
			continue
		}
		if out.decls == nil {
			out.decls, out.active = map[string]*syntax.FuncDecl{}, map[string]bool{}
		}
		out.decls[name] = fd
	}
	return out
}

// calledOutside reports a call of name in f after fd and outside its body.
func calledOutside(f *syntax.File, name string, fd *syntax.FuncDecl) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == fd || found {
			return false
		}
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 && c.Args[0].Lit() == name && c.Pos().Offset() > fd.End().Offset() {
			found = true
		}
		return true
	})
	return found
}

// plainBody reports a body that calls no function of the script (itself
// included) and leaves its positional parameters alone.
func plainBody(fd *syntax.FuncDecl, decls map[string]*syntax.FuncDecl) bool {
	ok := true
	syntax.Walk(fd.Body, func(n syntax.Node) bool {
		c, isCall := n.(*syntax.CallExpr)
		if !ok || !isCall || len(c.Args) == 0 {
			return ok
		}
		switch name := c.Args[0].Lit(); {
		case decls[name] != nil, name == "shift", name == "set", name == "getopts", name == "eval", name == "source", name == ".":
			ok = false
		}
		return ok
	})
	return ok
}

// callFunc analyzes the body of the script's function name for the call
// c with arguments w (w.s[0] is the name), and reports whether name is
// such a function.
func (a *analyzer) callFunc(name string, w words, c *syntax.CallExpr, st *shState, depth int) bool {
	fn := &a.sh.fns
	fd := fn.decls[name]
	if fd == nil || c.Pos().Offset() < fd.End().Offset() {
		return false
	}
	if fn.active[name] {
		return true // cannot happen: plainBody excludes calls of functions
	}
	oldArgs, oldBound := fn.args, fn.bound
	fn.args, fn.bound = w.s[1:], len(w.flags) == 0
	fn.active[name] = true
	a.stmt(fd.Body, st.fork(), depth)
	fn.active[name] = false
	fn.args, fn.bound = oldArgs, oldBound
	return true
}

// posParam returns the value of a plain $N or $# in a function body whose
// parameters are known, and whether it is one; quoted as for constParam.
func (a *analyzer) posParam(p *syntax.ParamExp, quoted bool) (string, bool) {
	if a.sh == nil || !a.sh.fns.bound || p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil ||
		p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	args := a.sh.fns.args
	var v string
	switch name := p.Param.Value; {
	case name == "#":
		v = strconv.Itoa(len(args))
	case len(name) == 1 && name[0] >= '1' && name[0] <= '9':
		if n := int(name[0] - '0'); n <= len(args) {
			v = args[n-1]
		}
	default:
		return "", false
	}
	if !quoted && (v == "" || strings.ContainsAny(v, " \t\n*?[")) {
		return "", false
	}
	return v, true
}

// allArgs returns the known positional parameters when w is exactly "$@"
// (or an unquoted $@ whose parameters word splitting and globbing leave
// alone) in a function body whose parameters are known.
func (a *analyzer) allArgs(w *syntax.Word) ([]string, bool) {
	if a.sh == nil || !a.sh.fns.bound || w == nil || len(w.Parts) != 1 {
		return nil, false
	}
	isAt := func(p syntax.WordPart) bool {
		pe, ok := p.(*syntax.ParamExp)
		return ok && pe.Param != nil && pe.Param.Value == "@" && !pe.Excl && !pe.Length && pe.Index == nil &&
			pe.Slice == nil && pe.Repl == nil && pe.Exp == nil && pe.Names == 0
	}
	switch p := w.Parts[0].(type) {
	case *syntax.DblQuoted:
		if len(p.Parts) == 1 && isAt(p.Parts[0]) {
			return a.sh.fns.args, true
		}
	case *syntax.ParamExp:
		if isAt(p) {
			for _, v := range a.sh.fns.args {
				if v == "" || strings.ContainsAny(v, " \t\n*?[") {
					return nil, false
				}
			}
			return a.sh.fns.args, true
		}
	}
	return nil, false
}
