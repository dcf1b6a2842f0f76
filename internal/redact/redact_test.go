package redact

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want, rule string }{
		{"env ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuv claude", "env ANTHROPIC_API_KEY=[REDACTED:secret-var] claude", RuleAssignment},
		{"curl -H 'Authorization: Bearer abc.def' https://x", "curl -H 'Authorization: Bearer [REDACTED:auth-header]' https://x", RuleHeader},
		{"git clone https://bob:hunter2@example.com/r.git", "git clone https://bob:[REDACTED:url-password]@example.com/r.git", RuleURL},
		{"echo ghp_abcdefghijklmnopqrstuvwxyz0123456789", "echo [REDACTED:token]", RuleToken},
		{"aws AKIAABCDEFGHIJKLMNOP", "aws [REDACTED:token]", RuleToken},
		{"GITHUB_TOKEN=\"x y\" make", "GITHUB_TOKEN=[REDACTED:secret-var] make", RuleAssignment},
	} {
		for range 2 { // the second from the memo
			got, rules := Text(c.in)
			if got != c.want || len(rules) == 0 || rules[0] != c.rule {
				t.Errorf("Text(%q) = %q %v, want %q [%s]", c.in, got, rules, c.want, c.rule)
			}
		}
	}
	for _, clean := range []string{"git commit -m 'fix token parsing'", "make CC=gcc", "ls -la", "go test ./...", "PATH=/usr/bin:/bin make",
		"GIT_AUTHOR_NAME=Ann GIT_AUTHOR_EMAIL=ann@example.com git commit"} {
		if got, rules := Text(clean); got != clean || rules != nil {
			t.Errorf("Text(%q) = %q %v, want unchanged", clean, got, rules)
		}
	}
}

func TestArgv(t *testing.T) {
	in := []string{"tool", "--api-key", "abc123", "--token=xyz", "--verbose", "-p", "x"}
	got, rules := Argv(in)
	if strings.Join(got, " ") != "tool --api-key [REDACTED:secret-flag] --token=[REDACTED:secret-flag] --verbose -p x" || len(rules) != 1 {
		t.Errorf("Argv = %q %v", got, rules)
	}
	if in[2] != "abc123" {
		t.Error("input modified")
	}
	// A whole-word assignment: the value is the rest of the word, spaces
	// and all (an environment entry, env NAME=value).
	got, rules = Argv([]string{"env", "API_TOKEN=abc def ghi", "GIT_AUTHOR_NAME=Ann Lee", "GITHUB_AUTHOR_TOKEN=x y", "HTTP_AUTHORIZATION=Basic abc", "cmd"})
	if strings.Join(got, "|") != "env|API_TOKEN=[REDACTED:secret-var]|GIT_AUTHOR_NAME=Ann Lee|GITHUB_AUTHOR_TOKEN=[REDACTED:secret-var]|HTTP_AUTHORIZATION=[REDACTED:secret-var]|cmd" || len(rules) != 1 || rules[0] != RuleAssignment {
		t.Errorf("Argv of assignments = %q %v", got, rules)
	}
	plain := []string{"git", "status"}
	if got, rules := Argv(plain); &got[0] != &plain[0] || rules != nil {
		t.Errorf("clean argv copied or flagged: %v", rules)
	}
}

func FuzzText(f *testing.F) {
	f.Add("env API_KEY=sk-ant-api03-abcdefghijklmnopqrstuv x")
	f.Add("Authorization: Bearer x https://a:b@c")
	f.Fuzz(func(t *testing.T, s string) {
		out, rules := Text(s)
		// the memo answers what text answers, the first time and after
		if o2, r2 := Text(s); o2 != out || !slices.Equal(r2, rules) {
			t.Fatalf("memo: %q %v, then %q %v", out, rules, o2, r2)
		}
		if o3, r3 := text(s); o3 != out || !slices.Equal(r3, rules) {
			t.Fatalf("Text %q %v, text %q %v", out, rules, o3, r3)
		}
		if len(rules) == 0 && out != s {
			t.Fatalf("changed without a rule: %q -> %q", s, out)
		}
		if again, _ := Text(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
	})
}

// TestPrefiltersKeepEveryMatch: the shortest text each rule matches still
// passes its cheap prefilter.
func TestPrefiltersKeepEveryMatch(t *testing.T) {
	for _, c := range []struct{ in, rule string }{
		{"xoxb-1234567890", RuleToken},
		{"AKIAABCDEFGHIJKLMNOP", RuleToken},
		{"x AUTHORIZATION: Bearer abc", RuleHeader},
		{"https://u:p@h", RuleURL},
		{"TOKEN=x", RuleAssignment},
	} {
		if _, rules := Text(c.in); len(rules) != 1 || rules[0] != c.rule {
			t.Errorf("Text(%q) rules %v, want %s", c.in, rules, c.rule)
		}
	}
}

// FuzzSecretNameMatch: the substring matcher answers as the regexp does.
func FuzzSecretNameMatch(f *testing.F) {
	for _, s := range []string{"API_KEY", "GITHUB_TOKEN", "GIT_AUTHOR_NAME", "PATH", "ſecret", "PASSWD", "Session-Key", "access_k", "x-api-key"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := secretNameMatch(s), secretName().MatchString(s); got != want {
			t.Fatalf("secretNameMatch(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}

// assignReOracle is the regexp redactAssignments implements.
var assignReOracle = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|"[^"]*"|[^\s'";&|]+)`)

// FuzzRedactAssignments: the hand scanner finds and replaces exactly what
// the regexp does.
func FuzzRedactAssignments(f *testing.F) {
	for _, s := range []string{"API_KEY=abc", "a=b=c TOKEN='x y' 9TOKEN=v _TOKEN=\"q\"", "x TOKEN= y", "ab=TOKEN=v", "PASSWORD='unterminated",
		"GIT_AUTHOR_NAME=me AUTHORIZATION=Bearer", "é=1 TOKEN=\xff\xfe;x", "a='x'TOKEN=y", "TOKEN=[REDACTED:secret-var]", "=x", "TOKEN=a\vb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		found := false
		want := assignReOracle.ReplaceAllStringFunc(s, func(m string) string {
			sub := assignReOracle.FindStringSubmatch(m)
			if !isSecretName(sub[1]) || strings.HasPrefix(sub[2], "[REDACTED:") {
				return m
			}
			found = true
			return sub[1] + "=" + mark(RuleAssignment)
		})
		got, gotFound := redactAssignments(s)
		if got != want || gotFound != found {
			t.Fatalf("redactAssignments(%q) = %q, %v; the regexp gives %q, %v", s, got, gotFound, want, found)
		}
	})
}

// FuzzWithoutAuthor: the hand-written removal of "author" equals the
// regexp's.
func FuzzWithoutAuthor(f *testing.F) {
	for _, s := range []string{"GIT_AUTHOR_NAME", "AUTHORIZATION", "authorauthori", "xAUTHOR", "AuThOrI", "author_ſ", "AUTHORAUTHOR"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := withoutAuthor(s), authorRe().ReplaceAllString(s, "$1"); got != want {
			t.Fatalf("withoutAuthor(%q) = %q, the regexp gives %q", s, got, want)
		}
	})
}
