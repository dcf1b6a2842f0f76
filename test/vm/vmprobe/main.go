// Command vmprobe is the VM matrix's boundary probe (docs/vm.md). It runs
// inside a guest booted by scripts/vm/boot.sh, in two roles:
//
//	vmprobe try OP ARG...   the agent's side: one attempt, run under agentbox
//	vmprobe suite           the outside: sets up a workspace and what lies
//	                        around it, runs each attempt under `agentbox run`
//	                        and checks its effect from outside
//
// suite prints one JSON object a line (a Result); the host side
// (test/vm) reads them into the kernel × user × check matrix. An attempt
// prints "vmprobe: ok ..." or "vmprobe: err ..." so the suite can tell an
// attempt that ran and failed from a run agentbox refused to start.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: vmprobe try OP ARG... | vmprobe suite [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "try":
		os.Exit(try(os.Args[2:]))
	case "tries":
		os.Exit(tries(os.Args[2:]))
	case "suite":
		if err := suite(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "vmprobe suite:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "vmprobe: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// try makes one attempt and says how it went: exit 0 and "vmprobe: ok" when
// the operation succeeded, exit 3 and "vmprobe: err" when the kernel refused it.
func try(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "vmprobe try: missing OP")
		return 2
	}
	line, code := attempt(args[0], args[1:])
	fmt.Println("vmprobe: " + line)
	return code
}

// tries makes several attempts in one run, each LABEL=OP:ARG, printing
// "vmprobe[LABEL]: ok|err ..." for each: one agentbox run (seconds under
// emulation) checks many protections.
func tries(args []string) int {
	code := 0
	for _, a := range args {
		label, rest, ok := strings.Cut(a, "=")
		op, arg, _ := strings.Cut(rest, ":")
		if !ok || op == "" {
			fmt.Fprintf(os.Stderr, "vmprobe tries: %q is not LABEL=OP:ARG\n", a)
			return 2
		}
		line, c := attempt(op, []string{arg})
		fmt.Printf("vmprobe[%s]: %s\n", label, line)
		if c > code {
			code = c
		}
	}
	return code
}

// attempt makes one attempt: its "ok ..."/"err ..." line and exit code.
func attempt(op string, a []string) (string, int) {
	arg := func(i int) string {
		if i < len(a) {
			return a[i]
		}
		return ""
	}
	var detail string
	var err error
	switch op {
	case "noop":
	case "write":
		err = os.WriteFile(arg(0), []byte("written by the sandbox\n"), 0o644)
	case "truncate":
		err = syscall.Truncate(arg(0), 0)
	case "read":
		var b []byte
		b, err = os.ReadFile(arg(0))
		detail = fmt.Sprintf("%d bytes", len(b))
	case "chmod":
		err = os.Chmod(arg(0), 0o666)
	case "utime":
		err = os.Chtimes(arg(0), time.Unix(0, 0), time.Unix(0, 0))
	case "readdir":
		var es []os.DirEntry
		es, err = os.ReadDir(arg(0))
		detail = fmt.Sprintf("%d entries", len(es))
	case "remove":
		err = os.Remove(arg(0))
	case "kill":
		var pid int
		pid, err = strconv.Atoi(arg(0))
		if err == nil {
			err = syscall.Kill(pid, syscall.SIGTERM)
		}
	case "tcp":
		var c net.Conn
		c, err = net.DialTimeout("tcp", arg(0), 5*time.Second)
		if err == nil {
			c.Close()
		}
	case "unix":
		// arg(0) is a path, or @name for the abstract namespace.
		var c net.Conn
		c, err = net.DialTimeout("unix", arg(0), 5*time.Second)
		if err == nil {
			c.Close()
		}
	case "alloc":
		var mb int
		mb, err = strconv.Atoi(arg(0))
		if err == nil {
			keep := make([][]byte, 0, mb)
			for i := 0; i < mb; i++ {
				b := make([]byte, 1<<20)
				for j := range b {
					b[j] = byte(j)
				}
				keep = append(keep, b)
			}
			detail = fmt.Sprintf("%d MiB touched", len(keep))
		}
	case "forks":
		detail, err = forks(arg(0))
	case "http":
		detail, err = get(arg(0))
	default:
		return fmt.Sprintf("err %s: unknown OP", op), 2
	}
	if err != nil {
		return fmt.Sprintf("err %s %s", op, strings.TrimSpace(err.Error()+" "+detail)), 3
	}
	return fmt.Sprintf("ok %s %s", op, detail), 0
}

