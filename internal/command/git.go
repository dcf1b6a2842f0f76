package command

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// GlobalOpt is one git global option (before the subcommand), as given.
type GlobalOpt struct {
	Name     string // "-C", "-c", "--git-dir", "-p", ...
	Value    string // its argument, if any
	HasValue bool
}

// Git is a git argv with its global options parsed off, the way git's own
// handle_options does, so the real subcommand is known.
type Git struct {
	Globals []GlobalOpt
	// Sub is the subcommand ("push", or an unknown word that may be an
	// alias). Empty when argv has none; for information-only global
	// options (git --exec-path, --html-path, --list-cmds=...) it is that
	// option; git --version and git --help become "version" and "help".
	Sub  string
	Args []string
	// ConfigKeys are the keys set for this run with -c/--config-env (and
	// clone's -c/--config), as written.
	ConfigKeys []string
	// RunsPrograms says why this git run may start programs other than git
	// itself, beyond its hooks: a config key such as core.sshCommand, an
	// --exec-path, an --upload-pack, a config write of such a key.
	RunsPrograms []string
	// Dirs are the -C directories in order.
	Dirs []string
	// Outputs are files the subcommand writes by option (--output,
	// format-patch -o DIR, archive -o, bundle create FILE, config --file).
	Outputs []string
}

// ErrNotGit is returned by ParseGit for an argv that is not a git run.
var ErrNotGit = errors.New("argv[0] is not git")

// gitGlobalArg are the global options that take a value, as "--x=v" or
// "--x v" (and -C/-c as separate words).
var gitGlobalArg = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		"--git-dir": true, "--work-tree": true, "--namespace": true, "--super-prefix": true,
		"--config-env": true, "--shallow-file": true, "--attr-source": true, "--list-cmds": true,
		"--exec-path": true,
	}
}}

// gitGlobalFlag are the global options without value.
var gitGlobalFlag = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		"-p": true, "--paginate": true, "-P": true, "--no-pager": true, "--bare": true,
		"--no-replace-objects": true, "--no-lazy-fetch": true, "--no-advice": true,
		"--literal-pathspecs": true, "--glob-pathspecs": true, "--noglob-pathspecs": true,
		"--icase-pathspecs": true, "--no-optional-locks": true,
	}
}}

// ParseGit parses a git argv (argv[0] "git" or a path ending in /git). It
// returns as much as it could parse; err reports what git itself would
// reject or what cannot be judged (a missing option value, an unknown
// global option — which might take a value in a newer git and hide the
// real subcommand). Callers should treat an error as at least ask.
//
// git's dashed programs parse as the subcommand they are: argv
// ["/usr/lib/git-core/git-push", "origin"] is Sub "push", Args ["origin"].
func ParseGit(argv []string) (Git, error) {
	if len(argv) > 0 {
		if b := baseName(argv[0]); len(b) > 4 && strings.HasPrefix(b, "git-") {
			argv = append([]string{"git", b[4:]}, argv[1:]...)
		}
	}
	if len(argv) == 0 || baseName(argv[0]) != "git" {
		return Git{}, ErrNotGit
	}
	g, _, problem := parseGitWords(words{s: argv})
	if problem != "" {
		return g, fmt.Errorf("git argv %q: %s", Join(argv), problem)
	}
	return g, nil
}

