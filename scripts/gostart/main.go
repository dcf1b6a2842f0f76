// Command gostart is the floor of a Go launcher, for scripts/bench-run.sh:
// what starting a Go runtime costs before a launcher does any work of its
// own. It does nothing but start a program.
//
//	gostart run PROG [ARG...]    fork and exec PROG (os/exec), wait, exit with its status
//	gostart exec PROG [ARG...]   replace itself with PROG (execve)
//
// `gostart run /bin/true` is one Go program starting a command (any Go
// launcher's floor); `gostart run gostart exec /bin/true` is agentbox's
// structure with nothing set up: a Go launcher starts a Go helper, which
// execs the command.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gostart run|exec PROG [ARG...]")
		os.Exit(2)
	}
	prog, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostart:", err)
		os.Exit(127)
	}
	switch os.Args[1] {
	case "exec":
		err = syscall.Exec(prog, os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, "gostart: exec:", err)
		os.Exit(126)
	case "run":
		c := exec.Command(prog, os.Args[3:]...)
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = c.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gostart:", err)
			os.Exit(126)
		}
	default:
		fmt.Fprintf(os.Stderr, "gostart: unknown mode %q (run or exec)\n", os.Args[1])
		os.Exit(2)
	}
}
