package judge

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/policy/command"
)

// Repositories created during a run. The ones present at launch have their
// hooks and config carved out read-only or watched (boundary/carve.go); a
// repository the agent creates later (git init, git clone) is entirely the
// agent's: its hooks and config would run on the owner's machine the first
// time the owner uses git there. The exec policy notes every such
// repository it allows, and at the end of the run the launcher reports the
// ones whose hooks or configuration would run programs (CheckNewRepos).

// gitValueOpts are init/clone options that take a separate value.
var gitValueOpts = map[string]bool{
	"-b": true, "--branch": true, "-o": true, "--origin": true, "--depth": true, "--reference": true,
	"--reference-if-able": true, "-c": true, "--config": true, "--template": true, "--separate-git-dir": true,
	"-u": true, "--upload-pack": true, "-j": true, "--jobs": true, "--filter": true, "--bundle-uri": true,
	"--initial-branch": true, "--object-format": true, "--shallow-since": true, "--shallow-exclude": true,
	"--server-option": true, "--ref-format": true,
}

// noteNewRepo records the directory a git init or clone creates.
func (p *Judge) noteNewRepo(argv []string, cwd string) {
	g, err := command.ParseGit(argv)
	if err != nil || (g.Sub != "init" && g.Sub != "clone") {
		return
	}
	dir := cwd
	for _, d := range g.Dirs {
		if filepath.IsAbs(d) {
			dir = d
		} else {
			dir = filepath.Join(dir, d)
		}
	}
	var pos []string
	for i := 0; i < len(g.Args); i++ {
		a := g.Args[i]
		switch {
		case a == "--":
			pos = append(pos, g.Args[i+1:]...)
			i = len(g.Args)
		case gitValueOpts[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			pos = append(pos, a)
		}
	}
	target := ""
	switch {
	case g.Sub == "init" && len(pos) > 0:
		target = pos[0]
	case g.Sub == "init":
		target = "."
	case len(pos) > 1:
		target = pos[1]
	case len(pos) == 1:
		base := filepath.Base(strings.TrimSuffix(strings.TrimRight(pos[0], "/"), "/.git"))
		target = strings.TrimSuffix(base, ".git")
	default:
		return
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.newRepos {
		if r == target {
			return
		}
	}
	if len(p.newRepos) < 1000 {
		p.newRepos = append(p.newRepos, filepath.Clean(target))
	}
}

// NewRepos are the repositories git created during the run (git init,
// git clone), as their work-tree directories.
func (p *Judge) NewRepos() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.newRepos...)
}

// CheckNewRepos returns one line for each repository in dirs whose hooks
// or configuration make git run programs: what the owner must review
// before using git there outside the sandbox.
func CheckNewRepos(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		gd := filepath.Join(d, ".git")
		if st, err := os.Stat(gd); err != nil || !st.IsDir() {
			if st, err := os.Stat(filepath.Join(d, "HEAD")); err != nil || st.IsDir() {
				continue
			}
			gd = d // a bare repository
		}
		var found []string
		if ents, err := os.ReadDir(filepath.Join(gd, "hooks")); err == nil {
			for _, e := range ents {
				if !strings.HasSuffix(e.Name(), ".sample") {
					found = append(found, "hook "+e.Name())
				}
			}
		}
		if data, err := os.ReadFile(filepath.Join(gd, "config")); err == nil && len(data) <= command.MaxGitConfigSize {
			entries, _ := command.ParseGitConfig(data, gd)
			for _, e := range entries {
				if why := command.GitKeyRunsPrograms(e.Key); why != "" {
					found = append(found, "config "+e.Key)
				}
			}
		}
		if len(found) > 0 {
			out = append(out, d+": repository created during the run has "+strings.Join(found, ", ")+"; review it before using git there outside the sandbox")
		}
	}
	return out
}
