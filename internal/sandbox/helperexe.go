package sandbox

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

// HelperArgv0 is the argv[0] the helper is started with; only
// MaybeRunHelper (and cmd/agentbox-helper) react to it.
const HelperArgv0 = helper.Argv0

// HelperBinary is the name of the small helper binary (cmd/agentbox-helper)
// the launcher looks for next to its own executable.
const HelperBinary = "agentbox-helper"

// MaybeRunHelper runs the sandbox helper and never returns when the process
// was started as one (argv[0] == HelperArgv0); otherwise it returns false at
// once. Call it first thing in main (and in TestMain of packages whose tests
// launch sandboxes), so the binary can serve as its own helper.
func MaybeRunHelper() bool { return helper.Main() }

// helperExe returns the binary started as the helper: exe when set (the
// caller's choice, Config.Exe); else agentbox-helper in the directory of
// the running executable, when there is one (it starts in about a third of
// the time: ~70 packages instead of ~250 to initialise and page in); else
// the running executable itself, which must call MaybeRunHelper first.
func helperExe(exe string) string {
	if exe != "" {
		return exe
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), HelperBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return "/proc/self/exe"
}

// HelperPath is the helper binary a run starts (exe if given, else
// agentbox-helper next to this executable, else this executable).
func HelperPath(exe string) string {
	if p := helperExe(exe); p != "/proc/self/exe" {
		return p
	}
	self, _ := os.Executable()
	return self
}

// ExitIfUnwiredHelper ends the process when it was started as a run's
// helper (argv[0] == HelperArgv0) and is about to start a run itself:
// its main did not call MaybeRunHelper first, so without this it would
// start another helper of itself, and so on until thread creation fails.
// It tells the launcher why on the helper's status descriptor (the run
// then fails with that line) and exits ExitFailure.
func ExitIfUnwiredHelper() {
	if len(os.Args) == 0 || os.Args[0] != HelperArgv0 {
		return
	}
	exe, _ := os.Executable()
	msg := "program " + exe + " was started as agentbox's sandbox helper but its main did not call agentbox.MaybeRunHelper() first " +
		"(add `if agentbox.MaybeRunHelper() { return }` at the top of main, and of TestMain in tests), " +
		"or install agentbox-helper next to it"
	line := []byte("125 " + msg + "\n")
	if n, _ := syscall.Write(helper.StatusFd, line); n != len(line) {
		os.Stderr.WriteString("agentbox: " + msg + "\n")
	}
	os.Exit(ExitFailure)
}
