package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// hostGitIdentity returns GIT_AUTHOR_*/GIT_COMMITTER_* settings carrying the
// caller's git identity (user.name, user.email from ~/.gitconfig and
// $XDG_CONFIG_HOME/git/config; the later file wins, as in git) into the
// sandbox, whose HOME is the agent's own: without it the first commit of a
// fresh repository fails. Variables the caller already sets are left to
// the caller's environment. Read as files (no git process at launch);
// include directives are not followed.
func hostGitIdentity(env []string) []string {
	home := sandbox.EnvValue(env, "HOME")
	if home == "" {
		return nil
	}
	xdg := sandbox.EnvValue(env, "XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	var name, email string
	for _, f := range []string{filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig")} {
		data, err := os.ReadFile(f)
		if err != nil || len(data) > command.MaxGitConfigSize {
			continue
		}
		entries, err := command.ParseGitConfig(data, f)
		if err != nil {
			continue
		}
		for _, e := range entries {
			switch e.Key {
			case "user.name":
				name = e.Value
			case "user.email":
				email = e.Value
			}
		}
	}
	var out []string
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", name}, {"GIT_COMMITTER_NAME", name}, {"GIT_AUTHOR_EMAIL", email}, {"GIT_COMMITTER_EMAIL", email}} {
		if kv[1] != "" && !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, kv[0]+"=") }) {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}
