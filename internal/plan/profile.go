package plan

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/policy"
)

// AgentProfileNone is Input.AgentProfile for a run with no profile; ""
// chooses by the command's identity.
const AgentProfileNone = "none"

// Profile is what the run's agent profile adds: kept for Start (views,
// directories), the launch line and the launch event.
type Profile struct {
	Profile *policy.AgentProfile
	How     string      // "--agent-profile" or "command claude"
	Views   [][2]string // {path relative to the agent's HOME, real source}
	Forward []uint16    // caller loopback ports forwarded into the namespace
	// ForwardTLS are the forwarded ports whose base URL is https.
	ForwardTLS map[uint16]bool
	Hosts      []string // hosts allowed for the API

	resolved string // the command's real path
}

// LoopbackHost names a forwarded port's host for decisions and audit.
const LoopbackHost = "127.0.0.1"

// selectProfile finds the run's profile: the one named by the input, or
// the one the command's identity selects.
func selectProfile(eng *policy.Engine, in Input, outer []string, ahead *hostAhead) (*Profile, error) {
	name := in.AgentProfile
	if name == AgentProfileNone {
		return nil, nil
	}
	var resolved string
	if ahead != nil && ahead.commandDone {
		resolved = ahead.command
	} else {
		resolved = resolveCommand(in.Argv[0], sandbox.EnvValue(outer, "PATH"), in.Dir)
	}
	if name != "" {
		p := eng.Agent(name)
		if p == nil {
			var known []string
			for _, a := range eng.Agents() {
				known = append(known, a.Name)
			}
			return nil, &OptionError{Option: "agent-profile", Value: name, Err: fmt.Errorf("no such agent profile (known: %s, or none)", strings.Join(known, ", "))}
		}
		return &Profile{Profile: p, How: "--agent-profile", resolved: resolved}, nil
	}
	p := eng.SelectAgent(in.Argv[0], resolved)
	if p == nil {
		return nil, nil
	}
	return &Profile{Profile: p, How: "command " + filepath.Base(in.Argv[0]), resolved: resolved}, nil
}

// resolveCommand returns the real path of the file argv0 names (searched
// on pathEnv when it holds no slash), or "" when there is none.
func resolveCommand(argv0, pathEnv, dir string) string {
	p := argv0
	if !strings.Contains(argv0, "/") {
		// the PATH search the exec supervisor uses (absolute entries only)
		p = judge.LookPath(pathEnv, "")(argv0)
	} else if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	if st, err := os.Stat(p); p == "" || err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return ""
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return real
}

// profileGrants are the paths a profile grants the kernel boundary.
type profileGrants struct{ exec, read []string }

