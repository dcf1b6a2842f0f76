// Command approval-client answers agentbox approval requests over the unix
// socket opened by `agentbox run --approve socket:PATH`. It is a reference for
// orchestrator authors: the whole protocol (docs/approval-protocol.md) is one
// JSON object per line, and this file speaks it with nothing but the
// standard library.
//
// Examples:
//
//	# allow commits, deny everything else
//	approval-client --socket /run/agentbox.sock --allow-prefix "git commit" --deny-rest
//
//	# ask me on this terminal for every request
//	approval-client --socket /run/agentbox.sock --interactive
//
// Rules: a request whose argv starts with an --allow-prefix (word by word;
// argv[0] may match by base name, so "git" matches /usr/bin/git) is allowed,
// one starting with a --deny-prefix is denied; deny prefixes are checked
// first. --always turns those answers into allow_always/deny_always.
// Requests no rule matches are denied with --deny-rest, asked about with
// --interactive (answer y, n, Y = allow always, N = deny always, r =
// remember), and otherwise left for another client or the timeout, which
// denies.
//
// Exit status: 0 when the server closes the connection or --count answers
// were sent, 1 on a connection or protocol error, 2 on bad flags.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// message is any line the server sends; unused fields stay empty.
type message struct {
	Type    string `json:"type"` // hello, request, cancel, ack, error
	Version int    `json:"version"`
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Role    string `json:"role"`
	Pid     int    `json:"pid"`
	Program string `json:"program"`
	// Identified says how agentbox identified the program; Env are the
	// variables that change what it runs or loads (LD_PRELOAD, GIT_*...).
	Identified string   `json:"identified"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
	Cwd        string   `json:"cwd"`
	Action     string   `json:"action"`
	Rule       string   `json:"rule"`
	Reason     string   `json:"reason"`
	Deadline   string   `json:"deadline"`
	Answer     string   `json:"answer"`
	Message    string   `json:"message"`
}

// response is the one line a client sends.
type response struct {
	Type   string `json:"type"` // always "response"
	ID     string `json:"id"`
	Answer string `json:"answer"` // allow, allow_always, deny, deny_always, remember
	Prefix string `json:"prefix,omitempty"`
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ", ") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: tests call it directly.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approval-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var allow, deny list
	socket := fs.String("socket", "", "unix socket `PATH` given to agentbox run --approve socket:PATH")
	fs.Var(&allow, "allow-prefix", "allow requests whose argv starts with these `words` (repeatable)")
	fs.Var(&deny, "deny-prefix", "deny requests whose argv starts with these `words` (repeatable)")
	always := fs.Bool("always", false, "answer rule matches with allow_always/deny_always (session rules)")
	denyRest := fs.Bool("deny-rest", false, "deny requests no prefix matches")
	interactive := fs.Bool("interactive", false, "ask on stdin about requests no prefix matches")
	count := fs.Int("count", 0, "exit after sending `N` answers (0: run until the server closes)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *socket == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "approval-client: --socket PATH is required and no arguments are accepted")
		return 2
	}
	if *denyRest && *interactive {
		fmt.Fprintln(stderr, "approval-client: --deny-rest and --interactive exclude each other")
		return 2
	}

	conn, err := net.Dial("unix", *socket)
	if err != nil {
		fmt.Fprintf(stderr, "approval-client: %v\n", err)
		return 1
	}
	defer conn.Close()
	in := bufio.NewScanner(conn)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	keys := bufio.NewScanner(stdin)
	enc := json.NewEncoder(conn)
	sent := 0

	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintf(stderr, "approval-client: bad server line %q: %v\n", in.Text(), err)
			return 1
		}
		switch m.Type {
		case "hello":
			fmt.Fprintf(stdout, "connected to %s (protocol %d)\n", *socket, m.Version)
		case "error":
			fmt.Fprintf(stdout, "server error: %s\n", m.Message)
		case "cancel", "ack":
			// Nothing to do: the request is settled (by us, someone else or the timeout).
		case "request":
			fmt.Fprintf(stdout, "request %s: agent %s role %s pid %d: %s\n  program %s, %s\n  cwd %s, rule %s: %s\n",
				m.ID, m.Agent, m.Role, m.Pid, quote(m.Argv), quote([]string{m.Program}), quote([]string{m.Identified}),
				quote([]string{m.Cwd}), m.Rule, m.Reason)
			if len(m.Env) > 0 {
				// Shown so a human sees what changes the program's behaviour:
				// an allowed `git fetch` with LD_PRELOAD is not git fetch.
				fmt.Fprintf(stdout, "  env %s\n", quote(m.Env))
			}
			ans := decide(m.Argv, deny, allow, *always)
			if ans == "" && *denyRest {
				ans = "deny"
			}
			if ans == "" && *interactive {
				ans = ask(keys, stdout)
			}
			if ans == "" {
				fmt.Fprintln(stdout, "  -> no rule matches; leaving it to others or the timeout")
				continue
			}
			fmt.Fprintf(stdout, "  -> %s\n", ans)
			if err := enc.Encode(response{Type: "response", ID: m.ID, Answer: ans}); err != nil {
				fmt.Fprintf(stderr, "approval-client: %v\n", err)
				return 1
			}
			if sent++; *count > 0 && sent >= *count {
				return 0
			}
		}
	}
	if err := in.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintf(stderr, "approval-client: %v\n", err)
		return 1
	}
	return 0
}

// decide applies the prefix rules: "" when none matches.
func decide(argv []string, deny, allow list, always bool) string {
	suffix := ""
	if always {
		suffix = "_always"
	}
	for _, p := range deny {
		if hasPrefix(argv, p) {
			return "deny" + suffix
		}
	}
	for _, p := range allow {
		if hasPrefix(argv, p) {
			return "allow" + suffix
		}
	}
	return ""
}

// hasPrefix reports whether argv starts with the words of prefix; the first
// word may match argv[0]'s base name.
func hasPrefix(argv []string, prefix string) bool {
	words := strings.Fields(prefix)
	if len(words) == 0 || len(words) > len(argv) {
		return false
	}
	for i, w := range words {
		a := argv[i]
		if i == 0 {
			a = a[strings.LastIndexByte(a, '/')+1:]
			if w == argv[0] {
				continue
			}
		}
		if w != a {
			return false
		}
	}
	return true
}

// ask reads an answer from stdin; end of input denies.
func ask(keys *bufio.Scanner, out io.Writer) string {
	for {
		fmt.Fprint(out, "  allow? [y]es [n]o [Y] always [N] never [r]emember: ")
		if !keys.Scan() {
			return "deny"
		}
		switch strings.TrimSpace(keys.Text()) {
		case "y":
			return "allow"
		case "n":
			return "deny"
		case "Y":
			return "allow_always"
		case "N":
			return "deny_always"
		case "r":
			return "remember"
		}
	}
}

// quote prints words so control characters in a hostile argv cannot
// rewrite this client's output.
func quote(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w
		if w == "" || strings.IndexFunc(w, func(r rune) bool {
			return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r >= 0x7f
		}) >= 0 {
			out[i] = strconv.QuoteToASCII(w)
		}
	}
	return strings.Join(out, " ")
}