// parseGitWords parses git's global options in w. subIdx is the index of
// the subcommand word in w (w.len() if none); problem says why the parse
// cannot be trusted.
func parseGitWords(w words) (g Git, subIdx int, problem string) {
	note := func(p string) {
		if problem == "" {
			problem = p
		}
	}
	i := 1
	for i < w.len() {
		s := w.s[i]
		if w.flagged(i) {
			note("dynamic word " + s + " before the git subcommand")
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		i++
		val := func(name string) (string, bool) {
			if i < w.len() {
				v := w.s[i]
				if w.flagged(i) {
					note("dynamic value " + v + " for git " + name)
				}
				i++
				return v, true
			}
			note("git " + name + " needs a value")
			return "", false
		}
		switch {
		case s == "-C":
			v, ok := val(s)
			g.Globals = append(g.Globals, GlobalOpt{Name: s, Value: v, HasValue: ok})
			if ok {
				g.Dirs = append(g.Dirs, v)
			}
		case strings.HasPrefix(s, "-C"):
			// git rejects "-Cdir"; read it as -C dir to be safe.
			g.Globals = append(g.Globals, GlobalOpt{Name: "-C", Value: s[2:], HasValue: true})
			g.Dirs = append(g.Dirs, s[2:])
		case s == "-c":
			v, ok := val(s)
			g.Globals = append(g.Globals, GlobalOpt{Name: s, Value: v, HasValue: ok})
			if ok {
				g.addConfig(v)
			}
		case strings.HasPrefix(s, "-c"):
			// git rejects "-ck=v"; read it as -c k=v to be safe.
			g.Globals = append(g.Globals, GlobalOpt{Name: "-c", Value: s[2:], HasValue: true})
			g.addConfig(s[2:])
		case s == "-h" || s == "--help":
			g.Globals = append(g.Globals, GlobalOpt{Name: s})
			g.Sub = "help"
			g.Args = w.s[i:]
			return g, i - 1, problem
		case s == "-v" || s == "--version":
			g.Globals = append(g.Globals, GlobalOpt{Name: s})
			g.Sub = "version"
			g.Args = w.s[i:]
			return g, i - 1, problem
		case s == "--exec-path":
			g.Globals = append(g.Globals, GlobalOpt{Name: s})
			g.Sub = s
			return g, i - 1, problem
		case s == "--html-path" || s == "--man-path" || s == "--info-path":
			g.Globals = append(g.Globals, GlobalOpt{Name: s})
			g.Sub = s
			return g, i - 1, problem
		case gitGlobalFlag.get()[s]:
			g.Globals = append(g.Globals, GlobalOpt{Name: s})
			if s == "-p" || s == "--paginate" {
				g.RunsPrograms = append(g.RunsPrograms, s+" pipes the output through the configured pager (core.pager, pager.<cmd>)")
			}
		default:
			name, v, has := strings.Cut(s, "=")
			if !gitGlobalArg.get()[name] {
				note("unknown git global option " + s)
				g.Globals = append(g.Globals, GlobalOpt{Name: name, Value: v, HasValue: has})
				continue
			}
			if !has {
				if name == "--list-cmds" {
					note("git --list-cmds needs =value")
				}
				v, has = val(name)
			}
			g.Globals = append(g.Globals, GlobalOpt{Name: name, Value: v, HasValue: has})
			switch name {
			case "--exec-path":
				g.RunsPrograms = append(g.RunsPrograms, "--exec-path="+v+" makes git run its subcommands from that directory")
			case "--config-env":
				// name=ENVVAR: the key is before the last '='.
				if k := strings.LastIndexByte(v, '='); k > 0 {
					g.addConfig(v[:k]) // the value is an environment variable's, unknown here
				} else {
					note("git --config-env needs name=envvar")
				}
			case "--list-cmds":
				g.Sub = s
				return g, i - 1, problem
			}
		}
	}
	if i < w.len() {
		g.Sub = w.s[i]
		if w.flagged(i) {
			note("dynamic git subcommand " + w.s[i])
		}
		g.Args = w.s[i+1:]
		return g, i, problem
	}
	return g, i, problem
}

// addConfig records a -c key[=value] and whether the key makes git run
// programs.
func (g *Git) addConfig(kv string) {
	k, v, hasValue := strings.Cut(kv, "=")
	g.ConfigKeys = append(g.ConfigKeys, k)
	if hasValue && GitValueDisables(k, v) {
		return
	}
	if why := GitKeyRunsPrograms(k); why != "" {
		g.RunsPrograms = append(g.RunsPrograms, "config "+k+" "+why)
	}
}

// gitProgramKeys are config keys (lower-case section.name, with "*" for
// any subsection) whose value is, or selects, a program or shell command
// git runs, or that pull in configuration, hooks or code from elsewhere.
var gitProgramKeys = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		"core.sshcommand": true, "core.pager": true, "core.editor": true, "core.fsmonitor": true,
		"core.hookspath": true, "core.gitproxy": true, "core.askpass": true,
		"core.alternaterefscommand": true, "core.worktree": true, "core.attributesfile": true,
		"diff.external": true, "gpg.program": true, "credential.helper": true, "sequence.editor": true,
		"uploadpack.packobjectshook": true, "protocol.allow": true, "init.templatedir": true,
		"include.path": true, "safe.directory": true, "ssh.variant": true, "man.viewer": true,
		"web.browser": true, "interactive.difffilter": true, "sendemail.sendmailcmd": true,
		"sendemail.smtpserver": true, "sendemail.tocmd": true, "sendemail.cccmd": true,
		"sendemail.headercmd": true, "merge.tool": false,
		"diff.*.textconv": true, "diff.*.command": true, "difftool.*.cmd": true, "difftool.*.path": true,
		"mergetool.*.cmd": true, "mergetool.*.path": true, "merge.*.driver": true, "gpg.*.program": true,
		"gpg.ssh.defaultkeycommand": true, "credential.*.helper": true, "protocol.*.allow": true,
		"remote.*.uploadpack": true, "remote.*.receivepack": true, "remote.*.vcs": true,
		"url.*.insteadof": true, "url.*.pushinsteadof": true, "man.*.cmd": true, "man.*.path": true,
		"browser.*.cmd": true, "browser.*.path": true, "includeif.*.path": true,
		"submodule.*.update": true, "trailer.*.command": true, "trailer.*.cmd": true,
		"hook.*.command": true, "help.autocorrect": true,
	}
}}

