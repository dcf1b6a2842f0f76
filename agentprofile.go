package agentbox

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

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/execpolicy"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// AgentProfileAuto and AgentProfileNone are the special values of
// WithAgentProfile: choose by the command's identity (the default), or
// apply no profile.
const (
	AgentProfileAuto = ""
	AgentProfileNone = "none"
)

// WithAgentProfile applies the named agent profile (`agentbox agents`;
// `agentbox run --agent-profile NAME`) to the run, AgentProfileNone none;
// by default the profile is chosen from the command (claude, codex,
// gemini). A profile lets the agent CLI start: its install directory, a
// read-only view of the user's login and settings in the agent's HOME, its
// API keys and base URL passed through, its API hosts through the egress
// proxy. Everything it starts is still decided by the role.
func WithAgentProfile(name string) Option {
	return func(o *options) error { o.agentProfile = name; return nil }
}

// agentSetup is what the run's agent profile adds, kept for Start (views,
// directories), the launch line and the launch event.
type agentSetup struct {
	profile *policy.AgentProfile
	how     string      // "--agent-profile" or "command claude"
	views   [][2]string // {path relative to the agent's HOME, real source}
	forward []uint16    // caller loopback ports forwarded into the namespace
	hosts   []string    // hosts allowed for the API
}

// loopbackPort names a forwarded port's host for decisions and audit.
const loopbackHost = "127.0.0.1"

// selectAgentProfile finds the run's profile: the one named by the
// option, or the one the command's identity selects.
func (r *Run) selectAgentProfile(outer []string) (*agentSetup, string, error) {
	name := r.o.agentProfile
	if name == AgentProfileNone {
		return nil, "", nil
	}
	resolved := resolveCommand(r.argv[0], sandbox.EnvValue(outer, "PATH"), r.o.dir)
	if name != AgentProfileAuto {
		p := r.eng.Agent(name)
		if p == nil {
			var known []string
			for _, a := range r.eng.Agents() {
				known = append(known, a.Name)
			}
			return nil, "", &OptionError{Option: "agent-profile", Value: name, Err: fmt.Errorf("no such agent profile (known: %s, or none)", strings.Join(known, ", "))}
		}
		return &agentSetup{profile: p, how: "--agent-profile"}, resolved, nil
	}
	p := r.eng.SelectAgent(r.argv[0], resolved)
	if p == nil {
		return nil, resolved, nil
	}
	return &agentSetup{profile: p, how: "command " + filepath.Base(r.argv[0])}, resolved, nil
}

