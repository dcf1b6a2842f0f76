package command

import (
	"path"
	"slices"
	"strings"
)

// dangerousEnv reports whether setting environment variable name for a
// command can make it (or a program it starts) run other code: loader
// variables, git's program and config variables, shell start-up files,
// interpreter option variables.
func dangerousEnv(name string) bool {
	if name == "" || !isAssignment(name+"=") {
		return true // a dynamic name ($x): could be any of these
	}
	if IsInjectionVar(name) {
		return true
	}
	switch name {
	case "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
		"GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT",
		"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "PAGER", "EDITOR", "VISUAL", "GIT_ASKPASS",
		"SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_TEMPLATE_DIR", "BASH_ENV", "ENV",
		"PROMPT_COMMAND", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "PYTHONSTARTUP",
		"PYTHONPATH", "SHELLOPTS", "BASHOPTS", "PS4", "GIT_DIR", "GIT_WORK_TREE", "GIT_ALLOW_PROTOCOL",
		"LESSOPEN", "LESSCLOSE", "MANPAGER", "BROWSER":
		return true
	}
	return strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") ||
		strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "LD_")
}

// withEnv runs f with the analyzer's inherited floor raised for the
// environment assignments names (NAME=value words).
func (a *analyzer) withEnv(assigns []string, f func()) {
	old, oldR, oldEnv := a.inherit, a.inheritReason, a.env
	for _, s := range assigns {
		name, _, _ := strings.Cut(s, "=")
		if IsInjectionVar(name) {
			// Decided by the engine's environment rule, from the item.
			a.env = append(a.env[:len(a.env):len(a.env)], s)
			continue
		}
		if dangerousEnv(name) && a.inherit < FloorAsk {
			a.inherit = FloorAsk
			a.inheritReason = "environment variable " + name + " can make the command run other programs"
		}
	}
	f()
	a.inherit, a.inheritReason, a.env = old, oldR, oldEnv
}

// wrap adds the wrapper item (w's words before index inner) and analyzes
// the inner command from index inner on. problem, if set, is why the
// wrapper's own argv could not be parsed with certainty (FloorAsk).
func (a *analyzer) wrap(w words, inner int, cwd string, depth int, cats uint8, transparent bool, problem string) int {
	if inner > w.len() {
		inner = w.len()
	}
	own := w.sub(0, inner)
	// A wrapper with nothing to wrap (timeout 10, ionice -p PID) is judged
	// as itself.
	i := a.execItem(own, cats, transparent && inner < w.len())
	if problem != "" {
		a.raise(i, FloorAsk, baseName(w.s[0])+": "+problem)
	}
	if inner < w.len() {
		a.cmd(w.from(inner), cwd, depth+1)
	}
	return i
}

