package command

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Constants: a variable a script assigns exactly once, a literal value,
// in a plain assignment statement (at its top level, or in the statement
// list of an if branch, a loop body, a block: then for the rest of that
// list only), and never touches otherwise (no other assignment, for
// loop, read/declare/export/unset/printf -v... naming it, arithmetic), has
// that value wherever it is expanded after the assignment. Gemini CLI's
// shell tool wraps every command as
//
//	_bgpids_file=/…/agents/main/tmp/gemini-shell-X/bgpids.tmp
//	( trap 'jobs -p > "$_bgpids_file"' EXIT; CMD )
//
// and without this the redirection is a write to an unknown path (ask:
// a refusal for a headless agent, on every command). The trap's handler
// runs in the same shell, so it sees the constants; a script started as
// a new process (sh -c) does not: unexported variables do not reach it.

// shConst is a constant of the script being walked.
type shConst struct {
	value string
	after uint // the offset where the assignment ends (0: inherited)
	// until is the end of the statement list the assignment stands in
	// (0: the whole script): an assignment inside an if branch, a loop
	// body or a block holds for what follows it there, not after.
	until uint
}

// scriptConsts finds the constants of f (see above), with the ones
// inherited from an enclosing script of the same shell that f does not
// touch.
func (a *analyzer) scriptConsts(f *syntax.File, inherited map[string]shConst) map[string]shConst {
	touched := map[string]int{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil {
				touched[n.Name.Value]++
			}
		case *syntax.WordIter:
			if n.Name != nil {
				touched[n.Name.Value] += 2
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			syntax.Walk(n, func(m syntax.Node) bool {
				switch m := m.(type) {
				case *syntax.Lit:
					touched[m.Value] += 2
				case *syntax.ParamExp:
					if m.Param != nil {
						touched[m.Param.Value] += 2
					}
				}
				return true
			})
			return false
		case *syntax.CallExpr:
			// A name given to a command (read NAME, unset NAME, printf -v
			// NAME, declare NAME=...) may be set by it.
			for i, w := range n.Args {
				if i == 0 || w == nil {
					continue
				}
				if lit := w.Lit(); lit != "" {
					name, _, _ := strings.Cut(lit, "=")
					touched[name] += 2
				}
			}
		}
		return true
	})
	out := map[string]shConst{}
	for name, c := range inherited {
		if touched[name] == 0 {
			// Positions in f are offsets in its own text: an inherited
			// constant holds from its start.
			out[name] = shConst{value: c.value}
		}
	}
	// Every statement list: the script's, and the lists of its compound
	// commands (if branches, loop bodies, blocks, subshells, command
	// substitutions), but not function bodies, which run when called.
	lists := [][]*syntax.Stmt{f.Stmts}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			return false
		case *syntax.Block:
			lists = append(lists, n.Stmts)
		case *syntax.Subshell:
			lists = append(lists, n.Stmts)
		case *syntax.IfClause:
			lists = append(lists, n.Cond, n.Then)
		case *syntax.WhileClause:
			lists = append(lists, n.Cond, n.Do)
		case *syntax.ForClause:
			lists = append(lists, n.Do)
		case *syntax.CaseItem:
			lists = append(lists, n.Stmts)
		case *syntax.CmdSubst:
			lists = append(lists, n.Stmts)
		}
		return true
	})
	for li, list := range lists {
		var until uint
		if li > 0 && len(list) > 0 {
			until = list[len(list)-1].End().Offset()
		}
		for _, s := range list {
			c, ok := s.Cmd.(*syntax.CallExpr)
			if !ok || len(c.Args) != 0 || len(s.Redirs) != 0 || s.Background || s.Negated {
				continue
			}
			for _, as := range c.Assigns {
				if as.Name == nil || as.Append || as.Naked || as.Index != nil || as.Array != nil || touched[as.Name.Value] != 1 {
					continue
				}
				v := ""
				if as.Value != nil {
					var fl uint8
					if v, fl = a.resolveWord(as.Value); fl != 0 {
						continue
					}
				}
				out[as.Name.Value] = shConst{value: v, after: as.End().Offset(), until: until}
			}
		}
	}
	return out
}

// constParam returns the value of a plain $NAME or ${NAME} expansion of a
// constant at its place, and whether it is one; quoted says whether the
// expansion stands in double quotes (unquoted, a value that word splitting
// or globbing would change is not used).
func (a *analyzer) constParam(p *syntax.ParamExp, quoted bool) (string, bool) {
	if a.sh == nil || a.sh.consts == nil || p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil ||
		p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	c, ok := a.sh.consts[p.Param.Value]
	if !ok || p.Pos().Offset() < c.after || c.until != 0 && p.Pos().Offset() > c.until {
		return "", false
	}
	if !quoted && (c.value == "" || strings.ContainsAny(c.value, " \t\n*?[")) {
		return "", false
	}
	return c.value, true
}