// apply works out the profile's grants before the boundary is resolved:
// install and config paths, the user's views, the API hosts (a base URL
// the caller set, in the environment or the agent's config, else the
// profile's hosts; loopback ones forwarded).
func (as *Profile) apply(home, wsReal string, outer []string) (profileGrants, error) {
	var pg profileGrants
	p := as.Profile
	resolved := as.resolved
	expand := func(s string) string {
		if rest, ok := strings.CutPrefix(s, "~/"); ok {
			if home == "" {
				return ""
			}
			return filepath.Join(home, rest)
		}
		return s
	}
	// real returns s with symlinks resolved when it exists outside the
	// workspace ("" otherwise): grants name real paths.
	real := func(s string) string {
		if s == "" {
			return ""
		}
		rp, err := filepath.EvalSymlinks(s)
		if err != nil || rp == wsReal || strings.HasPrefix(rp, wsReal+"/") || rp == "/" {
			return ""
		}
		return rp
	}
	if d := p.PackageDir(resolved); d != "" {
		pg.exec = append(pg.exec, d)
	}
	for _, in := range p.Install {
		if rp := real(expand(in)); rp != "" && !slices.Contains(pg.exec, rp) {
			pg.exec = append(pg.exec, rp)
		}
	}
	if resolved != "" && len(pg.exec) == 0 && as.How != "--agent-profile" {
		// Selected by name only (an install the profile does not list):
		// the program itself.
		pg.exec = append(pg.exec, resolved)
	}
	for _, rd := range p.Read {
		if rp := real(expand(rd)); rp != "" {
			pg.read = append(pg.read, rp)
		}
	}
	if home != "" {
		for _, v := range p.Views {
			if rp := real(filepath.Join(home, v)); rp != "" {
				pg.read = append(pg.read, rp)
				as.Views = append(as.Views, [2]string{v, rp})
			}
		}
	}
	var bases []string
	for _, name := range p.BaseURLEnv {
		if v := sandbox.EnvValue(outer, name); v != "" {
			bases = append(bases, v)
		}
	}
	if home != "" {
		for _, cf := range p.BaseURLConfig {
			bases = append(bases, configBaseURLs(filepath.Join(home, cf))...)
		}
	}
	for _, b := range bases {
		host, port, scheme, err := baseURLHostPort(b)
		if err != nil {
			return pg, &OptionError{Option: "agent-profile", Value: p.Name, Err: fmt.Errorf("API base URL %q: %v", b, err)}
		}
		if isLoopback(host) {
			if port == sandbox.ProxyPort {
				return pg, &OptionError{Option: "agent-profile", Value: p.Name, Err: fmt.Errorf("API base URL %q: port %d is the egress proxy's port inside the sandbox; use another port", b, port)}
			}
			if !slices.Contains(as.Forward, uint16(port)) {
				as.Forward = append(as.Forward, uint16(port))
			}
			if scheme == "https" {
				if as.ForwardTLS == nil {
					as.ForwardTLS = map[uint16]bool{}
				}
				as.ForwardTLS[uint16(port)] = true
			}
			host = LoopbackHost
		}
		as.Hosts = append(as.Hosts, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	if len(bases) == 0 {
		as.Hosts = append(as.Hosts, p.Hosts...)
	}
	return pg, nil
}

// setEnv returns the profile's set_env values ("$HOME" is the agent's
// HOME); they replace the caller's (a profile says what is true in the
// sandbox: IS_SANDBOX=1; a policy file's profile of the same name changes
// them).
func (as *Profile) setEnv(home string) []string {
	var out []string
	keys := make([]string, 0, len(as.Profile.SetEnv))
	for k := range as.Profile.SetEnv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+strings.ReplaceAll(as.Profile.SetEnv[k], "$HOME", home))
	}
	return out
}