// GitValueDisables reports whether setting program-running key k to v
// turns the feature off rather than naming a program — the hardening
// options agents pass (-c core.hooksPath=/dev/null, -c core.fsmonitor=,
// -c core.pager=cat, -c credential.helper= which empties the helper list).
func GitValueDisables(k, v string) bool {
	v = strings.TrimSpace(v)
	switch strings.ToLower(strings.TrimSpace(k)) {
	case "core.hookspath":
		// Empty (Gemini CLI's hardening): git looks for hooks in "/",
		// where the sandbox cannot write.
		return v == "/dev/null" || v == ""
	case "core.fsmonitor":
		switch strings.ToLower(v) {
		case "", "false", "no", "off", "0":
			return true
		}
	case "core.pager", "pager.diff", "pager.log", "pager.show", "pager.branch", "pager.status":
		switch strings.ToLower(v) {
		case "", "cat", "false", "no", "off", "0":
			return true
		}
	case "credential.helper", "core.sshcommand", "core.askpass", "core.editor", "sequence.editor", "diff.external":
		return v == ""
	}
	return false
}

// gitProgramSections are sections where any key runs or selects programs.
var gitProgramSections = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{"alias": true, "filter": true, "pager": true, "hook": true}
}}

// GitKeyRunsPrograms returns why config key k makes git run programs, or "".
// Section and variable names compare case-insensitively, subsections
// exactly (as git does).
func GitKeyRunsPrograms(k string) string {
	k = strings.TrimSpace(k)
	first := strings.IndexByte(k, '.')
	last := strings.LastIndexByte(k, '.')
	if first <= 0 || last == len(k)-1 {
		if first < 0 && gitProgramSections.get()[strings.ToLower(k)] {
			return "names a section whose values are programs"
		}
		return ""
	}
	section := strings.ToLower(k[:first])
	name := strings.ToLower(k[last+1:])
	if gitProgramSections.get()[section] {
		if section == "alias" {
			return "defines an alias (a shell command with !, or a new meaning for a subcommand)"
		}
		return "sets a program git runs"
	}
	if first == last {
		if gitProgramKeys.get()[section+"."+name] {
			return "sets a program or code source git uses"
		}
		return ""
	}
	sub := k[first+1 : last]
	if gitProgramKeys.get()[section+".*."+name] || gitProgramKeys.get()[section+"."+strings.ToLower(sub)+"."+name] {
		return "sets a program or code source git uses"
	}
	return ""
}

