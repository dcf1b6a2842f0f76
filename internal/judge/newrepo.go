package judge

import (
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
)

// Repositories created during a run (git init, git clone) are entirely
// the agent's: their hooks and config would run on the owner's machine the
// first time the owner uses git there. The judge notes every such
// repository it allows, wherever it is, so that the end-of-run check
// (internal/gitleft) looks there too, past the depth its walk covers.

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