// resolveCommand returns the real path of the file argv0 names (searched
// on pathEnv when it holds no slash), or "" when there is none.
func resolveCommand(argv0, pathEnv, dir string) string {
	p := argv0
	if !strings.Contains(argv0, "/") {
		// the PATH search the exec supervisor uses (absolute entries only)
		p = execpolicy.LookPath(pathEnv, "")(argv0)
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

// applyAgentProfile adds the profile's grants to the run before the
// boundary is resolved: install and config paths, the user's views, the
// variables passed through, the API hosts (and network mode proxy when
// the role grants no network and none was asked for).
func (r *Run) applyAgentProfile(outer []string, wsReal string) error {
	as, resolved, err := r.selectAgentProfile(outer)
	if err != nil || as == nil {
		return err
	}
	r.agent = as
	p := as.profile
	home := sandbox.EnvValue(outer, "HOME")
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
	var execDirs []string
	if d := p.PackageDir(resolved); d != "" {
		execDirs = append(execDirs, d)
	}
	for _, in := range p.Install {
		if rp := real(expand(in)); rp != "" && !slices.Contains(execDirs, rp) {
			execDirs = append(execDirs, rp)
		}
	}
	if resolved != "" && len(execDirs) == 0 && as.how != "--agent-profile" {
		// Selected by name only (an install the profile does not list):
		// the program itself.
		execDirs = append(execDirs, resolved)
	}
	for _, d := range execDirs {
		r.role.FS.RunExec = append(r.role.FS.RunExec, d)
	}
	if err := r.eng.AllowPrograms("agent-profile:"+p.Name, execDirs...); err != nil {
		return &OptionError{Option: "agent-profile", Value: p.Name, Err: err}
	}
	for _, rd := range p.Read {
		if rp := real(expand(rd)); rp != "" {
			r.role.FS.RunRead = append(r.role.FS.RunRead, rp)
		}
	}
	if home != "" {
		for _, v := range p.Views {
			if rp := real(filepath.Join(home, v)); rp != "" {
				r.role.FS.RunRead = append(r.role.FS.RunRead, rp)
				as.views = append(as.views, [2]string{v, rp})
			}
		}
	}
	r.role.Env = append(r.role.Env, p.Env...)

	// The API: a base URL the caller set (env or the agent's config) is
	// honoured; else the profile's hosts.
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
		host, port, err := baseURLHostPort(b)
		if err != nil {
			return &OptionError{Option: "agent-profile", Value: p.Name, Err: fmt.Errorf("API base URL %q: %v", b, err)}
		}
		if isLoopback(host) {
			if port == sandbox.ProxyPort {
				return &OptionError{Option: "agent-profile", Value: p.Name, Err: fmt.Errorf("API base URL %q: port %d is the egress proxy's port inside the sandbox; use another port", b, port)}
			}
			if !slices.Contains(as.forward, uint16(port)) {
				as.forward = append(as.forward, uint16(port))
			}
			host = loopbackHost
		}
		as.hosts = append(as.hosts, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	if len(bases) == 0 {
		as.hosts = append(as.hosts, p.Hosts...)
	}
	if len(as.hosts) > 0 {
		if err := r.eng.AddHostRules(policy.Allow, "agent-profile:"+p.Name, as.hosts...); err != nil {
			return &OptionError{Option: "agent-profile", Value: p.Name, Err: err}
		}
		nw := r.role.Network
		if r.o.network == nil && !nw.Proxy && len(nw.TCPConnect) == 0 {
			r.o.network = &policy.Network{Proxy: true}
		}
	}
	return nil
}

// allowAgentSources allows the profile's shell snapshots in the agent's
// HOME to be sourced.
func (r *Run) allowAgentSources() error {
	if r.agent == nil || len(r.agent.profile.Sources) == 0 {
		return nil
	}
	var dirs []string
	for _, s := range r.agent.profile.Sources {
		dirs = append(dirs, filepath.Join(r.plan.Home, s))
	}
	if err := r.eng.AllowSources("agent-profile:"+r.agent.profile.Name, dirs...); err != nil {
		return &OptionError{Option: "agent-profile", Value: r.agent.profile.Name, Err: err}
	}
	return nil
}

// agentEnv returns the profile's set_env values ("$HOME" is the agent's
// HOME); they replace the caller's (a profile says what is true in the
// sandbox: IS_SANDBOX=1; a policy file's profile of the same name changes
// them).
func (r *Run) agentEnv() []string {
	if r.agent == nil {
		return nil
	}
	var out []string
	keys := make([]string, 0, len(r.agent.profile.SetEnv))
	for k := range r.agent.profile.SetEnv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+strings.ReplaceAll(r.agent.profile.SetEnv[k], "$HOME", r.plan.Home))
	}
	return out
}

var baseURLLine = regexp.MustCompile(`(?m)^\s*base_url\s*=\s*["']([^"']+)["']`)

// configBaseURLs returns the base_url settings of an agent's config file
// (TOML: Codex's [model_providers.X] base_url = "..."); none when the file
// is missing.
func configBaseURLs(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 1<<20 {
		return nil
	}
	var out []string
	for _, m := range baseURLLine.FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	return out
}

// baseURLHostPort returns an http(s) URL's host and port (the scheme's
// default when none is given).
func baseURLHostPort(s string) (string, int, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", 0, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return "", 0, errors.New("want http://HOST[:PORT][/PATH] or https://...")
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil || port < 1 || port > 65535 {
			return "", 0, fmt.Errorf("bad port %q", ps)
		}
	}
	return strings.ToLower(u.Hostname()), port, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// prepareAgentHome creates the profile's state directories and the views
// of the user's files in the agent's HOME, never following a symlink the
// sandboxed code may have planted there (agentbox may be root): each
// directory is opened with O_NOFOLLOW from the HOME's fd down. A view
// replaces a symlink at its place; a file the agent made there is kept.
func (r *Run) prepareAgentHome() error {
	if r.agent == nil {
		return nil
	}
	var errs []error
	for _, d := range r.agent.profile.Dirs {
		fd, err := openHomeDir(r.plan.Home, d, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		unix.Close(fd)
	}
	// The guide where the agent reads its own instructions (Claude Code's
	// ~/.claude/CLAUDE.md, Codex's ~/.codex/AGENTS.md), unless the user's
	// own file is shown there.
	for _, g := range r.agent.profile.Guide {
		shown := false
		for _, v := range r.agent.views {
			shown = shown || v[0] == g
		}
		if shown {
			continue
		}
		dir, base := filepath.Split(g)
		fd, err := openHomeDir(r.plan.Home, filepath.Clean(dir), true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := writeHomeFile(fd, filepath.Join(r.plan.Home, dir), base, r.guideText()); err != nil {
			errs = append(errs, err)
		}
		unix.Close(fd)
	}
	for _, v := range r.agent.views {
		dir, base := filepath.Split(v[0])
		fd, err := openHomeDir(r.plan.Home, filepath.Clean(dir), true)
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
			errs = append(errs, fmt.Errorf("%s: view of %s: %w", filepath.Join(r.plan.Home, v[0]), v[1], err))
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
