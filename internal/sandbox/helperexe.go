package sandbox

import (
	"os"
	"path/filepath"

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