// gitSubCats are categories of git subcommands (before option-dependent
// additions such as push --force).
var gitSubCats = lazyTable[string, uint8]{build: func() map[string]uint8 {
	return map[string]uint8{
		"status": catRead, "diff": catRead, "log": catRead, "show": catRead, "blame": catRead,
		"grep": catRead, "ls-files": catRead, "ls-tree": catRead, "rev-parse": catRead,
		"rev-list": catRead, "describe": catRead, "shortlog": catRead, "cat-file": catRead,
		"show-ref": catRead, "show-branch": catRead, "whatchanged": catRead, "diff-tree": catRead,
		"diff-files": catRead, "diff-index": catRead, "version": catRead, "help": catRead,
		"count-objects": catRead, "fsck": catRead, "name-rev": catRead, "cherry": catRead,
		"var": catRead, "check-ignore": catRead, "check-attr": catRead, "merge-base": catRead,
		"for-each-ref": catRead, "reflog": catRead, "range-diff": catRead, "annotate": catRead,
		"add": catWrite, "commit": catWrite, "stash": catWrite, "checkout": catWrite, "switch": catWrite,
		"tag": catWrite, "branch": catWrite, "mv": catWrite, "notes": catWrite, "init": catWrite,
		"apply": catWrite, "am": catWrite, "cherry-pick": catWrite, "revert": catWrite,
		"worktree": catWrite, "config": catWrite, "sparse-checkout": catWrite, "update-index": catWrite,
		"format-patch": catWrite | catRead, "gc": catWrite, "repack": catWrite, "pack-refs": catWrite,
		"maintenance": catWrite, "restore": catWrite | catDestructive, "reset": catWrite | catDestructive,
		"clean": catWrite | catDestructive, "rm": catWrite | catDestructive, "rebase": catWrite | catDestructive,
		"merge": catWrite, "prune": catWrite | catDestructive, "filter-branch": catWrite | catDestructive,
		"update-ref": catWrite, "symbolic-ref": catWrite, "push": catNetwork | catWrite,
		"pull": catNetwork | catWrite, "fetch": catNetwork | catWrite, "clone": catNetwork | catWrite,
		"ls-remote": catNetwork, "remote": catNetwork | catWrite, "submodule": catNetwork | catWrite,
		"send-email": catNetwork, "request-pull": catNetwork, "archive": catRead | catWrite,
		"bundle": catRead | catWrite, "daemon": catNetwork, "instaweb": catNetwork | catExecute,
		"bisect": catWrite, "difftool": catRead | catExecute, "mergetool": catWrite | catExecute,
	}
}}

// hGit handles a git run: global options parsed off, tool:git item, and
// the subcommand's path, program and config effects.
func hGit(a *analyzer, w words, cwd string, depth int) {
	g, subIdx, problem := parseGitWords(w)
	for _, d := range g.Dirs {
		if cwd == "" && !strings.HasPrefix(d, "/") {
			cwd = d
		} else {
			cwd = resolvePath(d, false, cwd)
		}
	}
	detail := w.from(subIdx)
	if g.Sub != "" && subIdx < w.len() && w.s[subIdx] != g.Sub {
		// help/version spelled as options: "git --help push" is "help push".
		detail = concat(words{s: []string{g.Sub}}, w.from(subIdx+1))
	}
	if subIdx >= w.len() && g.Sub != "" {
		detail = words{s: []string{g.Sub}}
	}
	cats := gitSubCats.get()[g.Sub]
	args := w.from(subIdx + 1)
	r := &gitRun{a: a, g: &g, args: args, cats: cats}
	if h := gitSubHandlers.get()[g.Sub]; h != nil {
		h(r)
	}
	cats = r.cats
	floors, scripts, inner, deletes, deleteCwd := r.floors, r.scripts, r.inner, r.deletes, r.deleteCwd
	// An alias given on the command line (-c alias.NAME=VALUE, the last
	// one wins, as in git) is decided as what it expands to, as the exec
	// supervisor decides it: "git -c alias.p=push p origin" is a push. An
	// alias from a config file is only known where the files are read
	// (the run); here it stays an unknown subcommand.
	if alias, ok := cliAlias(g, g.Sub); ok && depth < 8 {
		if v, isShell := strings.CutPrefix(alias, "!"); isShell {
			scripts = append(scripts, v)
		} else if f := strings.Fields(alias); len(f) > 0 {
			inner = append(inner, concat(words{s: append([]string{"git"}, f...)}, args))
		}
	}

	switch {
	case g.Sub == "" || strings.HasPrefix(g.Sub, "--"):
		cats = catRead
	case cats == 0:
		// unknown subcommand: an alias or a git-<name> program on PATH
		cats = catExecute
	}
	it := a.add(Item{
		Action:     actionOf("tool:git:", detail),
		Argv:       normArgv0(w).s,
		Categories: categories(cats),
	})
	if problem != "" {
		a.raise(it, FloorAsk, problem)
	}
	for _, f := range floors {
		a.raise(it, FloorAsk, f)
	}
	for _, r := range g.RunsPrograms {
		a.raise(it, FloorAsk, "git "+r)
	}
	for _, o := range g.Outputs {
		a.pathItem("create_file", o, false, cwd)
	}
	for _, i := range deletes {
		a.pathWord("delete", args, i, cwd)
	}
	if deleteCwd {
		p := cwd
		if p == "" {
			p = "."
		}
		a.pathItem("delete", p, false, "")
	}
	for _, s := range scripts {
		a.script(s, cwd, depth+1, it)
	}
	for _, iw := range inner {
		a.cmd(iw, cwd, depth+1)
	}
}