// forks starts up to n sleeping children, stopping at the first refusal.
func forks(arg string) (string, error) {
	n, err := strconv.Atoi(arg)
	if err != nil {
		return "", err
	}
	var kids []*os.Process
	defer func() {
		for _, k := range kids {
			k.Kill()
			k.Wait()
		}
	}()
	for len(kids) < n {
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, &os.ProcAttr{})
		if err != nil {
			return fmt.Sprintf("after %d children", len(kids)), err
		}
		kids = append(kids, p)
	}
	return fmt.Sprintf("%d children", len(kids)), nil
}

// get fetches rawURL through the proxy agentbox names in HTTP_PROXY, if any
// (Go's own proxy lookup skips loopback URLs, which the probe's servers are).
func get(rawURL string) (string, error) {
	tr := &http.Transport{}
	if p := os.Getenv("HTTP_PROXY"); p != "" {
		pu, err := url.Parse(p)
		if err != nil {
			return "", err
		}
		tr.Proxy = http.ProxyURL(pu)
	}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get(rawURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return "status 200", nil
}

// Result is one cell of the matrix: a check, where it was started from, and
// what happened. The host side (test/vm) reads these.
type Result struct {
	Kernel  string `json:"kernel"`
	User    string `json:"user"`
	Context string `json:"context"` // session (a login session) or scope (systemd-run --scope -p Delegate=yes)
	Check   string `json:"check"`
	// Result: pass (protection held, seen from outside), fail (it did not),
	// refused (agentbox would not start the run: Line says why), info.
	Result  string            `json:"result"`
	Line    string            `json:"line,omitempty"`
	Exit    int               `json:"exit"`
	Inside  string            `json:"inside,omitempty"`
	Outside string            `json:"outside,omitempty"`
	Claim   map[string]string `json:"claim,omitempty"`
}

type prober struct {
	agentbox, ws, home, kernel, user string
	extra                            []string // flags added to every run
	scope                            []string // the systemd-run prefix of the scope context
	out                              *json.Encoder
	n                                int
}

// run is one `agentbox run` of `vmprobe try ARGS` in the workspace.
type run struct {
	exit           int
	stdout, stderr string
	inside         string            // the vmprobe: line, if the attempt ran
	labeled        map[string]string // of a batch: each label's line, as "vmprobe: ok|err ..."
	audit          string
}

func (r run) ran() bool       { return r.inside != "" }
func (r run) succeeded() bool { return strings.HasPrefix(r.inside, "vmprobe: ok") }

// refusal is agentbox's last own line, the one naming why it failed.
func (r run) refusal() string {
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "agentbox:") {
			return lines[i]
		}
	}
	return strings.TrimSpace(r.stderr)
}

func (p *prober) agent(prefix []string, flags []string, argv ...string) run {
	p.n++
	audit := filepath.Join(p.home, "vmprobe-audit", fmt.Sprintf("%02d.jsonl", p.n))
	args := append([]string{}, prefix...)
	args = append(args, p.agentbox, "run", "-r", "developer", "-w", p.ws, "--audit", audit, "--timeout", "150s")
	args = append(args, p.extra...)
	args = append(args, flags...)
	args = append(args, "--")
	args = append(args, argv...)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = filepath.Join(p.ws, "target")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := run{stdout: so.String(), stderr: se.String(), audit: audit}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.exit = 128 + int(ws.Signal())
		}
	default:
		r.exit = -1
		r.stderr += "\n" + err.Error()
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "vmprobe: ") {
			r.inside = l
		}
		if label, rest, ok := strings.Cut(strings.TrimPrefix(l, "vmprobe["), "]: "); ok && strings.HasPrefix(l, "vmprobe[") {
			if r.labeled == nil {
				r.labeled = map[string]string{}
			}
			r.labeled[label] = "vmprobe: " + rest
		}
	}
	return r
}

