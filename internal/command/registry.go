package command

import "github.com/agentbox/agentbox/internal/programs"

// The handler table: which analysis each program name gets. A name missing
// here is a plain program start (the fast path). Shells and interpreters
// come from the program table (internal/programs) and interpSpecs, so a new
// shell is one line there. The table is built on the first lookup
// (lazyTable), not at start; init only names the builder, which the
// initialisation cycle handler -> analyzer.cmd -> handlers keeps out of a
// variable initialiser.
func init() { handlers.build = buildHandlers }

// buildHandlers returns the handler table.
func buildHandlers() map[string]handler {
	table := []struct {
		h     handler
		names []string
	}{
		// wrappers: they run another command (wrappers.go)
		{hEnv, []string{"env"}},
		{hNice, []string{"nice"}},
		{simpleWrapper(&specNohup, 0, true), []string{"nohup"}},
		{simpleWrapper(&specTimeout, 1, true), []string{"timeout"}},
		{simpleWrapper(&specStdbuf, 0, true), []string{"stdbuf"}},
		{hTime, []string{"time"}},
		{hCommand, []string{"command"}},
		{hBuiltin, []string{"builtin"}},
		{hExec, []string{"exec"}},
		{simpleWrapper(&specSetsid, 0, true), []string{"setsid"}},
		{hFlock, []string{"flock"}},
		{hWatch, []string{"watch"}},
		{hSudo, []string{"sudo", "sudoedit"}},
		{hDoas, []string{"doas"}},
		{hPkexec, []string{"pkexec"}},
		{hXargs, []string{"xargs"}},
		{hIonice, []string{"ionice"}},
		{hChrt, []string{"chrt"}},
		{hTaskset, []string{"taskset"}},
		{hUnshare, []string{"unshare"}},
		{hChroot, []string{"chroot"}},
		{hTrace(&specStrace), []string{"strace"}},
		{hTrace(&specLtrace), []string{"ltrace"}},
		{hGdb, []string{"gdb"}},
		{hScript, []string{"script"}},
		{hSu, []string{"su", "runuser"}},
		{hSg, []string{"sg"}},
		{hBusybox, []string{"busybox", "toybox"}},
		// files written or deleted by their operands and options (files.go)
		{hRm, []string{"rm", "rmdir", "unlink", "shred"}},
		{hCopy, []string{"cp", "mv", "install", "ln"}},
		{hTouch, []string{"touch"}},
		{hTee, []string{"tee"}},
		{hSort, []string{"sort"}},
		{hDd, []string{"dd"}},
		{hTruncate, []string{"truncate"}},
		{hOutOperand, []string{"xxd", "uniq"}},
		{hOutOption, []string{"tree", "cc", "gcc", "g++", "c++", "clang", "clang++", "ag", "base64"}},
		// search tools that run programs on what they find (search.go)
		{hFind, []string{"find"}},
		{hRg, []string{"rg"}},
		{hFd, []string{"fd", "fdfind"}},
		// network (network.go)
		{hCurl, []string{"curl"}},
		{hWget, []string{"wget"}},
		// text tools whose scripts run commands (text.go)
		{hSed, []string{"sed", "gsed"}},
		{hAwk, []string{"awk", "gawk", "mawk", "nawk"}},
		// build and archive tools that run programs from options (build.go)
		{hTar, []string{"tar", "gtar"}},
		{hZip, []string{"zip"}},
		{hCmake, []string{"cmake"}},
		{hGo, []string{"go"}},
		{hMake, []string{"make", "gmake"}},
		// pagers and editors with command escapes (editors.go)
		{hPager, []string{"less", "more"}},
		{hEditor, []string{"vim", "vi", "nvim", "ex", "view", "vimdiff", "emacs", "emacs-nox"}},
		// shell builtins that run or remap code (interp.go)
		{hDeno, []string{"deno"}},
		{hEval, []string{"eval"}},
		{hSource, []string{"source", "."}},
		{hAlias, []string{"alias"}},
		{hTrap, []string{"trap"}},
		{hRemap, []string{"hash", "enable", "bind", "fc", "complete", "mapfile", "readarray"}},
		// git (git.go)
		{hGit, []string{"git"}},
	}
	m := make(map[string]handler, 128)
	for _, n := range programs.Names(programs.Shell) {
		m[n] = hShell
	}
	for n := range interpSpecs.get() {
		m[n] = hInterp
	}
	for _, row := range table {
		for _, n := range row.names {
			m[n] = row.h
		}
	}
	return m
}
