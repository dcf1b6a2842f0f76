package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// agentboxCLI runs this test binary as the agentbox binary (TestMain,
// AGENTBOX_TEST_MAIN) in dir: a real process, its output read from outside.
func agentboxCLI(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1")
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("agentbox %v: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// suggestion returns the command the warning line holding all of parts
// tells the human to run, as printed.
func suggestion(t *testing.T, stderr string, parts ...string) string {
	t.Helper()
next:
	for _, line := range strings.Split(stderr, "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		if _, cmd, ok := strings.Cut(line, "review it, or "); ok {
			return cmd
		}
	}
	t.Fatalf("no warning with %q in:\n%s", parts, stderr)
	return ""
}

// TestQuarantineLeftoversCLI: a real run, as a real agentbox process,
// leaves three repositories under target/:
//
//   - x, whose .git/hooks is a symbolic link to a directory outside the
//     workspace holding pre-commit: the warning names the link as outside,
//     never the outside file as a hook; agentbox quarantine on the outside
//     file and on the path through the link refuses, naming them, and the
//     file stays where it was; the suggested command moves the link aside;
//   - one in a directory named "s;touch${IFS}PWNQ;#" with a hook: the
//     suggested command, pasted into a real sh, creates no PWNQ and
//     quarantines that hook;
//   - one in a directory whose name holds ESC ]0;...BEL with a hook: the
//     warning carries no raw ESC or BEL byte, only their escapes.
func TestQuarantineLeftoversCLI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	ws, roleFile, auditFile := cliWS(t)
	target := filepath.Join(ws, "target")
	outside := filepath.Join(t.TempDir(), "home", "u", "hooks")
	os.MkdirAll(outside, 0o755)
	evil := filepath.Join(outside, "pre-commit")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\necho owned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const pwn = "s;touch${IFS}PWNQ;#"
	const esc = "e\x1b]0;pwned\x07x"
	script := filepath.Join(target, "plant.sh")
	os.WriteFile(script, []byte(`set -e
cd `+target+`
git init -q x && rm -rf x/.git/hooks && ln -s `+outside+` x/.git/hooks
git init -q 's;touch${IFS}PWNQ;#'
printf '#!/bin/sh\n' > 's;touch${IFS}PWNQ;#/.git/hooks/pre-commit'
e=$(printf 'e\033]0;pwned\007x')
git init -q "$e"
printf '#!/bin/sh\n' > "$e/.git/hooks/post-checkout"
echo planted
`), 0o755)
	stdout, stderr, code := agentboxCLI(t, t.TempDir(), "run", "--role", "clitest", "--workspace", ws, "--policy", roleFile,
		"--no-user-policy", "--approve", "none", "--audit", auditFile, "--", "/bin/sh", script)
	if code != 0 || !strings.Contains(stdout, "planted") {
		t.Fatalf("run: exit %d stdout %q stderr:\n%s", code, stdout, stderr)
	}

	// (c) The agent's names reach the terminal escaped.
	if strings.ContainsAny(stderr, "\x1b\x07") {
		t.Errorf("a raw ESC or BEL byte reached the terminal:\n%q", stderr)
	}
	if !strings.Contains(stderr, `e\x1b]0;pwned\x07x/.git/hooks/post-checkout: hook post-checkout`) {
		t.Errorf("the warning lacks the escaped path:\n%s", stderr)
	}

	// (a) The link is the finding, not what lies outside.
	hooks := filepath.Join(target, "x", ".git", "hooks")
	if want := hooks + ": symbolic link to " + outside + ", outside " + target + ": git would run programs from there"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, evil) || strings.Contains(stderr, "x/.git/hooks/pre-commit") {
		t.Errorf("the outside file is reported as a hook written during the run:\n%s", stderr)
	}
	for _, tc := range []struct{ path, want string }{
		{evil, "writable area"},
		{filepath.Join(hooks, "pre-commit"), hooks + " is a symbolic link to " + outside},
		{hooks + "/../hooks/pre-commit", "'..' components are refused"},
	} {
		_, errOut, code := agentboxCLI(t, t.TempDir(), "quarantine", tc.path)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "not moved") {
			t.Errorf("quarantine %s: exit %d, stderr %q; want %d and %q", tc.path, code, errOut, exitBadInput, tc.want)
		}
		if _, err := os.Stat(evil); err != nil {
			t.Fatalf("quarantine %s moved the file outside the workspace: %v", tc.path, err)
		}
	}
	// Relative to a working directory inside the link: refused as well.
	if _, errOut, code := agentboxCLI(t, target, "quarantine", "x/.git/hooks/pre-commit"); code != exitBadInput || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("relative quarantine through the link: exit %d %q", code, errOut)
	}

	// The suggested commands, pasted into a real shell with agentbox on
	// PATH, quarantine what they name and nothing else.
	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "agentbox")); err != nil {
		t.Fatal(err)
	}
	paste := func(shell, line string) (string, string) {
		t.Helper()
		cwd := t.TempDir()
		sh := exec.Command(shell, "-c", line)
		sh.Dir = cwd
		sh.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1", "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Errorf("sh -c %s: %v %s", line, err, out)
		}
		return cwd, string(out)
	}
	paste("sh", suggestion(t, stderr, hooks+":", "symbolic link"))
	if fi, err := os.Lstat(hooks + ".agentbox-quarantine"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the hooks link was not moved aside: %v", err)
	}
	if _, err := os.Stat(evil); err != nil {
		t.Errorf("the outside file is gone: %v", err)
	}

	// (b) A directory name that is shell code stays one word.
	hook := filepath.Join(target, pwn, ".git", "hooks", "pre-commit")
	cwd, out := paste("sh", suggestion(t, stderr, "PWNQ", "hook pre-commit"))
	if _, err := os.Stat(filepath.Join(cwd, "PWNQ")); err == nil {
		t.Errorf("pasting the suggested command ran touch PWNQ (output %q)", out)
	}
	if _, err := os.Stat(hook + ".agentbox-quarantine"); err != nil {
		t.Errorf("the hook in %q was not quarantined: %v (output %q)", pwn, err, out)
	}

	// And the ESC-named one: its command, pasted into bash (the $'...'
	// escapes are bash's; POSIX sh reads them as a path that is not
	// there), reaches the real path.
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("reason: bash not installed")
	}
	paste("bash", suggestion(t, stderr, "pwned", "hook post-checkout"))
	if _, err := os.Stat(filepath.Join(target, esc, ".git", "hooks", "post-checkout.agentbox-quarantine")); err != nil {
		t.Errorf("the hook under the ESC-named directory was not quarantined: %v", err)
	}
}

// TestErrorLineEscaped: agentbox's one-line error (exitCode) escapes what
// it quotes from its arguments — a path or flag an agent chose — so an
// ESC ]0;...BEL in it reaches the terminal as text, not as a control
// sequence. Two real agentbox processes: an unknown flag, and a PATH.
func TestErrorLineEscaped(t *testing.T) {
	for _, args := range [][]string{
		{"quarantine", "--x\x1b]0;pwned\x07"},
		{"quarantine", "/nowhere/\x1b]0;pwned\x07/.git/hooks/pre-commit"},
	} {
		_, stderr, code := agentboxCLI(t, t.TempDir(), args...)
		if code == 0 || strings.ContainsAny(stderr, "\x1b\x07") || !strings.Contains(stderr, `\x1b]0;pwned\x07`) {
			t.Errorf("agentbox %q: exit %d, stderr %q; want an error with the escapes, no raw ESC/BEL", args, code, stderr)
		}
	}
}
