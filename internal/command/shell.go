package command

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentbox/agentbox/internal/programs"
)

// maxNest bounds how deeply statements may nest in one script (subshells,
// $(...), blocks, if/while bodies); deeper input gets one FloorAsk item
// instead of analysis, keeping time and memory linear in the input.
const maxNest = 100

// maxScriptLen bounds the text parsed as a shell script; longer input is
// not analyzed (the caller gets an error, or the owning item FloorAsk).
// 256 KiB is twice the kernel's limit for one exec argument
// (MAX_ARG_STRLEN), and keeps the parser's worst case (deeply nested
// arithmetic) to about a second.
const maxScriptLen = 256 << 10

// shellCtx is the source being walked.
type shellCtx struct {
	src string
	// funcs maps names of functions declared as top-level statements to
	// the offset of their declaration; a later call of such a name runs
	// the function (whose body was analyzed), not a program.
	funcs map[string]uint
	// consts are the script's constant variables (shconst.go).
	consts map[string]shConst
	// fns are its functions analyzed at each call (shfunc.go).
	fns shFuncs
}

// shState is what earlier statements in a list tell later ones.
type shState struct {
	// cwd is where relative paths are, "" if unknown (the shell's own
	// cwd); after "cd $x" it is "$x".
	cwd string
	// env are NAME=value assignments earlier in the list to variables
	// that make programs run other code (GIT_SSH_COMMAND=..., export
	// PAGER=...).
	env []string
}

// ParseShell returns the Items a bash command line would do: every simple
// command (pipelines, lists, $() and backticks, <() >(), subshells,
// braces, if/while/for/case bodies, function bodies, heredoc bodies'
// substitutions) with wrappers looked through, and a create_file item for
// every output redirection. Relative paths stay relative ("cd DIR" earlier
// in the line is applied). Positions are 1-based line:column of the simple
// command (of the operator for a redirection); items from a script inside
// an argument (sh -c '...', eval) keep the outer command's position and
// have the inner command as Text.
//
// The error is non-nil only when line cannot be parsed at all (or is over
// 256 KiB); the caller should then treat the line as at least ask.
func ParseShell(line string) ([]Item, error) {
	return ParseShellIn(line, "")
}

// ParseShellIn is ParseShell for a line run in directory cwd: relative
// paths in path items are joined to it.
func ParseShellIn(line, cwd string) ([]Item, error) {
	if len(line) > maxScriptLen {
		return nil, fmt.Errorf("shell line of %d bytes is over the %d byte limit", len(line), maxScriptLen)
	}
	if strings.IndexByte(line, 0) >= 0 {
		return nil, fmt.Errorf("shell line holds a NUL byte at offset %d", strings.IndexByte(line, 0))
	}
	f, err := parseBash(line)
	if err != nil {
		return nil, fmt.Errorf("parse shell line: %w", err)
	}
	a := &analyzer{}
	a.file(f, line, cwd, 0)
	return a.items, nil
}

// parsers reuses bash parsers (and their buffers) across calls.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parseBash(src string) (f *syntax.File, err error) {
	p := parsers.Get().(*syntax.Parser)
	defer func() {
		// The parser is well fuzzed upstream; a panic on hostile input
		// still must not take the engine down (nor go back to the pool).
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("shell parser failed: %v", r)
			return
		}
		parsers.Put(p)
	}()
	return p.Parse(strings.NewReader(src), "")
}

// script analyzes src, a script found inside an argument (sh -c, eval,
// watch, su -c...). A script that does not parse, or nesting beyond
// maxDepth, lifts item owner to FloorAsk.
func (a *analyzer) script(src, cwd string, depth, owner int) {
	if depth > maxDepth {
		a.raise(owner, FloorAsk, "command nested too deeply to analyze")
		return
	}
	if len(src) > maxScriptLen || strings.IndexByte(src, 0) >= 0 {
		a.raise(owner, FloorAsk, "script too long or holding a NUL byte")
		return
	}
	f, err := parseBash(src)
	if err != nil {
		a.raise(owner, FloorAsk, "cannot parse script: "+err.Error())
		return
	}
	pos, text := a.pos, a.text
	a.nested++
	a.file(f, src, cwd, depth)
	a.nested--
	a.pos, a.text = pos, text
}

