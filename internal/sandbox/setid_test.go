package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// extraEscapeClients are escape-client modes defined outside
// escape_test.go (escapeClient looks them up).
var extraEscapeClients = map[string]func(args []string) int{
	"setid": setidClient,
}

// setidClient tries, in its working directory (target/), every way to
// create a file or directory with a set-uid or set-gid mode, and prints
// one "name errno" line per try.
func setidClient([]string) int {
	unix.Umask(0)
	cstr := func(s string) uintptr {
		b, _ := unix.BytePtrFromString(s)
		return uintptr(unsafe.Pointer(b))
	}
	const wr = unix.O_WRONLY | unix.O_CLOEXEC
	atFdcwd := unix.AT_FDCWD
	cwd := uintptr(atFdcwd)
	type try struct {
		name string
		nr   uintptr
		a    [4]uintptr
	}
	tries := []try{
		{"openat-creat-4755", unix.SYS_OPENAT, [4]uintptr{cwd, cstr("o2"), wr | unix.O_CREAT, 0o4755}},
		{"openat-tmpfile-4755", unix.SYS_OPENAT, [4]uintptr{cwd, cstr("."), unix.O_TMPFILE | unix.O_RDWR, 0o4755}},
		{"mknodat-4755", unix.SYS_MKNODAT, [4]uintptr{cwd, cstr("n2"), unix.S_IFREG | 0o4755, 0}},
		{"mkdirat-2755", unix.SYS_MKDIRAT, [4]uintptr{cwd, cstr("d2"), 0o2755}},
	}
	if runtime.GOARCH == "amd64" {
		tries = append(tries,
			try{"open-creat-4755", unix.SYS_OPEN, [4]uintptr{cstr("o1"), wr | unix.O_CREAT, 0o4755}},
			try{"creat-2755", unix.SYS_CREAT, [4]uintptr{cstr("c1"), 0o2755}},
			try{"mknod-4755", unix.SYS_MKNOD, [4]uintptr{cstr("n1"), unix.S_IFREG | 0o4755, 0}},
			try{"mkdir-2755", unix.SYS_MKDIR, [4]uintptr{cstr("d1"), 0o2755}},
		)
	}
	for _, tr := range tries {
		_, _, e := unix.Syscall6(tr.nr, tr.a[0], tr.a[1], tr.a[2], tr.a[3], 0, 0)
		fmt.Printf("%s %d\n", tr.name, int(e))
	}
	how := unix.OpenHow{Flags: wr | unix.O_CREAT, Mode: 0o4755}
	_, _, e := unix.Syscall6(unix.SYS_OPENAT2, cwd, cstr("o3"), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	fmt.Printf("openat2-creat-4755 %d\n", int(e))
	return 0
}

// TestEscapeSetidByCreateMode: a sandboxed process (root without
// capabilities when the tests run as root: the files it makes are
// root's) tries to create set-uid/set-gid files and directories in
// target/ through the mode argument of open, openat, creat, mknod,
// mknodat, mkdir, mkdirat and openat2. Each is refused (EPERM, openat2
// ENOSYS), and from outside no file in target/ has either bit. Programs
// the agents run (sh, python, node, git) still create files and
// directories.
func TestEscapeSetidByCreateMode(t *testing.T) {
	w := newTestWS(t)
	r := w.run(runOpts{}, "./client", "escape-client", "setid")
	if r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, r.out)
	}
	want := map[string]int{"openat-creat-4755": int(unix.EPERM), "openat-tmpfile-4755": int(unix.EPERM),
		"mknodat-4755": int(unix.EPERM), "mkdirat-2755": int(unix.EPERM), "openat2-creat-4755": int(unix.ENOSYS)}
	if runtime.GOARCH == "amd64" {
		for _, k := range []string{"open-creat-4755", "creat-2755", "mknod-4755", "mkdir-2755"} {
			want[k] = int(unix.EPERM)
		}
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
		var name string
		var errno int
		if _, err := fmt.Sscanf(line, "%s %d", &name, &errno); err == nil {
			got[name] = errno
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: errno %d (present %v), want %d (%v)", k, g, ok, v, syscall.Errno(v))
		}
	}
	noSetid(t, filepath.Join(w.W, "target"))

	// The tools an agent runs create files and directories as before.
	tools := `set -e
echo sh > sh.txt
mkdir -p made/deeper
python3 -c "open('py.txt','w').write('py'); import os; os.makedirs('pyd/x', exist_ok=True)"
node -e "const fs=require('fs'); fs.writeFileSync('node.txt','node'); fs.mkdirSync('nd/x',{recursive:true})"
git init -q repo && cd repo && echo x > f && git add f && git -c user.name=t -c user.email=t@t commit -qm m && echo TOOLS-OK`
	for _, tool := range []string{"python3", "node", "git"} {
		if _, err := os.Stat("/usr/bin/" + tool); err != nil {
			t.Skipf("reason: /usr/bin/%s not installed for the positive control", tool)
		}
	}
	r = w.sh(runOpts{}, tools)
	if r.err != nil || r.code != 0 || !strings.Contains(r.out, "TOOLS-OK") {
		t.Fatalf("tools under the mode filter: exit %d err %v\n%s", r.code, r.err, r.out)
	}
	noSetid(t, filepath.Join(w.W, "target"))
}

// noSetid fails t for any path under dir with a set-uid or set-gid bit.
func noSetid(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s has mode %v: made set-uid/set-gid from inside the sandbox", p, fi.Mode())
		}
		return nil
	})
}
