// Package programs is agentbox's one table of program kinds: which names
// are shells, script interpreters (and their versioned spellings such as
// python3.12), wrappers that run another program, multi-call binaries,
// privilege and network tools, and which of them the exec supervisor
// identifies by content ("policed"). Command parsing (policy/command), the
// policy engine (program locations, "remember" answers) and program
// identity (sandbox) all read this table, so they cannot disagree about
// what a name is.
package programs

import (
	"slices"
	"strings"
	"sync"
)

// Kind is a set of properties of a program name.
type Kind uint32

const (
	// Shell runs a -c script or a script file written in shell syntax; the
	// command parser analyses its -c script recursively.
	Shell Kind = 1 << iota
	// Interpreter runs a script file named by its first operand (a `#!`
	// script exec'd by the kernel arrives as `interp FILE`), or inline code.
	Interpreter
	// RunsCode takes program text or a command to run in its arguments
	// (awk programs, sed's e command, find -exec, make recipes, npx).
	RunsCode
	// Wrapper runs another program named in its arguments (env, nice,
	// timeout, xargs, sudo...).
	Wrapper
	// Privilege changes who or where a program runs (sudo, su, chroot,
	// unshare, nsenter).
	Privilege
	// Network talks to other hosts.
	Network
	// Deletes removes or overwrites files.
	Deletes
	// Multicall picks what it is from argv[0] (busybox-style): a binary
	// identified as one is named by argv[0]'s base name.
	Multicall
	// Versioned is also installed under versioned names (python3.12,
	// perl5.36, lua5.4); Lookup maps those spellings onto the table entry.
	Versioned
	// Policed binaries are identified by content at startup: a copy,
	// hardlink, rename or memfd copy is still the program.
	Policed
	// Builtin is a shell builtin that runs code (eval, source, exec).
	Builtin
	// ReadOnly reads files (or nothing) and writes to standard output only;
	// its options that write files or run programs (sort -o, xxd's second
	// operand, less's shell escape) are judged by the command parser.
	ReadOnly
	// Writes creates or changes files named by its operands.
	Writes
	// Reads reads files named by its operands (a program that also writes
	// or runs code; the pure readers are ReadOnly).
	Reads
	// Signals sends signals to other processes (kill, pkill).
	Signals
)

// kindNames are the names policy files use for kinds (`kind: read-only`).
var kindNames = []struct {
	name string
	k    Kind
}{
	{"shell", Shell}, {"interpreter", Interpreter}, {"runs-code", RunsCode}, {"wrapper", Wrapper},
	{"privilege", Privilege}, {"network", Network}, {"deletes", Deletes}, {"multicall", Multicall},
	{"policed", Policed}, {"builtin", Builtin}, {"read-only", ReadOnly}, {"writes", Writes},
	{"reads", Reads}, {"signals", Signals},
}

// ParseKind returns the kind a policy file names ("read-only", "shell").
func ParseKind(name string) (Kind, bool) {
	for _, kn := range kindNames {
		if kn.name == name {
			return kn.k, true
		}
	}
	return 0, false
}

// KindNames lists the kind names ParseKind accepts.
func KindNames() []string {
	out := make([]string, len(kindNames))
	for i, kn := range kindNames {
		out[i] = kn.name
	}
	return out
}

// String names the kinds in k, comma-separated.
func (k Kind) String() string {
	var parts []string
	for _, kn := range kindNames {
		if k&kn.k != 0 {
			parts = append(parts, kn.name)
		}
	}
	return strings.Join(parts, ",")
}

// entry is one row of the table.
type entry struct {
	name string
	kind Kind
}