func (a *analyzer) file(f *syntax.File, src, cwd string, depth int) {
	old := a.sh
	var inherited map[string]shConst
	if old != nil && a.sameShell {
		inherited = old.consts
	}
	same := a.sameShell
	a.sameShell = false // a script nested in this one is its own case
	defer func() { a.sameShell = same }()
	a.sh = &shellCtx{src: src}
	a.sh.consts = a.scriptConsts(f, inherited)
	a.sh.fns = scriptFuncs(f)
	for _, s := range f.Stmts {
		if fd, ok := s.Cmd.(*syntax.FuncDecl); ok && fd.Name != nil {
			if a.sh.funcs == nil {
				a.sh.funcs = map[string]uint{}
			}
			if _, seen := a.sh.funcs[fd.Name.Value]; !seen {
				a.sh.funcs[fd.Name.Value] = fd.Pos().Offset()
			}
		}
	}
	st := &shState{cwd: cwd}
	a.stmts(f.Stmts, st, depth)
	a.sh = old
}

func (a *analyzer) stmts(list []*syntax.Stmt, st *shState, depth int) {
	for _, s := range list {
		a.stmt(s, st, depth)
	}
}

// fork returns a copy of st for a subshell or a branch.
func (st *shState) fork() *shState {
	c := *st
	c.env = append([]string(nil), st.env...)
	return &c
}

func (a *analyzer) stmt(s *syntax.Stmt, st *shState, depth int) {
	if s == nil {
		return
	}
	a.nest++
	defer func() { a.nest-- }()
	if depth > maxDepth || a.nest > maxNest {
		a.setPos(s.Pos(), s.Pos(), s.End())
		i := a.add(Item{Action: "tool:bash:" + a.srcText(s.Pos(), s.End()), Categories: categories(catExecute)})
		a.raise(i, FloorAsk, "command nested too deeply to analyze")
		return
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		a.call(c, s, st, depth)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			a.stmt(c.X, st.fork(), depth)
			a.stmt(c.Y, st.fork(), depth)
		} else {
			a.stmt(c.X, st, depth)
			a.stmt(c.Y, st, depth)
		}
	case *syntax.Subshell:
		a.stmts(c.Stmts, st.fork(), depth)
	case *syntax.Block:
		a.stmts(c.Stmts, st, depth)
	case *syntax.FuncDecl:
		if c.Name != nil && a.sh != nil && a.sh.fns.decls[c.Name.Value] == c {
			return // analyzed at each call (shfunc.go)
		}
		a.stmt(c.Body, st.fork(), depth)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			a.stmts(ic.Cond, st, depth)
			a.stmts(ic.Then, st.fork(), depth)
		}
	case *syntax.WhileClause:
		a.stmts(c.Cond, st, depth)
		a.stmts(c.Do, st.fork(), depth)
	case *syntax.ForClause:
		a.walkSubs(c.Loop, st, depth)
		a.stmts(c.Do, st.fork(), depth)
	case *syntax.CaseClause:
		a.walkSubs(c.Word, st, depth)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				a.walkSubs(p, st, depth)
			}
			a.stmts(it.Stmts, st.fork(), depth)
		}
	case *syntax.TimeClause:
		a.stmt(c.Stmt, st, depth)
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, st.fork(), depth)
	case *syntax.TestDecl:
		a.walkSubs(c.Description, st, depth)
		a.stmt(c.Body, st.fork(), depth)
	case *syntax.DeclClause:
		a.walkSubs(c, st, depth)
		a.codeInAssigns(c.Args, s)
		printing := false // declare -p, export -p: names are printed, not set
		for _, as := range c.Args {
			if as.Name == nil && as.Naked && as.Value != nil {
				if v := as.Value.Lit(); strings.HasPrefix(v, "-") && strings.Contains(v, "p") {
					printing = true
				}
			}
		}
		for _, as := range c.Args {
			if as.Name != nil && dangerousEnv(as.Name.Value) {
				st.env = append(st.env, as.Name.Value+"="+a.assignValue(as))
			}
			if as.Name == nil && as.Naked && as.Value != nil && !printing {
				// export $x: the name itself is dynamic.
				if v, fl := a.resolveWord(as.Value); fl != 0 {
					st.env = append(st.env, v+"=") // unknown name: dangerousEnv assumes the worst
				}
			}
		}
	default:
		a.walkSubs(c, st, depth)
	}
	for _, r := range s.Redirs {
		a.redirect(r, s, st, depth)
	}
}

// walkSubs analyzes every command substitution, process substitution and
// nested statement inside node.
func (a *analyzer) walkSubs(node syntax.Node, st *shState, depth int) {
	if node == nil {
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			a.stmts(n.Stmts, st.fork(), depth)
			return false
		case *syntax.ProcSubst:
			a.stmts(n.Stmts, st.fork(), depth)
			return false
		case *syntax.Stmt:
			a.stmt(n, st.fork(), depth)
			return false
		}
		return true
	})
}

