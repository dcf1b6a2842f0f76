// Package testkit holds the helpers the kernel-level tests of several
// packages share (sandbox, internal/supervise): skipping when a program is
// missing, building a C program, waiting for a condition of another
// process. Tests only.
package testkit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// NeedProg skips the test, saying why, unless every program is on PATH.
func NeedProg(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		LookProg(t, n)
	}
}

// LookProg returns the path of program name on PATH; it skips the test,
// saying why, where it is not installed.
func LookProg(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("reason: %s not installed", name)
	}
	return p
}

// CopyFile copies the file from to the file to, executable by everyone
// (a program the test runs from another place).
func CopyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// CompileC builds a C program (gcc) into dir and returns its path; the test
// skips when gcc is missing or cannot build it.
func CompileC(t testing.TB, dir, name, src string, flags ...string) string {
	t.Helper()
	NeedProg(t, "gcc")
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-O1", "-o", bin, c, "-lpthread"}, flags...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Skipf("reason: gcc %s failed (toolchain incomplete?): %v\n%s", name, err, out)
	}
	return bin
}

// WaitCond polls cond until it holds (at most 20 s; a condition of another
// process, such as what /proc shows, has no event to wait on).
func WaitCond(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Exists reports whether p exists (a symlink counts as itself).
func Exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// PatchedLoader copies the system's dynamic loader (the first match of
// loaderGlobs) to dir with one byte of its build id (as buildID reads it)
// changed and one byte appended: not the same file, not the same content,
// not the same build id.
func PatchedLoader(t testing.TB, dir string, loaderGlobs []string, buildID func(io.ReaderAt) string) string {
	t.Helper()
	var src string
	for _, g := range loaderGlobs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			src = m[0]
			break
		}
	}
	if src == "" {
		t.Skip("reason: no dynamic loader found on this system")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bid := buildID(bytes.NewReader(data))
	if bid == "" {
		t.Skip("reason: the loader has no build id note")
	}
	raw, _ := hex.DecodeString(bid)
	i := bytes.Index(data, raw)
	if i < 0 {
		t.Fatal("build id bytes not found in the loader")
	}
	data[i] ^= 0xff
	data = append(data, 0)
	dst := filepath.Join(dir, "ld.copy")
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if buildID(bytes.NewReader(data)) == bid {
		t.Fatal("patch did not change the build id")
	}
	return dst
}

// TreeHash is every path under the roots (named root-relative to each
// root's parent: "target/a.c") with its mode, link target and content
// hash, sorted: two trees are the same byte for byte, modes and links
// included, when their TreeHash is.
func TreeHash(t testing.TB, roots ...string) string {
	t.Helper()
	return TreeHashSkipping(t, nil, roots...)
}

// TreeHashSkipping is TreeHash leaving out the paths skip names, relative
// to each root ("node_modules": that directory and everything in it).
func TreeHashSkipping(t testing.TB, skip []string, roots ...string) string {
	t.Helper()
	var lines []string
	for _, root := range roots {
		base := filepath.Dir(root)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if r, _ := filepath.Rel(root, p); slices.Contains(skip, r) {
				return filepath.SkipDir
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(base, p)
			line := fmt.Sprintf("%s %v", rel, fi.Mode())
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				l, _ := os.Readlink(p)
				line += " -> " + l
			case fi.Mode().IsRegular():
				b, _ := os.ReadFile(p)
				h := sha256.Sum256(b)
				line += " " + hex.EncodeToString(h[:])
			}
			lines = append(lines, line)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TempStateHome points XDG_STATE_HOME at a new temporary directory for the
// whole test binary (TestMain) and returns its removal: runs take
// checkpoints by default, and their stores must not land in the home
// directory of whoever runs the tests.
func TempStateHome() func() {
	state, err := os.MkdirTemp("", "agentbox-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	return func() { os.RemoveAll(state) }
}

// AnswerApprovals is an approval client of the socket protocol
// (docs/approval-protocol.md) on the approver socket at path: it connects
// once the socket exists (waiting at most 30 s) and answers each request
// with answer(request) until the run closes the socket.
func AnswerApprovals(path string, answer func(req map[string]any) string) {
	var c net.Conn
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var err error
		if c, err = net.Dial("unix", path); err == nil {
			break
		}
	}
	if c == nil {
		return
	}
	ServeApprovals(c, answer)
}

// ServeApprovals answers each request the approval connection c brings
// with answer(request), or leaves it unanswered where answer returns "",
// until the connection ends; it closes c.
func ServeApprovals(c net.Conn, answer func(req map[string]any) string) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["type"] != "request" {
			continue
		}
		if a := answer(m); a != "" {
			line, _ := json.Marshal(map[string]any{"type": "response", "id": m["id"], "answer": a})
			c.Write(append(line, '\n'))
		}
	}
}

// CheckOutput reports, as test errors, each string of want that out
// lacks and each string of unwanted that it has.
func CheckOutput(t testing.TB, out string, want, unwanted []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, w := range unwanted {
		if strings.Contains(out, w) {
			t.Errorf("output has %q:\n%s", w, out)
		}
	}
}