func (p *prober) try(flags []string, op string, args ...string) run {
	return p.agent(nil, flags, append([]string{"vmprobe", "try", op}, args...)...)
}

// emit records a check. held says whether the protection held as seen
// from outside; a run agentbox refused (exit 125, the attempt never ran) is
// recorded as refused with agentbox's line.
func (p *prober) emit(check, context string, r run, held bool, outside string) {
	if r.labeled != nil {
		r.inside = r.labeled[check]
	}
	res := Result{Kernel: p.kernel, User: p.user, Context: context, Check: check,
		Exit: r.exit, Inside: r.inside, Outside: outside}
	switch {
	case !r.ran() && r.exit == 125:
		res.Result, res.Line = "refused", r.refusal()
	case held:
		res.Result = "pass"
	default:
		res.Result = "fail"
		if !r.ran() {
			res.Line = r.refusal()
		}
	}
	p.out.Encode(res)
}

func (p *prober) info(check, outside string, claim map[string]string) {
	p.out.Encode(Result{Kernel: p.kernel, User: p.user, Context: "session", Check: check, Result: "info", Outside: outside, Claim: claim})
}

func sh(dir string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=vmprobe", "GIT_AUTHOR_EMAIL=vmprobe@agentbox-vm.invalid",
		"GIT_COMMITTER_NAME=vmprobe", "GIT_COMMITTER_EMAIL=vmprobe@agentbox-vm.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, out)
	}
	return nil
}