// srcText returns the source between two positions of the current source.
func (a *analyzer) srcText(from, to syntax.Pos) string {
	if a.sh == nil {
		return ""
	}
	f, t := from.Offset(), to.Offset()
	if f > t || t > uint(len(a.sh.src)) {
		return ""
	}
	return a.sh.src[f:t]
}

// setPos records the position and text of the command being analyzed
// (the position only at the outermost level).
func (a *analyzer) setPos(p, from, to syntax.Pos) {
	if a.nested == 0 && p.IsValid() {
		a.pos = Pos{Line: int(p.Line()), Col: int(p.Col())}
	}
	a.text = a.srcText(from, to)
}

// stmtEnd is where statement s's command and redirections end.
func stmtEnd(s *syntax.Stmt) syntax.Pos {
	end := s.End()
	if s.Semicolon.IsValid() && s.Cmd != nil {
		end = s.Cmd.End()
		for _, r := range s.Redirs {
			if e := r.End(); e.After(end) {
				end = e
			}
		}
	}
	return end
}

func (a *analyzer) call(c *syntax.CallExpr, s *syntax.Stmt, st *shState, depth int) {
	for _, as := range c.Assigns {
		a.walkSubs(as, st, depth)
	}
	for _, w := range c.Args {
		a.walkSubs(w, st, depth)
	}
	a.codeInAssigns(c.Assigns, s)
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			if as.Name != nil && dangerousEnv(as.Name.Value) {
				st.env = append(st.env, as.Name.Value+"="+a.assignValue(as))
			}
		}
		return
	}
	a.setPos(s.Pos(), s.Pos(), stmtEnd(s))
	w := a.resolveWords(c.Args)
	if w.len() == 0 {
		return // "$@" of a function called without arguments
	}
	var env []string
	for _, as := range c.Assigns {
		if as.Name != nil {
			env = append(env, as.Name.Value+"="+a.assignValue(as))
		}
	}
	env = append(env, st.env...)
	if !w.flagged(0) {
		name := w.s[0]
		if a.callFunc(name, w, c, st, depth) {
			return
		}
		if off, ok := a.sh.funcs[name]; ok && off < c.Pos().Offset() {
			return // a call of a function declared earlier; its body was analyzed
		}
		switch name {
		case "cd", "pushd", "popd":
			// No item: cd only changes where later relative paths are,
			// which the path items of later commands already show.
			a.changeDir(w, st)
			return
		case "exec":
			if w.len() == 1 {
				return // exec with redirections only
			}
		}
		if shellInternal.get()[name] {
			return
		}
	}
	start := len(a.items)
	a.withEnv(env, func() { a.cmd(w, st.cwd, depth) })
	if path.IsAbs(st.cwd) && !strings.ContainsAny(st.cwd, "$`~") {
		for i := start; i < len(a.items); i++ {
			if a.items[i].Cwd == "" && a.items[i].Argv != nil {
				a.items[i].Cwd = path.Clean(st.cwd)
			}
		}
	}
	// A shell fed a script on stdin by a heredoc or here-string: parse
	// that script too (the shell item is FloorAsk already).
	if !w.flagged(0) && programs.Is(w.s[0], programs.Shell) && len(a.items) > start {
		for _, r := range s.Redirs {
			var body *syntax.Word
			switch r.Op {
			case syntax.Hdoc, syntax.DashHdoc:
				body = r.Hdoc
			case syntax.WordHdoc:
				body = r.Word
			}
			if body == nil {
				continue
			}
			text, fl := a.resolveWord(body)
			if fl != 0 {
				text = a.srcText(body.Pos(), body.End())
			}
			a.script(text, st.cwd, depth+1, start)
		}
	}
}

// shellInternal are bash builtins that only change the shell's own state
// or exit status and cannot start programs or touch files; in a shell line
// they produce no item (their substitutions and redirections still do).
var shellInternal = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		":": true, "true": true, "false": true, "read": true, "shift": true, "unset": true,
		"return": true, "exit": true, "break": true, "continue": true, "wait": true,
		"getopts": true, "set": true, "shopt": true, "umask": true, "local": true,
		"test": true, "[": true, "dirs": true,
	}
}}

