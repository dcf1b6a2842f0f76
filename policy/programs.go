package policy

import (
	"path/filepath"
)

// ProgramName is the program a process runs as the exec policy decides
// it, for rights that follow the program (`programs:`): a #! script the
// kernel ran through its interpreter (argv[scriptArg] is the script), or
// a script file an interpreter or shell was given (`node server.js`,
// `python3 -m`-less `python3 srv.py`, `sh run.sh`), is the script — its
// base name and its path joined to cwd; any other program is identity
// (the name the supervisor established by content: "git" for any copy
// of git), else the base name of exe, at exe.
func ProgramName(argv []string, scriptArg int, identity, exe, cwd string) (name, path string) {
	script := ""
	switch {
	case scriptArg > 0 && scriptArg < len(argv):
		script = argv[scriptArg]
	case len(argv) > 1:
		a := append([]string{identity}, argv[1:]...)
		if identity == "" {
			a[0] = filepath.Base(exe)
		}
		script = scriptOperand(a)
	}
	if script != "" {
		if p := absIn(script, cwd); p != "" {
			return filepath.Base(p), p
		}
		return filepath.Base(script), script
	}
	if identity == "" {
		identity = filepath.Base(exe)
	}
	return identity, exe
}