func suite(args []string) error {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	agentbox := fs.String("agentbox", "/usr/local/bin/agentbox", "agentbox binary")
	only := fs.String("only", "", "run only the checks whose names contain this")
	execDir := fs.String("exec", "", "a directory holding vmprobe outside the sandbox's system areas, granted with --exec (for trying the suite on a host)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var uts syscall.Utsname
	syscall.Uname(&uts)
	kernel := charsToString(uts.Release[:])
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	p := &prober{agentbox: *agentbox, home: home, kernel: kernel, user: os.Getenv("USER"), out: json.NewEncoder(os.Stdout)}
	if *execDir != "" {
		p.extra = []string{"--exec", *execDir}
		os.Setenv("PATH", *execDir+":"+os.Getenv("PATH"))
	}
	if p.user == "" {
		p.user = strconv.Itoa(os.Getuid())
	}
	if os.Getuid() == 0 {
		p.scope = []string{"systemd-run", "--scope", "-q", "-p", "Delegate=yes", "--"}
	} else {
		p.scope = []string{"systemd-run", "--user", "--scope", "-q", "-p", "Delegate=yes", "--"}
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	p.info("environment", fmt.Sprintf("uid=%d cgroup=%s XDG_RUNTIME_DIR=%s", os.Getuid(), strings.TrimSpace(string(cg)), os.Getenv("XDG_RUNTIME_DIR")), nil)

	// The workspace and what lies around it, all owned by this user.
	p.ws = filepath.Join(home, "ws")
	os.RemoveAll(p.ws)
	os.RemoveAll(filepath.Join(home, "vmprobe-audit"))
	os.MkdirAll(filepath.Join(home, "vmprobe-audit"), 0o700)
	if err := sh(home, *agentbox, "init", p.ws); err != nil {
		return err
	}
	// one file per check, so that one protection lost cannot fail another check
	for _, f := range []string{
		"ws/context/write.txt", "ws/context/truncate.txt",
		"outside-read.txt", "outside-write.txt", "outside-chmod.txt", "outside-utime.txt",
	} {
		f = filepath.Join(home, f)
		if err := os.WriteFile(f, []byte("keep me\n"), 0o644); err != nil {
			return err
		}
		os.Chmod(f, 0o644)
		os.Chtimes(f, time.Unix(1577836800, 0), time.Unix(1577836800, 0))
	}
	target := filepath.Join(p.ws, "target")
	remote := filepath.Join(home, "remote.git")
	os.RemoveAll(remote)
	os.WriteFile(filepath.Join(target, "keep.txt"), []byte("restore me\n"), 0o644)
	for _, c := range [][]string{
		{"git", "init", "-q", "-b", "main", "--bare", remote},
		{"git", "init", "-q", "-b", "main", target},
	} {
		if err := sh(home, c...); err != nil {
			return err
		}
	}
	for _, c := range [][]string{
		{"git", "add", "keep.txt"}, {"git", "commit", "-qm", "first"},
		{"git", "remote", "add", "origin", remote}, {"git", "push", "-q", "origin", "main"},
		{"git", "commit", "-q", "--allow-empty", "-m", "second, to push"},
	} {
		if err := sh(target, c...); err != nil {
			return err
		}
	}

	checks := []struct {
		name string
		f    func()
	}{
		{"launch", p.launch},
		{"boundary", p.boundary},
		{"git-push", func() {
			before := revParse(remote)
			r := p.agent(nil, nil, "git", "push", "origin", "main")
			after := revParse(remote)
			// the attempt is git itself: exit 126 is agentbox's denial
			r.inside = fmt.Sprintf("git exit %d", r.exit)
			if r.exit == 125 {
				r.inside = ""
			}
			p.emit("git-push", "session", r, r.exit == 126 && before == after, fmt.Sprintf("remote main %s -> %s", short(before), short(after)))
		}},
		{"memory", func() {
			for _, c := range []struct {
				ctx    string
				prefix []string
			}{{"session", nil}, {"scope", p.scope}} {
				r := p.agent(c.prefix, []string{"--memory", "64M"}, "vmprobe", "try", "alloc", "256")
				// held: the allocation never completed, the run killed (SIGKILL: 137) or refused inside
				held := !r.succeeded() && (r.exit == 128+int(syscall.SIGKILL) || r.ran())
				p.emit("memory-64M", c.ctx, r, held, fmt.Sprintf("exit %d", r.exit))
			}
		}},
		{"pids", func() {
			for _, c := range []struct {
				ctx    string
				prefix []string
			}{{"session", nil}, {"scope", p.scope}} {
				r := p.agent(c.prefix, []string{"--pids", "32"}, "vmprobe", "try", "forks", "100")
				p.emit("pids-32", c.ctx, r, r.ran() && !r.succeeded(), "")
			}
		}},
		{"proxy", p.proxy},
		{"review", p.review},
		{"undo", p.undo},
	}
	for _, c := range checks {
		if *only != "" && !strings.Contains(c.name, *only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "vmprobe: %s %s: %s\n", time.Now().Format("15:04:05"), p.user, c.name)
		c.f()
	}
	return nil
}

// launch records what agentbox says it enforces: the launch line and the
// launch audit event, for comparing claims with the effects above.
func (p *prober) launch() {
	r := p.try(nil, "noop")
	claim := map[string]string{}
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "agentbox: role ") {
			claim["launch_line"] = l
		}
	}
	if ev, err := launchEvent(r.audit); err == nil {
		for k, v := range ev.Detail {
			claim["event."+k] = v
		}
	}
	res := Result{Kernel: p.kernel, User: p.user, Context: "session", Check: "launch", Exit: r.exit, Inside: r.inside, Claim: claim}
	switch {
	case r.succeeded():
		res.Result = "pass"
	case r.exit == 125:
		res.Result, res.Line = "refused", r.refusal()
	default:
		res.Result, res.Line = "fail", r.refusal()
	}
	p.out.Encode(res)
}

type launchEv struct {
	Run    string            `json:"run"`
	Event  string            `json:"event"`
	Detail map[string]string `json:"detail"`
}

func launchEvent(audit string) (launchEv, error) {
	b, err := os.ReadFile(audit)
	if err != nil {
		return launchEv{}, err
	}
	// the last launch event: the file is the run's own, but be sure
	var last *launchEv
	for _, l := range bytes.Split(b, []byte("\n")) {
		var ev launchEv
		if json.Unmarshal(l, &ev) == nil && ev.Event == "launch" {
			last = &ev
		}
	}
	if last == nil {
		return launchEv{}, fmt.Errorf("%s: no launch event", audit)
	}
	return *last, nil
}