var (
	specNice    = optSpec{shortArg: "n", longArg: []string{"adjustment"}, long: []string{"help", "version"}, numeric: true}
	specNohup   = optSpec{long: []string{"help", "version"}}
	specTimeout = optSpec{short: "fv", shortArg: "ks", long: []string{"foreground", "preserve-status", "verbose", "help", "version"}, longArg: []string{"kill-after", "signal"}}
	specStdbuf  = optSpec{shortArg: "ioe", longArg: []string{"input", "output", "error"}, long: []string{"help", "version"}}
	specTime    = optSpec{short: "pvqa", shortArg: "of", long: []string{"portability", "verbose", "quiet", "append", "help", "version"}, longArg: []string{"output", "format"}}
	specCommand = optSpec{short: "pvV"}
	specExec    = optSpec{short: "cl", shortArg: "a"}
	specSetsid  = optSpec{short: "cfw", long: []string{"ctty", "fork", "wait", "help", "version"}}
	specFlock   = optSpec{short: "sxeunoFhV", shortArg: "Ewc", long: []string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose", "help", "version"}, longArg: []string{"conflict-exit-code", "wait", "timeout", "command"}}
	specWatch   = optSpec{short: "bcCdegprtwxhv", shortArg: "nqs", long: []string{"beep", "color", "no-color", "differences", "errexit", "chgexit", "precise", "no-rerun", "no-title", "no-wrap", "exec", "help", "version"}, longArg: []string{"interval", "equexit", "shotsfile"}}
	specSudo    = optSpec{short: "ABbEeHiKklnPSsVv", shortArg: "CDghpRrTtUu", long: []string{"askpass", "background", "bell", "preserve-env", "edit", "help", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "version", "validate"}, longArg: []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"}}
	specDoas    = optSpec{short: "nsL", shortArg: "uC"}
	specPkexec  = optSpec{long: []string{"disable-internal-agent", "help", "version", "keep-cwd"}, longArg: []string{"user"}}
	specIonice  = optSpec{short: "thV", shortArg: "cnpPu", long: []string{"ignore", "help", "version"}, longArg: []string{"class", "classdata", "pid", "pgid", "uid"}}
	specChrt    = optSpec{short: "abdfiormpRvhV", shortArg: "TPD", long: []string{"all-tasks", "batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork", "max", "pid", "verbose", "help", "version", "ext"}, longArg: []string{"sched-runtime", "sched-period", "sched-deadline"}}
	specTaskset = optSpec{short: "acphV", long: []string{"all-tasks", "cpu-list", "pid", "help", "version"}}
	specUnshare = optSpec{short: "muinpUCTfrcWhV", shortArg: "SGRwl", long: []string{"mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "fork", "map-root-user", "map-current-user", "map-auto", "kill-child", "mount-proc", "mount-binfmt", "keep-caps", "help", "version"}, longArg: []string{"setuid", "setgid", "root", "wd", "propagation", "setgroups", "map-user", "map-group", "map-users", "map-groups", "monotonic", "boottime", "load-interp"}}
	specChroot  = optSpec{long: []string{"skip-chdir", "help", "version"}, longArg: []string{"userspec", "groups"}}
	specStrace  = optSpec{short: "fFcCdDhikqrtTvVwxyzZnY", shortArg: "eopsuEaAbIOSXPU", long: []string{"follow-forks", "output-separately", "summary-only", "summary", "debug", "daemonize", "help", "stack-trace", "quiet", "relative-timestamps", "absolute-timestamps", "syscall-times", "no-abbrev", "version", "summary-wall-clock", "decode-fds", "decode-pids", "seccomp-bpf", "kill-on-exit", "always-show-pid", "successful-only", "failed-only"}, longArg: []string{"output", "trace", "signal", "status", "inject", "fault", "attach", "string-limit", "user", "env", "columns", "abbrev", "verbose", "raw", "read", "write", "detach-on", "trace-path", "const-print-style", "summary-columns", "summary-sort-by", "summary-syscall-overhead", "instruction-pointer", "timestamps", "trace-fds", "quiet", "decode-fds", "argv0"}}
	specLtrace  = optSpec{short: "bcCfhiLrStTV", shortArg: "aAeEDFlnopsuwxX", long: []string{"demangle", "help", "version", "no-signals"}, longArg: []string{"align", "output", "library", "config", "indent"}}
	specXargs   = optSpec{short: "0oprtx", shortArg: "adEILnPs", shortOpt: "eil", long: []string{"null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits", "help", "version", "eof", "replace", "max-lines"}, longArg: []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}}
	specEnv     = optSpec{dash: true, short: "i0v", shortArg: "uCSa", long: []string{"ignore-environment", "null", "debug", "help", "version", "list-signal-handling", "block-signal", "default-signal", "ignore-signal"}, longArg: []string{"unset", "chdir", "split-string", "argv0"}}
	specSu      = optSpec{short: "lmpfhVP", shortArg: "cCsgGwu", long: []string{"login", "preserve-environment", "help", "version", "pty", "fast"}, longArg: []string{"command", "session-command", "shell", "group", "supp-group", "whitelist-environment"}}
	specScript  = optSpec{short: "aefqhVk", shortArg: "cEBIOTmo", shortOpt: "t", long: []string{"append", "return", "flush", "force", "quiet", "help", "version", "timing"}, longArg: []string{"command", "echo", "log-io", "log-in", "log-out", "log-timing", "logging-format", "output-limit"}}
)

// simpleWrapper returns a handler for a wrapper whose options are sp,
// followed by n fixed operands, then the inner command.
func simpleWrapper(sp *optSpec, operands int, transparent bool) handler {
	return func(a *analyzer, w words, cwd string, depth int) {
		next, problem := scanOpts(w, 1, sp, nil)
		next += operands
		a.wrap(w, next, cwd, depth, catExecute, transparent, problem)
	}
}

func hNice(a *analyzer, w words, cwd string, depth int) {
	next, problem := scanOpts(w, 1, &specNice, nil)
	a.wrap(w, next, cwd, depth, catExecute, true, problem)
}

func hTime(a *analyzer, w words, cwd string, depth int) {
	var outs []opt
	next, problem := scanOpts(w, 1, &specTime, func(o opt) bool {
		if o.name == "o" || o.name == "output" {
			outs = append(outs, o)
		}
		return false
	})
	a.wrap(w, next, cwd, depth, catExecute, true, problem)
	for _, o := range outs {
		a.pathItem("create_file", o.val, false, cwd)
	}
}

func hCommand(a *analyzer, w words, cwd string, depth int) {
	lookup := false
	next, problem := scanOpts(w, 1, &specCommand, func(o opt) bool {
		if o.name == "v" || o.name == "V" {
			lookup = true
		}
		return false
	})
	if lookup {
		// command -v NAME only looks NAME up: in a shell line that is a
		// builtin with no effect, like type, whatever NAME is (no option
		// of command runs anything once -v or -V is given).
		if a.sh != nil {
			return
		}
		i := a.execItem(w, catExecute|catRead, false)
		if problem != "" {
			a.raise(i, FloorAsk, "command: "+problem)
		}
		return
	}
	a.wrap(w, next, cwd, depth, catExecute, true, problem)
}

func hBuiltin(a *analyzer, w words, cwd string, depth int) {
	a.wrap(w, 1, cwd, depth, catExecute, true, "")
}

func hExec(a *analyzer, w words, cwd string, depth int) {
	next, problem := scanOpts(w, 1, &specExec, nil)
	a.wrap(w, next, cwd, depth, catExecute, true, problem)
}

// hEnv looks through env: options, -S/--split-string (split and re-scanned
// as env does), -C/--chdir (the inner command's cwd), NAME=value words. The
// env item shows env's own words up to the inner command (up to and with
// the last -S option when the inner command came out of a -S string).
func hEnv(a *analyzer, w words, cwd string, depth int) {
	problem := ""
	innerCwd := cwd
	rest := w.from(1)
	origBase := 1 // index in w of rest's first word that is not synthetic
	nsyn := 0     // leading words of rest that came from -S strings
	next := 0
	for rounds := 0; ; rounds++ {
		var split *opt
		var p string
		next, p = scanOpts(rest, 0, &specEnv, func(o opt) bool {
			switch o.name {
			case "S", "split-string":
				oo := o
				split = &oo
				return true
			case "C", "chdir":
				if innerCwd == "" && !path.IsAbs(o.val) {
					innerCwd = o.val
				} else {
					innerCwd = resolvePath(o.val, false, innerCwd)
				}
			}
			return false
		})
		if problem == "" {
			problem = p
		}
		if split == nil {
			break
		}
		if rounds >= 8 {
			problem = "too many -S options"
			break
		}
		parts, dyn := splitEnvString(split.val)
		if dyn && problem == "" {
			problem = "-S string with ${VAR} expansion"
		}
		if next >= nsyn {
			origBase += next - nsyn
			nsyn = 0
		} else {
			nsyn -= next
		}
		var pw words
		pw.s = parts
		if dyn {
			pw.flags = make([]uint8, len(parts))
			for i, s := range parts {
				if strings.Contains(s, "$") {
					pw.flags[i] = flagDynamic
				}
			}
		}
		rest = concat(pw, rest.from(next))
		nsyn += len(parts)
		next = 0
	}
	k := next
	for k < rest.len() && !rest.flagged(k) && isAssignment(rest.s[k]) {
		k++
	}
	assigns := rest.s[next:k]
	ownEnd := origBase
	if k >= nsyn {
		ownEnd = origBase + k - nsyn
	}
	if ownEnd > w.len() {
		ownEnd = w.len()
	}
	i := a.execItem(w.sub(0, ownEnd), catExecute|catRead, k < rest.len())
	if problem != "" {
		a.raise(i, FloorAsk, "env: "+problem)
	}
	if k < rest.len() {
		a.withEnv(assigns, func() { a.cmd(rest.from(k), innerCwd, depth+1) })
	}
}

// splitEnvString splits env -S's argument the way env does: blanks
// separate, '...' and "..." quote, backslash escapes (\_ is a blank outside
// quotes and a space inside), # starts a comment at a word start, \c ends
// the string. dynamic reports a ${VAR} expansion.
func splitEnvString(s string) (parts []string, dynamic bool) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			parts = append(parts, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	q := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'):
			flush()
		case q == 0 && c == '#' && !inWord:
			return parts, dynamic
		case c == '\'' && q != '"':
			inWord = true
			if q == '\'' {
				q = 0
			} else {
				q = '\''
			}
		case c == '"' && q != '\'':
			inWord = true
			if q == '"' {
				q = 0
			} else {
				q = '"'
			}
		case c == '\\' && q != '\'' && i+1 < len(s):
			i++
			inWord = true
			switch s[i] {
			case '_':
				if q == 0 {
					flush()
				} else {
					cur.WriteByte(' ')
				}
			case 'n':
				cur.WriteByte('\n')
			case 't':
				cur.WriteByte('\t')
			case 'f':
				cur.WriteByte('\f')
			case 'v':
				cur.WriteByte('\v')
			case 'r':
				cur.WriteByte('\r')
			case 'c':
				flush()
				return parts, dynamic
			default:
				cur.WriteByte(s[i])
			}
		case c == '\\' && q == '\'' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '\''):
			i++
			cur.WriteByte(s[i])
		case c == '$' && q != '\'':
			dynamic = true
			inWord = true
			cur.WriteByte(c)
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	flush()
	return parts, dynamic
}

// hFlock: flock [opts] FILE|DIR|FD [-c CMD | CMD ARGS...].
func hFlock(a *analyzer, w words, cwd string, depth int) {
	var script *opt
	next, problem := scanOpts(w, 1, &specFlock, func(o opt) bool {
		if o.name == "c" || o.name == "command" {
			oo := o
			script = &oo
		}
		return false
	})
	if next >= w.len() {
		a.wrap(w, w.len(), cwd, depth, catExecute, true, problem)
		return
	}
	lock := next
	inner := next + 1
	if inner < w.len() && (w.s[inner] == "-c" || w.s[inner] == "--command") && !w.flagged(inner) && inner+1 < w.len() {
		script = &opt{val: w.s[inner+1], has: true, idx: inner + 1}
		if w.flagged(inner + 1) {
			problem = "dynamic -c script"
		}
		inner = w.len()
	}
	if script != nil {
		i := a.execItem(w.sub(0, min(inner, w.len())), catExecute, true)
		if problem != "" {
			a.raise(i, FloorAsk, "flock: "+problem)
		}
		if !isDigits(w.s[lock]) {
			a.pathWord("create_file", w, lock, cwd)
		}
		a.script(script.val, cwd, depth+1, i)
		return
	}
	a.wrap(w, inner, cwd, depth, catExecute, true, problem)
	if !isDigits(w.s[lock]) {
		a.pathWord("create_file", w, lock, cwd)
	}
}

// hWatch: watch [opts] COMMAND...; the command words are joined with spaces
// and run by sh -c, unless -x/--exec.
func hWatch(a *analyzer, w words, cwd string, depth int) {
	execMode := false
	next, problem := scanOpts(w, 1, &specWatch, func(o opt) bool {
		if o.name == "x" || o.name == "exec" {
			execMode = true
		}
		return false
	})
	if execMode || next >= w.len() {
		a.wrap(w, next, cwd, depth, catExecute, true, problem)
		return
	}
	i := a.execItem(w.sub(0, next), catExecute, true)
	rest := w.from(next)
	if rest.anyFlagged() {
		problem = "dynamic command " + strings.Join(rest.s, " ")
	}
	if problem != "" {
		a.raise(i, FloorAsk, "watch: "+problem)
	}
	a.script(strings.Join(rest.s, " "), cwd, depth+1, i)
}

// hSudo: sudo [opts] [NAME=value...] CMD...; sudo itself is an item so the
// role can deny it. -e/sudoedit edits files; -s/-i without a command start
// a shell.
func hSudo(a *analyzer, w words, cwd string, depth int) {
	edit := baseName(w.s[0]) == "sudoedit"
	shell := false
	innerCwd := cwd
	next, problem := scanOpts(w, 1, &specSudo, func(o opt) bool {
		switch o.name {
		case "e", "edit":
			edit = true
		case "s", "shell", "i", "login":
			shell = true
		case "D", "chdir":
			innerCwd = o.val
		}
		return false
	})
	k := next
	for k < w.len() && !w.flagged(k) && isAssignment(w.s[k]) {
		k++
	}
	assigns := w.s[next:k]
	if edit {
		i := a.execItem(w, catExecute|catWrite, false)
		if problem != "" {
			a.raise(i, FloorAsk, "sudo: "+problem)
		}
		for j := k; j < w.len(); j++ {
			a.pathWord("create_file", w, j, cwd)
		}
		return
	}
	i := a.execItem(w.sub(0, k), catExecute, false)
	if problem != "" {
		a.raise(i, FloorAsk, baseName(w.s[0])+": "+problem)
	}
	if k >= w.len() {
		if shell {
			a.raise(i, FloorAsk, "sudo starts an interactive shell")
		}
		return
	}
	a.withEnv(assigns, func() { a.cmd(w.from(k), innerCwd, depth+1) })
}

func hDoas(a *analyzer, w words, cwd string, depth int) {
	next, problem := scanOpts(w, 1, &specDoas, nil)
	a.wrap(w, next, cwd, depth, catExecute, false, problem)
}

func hPkexec(a *analyzer, w words, cwd string, depth int) {
	next, problem := scanOpts(w, 1, &specPkexec, nil)
	a.wrap(w, next, cwd, depth, catExecute, false, problem)
}

// hIonice: with -p/-P/-u it changes existing processes and runs nothing.
func hIonice(a *analyzer, w words, cwd string, depth int) {
	pids := false
	next, problem := scanOpts(w, 1, &specIonice, func(o opt) bool {
		switch o.name {
		case "p", "P", "u", "pid", "pgid", "uid":
			pids = true
		}
		return false
	})
	if pids {
		next = w.len()
	}
	a.wrap(w, next, cwd, depth, catExecute, true, problem)
}

// hChrt: chrt [opts] PRIORITY CMD... (with -p: PRIORITY PID, no command; -m:
// prints limits).
func hChrt(a *analyzer, w words, cwd string, depth int) {
	a.wrapAfterArg(w, cwd, depth, &specChrt, "p", "pid", "m", "max")
}

// hTaskset: taskset [opts] MASK CMD... (with -p: MASK PID).
func hTaskset(a *analyzer, w words, cwd string, depth int) {
	a.wrapAfterArg(w, cwd, depth, &specTaskset, "p", "pid")
}

// wrapAfterArg is a transparent wrapper whose options (sp) are followed by
// one argument (a priority, a CPU mask) and then the command; any option
// in noCmd means there is no command (it acts on a pid, or prints).
func (a *analyzer) wrapAfterArg(w words, cwd string, depth int, sp *optSpec, noCmd ...string) {
	none := false
	next, problem := scanOpts(w, 1, sp, func(o opt) bool {
		none = none || slices.Contains(noCmd, o.name)
		return false
	})
	if none {
		next = w.len()
	} else {
		next++
	}
	a.wrap(w, next, cwd, depth, catExecute, true, problem)
}

// hUnshare: new namespaces; never transparent. Without a command it starts
// $SHELL.
func hUnshare(a *analyzer, w words, cwd string, depth int) {
	next, problem := scanOpts(w, 1, &specUnshare, nil)
	i := a.wrap(w, next, cwd, depth, catExecute, false, problem)
	if next >= w.len() {
		a.raise(i, FloorAsk, "unshare starts a shell")
	}
}

// hChroot: chroot [opts] NEWROOT [CMD...]; without a command it starts a
// shell.
func hChroot(a *analyzer, w words, cwd string, depth int) {
	next, problem := scanOpts(w, 1, &specChroot, nil)
	i := a.wrap(w, next+1, cwd, depth, catExecute, false, problem)
	if next+1 >= w.len() {
		a.raise(i, FloorAsk, "chroot starts a shell")
	}
}

// hTrace: strace/ltrace [opts] CMD...; -o FILE is written.
func hTrace(sp *optSpec) handler {
	return func(a *analyzer, w words, cwd string, depth int) {
		var outs []string
		next, problem := scanOpts(w, 1, sp, func(o opt) bool {
			if o.name == "o" || o.name == "output" {
				outs = append(outs, o.val)
			}
			return false
		})
		a.wrap(w, next, cwd, depth, catExecute, false, problem)
		for _, o := range outs {
			a.pathItem("create_file", o, false, cwd)
		}
	}
}

// hXargs: xargs [opts] [CMD [ARGS]]; the inner command (default echo) gets
// arguments only known at run time: the -I/-i replacement string marks
// dynamic words, otherwise a dynamic "{args}" word is appended.
func hXargs(a *analyzer, w words, cwd string, depth int) {
	repl := ""
	next, problem := scanOpts(w, 1, &specXargs, func(o opt) bool {
		switch o.name {
		case "I":
			repl = o.val
		case "i", "replace":
			repl = "{}"
			if o.has {
				repl = o.val
			}
		}
		return false
	})
	i := a.execItem(w.sub(0, next), catExecute, true)
	if problem != "" {
		a.raise(i, FloorAsk, "xargs: "+problem)
	}
	inner := w.from(next)
	if inner.len() == 0 {
		inner = words{s: []string{"echo"}}
	}
	if repl != "" {
		inner = markPlaceholder(inner, repl)
	} else {
		inner = withDynamicTail(inner, "{args}")
	}
	a.cmd(inner, cwd, depth+1)
}

// hBusybox: busybox APPLET ARGS... is the applet.
func hBusybox(a *analyzer, w words, cwd string, depth int) {
	next := 1
	if next < w.len() && !w.flagged(next) && strings.HasPrefix(w.s[next], "-") {
		a.execItem(w, catExecute, false)
		return
	}
	a.wrap(w, next, cwd, depth, catExecute, true, "")
}

// hSu: su/runuser [opts] [-] [USER [ARGS]]; -c CMD runs CMD with the
// user's shell; without it su starts a login shell. Options may follow
// USER (getopt permutes), so the whole argv is scanned for -c.
// runuser -u USER CMD... runs CMD directly.
func hSu(a *analyzer, w words, cwd string, depth int) {
	var scripts []string
	problem := ""
	direct := -1
	i := 1
	for i < w.len() {
		next, p := scanOpts(w, i, &specSu, func(o opt) bool {
			if o.name == "c" || o.name == "command" || o.name == "session-command" {
				scripts = append(scripts, o.val)
			}
			return false
		})
		if problem == "" {
			problem = p
		}
		if next > 0 && next <= w.len() && w.s[next-1] == "--" && baseName(w.s[0]) == "runuser" {
			direct = next
			break
		}
		if next >= w.len() {
			break
		}
		i = next + 1 // skip an operand (-, USER) and keep scanning options
	}
	if direct >= 0 && direct < w.len() {
		a.wrap(w, direct, cwd, depth, catExecute, false, problem)
		return
	}
	it := a.execItem(w, catExecute, false)
	if problem != "" {
		a.raise(it, FloorAsk, baseName(w.s[0])+": "+problem)
	}
	if len(scripts) == 0 {
		a.raise(it, FloorAsk, baseName(w.s[0])+" starts a shell")
	}
	for _, s := range scripts {
		a.script(s, cwd, depth+1, it)
	}
}

// hSg: sg GROUP [-c] COMMAND: the command is a shell string.
func hSg(a *analyzer, w words, cwd string, depth int) {
	it := a.execItem(w, catExecute, false)
	k := 2
	if k < w.len() && w.s[k] == "-c" {
		k++
	}
	if k >= w.len() {
		a.raise(it, FloorAsk, "sg starts a shell")
		return
	}
	rest := w.from(k)
	if rest.anyFlagged() {
		a.raise(it, FloorAsk, "sg: dynamic command")
	}
	a.script(strings.Join(rest.s, " "), cwd, depth+1, it)
}

// hScript: script [opts] [FILE]; -c CMD is a shell string; FILE (default
// "typescript") is written.
func hScript(a *analyzer, w words, cwd string, depth int) {
	var cmds []string
	var logs []string
	next, problem := scanOpts(w, 1, &specScript, func(o opt) bool {
		switch o.name {
		case "c", "command":
			cmds = append(cmds, o.val)
		case "B", "I", "O", "T", "log-io", "log-in", "log-out", "log-timing":
			logs = append(logs, o.val)
		case "t":
			if o.has {
				logs = append(logs, o.val)
			}
		}
		return false
	})
	it := a.execItem(w, catExecute|catWrite, false)
	if problem != "" {
		a.raise(it, FloorAsk, "script: "+problem)
	}
	file := "typescript"
	if next < w.len() {
		file = w.s[next]
	}
	a.pathItem("create_file", file, next < w.len() && w.flagged(next), cwd)
	for _, l := range logs {
		a.pathItem("create_file", l, false, cwd)
	}
	if len(cmds) == 0 {
		a.raise(it, FloorAsk, "script starts a shell")
	}
	for _, c := range cmds {
		a.script(c, cwd, depth+1, it)
	}
}

// hGdb: gdb runs debugger commands (-ex, -x FILE, -batch) that can start
// programs (shell, !, python, run); --args PROG ARGS names the inferior.
func hGdb(a *analyzer, w words, cwd string, depth int) {
	it := -1
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if s == "--args" || s == "-args" {
			it = a.wrap(w, i+1, cwd, depth, catExecute, false, "")
			break
		}
	}
	if it < 0 {
		it = a.execItem(w, catExecute, false)
	}
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		switch {
		case s == "-ex" || s == "--ex" || s == "-iex" || s == "--iex" || s == "-eval-command" || s == "--eval-command" || s == "-x" || s == "--x" || s == "-command" || s == "--command" || s == "-ix":
			a.raise(it, FloorAskUnlessExplicit, "gdb runs debugger commands, which can start programs")
			if i+1 < w.len() {
				cmd := strings.TrimSpace(w.s[i+1])
				if rest, ok := strings.CutPrefix(cmd, "shell "); ok {
					a.script(rest, cwd, depth+1, it)
				} else if rest, ok := strings.CutPrefix(cmd, "!"); ok {
					a.script(rest, cwd, depth+1, it)
				}
			}
		case strings.HasPrefix(s, "--eval-command=") || strings.HasPrefix(s, "--ex="):
			a.raise(it, FloorAskUnlessExplicit, "gdb runs debugger commands, which can start programs")
		}
	}
}
