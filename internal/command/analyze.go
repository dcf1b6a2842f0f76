package command

import (
	"strings"

	"github.com/agentbox/agentbox/internal/programs"
)

// maxDepth bounds nesting of wrappers, sh -c scripts and eval: deeper input
// gets one FloorAsk item instead of more analysis, so hostile input cannot
// make the parser recurse without end.
const maxDepth = 16

// handler analyzes one program start whose argv[0] base name selected it.
type handler func(a *analyzer, w words, cwd string, depth int)

// handlers maps program base names to their analysis; a name missing here is
// a plain program start (the fast path). Built on first use by
// buildHandlers (registry.go).
var handlers lazyTable[string, handler]

// lookupHandler returns the handler for base, or nil.
func lookupHandler(base string) handler {
	hs := handlers.get()
	if h, ok := hs[base]; ok {
		return h
	}
	if len(base) > 4 && strings.HasPrefix(base, "git-") {
		return hGitDashed
	}
	if f := programs.Family(base); f != base {
		return hs[f]
	}
	return nil
}

// analyzer collects Items for one FromArgv or ParseShell call.
type analyzer struct {
	items []Item
	// appending: the path items being added only append (>>, tee -a)
	appending bool
	pos       Pos    // position of the simple command being analyzed
	text      string // its source text
	// nested > 0 while analyzing a script taken out of an argument (sh -c,
	// eval, watch): items keep the outer command's position.
	nested int
	// inherit is a floor applied to every item added while set (an
	// environment assignment such as GIT_SSH_COMMAND=... prefixes them).
	inherit       Floor
	inheritReason string
	// env are the loader and runtime variables (NAME=value) set for the
	// items being added; exec and git items carry them (Item.Env) and the
	// policy engine decides them (see envinject.go).
	env  []string
	sh   *shellCtx // non-nil while parsing shell text
	nest int       // statement nesting depth in the current script
	// sameShell is set while a script that runs in the current shell (a
	// trap handler) is analyzed: it sees the enclosing script's constants.
	sameShell bool
}

// add appends it with the current position and text and the inherited
// floor, returning its index.
func (a *analyzer) add(it Item) int {
	it.Pos = a.pos
	it.Text = a.text
	if a.inherit > FloorNone {
		raiseItem(&it, a.inherit, a.inheritReason)
	}
	if len(a.env) > 0 && len(it.Argv) > 0 {
		it.Env = append([]string(nil), a.env...)
	}
	a.items = append(a.items, it)
	return len(a.items) - 1
}

// raiseItem lifts it's floor to at least f, recording reason. An item with
// a floor is never a Wrapper item: it must be judged itself.
func raiseItem(it *Item, f Floor, reason string) {
	if f > FloorNone {
		it.Wrapper = false
	}
	switch {
	case f > it.Floor:
		it.Floor = f
		it.FloorReason = reason
	case f == it.Floor && f > FloorNone && reason != "" && !strings.Contains(it.FloorReason, reason):
		if it.FloorReason == "" {
			it.FloorReason = reason
		} else {
			it.FloorReason += "; " + reason
		}
	}
}

// raise lifts item i's floor.
func (a *analyzer) raise(i int, f Floor, reason string) {
	if i >= 0 && i < len(a.items) {
		raiseItem(&a.items[i], f, reason)
	}
}

// raiseFrom lifts the floor of every item from index i on.
func (a *analyzer) raiseFrom(i int, f Floor, reason string) {
	for ; i < len(a.items); i++ {
		raiseItem(&a.items[i], f, reason)
	}
}

// normArgv0 returns w with argv[0] replaced by its base name (a copy when it
// changes; w's slices are never modified).
func normArgv0(w words) words {
	if len(w.s) == 0 || w.flagged(0) {
		return w
	}
	b := baseName(w.s[0])
	if b == w.s[0] {
		return w
	}
	s := make([]string, len(w.s))
	copy(s, w.s)
	s[0] = b
	return words{s: s, flags: w.flags}
}

// actionOf renders prefix followed by w's words (see joinWords).
func actionOf(prefix string, w words) string { return joinWords(prefix, w) }

