package userconf

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// PushKey is the settings file's push block: where the token for one
// approved `git push` comes from (docs/operations.md, "Push tokens"):
//
//	push:
//	  tokens:
//	    mint: [/usr/local/bin/mint-push-token, --app, 1234]
//	    revoke: [/usr/local/bin/revoke-push-token]
//	    timeout: 10s
//	    hosts: [github.com]
//	    protected: [main, master]
//
// The commands are the user's machine's business (a GitHub App token
// script, `gh auth token`): they run outside the sandbox, as the user
// running agentbox, never inside a run.
const PushKey = "push"

// PushTokens configures the tokens minted per approved push.
type PushTokens struct {
	// Mint is the command (argv, absolute path first) that prints a token
	// for one push: it reads a JSON request on stdin.
	Mint []string
	// Revoke is the command told on stdin of each minted token once its
	// push is over (nil: tokens are left to expire).
	Revoke []string
	// Timeout bounds each mint and revoke (default 10 s).
	Timeout time.Duration
	// Hosts are the host patterns whose receive-pack requests get the
	// token (the proxy reads their HTTPS).
	Hosts []string
	// Protected are branch names (or refs/... names) a push may never
	// delete nor take as "the one branch" of a push without a refspec
	// (default main, master).
	Protected []string
	// Line is where the block is, for messages.
	Line int
}

// DefaultPushTimeout bounds a mint or revoke command when the block sets
// no timeout.
const DefaultPushTimeout = 10 * time.Second

// maxPushTimeout bounds a configured timeout: a push waits for its mint.
const maxPushTimeout = 5 * time.Minute

// parsePush reads the push block: one key, tokens.
func parsePush(name string, v *yaml.Node) (*PushTokens, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: %s: want a mapping (tokens: {mint: [...], hosts: [...]}), got %s", name, v.Line, PushKey, describe(v))
	}
	var pt *PushTokens
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode || k.Value != "tokens":
			return nil, fmt.Errorf("%s:%d: unknown setting %s.%s (known: %s.tokens)", name, k.Line, PushKey, keyName(k), PushKey)
		case pt != nil:
			return nil, fmt.Errorf("%s:%d: %s.tokens set again (first on line %d)", name, k.Line, PushKey, pt.Line)
		}
		var err error
		if pt, err = parsePushTokens(name, k.Line, x); err != nil {
			return nil, err
		}
	}
	return pt, nil
}

// parsePushTokens reads push.tokens.
func parsePushTokens(name string, line int, v *yaml.Node) (*PushTokens, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: push.tokens: want a mapping (mint: [...], revoke: [...], timeout: ..., hosts: [...], protected: [...]), got %s", name, v.Line, describe(v))
	}
	pt := &PushTokens{Line: line, Timeout: DefaultPushTimeout}
	seen := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s:%d: push.tokens: a setting's name must be a plain word", name, k.Line)
		}
		if prev, dup := seen[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d: push.tokens.%s set again (first on line %d)", name, k.Line, k.Value, prev)
		}
		seen[k.Value] = k.Line
		var err error
		switch k.Value {
		case "mint":
			pt.Mint, err = parseArgv(name, "mint", x)
		case "revoke":
			pt.Revoke, err = parseArgv(name, "revoke", x)
		case "timeout":
			pt.Timeout, err = parseTimeout(name, x)
		case "hosts":
			pt.Hosts, err = parseWords(name, "hosts", x, func(s string) error {
				if strings.ContainsAny(s, "/@ \t") {
					return fmt.Errorf("want a host name or pattern (github.com, *.example.com), not a URL")
				}
				return nil
			})
		case "protected":
			pt.Protected, err = parseWords(name, "protected", x, func(s string) error {
				if strings.ContainsAny(s, " \t~^:?[\\") || strings.Contains(s, "..") {
					return fmt.Errorf("want a branch name or a refs/... name")
				}
				return nil
			})
		default:
			return nil, fmt.Errorf("%s:%d: unknown setting push.tokens.%s (known: mint, revoke, timeout, hosts, protected)", name, k.Line, clip(k.Value))
		}
		if err != nil {
			return nil, err
		}
	}
	if pt.Mint == nil {
		return nil, fmt.Errorf("%s:%d: push.tokens: no mint command (mint: [/path/to/command, args...])", name, line)
	}
	if pt.Hosts == nil {
		return nil, fmt.Errorf("%s:%d: push.tokens: no hosts (hosts: [github.com]): the hosts whose pushes get the token", name, line)
	}
	if _, ok := seen["protected"]; !ok {
		pt.Protected = []string{"main", "master"}
	}
	return pt, nil
}

// parseArgv reads a command as a list of words, an absolute path first
// (no shell, no search of PATH: the file that runs is the one named).
func parseArgv(name, key string, v *yaml.Node) ([]string, error) {
	words, err := parseWords(name, key, v, nil)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(words[0]) {
		return nil, fmt.Errorf("%s:%d: push.tokens.%s: the command's first word %q is not an absolute path (no shell and no PATH search: name the file)", name, v.Line, key, clip(words[0]))
	}
	return words, nil
}

// parseWords reads a non-empty list of non-empty strings, each checked.
func parseWords(name, key string, v *yaml.Node, check func(string) error) ([]string, error) {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return nil, fmt.Errorf("%s:%d: push.tokens.%s: want a list of words ([a, b]), got %s", name, v.Line, key, describe(v))
	}
	out := make([]string, 0, len(v.Content))
	for _, x := range v.Content {
		if x.Kind != yaml.ScalarNode || x.Tag == "!!null" || x.Value == "" {
			return nil, fmt.Errorf("%s:%d: push.tokens.%s: want a word, got %s", name, x.Line, key, describe(x))
		}
		if strings.ContainsAny(x.Value, "\x00\n\r") {
			return nil, fmt.Errorf("%s:%d: push.tokens.%s: %q holds a line break or NUL", name, x.Line, key, clip(x.Value))
		}
		if check != nil {
			if err := check(x.Value); err != nil {
				return nil, fmt.Errorf("%s:%d: push.tokens.%s: %q: %v", name, x.Line, key, clip(x.Value), err)
			}
		}
		out = append(out, x.Value)
	}
	return out, nil
}

// parseTimeout reads a duration (10s, 1m) above zero and at most
// maxPushTimeout.
func parseTimeout(name string, v *yaml.Node) (time.Duration, error) {
	if v.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("%s:%d: push.tokens.timeout: want a duration (10s), got %s", name, v.Line, describe(v))
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil || d <= 0 || d > maxPushTimeout {
		return 0, fmt.Errorf("%s:%d: push.tokens.timeout: want a duration above 0 and at most %s (10s), got %q", name, v.Line, maxPushTimeout, clip(v.Value))
	}
	return d, nil
}