// printsOnly reports the builtins that only print the shell's state in
// the form w has: alias with no operands or -p, and compgen without -C or
// -F (which run a command or function to complete).
func printsOnly(w words) bool {
	switch w.s[0] {
	case "alias":
		for i := 1; i < w.len(); i++ {
			if w.flagged(i) || w.s[i] != "-p" {
				return false
			}
		}
		return true
	case "compgen":
		for i := 1; i < w.len(); i++ {
			if w.flagged(i) || (strings.HasPrefix(w.s[i], "-") && strings.ContainsAny(w.s[i], "CF")) {
				return false
			}
		}
		return true
	}
	return false
}

// codeInAssigns adds a FloorAsk item for every assignment whose literal
// value holds shell code ($(...) or backticks in quotes): bash runs such
// text later without any substitution in the source, e.g. x='a[$(cmd)]';
// (( x )) or ${x@P}.
func (a *analyzer) codeInAssigns(assigns []*syntax.Assign, s *syntax.Stmt) {
	for _, as := range assigns {
		if as.Value == nil {
			continue
		}
		v, fl := a.resolveWord(as.Value)
		if fl != 0 || !(strings.Contains(v, "$(") || strings.Contains(v, "`")) {
			continue
		}
		a.setPos(as.Pos(), as.Pos(), as.End())
		i := a.add(Item{Action: "tool:bash:" + a.text, Categories: categories(catExecute)})
		a.raise(i, FloorAsk, "variable holds shell code that arithmetic, ${x@P} or eval would run")
	}
}

// changeDir applies cd/pushd/popd to st.cwd.
func (a *analyzer) changeDir(w words, st *shState) {
	args := w.from(1)
	for args.len() > 0 && !args.flagged(0) && strings.HasPrefix(args.s[0], "-") && args.s[0] != "-" {
		if args.s[0] == "--" {
			args = args.from(1)
			break
		}
		args = args.from(1)
	}
	switch {
	case w.s[0] == "popd" || args.len() == 0:
		st.cwd = "~"
		if w.s[0] == "popd" {
			st.cwd = "$OLDPWD"
		}
	case args.flagged(0):
		st.cwd = args.s[0]
	case args.s[0] == "-":
		st.cwd = "$OLDPWD"
	case st.cwd == "" && !strings.HasPrefix(args.s[0], "/"):
		st.cwd = resolvePath(args.s[0], false, "")
	default:
		st.cwd = resolvePath(args.s[0], false, st.cwd)
	}
}

// redirect adds a create_file item for an output redirection's target.
func (a *analyzer) redirect(r *syntax.Redirect, s *syntax.Stmt, st *shState, depth int) {
	a.walkSubs(r.Word, st, depth)
	if r.Hdoc != nil {
		a.walkSubs(r.Hdoc, st, depth)
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
	case syntax.DplOut:
		v, fl := a.resolveWord(r.Word)
		if fl == 0 && (isDigits(v) || v == "-" || (len(v) > 1 && v[len(v)-1] == '-' && isDigits(v[:len(v)-1]))) {
			return
		}
	default:
		return
	}
	if r.Word == nil {
		return
	}
	if len(r.Word.Parts) == 1 {
		if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
			return // > >(cmd): the output goes to cmd, whose items are above
		}
	}
	v, fl := a.resolveWord(r.Word)
	a.setPos(r.OpPos, s.Pos(), stmtEnd(s))
	switch r.Op {
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob:
		a.appending = true
		defer func() { a.appending = false }()
	}
	a.withEnv(st.env, func() { a.pathItem("create_file", v, fl != 0, st.cwd) })
}

// resolveWords expands words the way bash would where that is static.
func (a *analyzer) resolveWords(ws []*syntax.Word) words {
	r := words{s: make([]string, 0, len(ws))}
	var flags []uint8
	for _, w := range ws {
		if args, ok := a.allArgs(w); ok {
			r.s = append(r.s, args...)
			flags = append(flags, make([]uint8, len(args))...)
			continue
		}
		v, fl := a.resolveWord(w)
		r.s = append(r.s, v)
		flags = append(flags, fl)
		if fl != 0 {
			r.flags = flags
		}
	}
	if r.flags != nil {
		r.flags = flags
	}
	return r
}

