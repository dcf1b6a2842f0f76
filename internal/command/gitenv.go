package command

// What git's environment and commit options mean: the environment a git
// process starts with is translated into the equivalent global options, so
// a git run is decided as it will really behave.

import (
	"path/filepath"
	"strconv"
	"strings"
)

// GitEnvConfig returns the configuration the environment passes to git:
// GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/VALUE_n.
func GitEnvConfig(env []string) []GitConfigEntry {
	m := envMap(env)
	var out []GitConfigEntry
	if s := m["GIT_CONFIG_PARAMETERS"]; s != "" {
		es, err := ParseGitConfigParameters(s)
		out = append(out, es...)
		if err != nil {
			out = append(out, GitConfigEntry{Key: "agentbox.unparsable", Value: err.Error(), Src: "GIT_CONFIG_PARAMETERS"})
		}
	}
	if n, err := strconv.Atoi(m["GIT_CONFIG_COUNT"]); err == nil && n > 0 {
		n = min(n, 1000)
		for i := 0; i < n; i++ {
			k, ok := m["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			if !ok {
				break
			}
			out = append(out, GitConfigEntry{Key: NormalizeGitConfigKey(k), Value: m["GIT_CONFIG_VALUE_"+strconv.Itoa(i)], Src: "GIT_CONFIG_KEY_" + strconv.Itoa(i)})
		}
	}
	return out
}

// gitEnvVarKeys are environment variables equivalent to a config key.
var gitEnvVarKeys = []struct{ env, key string }{
	{"GIT_SSH_COMMAND", "core.sshCommand"},
	{"GIT_SSH", "core.sshCommand"},
	{"GIT_PAGER", "core.pager"},
	{"GIT_EDITOR", "core.editor"},
	{"GIT_SEQUENCE_EDITOR", "sequence.editor"},
	{"GIT_ASKPASS", "core.askPass"},
	{"GIT_PROXY_COMMAND", "core.gitProxy"},
	{"GIT_EXTERNAL_DIFF", "diff.external"},
	{"GIT_TEMPLATE_DIR", "init.templateDir"},
}

// systemGitExecPaths are exec paths git itself exports to its children.
var systemGitExecPaths = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{"/usr/lib/git-core": true, "/usr/libexec/git-core": true, "/usr/local/libexec/git-core": true}
}}

// harmlessProgram are values of pager/editor variables that run nothing
// of interest (agents set GIT_PAGER=cat, GIT_EDITOR=true).
var harmlessProgram = lazyTable[string, bool]{build: func() map[string]bool { return map[string]bool{"": true, "cat": true, "true": true, ":": true} }}

// GitEnvArgs translates what the environment tells git into the equivalent
// global options (`-c k=v`, `--git-dir=`, ...), so the engine decides the
// git run as it will really behave, and lists the variables that make git
// run programs (at least ask).
func GitEnvArgs(env []string) (args []string, runs []string) {
	m := envMap(env)
	for _, e := range GitEnvConfig(env) {
		args = append(args, "-c", e.Key+"="+e.Value)
	}
	for _, kv := range gitEnvVarKeys {
		v, ok := m[kv.env]
		if !ok {
			continue
		}
		if !harmlessProgram.get()[strings.TrimSpace(v)] {
			args = append(args, "-c", kv.key+"="+v)
			runs = append(runs, kv.env)
		}
	}
	if v, ok := m["GIT_EXEC_PATH"]; ok && !systemGitExecPaths.get()[filepath.Clean(v)] {
		args = append(args, "--exec-path="+v)
		runs = append(runs, "GIT_EXEC_PATH")
	}
	for _, kv := range [][2]string{{"GIT_DIR", "--git-dir"}, {"GIT_WORK_TREE", "--work-tree"}, {"GIT_NAMESPACE", "--namespace"}} {
		if v, ok := m[kv[0]]; ok && v != "" {
			args = append(args, kv[1]+"="+v)
		}
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG"} {
		if v, ok := m[k]; ok && v != "" && v != "/dev/null" {
			runs = append(runs, k)
		}
	}
	return args, runs
}

// commitLongOpts are git commit's long options (for unique-prefix matching).
var commitLongOpts = []string{
	"all", "patch", "reuse-message", "reedit-message", "fixup", "squash", "reset-author", "short", "branch",
	"porcelain", "long", "null", "file", "author", "date", "message", "template", "signoff", "no-signoff",
	"trailer", "cleanup", "edit", "no-edit", "amend", "no-post-rewrite", "include", "only", "pathspec-from-file",
	"pathspec-file-nul", "untracked-files", "verbose", "quiet", "dry-run", "status", "no-status", "gpg-sign",
	"no-gpg-sign", "no-verify", "verify", "allow-empty", "allow-empty-message", "interactive",
}

