package helper

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenDirNoFollow: the one-openat2 path and the walk agree: an
// existing directory opens, a symlink anywhere on the way (the last
// component too) is refused whether or not missing directories are made,
// a missing directory is made only when asked.
func TestOpenDirNoFollow(t *testing.T) {
	d := t.TempDir()
	real := filepath.Join(d, "real", "a", "b")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(d, "real"), filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(d, "real", "a", "lastlink")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		path  string
		mkdir bool
		ok    bool
	}{
		{"existing", real, false, true},
		{"existing, uncleaned", real + "/./", false, true},
		{"symlink on the way", filepath.Join(d, "link", "a", "b"), false, false},
		{"symlink on the way, mkdir", filepath.Join(d, "link", "a", "new"), true, false},
		{"symlink last", filepath.Join(d, "real", "a", "lastlink"), false, false},
		{"symlink last, mkdir", filepath.Join(d, "real", "a", "lastlink"), true, false},
		{"missing", filepath.Join(real, "x", "y"), false, false},
		{"missing, mkdir", filepath.Join(real, "x", "y"), true, true},
		{"relative", "real/a", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, err := openDirNoFollow(tc.path, tc.mkdir)
			if (err == nil) != tc.ok {
				t.Fatalf("openDirNoFollow(%q, %v): %v, want ok=%v", tc.path, tc.mkdir, err, tc.ok)
			}
			if err != nil {
				return
			}
			defer unix.Close(fd)
			var st, want unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				t.Fatal(err)
			}
			if err := unix.Lstat(filepath.Clean(tc.path), &want); err != nil {
				t.Fatal(err)
			}
			if st.Ino != want.Ino || st.Dev != want.Dev {
				t.Errorf("opened another directory than %s", tc.path)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(d, "real", "a", "new")); err == nil {
		t.Error("a directory was made through a symlink")
	}
}

// BenchmarkOpenDirNoFollow: opening an existing directory six levels
// down, as the host caches' layers are at every launch.
func BenchmarkOpenDirNoFollow(b *testing.B) {
	p := filepath.Join(b.TempDir(), "a", "b", "c", "d")
	if err := os.MkdirAll(p, 0o755); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		fd, err := openDirNoFollow(p, false)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