// table is the list of programs agentbox knows by kind. Order matters only
// for Names (identity takes the first name found for a file as canonical).
var table = []entry{
	// version control
	{"git", Policed | Network},
	// network
	{"curl", Policed | Network}, {"wget", Policed | Network | Writes}, {"ssh", Policed | Network | RunsCode},
	{"scp", Policed | Network | Writes}, {"sftp", Policed | Network}, {"rsync", Policed | Network | Writes},
	{"nc", Policed | Network}, {"ncat", Policed | Network}, {"netcat", Policed | Network},
	{"socat", Policed | Network}, {"telnet", Policed | Network}, {"ftp", Policed | Network},
	// privilege and namespaces
	{"sudo", Policed | Privilege | Wrapper}, {"su", Policed | Privilege | Wrapper}, {"doas", Policed | Privilege | Wrapper},
	{"pkexec", Policed | Privilege | Wrapper}, {"runuser", Policed | Privilege | Wrapper}, {"setpriv", Policed | Privilege | Wrapper},
	{"chroot", Policed | Privilege | Wrapper}, {"unshare", Policed | Privilege | Wrapper}, {"nsenter", Policed | Privilege | Wrapper},
	// shells
	{"sh", Policed | Shell | Interpreter}, {"bash", Policed | Shell | Interpreter | Versioned},
	{"dash", Policed | Shell | Interpreter}, {"zsh", Policed | Shell | Interpreter},
	{"ksh", Policed | Shell | Interpreter}, {"mksh", Policed | Shell | Interpreter},
	{"fish", Policed | Shell | Interpreter}, {"csh", Policed | Shell | Interpreter}, {"tcsh", Policed | Shell | Interpreter},
	{"ash", Shell | Interpreter}, {"yash", Shell | Interpreter}, {"posh", Shell | Interpreter}, {"rbash", Shell | Interpreter},
	{"lksh", Shell | Interpreter}, {"oksh", Shell | Interpreter}, {"pdksh", Shell | Interpreter}, {"ksh93", Shell | Interpreter},
	// multi-call binaries
	{"busybox", Policed | Multicall}, {"toybox", Policed | Multicall},
	// interpreters
	{"python", Policed | Interpreter | Versioned}, {"python3", Policed | Interpreter | Versioned},
	{"python2", Policed | Interpreter | Versioned}, {"pypy", Interpreter | Versioned}, {"pypy3", Interpreter | Versioned},
	{"node", Policed | Interpreter | Versioned}, {"nodejs", Policed | Interpreter},
	{"deno", Policed | RunsCode}, {"bun", Policed | RunsCode},
	{"perl", Policed | Interpreter | Versioned}, {"ruby", Policed | Interpreter | Versioned},
	{"php", Policed | Interpreter | Versioned}, {"lua", Policed | Interpreter | Versioned}, {"luajit", Interpreter | Versioned},
	{"tclsh", Policed | Interpreter | Versioned}, {"expect", Policed | Interpreter},
	{"Rscript", RunsCode}, {"julia", RunsCode}, {"osascript", RunsCode},
	// wrappers
	{"env", Policed | Wrapper | Reads}, {"xargs", Policed | Wrapper}, {"find", Policed | RunsCode | Reads},
	{"nohup", Policed | Wrapper}, {"timeout", Policed | Wrapper}, {"nice", Policed | Wrapper},
	{"setsid", Policed | Wrapper}, {"stdbuf", Policed | Wrapper}, {"time", Policed | Wrapper},
	{"watch", Policed | Wrapper}, {"script", Policed | Wrapper}, {"flock", Policed | Wrapper},
	{"parallel", Wrapper}, {"ionice", Wrapper}, {"chrt", Wrapper}, {"taskset", Wrapper},
	{"strace", Policed | Wrapper}, {"ltrace", Policed | Wrapper}, {"gdb", Policed | Wrapper | RunsCode},
	// file changes
	{"rm", Policed | Deletes}, {"rmdir", Policed | Deletes}, {"unlink", Policed | Deletes},
	{"mv", Policed | Deletes}, {"cp", Policed | Writes}, {"shred", Policed | Deletes}, {"dd", Policed | Deletes},
	{"truncate", Policed | Deletes}, {"chmod", Policed | Writes}, {"chown", Policed | Writes}, {"ln", Policed | Writes},
	{"install", Policed | Writes}, {"tar", Policed | Writes | Reads},
	// build and package tools
	{"make", Policed | RunsCode}, {"npm", Policed}, {"npx", Policed | RunsCode}, {"yarn", Policed},
	{"pnpm", Policed}, {"pip", Policed | Versioned}, {"pip3", Policed | Versioned}, {"go", Policed},
	{"cargo", Policed}, {"docker", Policed}, {"podman", Policed}, {"kubectl", Policed}, {"gh", Policed | Network},
	// text tools that run code
	{"awk", Policed | RunsCode | Reads}, {"gawk", Policed | RunsCode | Reads}, {"mawk", Policed | RunsCode | Reads},
	{"nawk", RunsCode | Reads}, {"sed", Policed | RunsCode | Reads},
	// editors and pagers (they can run shell commands)
	{"vim", Policed}, {"vi", Policed}, {"nano", Policed}, {"emacs", Policed}, {"less", Policed | Reads}, {"more", Policed | Reads},
	// git's own programs
	{"git-receive-pack", Policed | Network}, {"git-upload-pack", Policed | Network}, {"git-shell", Policed},
	{"git-remote-http", Policed | Network}, {"git-remote-https", Policed | Network}, {"git-remote-ext", Policed | RunsCode},
	// more network tools
	{"lftp", Network}, {"tftp", Network}, {"ping", Network}, {"dig", Network}, {"nslookup", Network},
	{"host", Network}, {"http", Network}, {"https", Network}, {"aria2c", Network | Writes},
	{"ssh-keyscan", Network}, {"ssh-copy-id", Network}, {"sshpass", Network | Wrapper}, {"mosh", Network},
	{"whois", Network}, {"traceroute", Network},
	// destroying and signalling
	{"wipefs", Deletes}, {"mkfs", Deletes}, {"fdisk", Deletes},
	{"kill", Signals}, {"pkill", Signals}, {"killall", Signals},
	// writing
	{"touch", Writes}, {"mkdir", Writes}, {"tee", Writes}, {"chgrp", Writes}, {"patch", Writes},
	{"unzip", Writes}, {"gzip", Writes}, {"gunzip", Writes},
	// read-only tools: they read files (or nothing) and print; what their
	// options write or run is judged by the command parser (policy/command)
	{"ls", ReadOnly}, {"cat", ReadOnly}, {"head", ReadOnly}, {"tail", ReadOnly}, {"wc", ReadOnly},
	{"sort", ReadOnly}, {"uniq", ReadOnly}, {"cut", ReadOnly}, {"tr", ReadOnly}, {"nl", ReadOnly},
	{"column", ReadOnly}, {"grep", ReadOnly}, {"egrep", ReadOnly}, {"fgrep", ReadOnly}, {"rg", ReadOnly},
	{"ag", ReadOnly}, {"fd", ReadOnly}, {"tree", ReadOnly}, {"file", ReadOnly}, {"stat", ReadOnly},
	{"du", ReadOnly}, {"df", ReadOnly}, {"pwd", ReadOnly}, {"whoami", ReadOnly}, {"id", ReadOnly},
	{"date", ReadOnly}, {"uname", ReadOnly}, {"hostname", ReadOnly}, {"which", ReadOnly}, {"type", ReadOnly},
	{"echo", ReadOnly}, {"printf", ReadOnly}, {"true", ReadOnly}, {"false", ReadOnly}, {"test", ReadOnly},
	{"[", ReadOnly}, {"diff", ReadOnly}, {"cmp", ReadOnly}, {"comm", ReadOnly}, {"basename", ReadOnly},
	{"dirname", ReadOnly}, {"realpath", ReadOnly}, {"readlink", ReadOnly}, {"md5sum", ReadOnly},
	{"sha1sum", ReadOnly}, {"sha224sum", ReadOnly}, {"sha256sum", ReadOnly}, {"sha384sum", ReadOnly},
	{"sha512sum", ReadOnly}, {"b2sum", ReadOnly}, {"cksum", ReadOnly}, {"sum", ReadOnly},
	{"xxd", ReadOnly}, {"od", ReadOnly}, {"hexdump", ReadOnly}, {"strings", ReadOnly}, {"jq", ReadOnly},
	{"yq", ReadOnly}, {"printenv", ReadOnly}, {"sleep", ReadOnly}, {"seq", ReadOnly}, {"expr", ReadOnly},
	{"bc", ReadOnly}, {"cd", ReadOnly}, {"ps", ReadOnly}, {"top", ReadOnly}, {"free", ReadOnly},
	{"uptime", ReadOnly}, {"yes", ReadOnly}, {"bat", ReadOnly}, {"pushd", ReadOnly}, {"popd", ReadOnly}, {"dirs", ReadOnly},
	{"base64", ReadOnly}, {"base32", ReadOnly}, {"basenc", ReadOnly}, {"tac", ReadOnly}, {"rev", ReadOnly},
	{"paste", ReadOnly}, {"join", ReadOnly}, {"fold", ReadOnly}, {"fmt", ReadOnly}, {"expand", ReadOnly},
	{"unexpand", ReadOnly}, {"numfmt", ReadOnly}, {"factor", ReadOnly}, {"nproc", ReadOnly},
	{"arch", ReadOnly}, {"groups", ReadOnly}, {"tty", ReadOnly}, {"pr", ReadOnly}, {"tsort", ReadOnly},
	{"shuf", ReadOnly}, {"look", ReadOnly}, {"getconf", ReadOnly}, {"locale", ReadOnly}, {"lsb_release", ReadOnly},
	// system information the agent CLIs probe at start (Gemini CLI:
	// lspci, xrandr, clinfo; pip and Codex: lsb_release): they only print
	// what the machine has. The kernel boundary bounds what they can read.
	{"lspci", ReadOnly}, {"lsusb", ReadOnly}, {"xrandr", ReadOnly}, {"clinfo", ReadOnly},
	{"lscpu", ReadOnly}, {"lsmem", ReadOnly}, {"xdpyinfo", ReadOnly}, {"jobs", ReadOnly}, {"getopt", ReadOnly},
	// shell builtins that run code
	{"eval", Builtin | RunsCode}, {"exec", Builtin | Wrapper}, {"source", Builtin | RunsCode}, {".", Builtin | RunsCode},
	{"command", Builtin | Wrapper}, {"builtin", Builtin | Wrapper},
}

