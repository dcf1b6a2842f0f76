//go:build linux

package identity

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testkit"
	"golang.org/x/sys/unix"
)

// TestIdentifyCopies: a copy, hardlink, symlink, rename, memfd copy and a
// modified copy (bytes appended: same ELF build ID) of git are all "git";
// an unrelated binary keeps its own name.
func TestIdentifyCopies(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("reason: git not installed")
	}
	real, _ := filepath.EvalSymlinks(gitPath)
	id := newIdentifier([]string{"git", "sh"}, []string{filepath.Dir(real), "/bin", "/usr/bin"})
	d := t.TempDir()
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "x"), data, 0o755)
	os.WriteFile(filepath.Join(d, "y"), append(append([]byte{}, data...), 0, 1, 2), 0o755)
	os.Symlink(real, filepath.Join(d, "s"))
	hard := os.Link(real, filepath.Join(d, "h")) == nil
	mfd, err := unix.MemfdCreate("x", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(mfd)
	unix.Write(mfd, data)
	cases := []struct {
		path, via string
	}{
		{real, "file"},
		{filepath.Join(d, "x"), "content"},
		{filepath.Join(d, "s"), "file"},
		{"/proc/self/fd/" + strconv.Itoa(mfd), "content"},
	}
	if BuildID(mustOpen(t, real)) != "" {
		cases = append(cases, struct{ path, via string }{filepath.Join(d, "y"), "build-id"})
	}
	if hard {
		cases = append(cases, struct{ path, via string }{filepath.Join(d, "h"), "file"})
	}
	for _, c := range cases {
		got, err := id.IdentifyFile(c.path, []string{"x", "push"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "git" || !got.Known || got.Via != c.via {
			t.Errorf("%s: %+v, want git via %s", c.path, got, c.via)
		}
	}
	other, err := id.IdentifyFile("/bin/true", []string{"git"})
	if err != nil || other.Known || other.Name != "true" {
		t.Errorf("/bin/true named git: %+v %v", other, err)
	}
}

func mustOpen(t testing.TB, p string) *os.File {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestProgramArgv(t *testing.T) {
	cases := []struct {
		id   Identity
		argv []string
		want []string
	}{
		{Identity{Name: "git"}, []string{"x", "push"}, []string{"git", "push"}},
		{Identity{Name: "git"}, []string{"/usr/lib/git-core/git-receive-pack", "r.git"}, []string{"git", "receive-pack", "r.git"}},
		{Identity{Name: "busybox", Multicall: true}, []string{"busybox", "rm", "-rf", "x"}, []string{"rm", "-rf", "x"}},
		{Identity{Name: "rm", Multicall: true}, []string{"rm", "x"}, []string{"rm", "x"}},
		{Identity{Name: "sh"}, []string{"/bin/sh", "./s.sh"}, []string{"sh", "./s.sh"}},
		{Identity{Name: "true"}, nil, []string{"true"}},
	}
	for _, c := range cases {
		if got := ProgramArgv(c.id, c.argv); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v %q: got %q want %q", c.id, c.argv, got, c.want)
		}
	}
}

func FuzzParseBuildIDNote(f *testing.F) {
	note := make([]byte, 12)
	binary.LittleEndian.PutUint32(note[0:], 4)
	binary.LittleEndian.PutUint32(note[4:], 8)
	binary.LittleEndian.PutUint32(note[8:], 3)
	note = append(note, []byte("GNU\x00\x01\x02\x03\x04\x05\x06\x07\x08")...)
	f.Add(note)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = parseBuildIDNote(data, binary.LittleEndian)
		_ = parseBuildIDNote(data, binary.BigEndian)
	})
}

func FuzzProgramArgv(f *testing.F) {
	f.Add("-am\x00msg")
	f.Add("--mess=x\x00--amend")
	f.Add("-F")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		_ = ProgramArgv(Identity{Name: "git"}, args)
		_ = ProgramArgv(Identity{Name: "busybox", Multicall: true}, args)
	})
}

