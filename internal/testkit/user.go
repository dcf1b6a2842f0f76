package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// User is a regular user made for one test: what runs as someone other
// than root (no capabilities, a uid the cgroup and Landlock checks see).
type User struct {
	Name     string
	UID, GID int
}

// NewUser makes the user prefix followed by this process's pid (useradd
// -M, no home) and removes it when the test ends. It skips the test where
// users cannot be made (not root, no useradd, useradd failing).
func NewUser(t testing.TB, prefix string) User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("reason: creating a user needs root")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("reason: useradd not installed")
	}
	name := fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
	if out, err := exec.Command("useradd", "-M", "-s", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Skipf("reason: useradd: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return User{Name: name, UID: uid, GID: gid}
}

// Cred is the credential of a process started as u.
func (u User) Cred() *syscall.Credential {
	return &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}
}

// Own hands the tree at root to u (links themselves, not their targets).
func (u User) Own(root string) {
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, u.UID, u.GID) })
}

// CopyBinary copies the running test binary to dir/name, executable by
// everyone, and makes dir readable to all: the test binary sits in a
// 0700 build directory, out of another user's reach.
func CopyBinary(t testing.TB, dir, name string) string {
	t.Helper()
	os.Chmod(dir, 0o755)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	CopyFile(t, exe, dst)
	return dst
}