// indexOnce and indexMap map a name to its kinds: built from table on the
// first lookup (index), not at start, so a program that links this package
// and never looks a name up (agentbox --version) does not build it.
var (
	indexOnce sync.Once
	indexMap  map[string]Kind
)

// index returns the name -> kinds map, building it on the first call.
func index() map[string]Kind {
	indexOnce.Do(func() {
		m := make(map[string]Kind, len(table))
		for _, e := range table {
			m[e.name] |= e.kind
		}
		indexMap = m
	})
	return indexMap
}

// Lookup returns the kinds of a program name: a path's base name, and a
// versioned spelling (python3.12, lua5.4, pip3.11) as its Versioned entry.
// An unknown name has no kinds.
func Lookup(name string) Kind {
	_, k := Canonical(name)
	return k
}

// Canonical returns the table name a program name stands for (python3.12
// -> python3 where python3 is listed, else python) and its kinds; an
// unknown name comes back unchanged with no kinds.
func Canonical(name string) (string, Kind) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	idx := index()
	if k, ok := idx[name]; ok {
		return name, k
	}
	n := len(name)
	if n == 0 || !(name[n-1] >= '0' && name[n-1] <= '9') {
		return name, 0
	}
	// python3.12 -> python3, then python; perl5.36 -> perl.
	if dot := strings.IndexByte(name, '.'); dot > 0 {
		if k, ok := idx[name[:dot]]; ok && k&Versioned != 0 {
			return name[:dot], k
		}
	}
	t := strings.TrimRight(name, "0123456789.")
	if k, ok := idx[t]; ok && k&Versioned != 0 {
		return t, k
	}
	return name, 0
}