// cliAlias returns the value of the last -c alias.<sub>=VALUE among g's
// global options.
func cliAlias(g Git, sub string) (string, bool) {
	if sub == "" {
		return "", false
	}
	want := "alias." + strings.ToLower(sub)
	val, found := "", false
	for _, o := range g.Globals {
		if o.Name != "-c" {
			continue
		}
		if k, v, has := strings.Cut(o.Value, "="); strings.EqualFold(k, want) {
			if !has {
				v = "true"
			}
			val, found = v, true
		}
	}
	return val, found
}

// hGitDashed handles git's dashed programs (/usr/lib/git-core/git-push,
// git-upload-pack, git-lfs): "git-push ARGS" runs as "git push ARGS".
func hGitDashed(a *analyzer, w words, cwd string, depth int) {
	sub := baseName(w.s[0])[len("git-"):]
	hGit(a, concat(words{s: []string{"git", sub}}, w.from(1)), cwd, depth)
}

// gitConfig classifies a git config run: writes of keys that make git run
// programs, --edit, rename-section, --file targets.
//
// It reports whether the run writes configuration.
func (a *analyzer) gitConfig(g *Git, args words, floors *[]string) bool {
	mode := ""
	var pos []int
	for i := 0; i < args.len(); i++ {
		s := args.s[i]
		if args.flagged(i) {
			*floors = append(*floors, "dynamic git config argument "+s)
			pos = append(pos, i)
			continue
		}
		switch {
		case s == "-f" || s == "--file" || s == "--blob":
			if i+1 < args.len() {
				if s != "--blob" {
					g.Outputs = append(g.Outputs, args.s[i+1])
				}
				i++
			}
		case strings.HasPrefix(s, "--file="):
			g.Outputs = append(g.Outputs, s[len("--file="):])
		case s == "--type" || s == "--default" || s == "--comment" || s == "--value" || s == "--url":
			i++
		case s == "--add" || s == "--replace-all" || s == "--unset" || s == "--unset-all" ||
			s == "--get" || s == "--get-all" || s == "--get-regexp" || s == "--get-urlmatch" ||
			s == "-l" || s == "--list" || s == "-e" || s == "--edit" || s == "--rename-section" ||
			s == "--remove-section" || s == "--get-color" || s == "--get-colorbool":
			mode = strings.TrimLeft(s, "-")
		case strings.HasPrefix(s, "-"):
		default:
			pos = append(pos, i)
		}
	}
	if mode == "" && len(pos) > 0 && !strings.Contains(args.s[pos[0]], ".") && !args.flagged(pos[0]) {
		mode = args.s[pos[0]]
		pos = pos[1:]
	}
	write := false
	switch mode {
	case "", "set", "add", "replace-all":
		write = len(pos) >= 2 || (mode == "set" && len(pos) >= 1)
	case "e", "edit":
		*floors = append(*floors, "git config --edit opens an editor that can set any key")
		return true
	case "rename-section":
		*floors = append(*floors, "git config rename-section can move keys into a section git runs programs from")
		return true
	case "unset", "unset-all", "remove-section":
		return true // a write of the config file, but not a new program
	}
	if !write {
		g.Outputs = nil // only read from the --file
		return false
	}
	key := args.s[pos[0]]
	if args.flagged(pos[0]) {
		*floors = append(*floors, "git config write of a dynamic key")
		return true
	}
	if why := GitKeyRunsPrograms(key); why != "" {
		g.RunsPrograms = append(g.RunsPrograms, "config write of "+key+" "+why)
	}
	return true
}

// gitRun is what a git subcommand's handler reads and adds to: the parsed
// run, its arguments after the subcommand, and the effects it finds.
type gitRun struct {
	a         *analyzer
	g         *Git
	args      words    // the words after the subcommand
	cats      uint8    // categories beyond the subcommand's default
	floors    []string // reasons the run needs at least ask
	scripts   []string // shell scripts it runs (parsed recursively)
	inner     []words  // commands it runs (analysed as commands)
	deletes   []int    // indexes into args of paths it deletes
	deleteCwd bool     // it deletes under the working directory
}

// gitSubHandlers are the subcommands whose arguments carry effects beyond
// the subcommand itself (programs run, files written or deleted, config
// set); every other subcommand is decided by its name and categories.
// Built on first use; init only names the builder (the handlers reach
// gitSubHandlers again, an initialisation cycle for a variable initialiser).
var gitSubHandlers lazyTable[string, func(*gitRun)]

func init() { gitSubHandlers.build = buildGitSubHandlers }

