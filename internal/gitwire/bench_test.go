package gitwire

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
)

var (
	benchOnce sync.Once
	benchBody []byte
	benchWhy  string
)

// realisticBody is a push of this module's own last 100 commits as git
// would send them (pack-objects with its default window and depth: blobs
// and trees as deltas, source code, real commit messages), made from the
// checkout's repository.
func realisticBody(b *testing.B) []byte {
	benchOnce.Do(func() {
		top, err := gitTry(".", "rev-parse", "--show-toplevel")
		if err != nil {
			benchWhy = "not in a git checkout: " + err.Error()
			return
		}
		top = strings.TrimSpace(top)
		if n, _ := gitTry(top, "rev-list", "--count", "HEAD"); len(strings.TrimSpace(n)) < 3 {
			benchWhy = "fewer than 100 commits in the checkout (a shallow clone?)"
			return
		}
		old := gitOut(b, top, "rev-parse", "HEAD~100")
		tip := gitOut(b, top, "rev-parse", "HEAD")
		benchBody = packBody(b, top, old, tip, "refs/heads/main")
	})
	if benchBody == nil {
		b.Skipf("reason: %s", benchWhy)
	}
	return benchBody
}

// onlyReader hides bytes.Reader's WriteTo so io.Copy copies through its
// buffer as it would from a network body.
type onlyReader struct{ io.Reader }

// BenchmarkCopy is the floor: the same bytes through io.Copy.
func BenchmarkCopy(b *testing.B) {
	body := realisticBody(b)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := io.Copy(io.Discard, onlyReader{bytes.NewReader(body)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck parses and checks the body: commands, every object
// inflated, commits hashed, the fast-forward walk, the trailer.
func BenchmarkCheck(b *testing.B) {
	body := realisticBody(b)
	ap := Approval{Refs: []string{"refs/heads/main"}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	sum, err := Check(bytes.NewReader(body), ap, Limits{})
	b.Logf("%d bytes, %d objects (%d deltas), %d commits whole, %d bytes inflated; verdict %v",
		len(body), sum.Objects, sum.Deltas, sum.Commits, sum.Inflated, err)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A commit sent as a delta is refused (cannot prove): the work
		// done is the same, the verdict is not what is measured.
		Check(onlyReader{bytes.NewReader(body)}, ap, Limits{})
	}
}

// BenchmarkGuard is the proxy's path: the Guard read through io.Copy,
// every byte handed on through its pipe.
func BenchmarkGuard(b *testing.B) {
	body := realisticBody(b)
	ap := Approval{Refs: []string{"refs/heads/main"}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g := NewGuard(onlyReader{bytes.NewReader(body)}, ap, Limits{})
		io.Copy(io.Discard, g)
		g.Close()
	}
}