// FuzzBuildID: the ELF header and program-header reader never panics and
// agrees with itself on truncated input (a prefix of a real binary).
func FuzzBuildID(f *testing.F) {
	if b, err := os.ReadFile("/bin/true"); err == nil {
		f.Add(b[:min(len(b), 8192)])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = BuildID(strings.NewReader(string(data)))
	})
}

// TestBuildIDReal: the build ID of a real binary is found, in the same form
// as `readelf -n` prints it (lower-case hex).
func TestBuildIDReal(t *testing.T) {
	f, err := os.Open("/bin/true")
	if err != nil {
		t.Skip("reason: no /bin/true")
	}
	defer f.Close()
	out, err := exec.Command("readelf", "-n", "/bin/true").Output()
	if err != nil {
		t.Skip("reason: readelf not available")
	}
	_, rest, ok := strings.Cut(string(out), "Build ID: ")
	if !ok {
		t.Skip("reason: /bin/true has no build ID")
	}
	want := strings.Fields(rest)[0]
	if got := BuildID(f); got != want {
		t.Errorf("BuildID(/bin/true) = %q, want %q", got, want)
	}
}

// TestNewIdentifierScan: names are found by one listing per directory,
// versioned interpreters by their n[0-9.]* spellings, a directory reached
// twice (symlink) is scanned once, and a name found first in an earlier
// directory keeps its canonical name.
func TestNewIdentifierScan(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("reason: no /bin/sh")
	}
	d := t.TempDir()
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	os.Mkdir(a, 0o755)
	os.Mkdir(b, 0o755)
	os.Symlink(a, filepath.Join(d, "a-again"))
	cp := func(dst string) {
		data, err := os.ReadFile(sh)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cp(filepath.Join(a, "python3.99"))
	cp(filepath.Join(b, "git"))
	os.WriteFile(filepath.Join(a, "python3x"), []byte("#!/bin/sh\n"), 0o755) // not n[0-9.]*
	os.WriteFile(filepath.Join(b, "curl"), []byte("not executable"), 0o644)
	id := newIdentifier([]string{"git", "python3", "curl"}, []string{a, filepath.Join(d, "a-again"), b, "relative/dir", filepath.Join(d, "missing")})
	got := map[string]bool{}
	for _, n := range id.KnownNames() {
		got[n] = true
	}
	for _, c := range []struct {
		name string
		want bool
	}{{"git", true}, {"python3", true}, {"curl", false}} {
		if got[c.name] != c.want {
			t.Errorf("known %s = %v, want %v (known: %v)", c.name, got[c.name], c.want, id.KnownNames())
		}
	}
	// python3.99 and git are byte-identical but different files: two
	// entries (same content is matched by hash later, not here); the
	// dynamic loader is always indexed too.
	n := 0
	for _, b := range id.bins {
		if b.names[0] != LoaderName {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d binaries indexed, want 2 (%v)", n, id.KnownNames())
	}
	ident, err := id.IdentifyFile(filepath.Join(a, "python3.99"), []string{"python3.99"})
	if err != nil || ident.Name != "python3" || ident.Via != "file" {
		t.Errorf("python3.99 identified as %+v, %v; want python3 via file", ident, err)
	}
}

// TestLoaderRecognisedByStructure: a patched copy of the loader is still
// the loader (by its ELF structure); ordinary programs and libraries are not.
func TestLoaderRecognisedByStructure(t *testing.T) {
	dst := testkit.PatchedLoader(t, t.TempDir(), LoaderGlobs, BuildID)
	id, err := newIdentifier([]string{"git"}, []string{"/usr/bin"}).IdentifyFile(dst, []string{dst})
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != LoaderName || id.Via != "elf" {
		t.Errorf("patched loader identified as %+v; want %s by elf", id, LoaderName)
	}
	for _, p := range []string{"/bin/true", "/usr/bin/git"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		f, _ := os.Open(p)
		if isDynamicLoader(f) {
			t.Errorf("%s taken for a loader", p)
		}
		f.Close()
	}
	if m, _ := filepath.Glob("/lib/x86_64-linux-gnu/libc.so.6"); len(m) > 0 {
		f, _ := os.Open(m[0])
		if isDynamicLoader(f) {
			t.Errorf("libc taken for a loader")
		}
		f.Close()
	}
}
