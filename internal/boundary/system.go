package boundary

import (
	"os"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"path/filepath"
	"runtime"
	"slices"
)

// systemEntry is one reviewable line of the system allowlist.
type systemEntry struct {
	path   string
	rights Rights
	why    string
}

// systemAllowlist is the explicit, minimal set of system paths a sandbox can
// reach (docs/architecture.md): programs and libraries read+execute, a few named /etc
// files read-only (not /etc/shadow, not /etc as a whole), the character
// devices a shell needs, and /proc read-only (so /proc/PID/mem can never be
// opened for writing and /proc/PID/root leads nowhere new: Landlock checks
// the resolved file, which must itself be allowed).
var systemAllowlist = []systemEntry{
	{"/usr", RightsRead | RightsExec, "programs and libraries"},
	{"/bin", RightsRead | RightsExec, "programs"},
	{"/sbin", RightsRead | RightsExec, "programs"},
	{"/lib", RightsRead | RightsExec, "libraries"},
	{"/lib64", RightsRead | RightsExec, "libraries"},
	{"/lib32", RightsRead | RightsExec, "libraries"},
	{"/libx32", RightsRead | RightsExec, "libraries"},
	{"/opt", RightsRead | RightsExec, "add-on programs"},

	{"/etc/ld.so.cache", RightsRead, "dynamic linker"},
	{"/etc/ld.so.conf", RightsRead, "dynamic linker"},
	{"/etc/ld.so.conf.d", RightsRead, "dynamic linker"},
	{"/etc/ld.so.preload", RightsRead, "dynamic linker"},
	{"/etc/passwd", RightsRead, "user names (no hashes)"},
	{"/etc/group", RightsRead, "group names"},
	{"/etc/nsswitch.conf", RightsRead, "name service"},
	{"/etc/hosts", RightsRead, "name service"},
	{"/etc/host.conf", RightsRead, "name service"},
	{"/etc/resolv.conf", RightsRead, "name service"},
	{"/etc/gai.conf", RightsRead, "name service"},
	{"/etc/services", RightsRead, "name service"},
	{"/etc/protocols", RightsRead, "name service"},
	{"/etc/localtime", RightsRead, "time zone"},
	{"/etc/timezone", RightsRead, "time zone"},
	{"/etc/ssl/certs", RightsRead, "CA certificates"},
	{"/etc/ssl/openssl.cnf", RightsRead, "TLS"},
	{"/etc/ca-certificates", RightsRead, "CA certificates"},
	{"/etc/ca-certificates.conf", RightsRead, "CA certificates"},
	{"/etc/pki/tls/certs", RightsRead, "CA certificates"},
	{"/etc/gitconfig", RightsRead, "git system config"},
	{"/etc/alternatives", RightsRead, "program alternatives"},
	{"/etc/mime.types", RightsRead, "MIME types"},
	{"/etc/os-release", RightsRead, "OS identification"},
	{"/etc/debian_version", RightsRead, "OS identification"},
	{"/etc/inputrc", RightsRead, "shell"},
	{"/etc/bash.bashrc", RightsRead, "shell"},
	{"/etc/profile", RightsRead, "shell"},
	{"/etc/terminfo", RightsRead, "terminal"},
	{"/etc/locale.alias", RightsRead, "locale"},

	{"/dev/null", RightsDevice, "device"},
	{"/dev/zero", RightsDevice, "device"},
	{"/dev/full", RightsDevice, "device"},
	{"/dev/random", RightsDevice &^ ll.AccessFSWriteFile, "device"}, // read (+ioctl) only
	{"/dev/urandom", RightsDevice &^ ll.AccessFSWriteFile, "device"},
	// /dev/tty names the caller's controlling terminal (the run's own pty).
	// /dev/pts and /dev/ptmx are deliberately absent: a rule on /dev/pts
	// would let the sandbox open every terminal on the machine (including
	// the user's outer one) and write to it. The run's own pty reaches the
	// command as inherited fds 0-2, which Landlock does not re-check. A
	// root run without a terminal gets a devpts instance of its own, which
	// the helper mounts and grants (helper/ptys.go).
	{"/dev/tty", RightsDevice, "controlling terminal"},
	// /dev/fd needs no rule: it leads through /proc/self/fd, whose links
	// Landlock resolves to the file itself (which must be allowed), and
	// resolving it here would name the launcher's own /proc/PID/fd.

	{"/proc", RightsRead, "process information, read-only"},
}

// SystemRules returns the system allowlist as rules: symlinks resolved
// (/lib -> /usr/lib on merged-/usr systems), missing paths skipped, and the
// Go toolchain (runtime.GOROOT, or /usr/local/go) read+execute so `go build`
// works inside target.
func SystemRules() []Rule {
	entries := slices.Clone(systemAllowlist)
	for _, g := range []string{runtime.GOROOT(), "/usr/local/go"} {
		if g != "" {
			entries = append(entries, systemEntry{g, RightsRead | RightsExec, "Go toolchain"})
		}
	}
	seen := map[string]bool{}
	dirs := realDirs{}
	var out []Rule
	for _, e := range entries {
		real, st, err := dirs.resolve(e.path)
		if err != nil {
			continue // not on this system
		}
		if seen[real] {
			continue
		}
		seen[real] = true
		r := e.rights
		if !st.IsDir() {
			r &= fileRights
		}
		out = append(out, Rule{Path: real, Rights: r, Dir: st.IsDir(), Optional: true, Why: "system: " + e.why})
	}
	return out
}

// realDirs caches the real path of directories, so resolving the
// allowlist's ~45 paths costs one lstat each (plus one walk per distinct
// parent and per symlink) instead of an lstat per path component.
type realDirs map[string]string

// resolve returns p with every symlink resolved (filepath.EvalSymlinks) and
// the file it names (os.Stat).
func (c realDirs) resolve(p string) (string, os.FileInfo, error) {
	dir, base := filepath.Split(filepath.Clean(p))
	if base == "" || base == "." || base == ".." {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", nil, err
		}
		st, err := os.Stat(real)
		return real, st, err
	}
	dir = filepath.Clean(dir)
	rd, ok := c[dir]
	if !ok {
		var err error
		if rd, err = filepath.EvalSymlinks(dir); err != nil {
			return "", nil, err
		}
		c[dir] = rd
	}
	cand := filepath.Join(rd, base)
	st, err := os.Lstat(cand)
	if err != nil {
		return "", nil, err
	}
	if st.Mode()&os.ModeSymlink == 0 {
		return cand, st, nil
	}
	real, err := filepath.EvalSymlinks(cand)
	if err != nil {
		return "", nil, err
	}
	st, err = os.Stat(real)
	return real, st, err
}