// resolveWord returns w's value after quote removal, or, when any part is
// dynamic (parameter, command or arithmetic expansion) or a pattern (an
// unquoted glob, brace expansion, leading tilde), its source text and the
// flags saying so.
func (a *analyzer) resolveWord(w *syntax.Word) (string, uint8) {
	if w == nil || len(w.Parts) == 0 {
		return "", 0
	}
	var b strings.Builder
	var shape strings.Builder // unquoted characters, others as 'x'
	var fl uint8
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				fl |= flagPattern
			}
			for j := 0; j < len(v); j++ {
				c := v[j]
				if c == '\\' && j+1 < len(v) {
					j++
					if v[j] != '\n' {
						b.WriteByte(v[j])
						shape.WriteByte('x')
					}
					continue
				}
				switch c {
				case '*', '?':
					fl |= flagPattern
				case '[':
					if strings.IndexByte(v[j:], ']') > 0 {
						fl |= flagPattern
					}
				}
				b.WriteByte(c)
				shape.WriteByte(c)
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
			shape.WriteByte('x')
		case *syntax.DblQuoted:
			for _, dp := range p.Parts {
				if l, ok := dp.(*syntax.Lit); ok {
					b.WriteString(unescapeDQ(l.Value))
				} else if pe, ok := dp.(*syntax.ParamExp); ok {
					if v, ok := a.constParam(pe, true); ok {
						b.WriteString(v)
					} else if v, ok := a.posParam(pe, true); ok {
						b.WriteString(v)
					} else {
						fl |= flagDynamic
					}
				} else {
					fl |= flagDynamic
				}
			}
			shape.WriteByte('x')
		case *syntax.ParamExp:
			if v, ok := a.constParam(p, false); ok {
				b.WriteString(v)
				shape.WriteByte('x')
			} else if v, ok := a.posParam(p, false); ok {
				b.WriteString(v)
				shape.WriteByte('x')
			} else {
				fl |= flagDynamic
			}
		case *syntax.ExtGlob:
			fl |= flagPattern
		default:
			fl |= flagDynamic
		}
	}
	if hasBraceExpansion(shape.String()) {
		fl |= flagPattern
	}
	if fl != 0 {
		return a.srcText(w.Pos(), w.End()), fl
	}
	return b.String(), 0
}

// hasBraceExpansion reports an unquoted {a,b} or {x..y} in shape.
func hasBraceExpansion(s string) bool {
	for {
		o := strings.IndexByte(s, '{')
		if o < 0 {
			return false
		}
		c := strings.IndexByte(s[o:], '}')
		if c < 0 {
			return false
		}
		inner := s[o+1 : o+c]
		if strings.Contains(inner, ",") || strings.Contains(inner, "..") {
			return true
		}
		s = s[o+1:]
	}
}

// unescapeDQ removes the backslashes bash removes inside double quotes.
func unescapeDQ(v string) string {
	if strings.IndexByte(v, '\\') < 0 {
		return v
	}
	var b strings.Builder
	for j := 0; j < len(v); j++ {
		if v[j] == '\\' && j+1 < len(v) {
			switch v[j+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(v[j+1])
				j++
				continue
			case '\n':
				j++
				continue
			}
		}
		b.WriteByte(v[j])
	}
	return b.String()
}

// ansiC decodes the body of a $'...' string as bash does (a \0 ends it).
func ansiC(v string) string {
	if strings.IndexByte(v, '\\') < 0 {
		return v
	}
	var b strings.Builder
	hexVal := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c >= 'a' && c <= 'f':
			return int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			return int(c-'A') + 10
		}
		return -1
	}
	for j := 0; j < len(v); j++ {
		c := v[j]
		if c != '\\' || j+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		j++
		switch e := v[j]; e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if j+1 < len(v) {
				j++
				b.WriteByte(v[j] & 0x1f)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			n, k := 0, 0
			for k < max && j+1 < len(v) && hexVal(v[j+1]) >= 0 {
				n = n*16 + hexVal(v[j+1])
				j++
				k++
			}
			if k == 0 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			if e == 'x' {
				if n == 0 {
					return b.String()
				}
				b.WriteByte(byte(n))
			} else {
				if n == 0 {
					return b.String()
				}
				if utf8.ValidRune(rune(n)) {
					b.WriteRune(rune(n))
				}
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, k := int(e-'0'), 1
			for k < 3 && j+1 < len(v) && v[j+1] >= '0' && v[j+1] <= '7' {
				n = n*8 + int(v[j+1]-'0')
				j++
				k++
			}
			if n&0xff == 0 {
				return b.String()
			}
			b.WriteByte(byte(n))
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

// assignValue is the literal value of an assignment, or "$" when it is not
// known statically (the environment rule then assumes the worst).
func (a *analyzer) assignValue(as *syntax.Assign) string {
	if as.Value == nil {
		return ""
	}
	v, fl := a.resolveWord(as.Value)
	if fl != 0 {
		return "$"
	}
	return v
}