// proxy serves two loopback HTTP servers outside; the run is granted the
// first (--allow-host) and must reach it through agentbox's proxy, and not
// reach the second, through the proxy or directly.
func (p *prober) proxy() {
	var hits [2]int
	var srvs [2]*http.Server
	for i, addr := range []string{"127.0.0.1:8088", "127.0.0.1:8089"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			p.info("proxy", "setup: "+err.Error(), nil)
			return
		}
		i := i
		srvs[i] = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i]++
			io.WriteString(w, "hello\n")
		})}
		go srvs[i].Serve(l)
		defer srvs[i].Close()
	}
	r := p.try([]string{"--allow-host", "127.0.0.1:8088"}, "http", "http://127.0.0.1:8088/allowed")
	p.emit("proxy-allow", "session", r, r.succeeded() && hits[0] == 1, fmt.Sprintf("granted server hits %d", hits[0]))
	r = p.try([]string{"--allow-host", "127.0.0.1:8088"}, "http", "http://127.0.0.1:8089/refused")
	r2 := p.try([]string{"--allow-host", "127.0.0.1:8088"}, "tcp", "127.0.0.1:8089")
	if r.ran() && r2.inside != "" {
		r.inside += "; direct: " + r2.inside
	}
	p.emit("proxy-refuse", "session", r, r.ran() && !r.succeeded() && !r2.succeeded() && hits[1] == 0, fmt.Sprintf("other server hits %d", hits[1]))
}

func (p *prober) review() {
	f := filepath.Join(p.ws, "target", "review.txt")
	r := p.try([]string{"--review"}, "write", f)
	_, statErr := os.Stat(f)
	untouched := errors.Is(statErr, os.ErrNotExist)
	outside := fmt.Sprintf("target/review.txt absent: %v", untouched)
	listed := false
	if ev, err := launchEvent(r.audit); err == nil && r.succeeded() {
		out, err := exec.Command(p.agentbox, "diff", "--stat", ev.Run).CombinedOutput()
		listed = err == nil && bytes.Contains(out, []byte("review.txt"))
		outside += fmt.Sprintf("; agentbox diff lists it: %v", listed)
		exec.Command(p.agentbox, "discard", ev.Run).Run()
	}
	p.emit("review", "session", r, r.succeeded() && untouched && listed, outside)
	os.Remove(f)
}

func (p *prober) undo() {
	f := filepath.Join(p.ws, "target", "keep.txt")
	r := p.try(nil, "remove", f)
	_, statErr := os.Stat(f)
	gone := errors.Is(statErr, os.ErrNotExist)
	outside := fmt.Sprintf("removed: %v", gone)
	restored := false
	if ev, err := launchEvent(r.audit); err == nil && r.succeeded() {
		out, err := exec.Command(p.agentbox, "undo", "-w", p.ws, ev.Run).CombinedOutput()
		b, _ := os.ReadFile(f)
		restored = err == nil && string(b) == "restore me\n"
		outside += fmt.Sprintf("; after agentbox undo: %q (%s)", b, strings.TrimSpace(string(out)))
	}
	p.emit("undo", "session", r, r.succeeded() && gone && restored, outside)
}

// accepted takes what is waiting in l's queue: a connect that succeeded is
// queued before the connecting side returns, so after the run it is there.
func accepted(l net.Listener) int {
	n := 0
	type deadliner interface{ SetDeadline(time.Time) error }
	for {
		l.(deadliner).SetDeadline(time.Now().Add(100 * time.Millisecond))
		c, err := l.Accept()
		if err != nil {
			return n
		}
		c.Close()
		n++
	}
}

