package judge

import (
	"reflect"
	"strings"
	"testing"
)

func TestPushArgsAndRefs(t *testing.T) {
	for _, c := range []struct {
		args   string
		branch string
		remote string
		refs   []string
	}{
		{"", "feat", "", nil},
		{"origin", "feat", "origin", nil},
		{"origin HEAD:refs/heads/main", "feat", "origin", []string{"refs/heads/main"}},
		{"origin HEAD", "feat", "origin", []string{"refs/heads/feat"}},
		{"-u origin feat", "x", "origin", []string{"refs/heads/feat"}},
		{"--force origin +dev:dev", "x", "origin", []string{"refs/heads/dev"}},
		{"origin :main", "x", "origin", []string{"refs/heads/main"}},
		{"--delete origin main", "x", "origin", []string{"refs/heads/main"}},
		{"-o ci.skip --repo=https://h/r.git", "x", "https://h/r.git", nil},
		{"--push-option x origin refs/tags/v1", "x", "origin", []string{"refs/tags/v1"}},
		{"origin :", "x", "origin", nil},
		{"-- origin a b a", "x", "origin", []string{"refs/heads/a", "refs/heads/b"}},
	} {
		pa := parsePushArgs(strings.Fields(c.args))
		refs := pushRefs(pa.refspecs, c.branch)
		if pa.remote != c.remote || !reflect.DeepEqual(refs, c.refs) {
			t.Errorf("git push %s: remote %q refs %q, want %q %q", c.args, pa.remote, refs, c.remote, c.refs)
		}
	}
}

func FuzzPushArgs(f *testing.F) {
	f.Add("origin HEAD:refs/heads/main", "main")
	f.Add("--repo -- +:x", "")
	f.Add(":", "b")
	f.Fuzz(func(t *testing.T, args, branch string) {
		pa := parsePushArgs(strings.Fields(args))
		for _, r := range pushRefs(pa.refspecs, branch) {
			if !strings.HasPrefix(r, "refs/") || r == "refs/heads/" {
				t.Fatalf("ref %q from %q", r, args)
			}
		}
	})
}
