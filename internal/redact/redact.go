// Package redact removes secrets from what agentbox records and shows:
// audit events and approval requests carry argv, shell lines and
// environment values chosen by the agent, which may hold API keys and
// tokens (`env ANTHROPIC_API_KEY=sk-ant-... claude`, `curl -H
// "Authorization: Bearer ..."`). Each secret is replaced by
// "[REDACTED:<rule>]", naming the rule that matched, so a reviewer knows
// something was there and why it is not.
package redact

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// Rule names, as they appear in the replacement text.
const (
	RuleToken      = "token"       // a value shaped like a known credential (sk-ant-, ghp_, AKIA, JWT...)
	RuleAssignment = "secret-var"  // NAME=value where NAME says key, token, secret, password
	RuleOption     = "secret-flag" // --api-key VALUE, --token=VALUE, --password ...
	RuleHeader     = "auth-header" // Authorization: Bearer/Basic/Token ...
	RuleURL        = "url-password"
)

// tokenRe matches credential formats by their well-known prefixes.
var tokenRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`sk-ant-[A-Za-z0-9_-]{16,}|sk-(proj-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)
})

// secretName matches variable and option names that hold secrets.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(api[_-]?key|access[_-]?key|secret|token|passw(or)?d|credential|auth|private[_-]?key|session[_-]?key)`)
})

// isSecretName reports whether a variable or option name says it holds a
// secret. "AUTHOR" is not "auth": GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL
// name a person (AUTHORIZATION still counts).
func isSecretName(name string) bool {
	if !secretNameMatch(name) {
		return false
	}
	return !containsFold(name, "author") || secretNameMatch(withoutAuthor(name))
}

// withoutAuthor is authorRe().ReplaceAllString(name, "$1") — each
// "author" not followed by an i removed — by hand for ASCII names (the
// letters of "author" have no non-ASCII case variants, so only the
// following character's case needs care).
func withoutAuthor(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return authorRe().ReplaceAllString(name, "$1")
		}
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		if i+6 <= len(name) && strings.EqualFold(name[i:i+6], "author") && (i+6 == len(name) || name[i+6]|0x20 != 'i') {
			if i+6 < len(name) {
				b.WriteByte(name[i+6])
			}
			i += 7
			continue
		}
		b.WriteByte(name[i])
		i++
	}
	return b.String()
}

// secretWords are secretName's alternatives spelled out, lower case.
var secretWords = func() [][]byte {
	var out [][]byte
	for _, w := range []string{"apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
		"secret", "token", "password", "passwd", "credential", "auth",
		"privatekey", "private_key", "private-key", "sessionkey", "session_key", "session-key"} {
		out = append(out, []byte(w))
	}
	return out
}()

// secretNameMatch is secretName().MatchString without the regexp for
// ASCII names up to 128 bytes (every name in practice; it runs for each
// variable of each audited exec): ASCII lower case, then substrings.
// Anything else takes the regexp, whose Unicode case folding
// (ſ for s, K for k) it must not miss.
func secretNameMatch(s string) bool {
	var buf [128]byte
	if len(s) > len(buf) {
		return secretName().MatchString(s)
	}
	b := buf[:len(s)]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return secretName().MatchString(s)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	for _, w := range secretWords {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}

var authorRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)author([^i]|$)`) })

// redactAssignments replaces the value of each NAME=value in s whose name
// says it holds a secret, and reports whether it replaced any. A match is
// what the regexp \b([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|"[^"]*"|[^\s'";&|]+)
// finds, leftmost first and without overlap (FuzzRedactAssignments holds
// the two equal); it is scanned by hand because it runs over every
// environment entry of every audited exec.
func redactAssignments(s string) (string, bool) {
	var b strings.Builder
	last, found := 0, false // s[:last] is in b (when found)
	for i := 0; i < len(s); {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			break
		}
		eq += i
		// the name is the whole run of word characters before "=": a
		// match starts at a word boundary, and a run has none inside
		k := eq
		for k > 0 && isWordByte(s[k-1]) {
			k--
		}
		end := valueEnd(s, eq+1)
		if k < i || k == eq || s[k] >= '0' && s[k] <= '9' || end < 0 {
			i = eq + 1
			continue
		}
		name, value := s[k:eq], s[eq+1:end]
		if isSecretName(name) && !strings.HasPrefix(value, "[REDACTED:") {
			b.WriteString(s[last:k])
			b.WriteString(name)
			b.WriteString("=")
			b.WriteString(mark(RuleAssignment))
			last, found = end, true
		}
		i = end
	}
	if !found {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// valueEnd returns where the value that starts at s[v] ends: a '...' or
// "..." string, or a run of bytes other than white space, quotes, ;, &
// and |; -1 if there is none.
func valueEnd(s string, v int) int {
	if v >= len(s) {
		return -1
	}
	if q := s[v]; q == '\'' || q == '"' {
		j := strings.IndexByte(s[v+1:], q)
		if j < 0 {
			return -1
		}
		return v + 1 + j + 1
	}
	j := v
	for j < len(s) && !strings.ContainsRune("\t\n\f\r '\";&|", rune(s[j])) {
		j++
	}
	if j == v {
		return -1
	}
	return j
}

// isWordByte reports whether c is an ASCII word character (\w).
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// headerRe is an Authorization-style header value.
var headerRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)((?:proxy-)?authorization:\s*(?:bearer|basic|token|digest)?\s*)([^\s'"]+)`)
})