// built at first use, not at every launch's package initialisation
var baseURLLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*base_url\s*=\s*["']([^"']+)["']`)
})

// configBaseURLs returns the base_url settings of an agent's config file
// (TOML: Codex's [model_providers.X] base_url = "..."); none when the file
// is missing.
func configBaseURLs(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 1<<20 {
		return nil
	}
	var out []string
	for _, m := range baseURLLine().FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	return out
}

// baseURLHostPort returns an http(s) URL's host and port (the scheme's
// default when none is given).
func baseURLHostPort(s string) (string, int, string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", 0, "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return "", 0, "", errors.New("want http://HOST[:PORT][/PATH] or https://...")
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil || port < 1 || port > 65535 {
			return "", 0, "", fmt.Errorf("bad port %q", ps)
		}
	}
	return strings.ToLower(u.Hostname()), port, u.Scheme, nil
}

// planForwards finds the run's granted loopback hosts with a port: the
// sandbox's clients skip the proxy for loopback (NO_PROXY) and its own
// network namespace has nothing there, so 127.0.0.1:PORT allowed (or
// asked) is forwarded into it at the same address and port, each
// connection decided and audited by the proxy. Another loopback address
// granted with --allow-host is refused in one line: only 127.0.0.1 is
// forwarded. A host granted only to a program (a role's `programs:`, an
// agent profile's `program_rights:`) is forwarded too: the forward only
// carries connections to the proxy, which still refuses every process but
// that program's.
func (p *Plan) planForwards(in Input) error {
	if !p.Network.Proxy {
		return nil
	}
	pats := slices.Concat(p.Network.Allow, p.Network.Ask)
	run := len(pats)
	var from []policy.ProgramGrant // from[i-run]: the block of pats[i]
	for _, g := range p.ProgramGrants() {
		for _, h := range g.Hosts {
			pats = append(pats, h)
			from = append(from, g)
		}
	}
	for i, pat := range pats {
		h, ps, err := net.SplitHostPort(strings.TrimSpace(pat))
		if err != nil || !isLoopback(strings.ToLower(h)) {
			continue // no port, or not loopback
		}
		port, err := strconv.Atoi(ps)
		if err != nil || port < 1 || port > 65535 {
			continue // the engine refused it already
		}
		if h != LoopbackHost {
			if slices.Contains(in.AllowHosts, pat) {
				return &OptionError{Option: "allow-host", Value: pat, Err: fmt.Errorf("only 127.0.0.1:PORT is forwarded into the sandbox's network namespace; give --allow-host 127.0.0.1:%d and point the client there", port)}
			}
			continue
		}
		if port == sandbox.ProxyPort && i >= run {
			g := from[i-run]
			return fmt.Errorf("%s: programs: %s: host %s: port %d is the egress proxy's port inside the sandbox; a service there cannot be forwarded", g.Source, g.Name, pat, port)
		}
		if port == sandbox.ProxyPort {
			return &OptionError{Option: "allow-host", Value: pat, Err: fmt.Errorf("port %d is the egress proxy's port inside the sandbox; a service there cannot be forwarded", port)}
		}
		if !slices.Contains(p.loopback, uint16(port)) {
			p.loopback = append(p.loopback, uint16(port))
		}
	}
	return nil
}

// Forwards are the caller's loopback ports the sandbox reaches at
// 127.0.0.1:PORT in its own network namespace (network mode proxy): the
// agent profile's loopback API base URLs and the granted 127.0.0.1:PORT
// hosts.
func (p *Plan) Forwards() []uint16 {
	var out []uint16
	if p.Profile != nil {
		out = append(out, p.Profile.Forward...)
	}
	for _, port := range p.loopback {
		if !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	return out
}

// ForwardTLS reports whether the forwarded port's API base URL is https
// (its requests read with TLS terminated, when the proxy reads them).
func (p *Plan) ForwardTLS(port uint16) bool {
	return p.Profile != nil && p.Profile.ForwardTLS[port]
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PrepareHome creates the profile's state directories and the views
// of the user's files in the agent's HOME, never following a symlink the
// sandboxed code may have planted there (agentbox may be root): each
// directory is opened with O_NOFOLLOW from the HOME's fd down. A view
// replaces a symlink at its place; a file the agent made there is kept.
func (p *Plan) PrepareHome() error {
	as := p.Profile
	if as == nil {
		return nil
	}
	home := p.Boundary.Home
	var errs []error
	for _, d := range as.Profile.Dirs {
		fd, err := openHomeDir(home, d, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		unix.Close(fd)
	}
	// The guide where the agent reads its own instructions (Claude Code's
	// ~/.claude/CLAUDE.md, Codex's ~/.codex/AGENTS.md), unless the user's
	// own file is shown there.
	for _, g := range as.Profile.Guide {
		shown := false
		for _, v := range as.Views {
			shown = shown || v[0] == g
		}
		if shown {
			continue
		}
		dir, base := filepath.Split(g)
		fd, err := openHomeDir(home, filepath.Clean(dir), true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := writeHomeFile(fd, filepath.Join(home, dir), base, p.GuideText()); err != nil {
			errs = append(errs, err)
		}
		unix.Close(fd)
	}
	for _, rel := range sortedKeys(as.Profile.Files) {
		if err := p.writeProfileFile(rel, as.Profile.Files[rel]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, v := range as.Views {
		dir, base := filepath.Split(v[0])
		fd, err := openHomeDir(home, filepath.Clean(dir), true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st unix.Stat_t
		switch err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
			unix.Unlinkat(fd, base, 0)
		case err == nil:
			unix.Close(fd)
			continue // the agent's own file
		}
		if err := unix.Symlinkat(v[1], fd, base); err != nil {
			errs = append(errs, fmt.Errorf("%s: view of %s: %w", filepath.Join(home, v[0]), v[1], err))
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// openHomeDir opens (creating when asked) the directory rel below home,
// one component at a time with O_NOFOLLOW.
func openHomeDir(home, rel string, create bool) (int, error) {
	fd, err := unix.Open(home, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", home, err)
	}
	if rel == "." || rel == "" {
		return fd, nil
	}
	for _, c := range strings.Split(rel, "/") {
		if create {
			if err := unix.Mkdirat(fd, c, 0o700); err != nil && err != unix.EEXIST {
				unix.Close(fd)
				return -1, fmt.Errorf("%s/%s: %w", home, rel, err)
			}
		}
		next, err := unix.Openat(fd, c, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s/%s: %w (a symlink there is not followed)", home, rel, err)
		}
		fd = next
	}
	return fd, nil
}

// profileFileMark starts every file a profile's files: writes, so a stale
// one (its variables no longer set) is known as agentbox's and removed.
const profileFileMark = "# written by agentbox from the agent profile; the next launch rewrites or removes it\n"

// built at first use, not at every launch's package initialisation
var templateVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// writeProfileFile writes one of the profile's files into the agent's
// HOME when every ${VAR} of text is set in the caller's environment and no
// view shows the user's own file there; otherwise removes the one an
// earlier launch wrote. A brokered secret's ${VAR} is its placeholder.
func (p *Plan) writeProfileFile(rel, text string) error {
	as := p.Profile
	for _, v := range as.Views {
		if v[0] == rel {
			return nil
		}
	}
	ok := true
	out := templateVar().ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		for _, s := range p.Secrets {
			if s.Name == name {
				return s.Placeholder
			}
		}
		v := sandbox.EnvValue(p.CallerEnv, name)
		if v == "" {
			ok = false
		}
		return v
	})
	home := p.Boundary.Home
	dir, base := filepath.Split(rel)
	fd, err := openHomeDir(home, filepath.Clean(dir), true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if !ok {
		if b, err := readHomeFile(fd, base, len(profileFileMark)); err == nil && string(b) == profileFileMark {
			unix.Unlinkat(fd, base, 0)
		}
		return nil
	}
	return writeHomeFile(fd, filepath.Join(home, dir), base, profileFileMark+out)
}

// readHomeFile reads up to n bytes of the plain file name in dir without
// following a symlink or blocking on a FIFO.
func readHomeFile(dir int, name string, n int) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("not a plain file")
	}
	b := make([]byte, n)
	k, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:k], nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// WriteCABundle writes the roots the sandbox trusts (the caller's and the
// run's authority) into the agent's HOME, where the CA variables point,
// without following anything the agent planted there. Only the
// authority's certificate is written: its key stays in agentbox's memory.
func (p *Plan) WriteCABundle() error {
	if p.Inspection == nil {
		return nil
	}
	dir, err := openHomeDir(p.Boundary.Home, "", false)
	if err != nil {
		return fmt.Errorf("agentbox: the CA bundle for the sandbox: %w", err)
	}
	defer unix.Close(dir)
	if err := writeHomeFile(dir, p.Boundary.Home, caBundleName, string(p.Inspection.Bundle)); err != nil {
		return fmt.Errorf("agentbox: the CA bundle for the sandbox: %w", err)
	}
	return nil
}