// Is reports whether name has every kind in k.
func Is(name string, k Kind) bool { return Lookup(name)&k == k }

// Any reports whether name has at least one kind in k.
func Any(name string, k Kind) bool { return Lookup(name)&k != 0 }

// Names returns the table's names that have at least one kind in k, in
// table order.
func Names(k Kind) []string {
	var out []string
	for _, e := range table {
		if e.kind&k != 0 && !slices.Contains(out, e.name) {
			out = append(out, e.name)
		}
	}
	return out
}

// VersionedSpelling reports whether name is a versioned spelling (name
// followed by digits or dots, e.g. python3.12) of a Versioned entry other
// than itself: identity looks these up in PATH directories too.
func VersionedSpelling(name string) bool {
	c, k := Canonical(name)
	return c != name && k&Versioned != 0
}

// NeverRemember reports whether an approval of name must not become a
// standing prefix rule: shells, interpreters, wrappers, privilege tools and
// programs that run code from their arguments would allow anything.
func NeverRemember(name string) bool {
	return Any(name, Shell|Interpreter|RunsCode|Wrapper|Privilege|Multicall|Builtin)
}

// Family returns a program name without its version (python3.12 and
// python3 -> python, lua5.4 -> lua) when the unversioned name is a
// Versioned entry; other names come back unchanged. Option syntax is
// shared by a family, so parsers key their tables on it.
func Family(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	t := strings.TrimRight(name, "0123456789.")
	if t != name && index()[t]&Versioned != 0 {
		return t
	}
	return name
}

// Sensitive reports whether a program is trusted for what it is when it is
// allowed: git, and programs that reach the network, change privileges,
// delete, write or signal (shells and interpreters excepted: they run the
// agent's code anyway). Code loaded into such a program by the environment
// (LD_PRELOAD from target/) would act with that trust without another
// exec decision, so the exec policy refuses it.
func Sensitive(name string) bool {
	c, k := Canonical(name)
	if c == "git" || strings.HasPrefix(c, "git-") {
		return true
	}
	return k&(Network|Privilege|Deletes|Writes|Signals) != 0 && k&(Shell|Interpreter) == 0
}
