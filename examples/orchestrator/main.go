// Command orchestrator is an example of launching several agents at once with
// agentbox: each agent runs under its own id in one shared workspace, asks are
// answered over each run's approval socket by a simple prefix policy, and the
// shared audit log is verified and summarised at the end.
//
//	go run ./examples/orchestrator --agentbox bin/agentbox --workspace ./ws \
//	    --agents 3 --allow-prefix "npm test" -- sh -c 'echo hello from $AGENTBOX_AGENT'
//
// It shows the three things an orchestrator relies on: agentbox's exit codes
// (DESIGN §6), the JSON-lines approval protocol (docs/approval-protocol.md),
// and one audit log that many concurrent runs append to without interleaving.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

type prefixes []string

func (p *prefixes) String() string     { return strings.Join(*p, ", ") }
func (p *prefixes) Set(s string) error { *p = append(*p, s); return nil }

// request is the subset of the approval protocol's request message we use.
type request struct {
	Type string   `json:"type"`
	ID   string   `json:"id"`
	Argv []string `json:"argv"`
}

func main() {
	bin := flag.String("agentbox", "agentbox", "agentbox `BINARY`")
	ws := flag.String("workspace", "", "workspace `DIR` (created with agentbox init if missing)")
	role := flag.String("role", "developer", "role `NAME` for every agent")
	n := flag.Int("agents", 2, "number of agents to launch")
	auditFile := flag.String("audit", "", "shared audit log `FILE` (default: <workspace>.audit.jsonl)")
	var allow prefixes
	flag.Var(&allow, "allow-prefix", "approve asks whose argv starts with `WORDS` (repeatable); everything else is denied")
	flag.Parse()
	if *ws == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: orchestrator --workspace DIR [--agents N] [--allow-prefix WORDS]... -- CMD...")
		os.Exit(2)
	}
	if *auditFile == "" {
		*auditFile = filepath.Clean(*ws) + ".audit.jsonl"
	}
	if _, err := os.Stat(filepath.Join(*ws, "context")); err != nil {
		if out, err := exec.Command(*bin, "init", *ws).CombinedOutput(); err != nil {
			fatalf("agentbox init %s: %v\n%s", *ws, err, out)
		}
	}
	sockDir, err := os.MkdirTemp("", "orchestrator-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(sockDir)

	var wg sync.WaitGroup
	codes := make([]int, *n)
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("agent-%d", i+1)
			sock := filepath.Join(sockDir, id+".sock")
			args := []string{"run", "--role", *role, "--workspace", *ws, "--agent", id,
				"--approve", "socket:" + sock, "--audit", *auditFile, "--"}
			cmd := exec.Command(*bin, append(args, flag.Args()...)...)
			cmd.Env = append(os.Environ(), "AGENTBOX_AGENT="+id)
			outW, outDone := prefixWriter(id, os.Stdout)
			errW, errDone := prefixWriter(id, os.Stderr)
			cmd.Stdout, cmd.Stderr = outW, errW
			if err := cmd.Start(); err != nil {
				fatalf("start %s: %v", id, err)
			}
			outW.Close() // the child holds its own copies
			errW.Close()
			go approve(id, sock, allow)
			codes[i] = exitCode(cmd.Wait())
			<-outDone
			<-errDone
		}()
	}
	wg.Wait()
	for i, c := range codes {
		fmt.Printf("agent-%d exited %d (%s)\n", i+1, c, meaning(c))
	}
	for _, sub := range [][]string{{"audit", "verify", "--file", *auditFile}, {"audit", "report", "--file", *auditFile}} {
		out, err := exec.Command(*bin, sub...).CombinedOutput()
		fmt.Printf("$ agentbox %s\n%s", strings.Join(sub, " "), out)
		if err != nil {
			fmt.Printf("(%v)\n", err)
		}
	}
}

// approve connects to one run's approval socket (retrying until agentbox has
// created it) and answers every request: allow when argv starts with one of
// the allowed prefixes, deny otherwise.
func approve(id, sock string, allow prefixes) {
	var conn net.Conn
	var err error
	for range 100 {
		if conn, err = net.Dial("unix", sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if conn == nil {
		return // the run ended (or never asked) before the socket appeared
	}
	defer conn.Close()
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var r request
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Type != "request" {
			continue
		}
		answer := "deny"
		line := strings.Join(r.Argv, " ")
		for _, p := range allow {
			if line == p || strings.HasPrefix(line, p+" ") {
				answer = "allow"
			}
		}
		fmt.Printf("[%s] approval %s: %q\n", id, answer, line)
		msg, _ := json.Marshal(map[string]string{"type": "response", "id": r.ID, "answer": answer})
		if _, err := conn.Write(append(msg, '\n')); err != nil {
			return
		}
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// meaning explains agentbox run's exit codes (DESIGN §6).
func meaning(code int) string {
	switch {
	case code == 0:
		return "success"
	case code == 124:
		return "timed out"
	case code == 125:
		return "agentbox failed"
	case code == 126:
		return "denied"
	case code == 127:
		return "not found"
	case code > 128:
		return fmt.Sprintf("killed by signal %d", code-128)
	}
	return "command's own status"
}

// prefixWriter labels each line of an agent's output with its id. It returns
// the pipe's write end for the child and a channel closed once all output has
// been copied.
func prefixWriter(id string, w *os.File) (*os.File, <-chan struct{}) {
	r, pw, err := os.Pipe()
	if err != nil {
		fatalf("pipe: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			fmt.Fprintf(w, "[%s] %s\n", id, sc.Text())
		}
		r.Close()
	}()
	return pw, done
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "orchestrator: "+format+"\n", args...)
	os.Exit(1)
}
