package layer

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCreateClose: what a review run's launch pays for its layer
// (directories, lock, meta) and its end (meta again).
func BenchmarkCreateClose(b *testing.B) {
	root := filepath.Join(b.TempDir(), "layers")
	target := b.TempDir()
	for i := 0; i < b.N; i++ {
		l, err := Create(root, Meta{Run: fmt.Sprintf("r%d", i), Target: target, Started: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