// urlRe is the password of a URL's userinfo.
var urlRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"]+:)([^@\s/'"]+)@`)
})

// optRe is --secret-option=value.
var optRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(--?[A-Za-z0-9-]*)=(.+)$`) })

func mark(rule string) string { return "[REDACTED:" + rule + "]" }

// Text redacts secrets in free text (an action string, a shell line, a
// reason) and returns it with the rules that matched. The rules slice is
// shared with later calls: append to it, do not change its elements.
func Text(s string) (string, []string) {
	if len(s) < memoMin || len(s) > memoMax {
		return text(s)
	}
	memo.Lock()
	e, ok := memo.m[s]
	memo.Unlock()
	if ok {
		return e.out, e.rules
	}
	out, rules := text(s)
	rules = rules[:len(rules):len(rules)] // an append copies
	memo.Lock()
	if len(memo.m) >= memoEntries {
		clear(memo.m)
	}
	if memo.m == nil {
		memo.m = make(map[string]memoEntry, memoEntries)
	}
	memo.m[s] = memoEntry{out, rules}
	memo.Unlock()
	return out, rules
}

// memo keeps what text returned for recent strings of memoMin to memoMax
// bytes: a run's exec events repeat the same reasons and environment
// values at every program start, and text is a function of its input
// alone. It forgets everything when full.
var memo struct {
	sync.Mutex
	m map[string]memoEntry
}

type memoEntry struct {
	out   string
	rules []string
}

const (
	memoMin     = 24
	memoMax     = 1024
	memoEntries = 512
)

// text is Text without the memo.
func text(s string) (string, []string) {
	var rules []string
	hit := func(r string) {
		for _, x := range rules {
			if x == r {
				return
			}
		}
		rules = append(rules, r)
	}
	// Each pattern runs only when the text holds what every match of it
	// must contain (a colon, "://" and "@", "=", a credential prefix): most
	// audited words (a program path, "-la") skip the regexes entirely.
	if strings.IndexByte(s, ':') >= 0 && containsFold(s, "authorization") {
		s = headerRe().ReplaceAllStringFunc(s, func(m string) string {
			sub := headerRe().FindStringSubmatch(m)
			hit(RuleHeader)
			return sub[1] + mark(RuleHeader)
		})
	}
	if strings.Contains(s, "://") && strings.IndexByte(s, '@') >= 0 {
		s = urlRe().ReplaceAllStringFunc(s, func(m string) string {
			sub := urlRe().FindStringSubmatch(m)
			hit(RuleURL)
			return sub[1] + mark(RuleURL) + "@"
		})
	}
	if strings.IndexByte(s, '=') >= 0 {
		var found bool
		if s, found = redactAssignments(s); found {
			hit(RuleAssignment)
		}
	}
	if mayHoldToken(s) {
		s = tokenRe().ReplaceAllStringFunc(s, func(string) string {
			hit(RuleToken)
			return mark(RuleToken)
		})
	}
	return s, rules
}

// tokenPrefixes are the literal starts of tokenRe's alternatives.
var tokenPrefixes = []string{"sk-", "gh", "github_pat_", "glpat-", "AKIA", "ASIA", "xox", "AIza", "eyJ"}

// mayHoldToken reports whether s contains the start of a credential
// format tokenRe knows (a cheap test before the regex).
func mayHoldToken(s string) bool {
	if len(s) < 15 {
		return false // the shortest format (xoxb- and 10 characters) is 15 long
	}
	for _, p := range tokenPrefixes {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains sub, ignoring ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// isVarName reports whether s is a shell variable name.
func isVarName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Argv redacts an argument vector: every word as Text, a word that is a
// whole NAME=value assignment of a secret name, and the value of
// an option whose name says it holds a secret (--api-key VALUE,
// --token=VALUE). The input is not modified.
func Argv(argv []string) ([]string, []string) {
	var out []string
	var rules []string
	add := func(rs []string) {
		for _, r := range rs {
			dup := false
			for _, x := range rules {
				dup = dup || x == r
			}
			if !dup {
				rules = append(rules, r)
			}
		}
	}
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		if name, value, ok := strings.Cut(w, "="); ok && isVarName(name) {
			// A whole word NAME=value (env NAME=value cmd, an environment
			// entry): the value is everything after "=", spaces included.
			if isSecretName(name) {
				out = append(out, name+"="+mark(RuleAssignment))
				add([]string{RuleAssignment})
			} else {
				r, rs := Text(value)
				out = append(out, name+"="+r)
				add(rs)
			}
			continue
		}
		if !strings.HasPrefix(w, "-") {
			// not an option: only its text can hold a secret
		} else if m := optRe().FindStringSubmatch(w); m != nil && strings.HasPrefix(m[1], "-") && isSecretName(m[1]) {
			out = append(out, m[1]+"="+mark(RuleOption))
			add([]string{RuleOption})
			continue
		}
		r, rs := Text(w)
		out = append(out, r)
		add(rs)
		if strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && isSecretName(w) && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			out = append(out, mark(RuleOption))
			add([]string{RuleOption})
			i++
		}
	}
	if rules == nil {
		return argv, nil
	}
	return out, rules
}