func revParse(gitDir string) string {
	out, _ := exec.Command("git", "--git-dir", gitDir, "rev-parse", "main").Output()
	return strings.TrimSpace(string(out))
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func size(st os.FileInfo) int64 {
	if st == nil {
		return -1
	}
	return st.Size()
}

func mode(st os.FileInfo) os.FileMode {
	if st == nil {
		return 0
	}
	return st.Mode().Perm()
}

func mtime(st os.FileInfo) int64 {
	if st == nil {
		return -1
	}
	return st.ModTime().Unix()
}

func charsToString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// boundary tries the kernel boundary's protections in one run, each on an
// object of its own, and checks each effect from outside: context/ write and
// truncate(2), the user's own files outside (read, write, chmod, utime),
// /etc/shadow, the workspace's parent, a signal to an outside process of the
// same user, TCP to an outside listener, abstract and pathname unix sockets.
func (p *prober) boundary() {
	h := func(f string) string { return filepath.Join(p.home, f) }
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		p.info("kill-outside", "setup: "+err.Error(), nil)
		return
	}
	done := make(chan struct{})
	go func() { sleeper.Wait(); close(done) }()
	defer func() { sleeper.Process.Kill(); <-done }()
	abstract := fmt.Sprintf("@agentbox-vm-probe-%d", os.Getuid())
	path := fmt.Sprintf("/tmp/agentbox-vm-probe-%d.sock", os.Getuid())
	os.Remove(path)
	listeners := map[string]net.Listener{}
	for check, a := range map[string][2]string{
		"tcp-connect":   {"tcp", "127.0.0.1:7777"},
		"unix-abstract": {"unix", abstract},
		"unix-path":     {"unix", path},
	} {
		l, err := net.Listen(a[0], a[1])
		if err != nil {
			p.info(check, "setup: "+err.Error(), nil)
			return
		}
		defer l.Close()
		listeners[check] = l
	}
	r := p.agent(nil, nil, "vmprobe", "tries",
		"context-write=write:"+h("ws/context/write.txt"),
		"context-truncate=truncate:"+h("ws/context/truncate.txt"),
		"outside-read=read:"+h("outside-read.txt"),
		"outside-write=write:"+h("outside-write.txt"),
		"outside-chmod=chmod:"+h("outside-chmod.txt"),
		"outside-utime=utime:"+h("outside-utime.txt"),
		"shadow-read=read:/etc/shadow",
		"parent-list=readdir:"+filepath.Dir(p.ws),
		"kill-outside=kill:"+strconv.Itoa(sleeper.Process.Pid),
		"tcp-connect=tcp:127.0.0.1:7777",
		"unix-abstract=unix:"+abstract,
		"unix-path=unix:"+path,
	)
	refused := func(check string) bool {
		l := r.labeled[check]
		return l != "" && !strings.HasPrefix(l, "vmprobe: ok")
	}
	content := func(f string) string { b, _ := os.ReadFile(h(f)); return string(b) }
	st := func(f string) os.FileInfo { fi, _ := os.Stat(h(f)); return fi }
	c := content("ws/context/write.txt")
	p.emit("context-write", "session", r, c == "keep me\n", fmt.Sprintf("content %q", c))
	fi := st("ws/context/truncate.txt")
	p.emit("context-truncate", "session", r, size(fi) == 8, fmt.Sprintf("size %d", size(fi)))
	p.emit("outside-read", "session", r, refused("outside-read"), "")
	c = content("outside-write.txt")
	p.emit("outside-write", "session", r, c == "keep me\n", fmt.Sprintf("content %q", c))
	fi = st("outside-chmod.txt")
	p.emit("outside-chmod", "session", r, mode(fi) == 0o644, fmt.Sprintf("mode %v", mode(fi)))
	fi = st("outside-utime.txt")
	p.emit("outside-utime", "session", r, mtime(fi) == 1577836800, fmt.Sprintf("mtime %d", mtime(fi)))
	p.emit("shadow-read", "session", r, refused("shadow-read"), "")
	p.emit("parent-list", "session", r, refused("parent-list"), "")
	// A SIGTERM that was delivered ends the sleeper at once; give its exit
	// a bounded moment to be reaped before calling it alive.
	alive := true
	select {
	case <-done:
		alive = false
	case <-time.After(2 * time.Second):
	}
	p.emit("kill-outside", "session", r, alive, fmt.Sprintf("outside sleeper alive: %v", alive))
	for _, check := range []string{"tcp-connect", "unix-abstract", "unix-path"} {
		n := accepted(listeners[check])
		p.emit(check, "session", r, n == 0, fmt.Sprintf("listener accepted %d", n))
	}
}
