package layer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestApplyNoSetidNoDevices: a review layer holding a set-uid file and a
// set-gid directory (made as root in a review run) is applied without
// either bit; a layer holding a device node or a FIFO is not applied at
// all, the refusal naming it, and target/ gets nothing.
func TestApplyNoSetidNoDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reason: making set-uid files and a device node in the layer needs root")
	}
	root := filepath.Join(t.TempDir(), "layers")
	target := t.TempDir()
	mk := func(run string) *Layer {
		l, err := Create(root, Meta{Run: run, Target: target, Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := mk("r1")
	up := l.Upper()
	for _, step := range []error{
		os.WriteFile(filepath.Join(up, "prog"), []byte("program\n"), 0o755),
		unix.Chmod(filepath.Join(up, "prog"), 0o4755),
		os.Mkdir(filepath.Join(up, "shared"), 0o755),
		unix.Chmod(filepath.Join(up, "shared"), 0o2775),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if _, err := l.Apply(nil, false); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for _, p := range []string{"prog", "shared"} {
		fi, err := os.Lstat(filepath.Join(target, p))
		if err != nil {
			t.Fatalf("%s not applied: %v", p, err)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s applied with mode %v", p, fi.Mode())
		}
	}
	for _, node := range []struct {
		name string
		make func(p string) error
	}{
		{"null", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }},
	} {
		l := mk("r-" + node.name)
		if err := node.make(filepath.Join(l.Upper(), node.name)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(l.Upper(), "with-"+node.name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := l.Apply(nil, false)
		if err == nil || !strings.Contains(err.Error(), node.name) {
			t.Errorf("Apply of a layer with %s: %v; want a refusal naming it", node.name, err)
		}
		for _, p := range []string{node.name, "with-" + node.name} {
			if _, err := os.Lstat(filepath.Join(target, p)); err == nil {
				t.Errorf("%s was made in target/", p)
			}
		}
	}
}