func buildGitSubHandlers() map[string]func(*gitRun) {
	return map[string]func(*gitRun){
		"checkout":      gitSubCheckout,
		"switch":        gitSubSwitch,
		"branch":        gitSubBranch,
		"push":          gitSubPush,
		"fetch":         gitSubFetch,
		"pull":          gitSubFetch,
		"ls-remote":     gitSubFetch,
		"clone":         gitSubFetch,
		"archive":       gitSubFetch,
		"diff":          gitSubDiff,
		"log":           gitSubDiff,
		"show":          gitSubDiff,
		"format-patch":  gitSubDiff,
		"whatchanged":   gitSubDiff,
		"range-diff":    gitSubDiff,
		"diff-tree":     gitSubDiff,
		"diff-files":    gitSubDiff,
		"diff-index":    gitSubDiff,
		"bundle":        gitSubBundle,
		"grep":          gitSubGrep,
		"difftool":      gitSubDifftool,
		"send-email":    gitSubSendEmail,
		"instaweb":      gitSubInstaweb,
		"rebase":        gitSubRebase,
		"filter-branch": gitSubFilterBranch,
		"submodule":     gitSubSubmodule,
		"bisect":        gitSubBisect,
		"rm":            gitSubRm,
		"clean":         gitSubClean,
		"config":        gitSubConfig,
	}
}

// gitOpt reads option long (--long=V or --long V) or short (-sV or -s V)
// at args[i].
func gitOpt(a words, i int, long, short string) (string, bool) {
	s := a.s[i]
	if long != "" {
		if v, ok := strings.CutPrefix(s, long+"="); ok {
			return v, true
		}
	}
	if (s == long || (short != "" && s == short)) && i+1 < a.len() {
		return a.s[i+1], true
	}
	if short != "" && len(short) == 2 && strings.HasPrefix(s, short) && len(s) > 2 {
		return s[2:], true
	}
	return "", false
}

func gitSubPush(r *gitRun) {
	for i, s := range r.args.s {
		if r.args.flagged(i) {
			continue
		}
		switch {
		case s == "-f" || s == "--force" || strings.HasPrefix(s, "--force-with-lease") || s == "--force-if-includes" ||
			s == "-d" || s == "--delete" || s == "--mirror" || s == "--prune" ||
			(len(s) > 1 && (s[0] == '+' || s[0] == ':')):
			r.cats |= catDestructive
		}
		for _, o := range []string{"--receive-pack", "--exec"} {
			if v, ok := gitOpt(r.args, i, o, ""); ok {
				r.g.RunsPrograms = append(r.g.RunsPrograms, o+" "+v+" runs a program")
			}
		}
	}
}

func gitSubFetch(r *gitRun) {
	for i := range r.args.s {
		for _, o := range []string{"--upload-pack", "--exec"} {
			if v, ok := gitOpt(r.args, i, o, ""); ok {
				r.g.RunsPrograms = append(r.g.RunsPrograms, o+" "+v+" runs a program")
			}
		}
		if r.g.Sub == "clone" || r.g.Sub == "ls-remote" {
			if v, ok := gitOpt(r.args, i, "--upload-pack", "-u"); ok {
				r.g.RunsPrograms = append(r.g.RunsPrograms, "--upload-pack "+v+" runs a program")
			}
		}
		if r.g.Sub == "clone" {
			if v, ok := gitOpt(r.args, i, "--config", "-c"); ok {
				r.g.addConfig(v)
			}
			if v, ok := gitOpt(r.args, i, "--template", ""); ok {
				r.g.RunsPrograms = append(r.g.RunsPrograms, "--template "+v+" installs hooks")
			}
		}
		if r.g.Sub == "archive" {
			if v, ok := gitOpt(r.args, i, "--output", "-o"); ok {
				r.g.Outputs = append(r.g.Outputs, v)
			}
			if strings.HasPrefix(r.args.s[i], "--remote") {
				r.cats |= catNetwork
			}
		}
	}
}

func gitSubDiff(r *gitRun) {
	for _, s := range r.args.s {
		switch s {
		case "--ext-diff":
			r.g.RunsPrograms = append(r.g.RunsPrograms, "--ext-diff runs the external diff program of the configuration (diff.external, diff drivers)")
		case "--textconv":
			r.g.RunsPrograms = append(r.g.RunsPrograms, "--textconv runs the textconv filters of the configuration (diff.<driver>.textconv)")
		}
	}
	for i := range r.args.s {
		if v, ok := gitOpt(r.args, i, "--output", ""); ok {
			r.g.Outputs = append(r.g.Outputs, v)
		}
		if r.g.Sub == "format-patch" {
			if v, ok := gitOpt(r.args, i, "--output-directory", "-o"); ok {
				r.g.Outputs = append(r.g.Outputs, v)
			}
		}
	}
}

