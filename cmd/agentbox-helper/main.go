// Command agentbox-helper is the in-sandbox helper of agentbox in a binary
// of its own: the process agentbox starts for each run, which applies the
// kernel boundary to itself (rlimits, namespaces, capabilities, Landlock,
// seccomp) and execs the command. It links only the helper (x/sys/unix and
// go-landlock), so it starts in about a third of the time agentbox's own
// binary takes; agentbox uses it when it sits next to agentbox's executable
// and starts itself as the helper otherwise.
//
// It is started by agentbox only: run by hand it says so and exits 2.
package main

import (
	"fmt"
	"os"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
)

func main() {
	if helper.Main() {
		return
	}
	fmt.Fprintf(os.Stderr, "agentbox-helper: started by agentbox only (it sets up a sandbox from what agentbox passes it); run agentbox instead\n")
	os.Exit(2)
}
