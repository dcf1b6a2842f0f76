package layer

import (
	"fmt"
	"os"
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

// BenchmarkApply500: applying a layer of 500 new files (staged, then
// renamed in) into an empty target/.
func BenchmarkApply500(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		target := b.TempDir()
		l, err := Create(filepath.Join(b.TempDir(), "layers"), Meta{Run: "bench", Target: target, Started: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 500; j++ {
			d := filepath.Join(l.Upper(), fmt.Sprintf("d%d", j%10))
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), []byte("content\n"), 0o644)
		}
		l.Close()
		b.StartTimer()
		if _, err := l.Apply(nil, false); err != nil {
			b.Fatal(err)
		}
	}
}