func gitSubBundle(r *gitRun) {
	if r.args.len() >= 2 && r.args.s[0] == "create" {
		r.g.Outputs = append(r.g.Outputs, r.args.s[1])
	}
}

func gitSubGrep(r *gitRun) {
	for _, s := range r.args.s {
		if strings.HasPrefix(s, "-O") || strings.HasPrefix(s, "--open-files-in-pager") {
			r.g.RunsPrograms = append(r.g.RunsPrograms, s+" runs a pager program")
		}
	}
}

func gitSubDifftool(r *gitRun) {
	for i := range r.args.s {
		if v, ok := gitOpt(r.args, i, "--extcmd", "-x"); ok {
			r.g.RunsPrograms = append(r.g.RunsPrograms, "--extcmd "+v+" runs a program")
			r.scripts = append(r.scripts, v)
		}
	}
}

func gitSubSendEmail(r *gitRun) {
	for _, s := range r.args.s {
		for _, o := range []string{"--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd", "--smtp-server"} {
			if strings.HasPrefix(s, o) {
				r.g.RunsPrograms = append(r.g.RunsPrograms, o+" runs a program")
			}
		}
	}
}

func gitSubInstaweb(r *gitRun) {
	r.g.RunsPrograms = append(r.g.RunsPrograms, "instaweb starts a web server and a browser")
}

func gitSubRebase(r *gitRun) {
	for i := range r.args.s {
		if v, ok := gitOpt(r.args, i, "--exec", "-x"); ok {
			r.scripts = append(r.scripts, v)
		}
	}
}

func gitSubFilterBranch(r *gitRun) {
	for i := range r.args.s {
		for _, o := range []string{"--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter", "--tag-name-filter", "--setup"} {
			if v, ok := gitOpt(r.args, i, o, ""); ok {
				r.scripts = append(r.scripts, v)
			}
		}
	}
}

func gitSubSubmodule(r *gitRun) {
	k := 0
	for k < r.args.len() && strings.HasPrefix(r.args.s[k], "-") {
		k++
	}
	if k < r.args.len() && r.args.s[k] == "foreach" {
		k++
		for k < r.args.len() && strings.HasPrefix(r.args.s[k], "-") && !r.args.flagged(k) {
			k++
		}
		if k < r.args.len() {
			rest := r.args.from(k)
			if rest.anyFlagged() {
				r.floors = append(r.floors, "git submodule foreach with a dynamic command")
			}
			r.scripts = append(r.scripts, strings.Join(rest.s, " "))
		}
	}
}

func gitSubBisect(r *gitRun) {
	if r.args.len() >= 2 && r.args.s[0] == "run" {
		r.inner = append(r.inner, r.args.from(1))
	}
}

func gitSubRm(r *gitRun) {
	dry, cached := false, false
	ddash := false
	for i, s := range r.args.s {
		if !ddash && !r.args.flagged(i) {
			switch {
			case s == "--":
				ddash = true
				continue
			case s == "-n" || s == "--dry-run":
				dry = true
				continue
			case s == "--cached":
				cached = true
				continue
			case strings.HasPrefix(s, "-"):
				continue
			}
		}
		r.deletes = append(r.deletes, i)
	}
	if dry || cached {
		r.deletes = nil
	}
}

func gitSubClean(r *gitRun) {
	dry := false
	ddash := false
	paths := []int{}
	for i := 0; i < r.args.len(); i++ {
		s := r.args.s[i]
		if !ddash && !r.args.flagged(i) {
			switch {
			case s == "--":
				ddash = true
				continue
			case s == "-e" || s == "--exclude":
				i++
				continue
			case strings.HasPrefix(s, "--"):
				if s == "--dry-run" {
					dry = true
				}
				continue
			case strings.HasPrefix(s, "-"):
				if strings.ContainsRune(s, 'n') {
					dry = true
				}
				if strings.ContainsRune(s, 'e') {
					if !strings.HasSuffix(s, "e") {
						continue
					}
					i++
				}
				continue
			}
		}
		paths = append(paths, i)
	}
	if !dry {
		r.deletes = paths
		r.deleteCwd = len(paths) == 0
	}
}

func gitSubConfig(r *gitRun) {
	if !r.a.gitConfig(r.g, r.args, &r.floors) {
		r.cats = catRead
	}
}

