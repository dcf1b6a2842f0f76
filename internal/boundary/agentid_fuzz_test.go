package boundary

import (
	"regexp"
	"testing"
)

// FuzzAgentIDLikeRegexp: the hand-written agent id check accepts exactly what the
// regular expression it replaced accepts.
func FuzzAgentIDLikeRegexp(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	for _, s := range []string{"main", "a", "-a", "a-b.c_d", "", "../x", "a\n", "é", string(make([]byte, 64)), "a0123456789012345678901234567890123456789012345678901234567890123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if re.MatchString(s) != validAgentIDChars(s) {
			t.Fatalf("%q: re %v hand %v", s, re.MatchString(s), validAgentIDChars(s))
		}
	})
}