// GitCommitHasMessage reports whether `git commit ARGS` is given its message
// without an editor: -m/--message (non-empty), -F/--file, -C/--reuse-message,
// --fixup, or --amend/--no-edit reusing one.
func GitCommitHasMessage(args []string) (bool, string) {
	has, empty, amend, noEdit, dry := false, false, false, false, false
	long := func(s string) (string, string, bool) {
		name, val, hasVal := strings.Cut(s, "=")
		var match string
		for _, o := range commitLongOpts {
			if o == name {
				return o, val, hasVal
			}
			if strings.HasPrefix(o, name) {
				if match != "" {
					return "", "", false // ambiguous: git refuses it
				}
				match = o
			}
		}
		return match, val, hasVal
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		next := func() (string, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := long(a[2:])
			switch name {
			case "message", "file", "reuse-message", "fixup", "author", "date", "template", "trailer",
				"cleanup", "untracked-files", "pathspec-from-file", "gpg-sign", "reedit-message", "squash":
				if !hasVal && name != "untracked-files" && name != "gpg-sign" {
					val, hasVal = next()
				}
				switch name {
				case "message":
					if val == "" {
						empty = true
					} else {
						has = true
					}
				case "file", "reuse-message", "fixup":
					if hasVal {
						has = true
					}
				}
			case "amend":
				amend = true
			case "no-edit":
				noEdit = true
			case "dry-run":
				dry = true
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := a[j]
				if strings.IndexByte("mFCcSt", c) >= 0 { // options with a value
					val := a[j+1:]
					if val == "" && c != 'S' {
						val, _ = next()
					}
					switch c {
					case 'm':
						if val == "" {
							empty = true
						} else {
							has = true
						}
					case 'F', 'C':
						has = true
					}
					break
				}
			}
		}
	}
	switch {
	case has || dry:
		return true, ""
	case amend && noEdit:
		return true, ""
	case empty:
		return false, "the message given is empty"
	}
	return false, "give it with -m/-F/-C (no editor inside the sandbox)"
}

// pushPlumbing are git commands that push by another name.
var pushPlumbing = lazyTable[string, bool]{build: func() map[string]bool {
	return map[string]bool{"send-pack": true, "receive-pack": true, "http-push": true}
}}

// gitCommands are git's builtins and the commands git ships: git runs them
// before it looks for an alias of the same name, so only other words are
// alias candidates.
var gitCommands = lazyTable[string, bool]{build: func() map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Fields(`add am annotate apply archive bisect--helper blame branch bugreport bundle cat-file
check-attr check-ignore check-mailmap check-ref-format checkout checkout--worker checkout-index cherry cherry-pick
clean clone column commit commit-graph commit-tree config count-objects credential credential-cache
credential-cache--daemon credential-store describe diagnose diff diff-files diff-index diff-tree difftool
env--helper fast-export fast-import fetch fetch-pack fmt-merge-msg for-each-ref for-each-repo format-patch fsck
fsck-objects fsmonitor--daemon gc get-tar-commit-id grep hash-object help hook index-pack init init-db
interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file
merge-index merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs merge-subtree merge-tree mktag
mktree multi-pack-index mv name-rev notes pack-objects pack-redundant pack-refs patch-id pickaxe prune
prune-packed pull push range-diff read-tree rebase receive-pack reflog remote remote-ext remote-fd repack replace
rerere reset restore rev-list rev-parse revert rm send-pack shortlog show show-branch show-index show-ref
sparse-checkout stage stash status stripspace submodule--helper switch symbolic-ref tag unpack-file
unpack-objects update-index update-ref update-server-info upload-archive upload-archive--writer upload-pack var
verify-commit verify-pack verify-tag version whatchanged worktree write-tree add--interactive bisect daemon
difftool--helper filter-branch http-backend http-fetch http-push imap-send instaweb merge-octopus
merge-one-file merge-resolve mergetool quiltimport remote-ftp remote-ftps remote-http remote-https request-pull
sh-i18n--envsubst shell submodule subtree web--browse send-email p4 svn cvsimport cvsserver archimport gui citool
lfs scalar --exec-path --html-path --man-path --info-path --list-cmds`) {
		m[s] = true
	}
	return m
}}

// IsGitCommand reports whether sub is one of git's builtins or the commands
// git ships: git runs those before it looks for an alias of the same name.
func IsGitCommand(sub string) bool { return gitCommands.get()[sub] }

// IsGitPushPlumbing reports whether a git command pushes by another name
// (send-pack, receive-pack, http-push): it is decided as a push too.
func IsGitPushPlumbing(sub string) bool { return pushPlumbing.get()[sub] }

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}