// gitAlso makes the run also decided as the git command words (a spelling
// whose effect another subcommand's rules already govern).
func (r *gitRun) gitAlso(words_ ...string) {
	r.inner = append(r.inner, words{s: append([]string{"git"}, words_...)})
}

// pathLike reports whether a checkout operand is written as a path rather
// than a branch or commit: ".", "./x", "../x", a pathspec magic (":/",
// ":(glob)"), or a glob.
func pathLike(s string) bool {
	return s == "." || s == ".." || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, ":") || strings.ContainsAny(s, "*?[")
}

// gitSubCheckout: the forms of checkout that discard uncommitted changes
// (paths after --, a commit followed by paths, a path-like operand,
// --patch, --force) are also decided as the `git restore` they amount to.
// A single operand that is not written as a path is taken as a branch.
func gitSubCheckout(r *gitRun) {
	var paths, pos []string
	ddash, force, patch, side := false, false, false, false
	for i := 0; i < r.args.len(); i++ {
		s := r.args.s[i]
		if ddash {
			paths = append(paths, s)
			continue
		}
		switch {
		case s == "--":
			ddash = true
		case s == "-f" || s == "--force":
			force = true
		case s == "-p" || s == "--patch":
			patch = true
		case s == "--ours" || s == "--theirs":
			side = true // only paths are checked out this way
		case s == "-B" && i+1 < r.args.len():
			// resets the branch to the start point: commits only it
			// pointed to can be lost, as with branch --force
			r.gitAlso("branch", "--force", r.args.s[i+1])
			i++
		case s == "-b" || s == "-B" || s == "--orphan" || s == "--conflict":
			i++ // its value is a branch name or a style, not an operand
		case strings.HasPrefix(s, "--pathspec-from-file"):
			paths = append(paths, s)
		case strings.HasPrefix(s, "-"):
		default:
			pos = append(pos, s)
		}
	}
	if !ddash {
		switch {
		case side:
			paths = append(paths, pos...)
		case len(pos) > 1:
			paths = append(paths, pos[1:]...)
		case len(pos) == 1 && pathLike(pos[0]):
			paths = append(paths, pos[0])
		}
	}
	switch {
	case len(paths) > 0:
		r.gitAlso(append([]string{"restore"}, paths...)...)
	case patch:
		r.gitAlso("restore", "--patch")
	case force:
		r.gitAlso("restore", ".")
	}
}

// gitSubSwitch: switch --discard-changes / --force throws away local
// changes: also decided as `git restore .`; -C resets a branch: also
// decided as `git branch --force NAME`.
func gitSubSwitch(r *gitRun) {
	discard := false
	for i, s := range r.args.s {
		switch {
		case s == "--discard-changes" || s == "-f" || s == "--force":
			discard = true
		case (s == "-C" || s == "--force-create") && i+1 < r.args.len():
			// resets the branch to the start point, as checkout -B does
			r.gitAlso("branch", "--force", r.args.s[i+1])
		}
	}
	if discard {
		r.gitAlso("restore", ".")
	}
}

// gitSubBranch: forced deletes, renames and copies (-D, -M, -C, -f, or
// --force with --delete/--move/--copy) can lose commits no other ref
// points to; they are also decided in the normalized spelling
// `git branch [--delete|--move|--copy] --force NAME...` that rules name.
func gitSubBranch(r *gitRun) {
	force, op := false, ""
	var names []string
	for _, s := range r.args.s {
		switch {
		case s == "--force":
			force = true
		case s == "--delete":
			op = "--delete"
		case s == "--move":
			op = "--move"
		case s == "--copy":
			op = "--copy"
		case len(s) > 1 && s[0] == '-' && s[1] != '-':
			for _, c := range s[1:] {
				switch c {
				case 'D':
					op, force = "--delete", true
				case 'M':
					op, force = "--move", true
				case 'C':
					op, force = "--copy", true
				case 'd':
					op = "--delete"
				case 'm':
					op = "--move"
				case 'c':
					op = "--copy"
				case 'f':
					force = true
				}
			}
		case !strings.HasPrefix(s, "-"):
			names = append(names, s)
		}
	}
	if !force {
		return
	}
	w := []string{"branch"}
	if op != "" {
		w = append(w, op)
	}
	w = append(append(w, "--force"), names...)
	if slices.Equal(w[1:], r.args.s) {
		return // already the normalized spelling (this is its analysis)
	}
	r.gitAlso(w...)
}