// execItem adds a tool:exec item for w (argv[0] reduced to its base name).
func (a *analyzer) execItem(w words, cats uint8, wrapper bool) int {
	w = normArgv0(w)
	return a.add(Item{
		Action:     actionOf("tool:exec:", w),
		Argv:       w.s,
		Categories: categories(cats),
		Wrapper:    wrapper,
	})
}

// pathItem adds a tool:create_file or tool:delete item for path p.
func (a *analyzer) pathItem(tool string, p string, dynamic bool, cwd string) int {
	if tool == "create_file" && !dynamic && harmlessWrite(p) {
		return -1
	}
	rp := resolvePath(p, dynamic, cwd)
	var cats uint8 = catWrite
	if tool == "delete" {
		cats |= catDestructive
	}
	if strings.HasPrefix(rp, "/dev/tcp/") || strings.HasPrefix(rp, "/dev/udp/") {
		cats |= catNetwork // bash opens a socket for these
	}
	return a.add(Item{
		Action:     "tool:" + tool + ":" + rp,
		Categories: categories(cats),
		Appends:    tool == "create_file" && a.appending,
	})
}

// pathWord adds a path item for word i of w.
func (a *analyzer) pathWord(tool string, w words, i int, cwd string) int {
	return a.pathItem(tool, w.s[i], w.flagged(i), cwd)
}

// cmd analyzes one program start.
func (a *analyzer) cmd(w words, cwd string, depth int) {
	if w.len() == 0 {
		return
	}
	if depth > maxDepth {
		i := a.execItem(w, catExecute, false)
		a.raise(i, FloorAsk, "command nested too deeply to analyze")
		return
	}
	if w.flagged(0) {
		i := a.execItem(w, catExecute, false)
		a.raise(i, FloorAsk, "dynamic command name "+w.s[0])
		return
	}
	base := baseName(w.s[0])
	if base == "" {
		i := a.execItem(w, catExecute, false)
		a.raise(i, FloorAsk, "empty command name")
		return
	}
	if a.sh != nil && w.s[0] == base && (shellInternal.get()[base] || printsOnly(w)) {
		return // a builtin with no effect, also through a wrapper: \builtin unset X, command alias -p
	}
	if h := lookupHandler(base); h != nil {
		h(a, w, cwd, depth)
		return
	}
	a.execItem(w, programCategories(base), false)
}

// FromArgv returns the Items one program start would do: argv as the kernel
// would receive it, cwd the process's working directory ("" if unknown;
// relative paths in path items are joined to it). argv[0] is reduced to its
// base name in actions and Argv ("/usr/bin/git push" is tool:git:push).
// Item.Argv may share argv's backing array; callers must not modify either.
// Items from argv input have a zero Pos and an empty Text, except items
// found in scripts inside arguments (sh -c), whose Text is the inner
// simple command.
//
// Input that holds a NUL byte cannot come from a real exec and is
// FloorDeny. FromArgv never fails and never touches the file system.
func FromArgv(argv []string, cwd string) []Item {
	if len(argv) == 0 {
		return nil
	}
	for _, s := range argv {
		if strings.IndexByte(s, 0) >= 0 {
			w := normArgv0(words{s: argv})
			return []Item{{
				Action:      actionOf("tool:exec:", w),
				Argv:        w.s,
				Categories:  categories(catExecute),
				Floor:       FloorDeny,
				FloorReason: "NUL byte in argument",
			}}
		}
	}
	base := baseName(argv[0])
	if base != "" && lookupHandler(base) == nil {
		// Fast path: a plain program (no wrapper, git, interpreter or tool
		// with write/exec options). Two allocations: action and slice.
		w := normArgv0(words{s: argv})
		return []Item{{
			Action:     actionOf("tool:exec:", w),
			Argv:       w.s,
			Categories: categories(programCategories(base)),
		}}
	}
	// One allocation for the analyzer and room for two items (a wrapper
	// and its command, a git run and a path): the result slice keeps it.
	b := &struct {
		a   analyzer
		buf [2]Item
	}{}
	b.a.items = b.buf[:0]
	b.a.cmd(words{s: argv}, cwd, 0)
	return b.a.items
}
