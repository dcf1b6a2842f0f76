package command

import (
	"path/filepath"
	"strings"
)

// Environment variables that make a program load or run code they name.
//
// Loader and libc variables affect every dynamically linked program: the
// dynamic loader (ld.so(8)) loads LD_PRELOAD and LD_AUDIT objects before
// main and searches LD_LIBRARY_PATH first; glibc dlopens GCONV_PATH modules
// and reads GLIBC_TUNABLES, locale and resolver files from the others. The
// list is the loader's documented variables that change what code runs or
// which files it reads, together with glibc's own list of variables it
// refuses for set-uid programs (unsecvars.h), minus the ones that only
// print diagnostics. Runtime variables affect one interpreter family.

// loaderVars are the loader and libc variables (value: whether the value
// names files, ':' or ' ' separated, that the program loads or reads).
var loaderVars = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{
		"LD_PRELOAD": true, "LD_AUDIT": true, "LD_LIBRARY_PATH": true, "GCONV_PATH": true,
		"LD_ORIGIN_PATH": true, "LD_PROFILE_OUTPUT": true, "LD_DEBUG_OUTPUT": true, "LOCPATH": true,
		"NLSPATH": true, "HOSTALIASES": true, "RESOLV_HOST_CONF": true, "MALLOC_TRACE": true,
		"GETCONF_DIR": true, "TZDIR": true,
		"GLIBC_TUNABLES": false, "LD_PROFILE": false, "LD_DYNAMIC_WEAKEN": false, "LD_HWCAP_MASK": false,
		"LD_USE_LOAD_BIAS": false, "LD_BIND_NOT": false, "LD_ASSUME_KERNEL": false,
	}
}}

// runtimeVars are variables an interpreter family reads to load modules or
// run code at start-up (family as programs.Family names it).
var runtimeVars = lazyTable[string, string]{build: func() map[string]string {
	return map[string]string{
		"PYTHONPATH": "python", "PYTHONSTARTUP": "python", "PYTHONHOME": "python", "PYTHONUSERBASE": "python",
		"NODE_OPTIONS": "node", "NODE_PATH": "node",
		"PERL5LIB": "perl", "PERLLIB": "perl", "PERL5OPT": "perl",
		"RUBYOPT": "ruby", "RUBYLIB": "ruby",
		"BASH_ENV": "bash", "ENV": "sh",
		"JAVA_TOOL_OPTIONS": "java", "_JAVA_OPTIONS": "java", "JDK_JAVA_OPTIONS": "java",
	}
}}

// Injection is one such variable in a program's environment.
type Injection struct {
	Name, Value string
	// Loader is set for loader/libc variables (every dynamically linked
	// program); Family names the interpreter family of a runtime variable.
	Loader bool
	Family string
	// Paths are the files or directories the value names (absolute as
	// given, or joined to cwd when one was given; "" for an empty
	// LD_LIBRARY_PATH element, which means the current directory).
	Paths []string
	// Unknown is set when the value is not known statically ($x) or names
	// relative paths with no cwd to resolve them: where it points cannot be
	// told.
	Unknown bool
}

// IsInjectionVar reports whether name is a loader or runtime variable.
func IsInjectionVar(name string) bool {
	_, l := loaderVars.get()[name]
	return l || runtimeVars.get()[name] != ""
}

// Injections returns the loader and runtime variables in env (NAME=value
// strings) that apply to a program of family fam (programs.Family of its
// name; "" applies loader variables only). A value holding '$' is taken as
// unknown. cwd resolves relative paths ("" leaves them unknown).
func Injections(env []string, fam, cwd string) []Injection {
	var out []Injection
	lv, rv := loaderVars.get(), runtimeVars.get()
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		lists, loader := lv[name]
		f := rv[name]
		if !loader && (f == "" || !sameFamily(f, fam)) {
			continue
		}
		if val == "" && name != "LD_LIBRARY_PATH" {
			continue // set but empty: no effect
		}
		in := Injection{Name: name, Value: val, Loader: loader, Family: f}
		if strings.Contains(val, "$") {
			in.Unknown = true
		}
		if lists || f != "" && name != "NODE_OPTIONS" && !strings.HasSuffix(name, "OPT") && !strings.HasSuffix(name, "OPTIONS") {
			sep := ":"
			if name == "LD_PRELOAD" {
				sep = ": " // the loader splits LD_PRELOAD on spaces and colons
			}
			for _, p := range strings.FieldsFunc(val, func(r rune) bool { return strings.ContainsRune(sep, r) }) {
				if !filepath.IsAbs(p) {
					if cwd == "" {
						in.Unknown = true
					} else {
						p = filepath.Join(cwd, p)
					}
				}
				in.Paths = append(in.Paths, filepath.Clean(p))
			}
			if name == "LD_LIBRARY_PATH" && (val == "" || strings.HasPrefix(val, ":") || strings.HasSuffix(val, ":") || strings.Contains(val, "::")) {
				// An empty element searches the current directory.
				if cwd == "" {
					in.Unknown = true
				} else {
					in.Paths = append(in.Paths, cwd)
				}
			}
		} else {
			// Option variables (NODE_OPTIONS, PERL5OPT...) can name files
			// anywhere in their text: where they point cannot be told.
			in.Unknown = true
		}
		out = append(out, in)
	}
	return out
}

// sameFamily: "sh" runtime variables (ENV) apply to every POSIX shell
// invoked as sh; the others to their family.
func sameFamily(varFam, progFam string) bool {
	return varFam == progFam || varFam == "sh" && (progFam == "sh" || progFam == "dash")
}
