package agentbox_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
)

// TestConnectionsAttributed: in a real run (network mode proxy, exec
// policy on), each connection's audit event names the process that
// opened it, the program it was decided as and the program starts above
// it: curl started by the run's script, and python3 -c.
func TestConnectionsAttributed(t *testing.T) {
	needSandbox(t)
	for _, p := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("reason: %s not installed", p)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "answer") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n := &netWorld{world: newWorld(t), names: map[string]string{"api.test": "127.0.0.1"}}
	pol := `version: 1
rules:
  - {decision: allow, command: "curl -s"}
  - {decision: allow, command: "python3 -c"}
`
	if err := os.WriteFile(n.policy, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	ownNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`curl -s http://api.test:%[1]s/; echo
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://api.test:%[1]s/").read().decode())'
`, port)
	code, out, evs := n.run(t, script, agentbox.WithAllowHosts("api.test"))
	if code != 0 || strings.Count(out, "answer") != 2 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The proxy entered the sandbox's namespace on one thread to look
	// sockets up there, and came back: no thread of this process is left
	// in it (the main thread, which /proc/self shows, included).
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		if ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net"); err == nil && ns != ownNS {
			t.Errorf("thread %s is in network namespace %s, not this process's %s", task.Name(), ns, ownNS)
		}
	}
	pids := map[string]string{} // program → pid of its exec event
	for _, e := range evs {
		if e.Event == audit.EventExec && e.Decision == audit.DecisionAllow && len(e.Argv) > 0 {
			name := e.Argv[0]
			if e.Detail["script"] != "" || strings.HasSuffix(e.Argv[len(e.Argv)-1], ".sh") {
				name = "script"
			}
			pids[name[strings.LastIndex(name, "/")+1:]] = strconv.Itoa(e.Pid)
		}
	}
	var got []audit.Event
	for _, e := range evs {
		if e.Event == audit.EventNet && e.Decision == audit.DecisionAllow {
			got = append(got, e)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d allowed connections, want 2: %v", len(got), netDecisions(evs))
	}
	for i, want := range []string{"curl", "python3"} {
		d := got[i].Detail
		if d["program"] != want || d["pid"] != pids[want] || d["attribution"] != "" {
			t.Errorf("connection %d: detail %v, want program %s pid %s (exec pids %v)", i, d, want, pids[want], pids)
		}
		if !strings.Contains(d["ancestry"], ".sh["+pids["script"]+"]") {
			t.Errorf("connection %d: ancestry %q lacks the script's start (pid %s)", i, d["ancestry"], pids["script"])
		}
	}
}

// TestProgramRights: rights that follow the program, in one real run
// with two programs of the test's own. granted.sh (a #! script) holds
// its block's host and secret: its curl (a child, decided as curl, with
// no rights of its own) reaches api.test with the real value in place of
// the placeholder. walled.sh (mode only, no hosts) reaches nothing, not
// even other.test, which the run allows. The run's own script — any
// other process — is refused api.test (it is granted.sh's alone), and its
// placeholder presented to other.test is refused; each refusal is
// audited with the process and program.
func TestProgramRights(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("reason: curl not installed")
	}
	const realKey = "real-program-token-9b1f"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+realKey {
			io.WriteString(w, "key-accepted")
			return
		}
		io.WriteString(w, "key-refused:"+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n := &netWorld{world: newWorld(t), names: map[string]string{"api.test": "127.0.0.1", "other.test": "127.0.0.1"}}
	pol := `version: 1
rules:
  - {decision: allow, command: "curl -s"}
roles:
  progtest:
    extends: developer
    programs:
      granted.sh:
        hosts: [api.test]
        secrets: [PROG_TOKEN]
      walled.sh: {mode: only}
`
	if err := os.WriteFile(n.policy, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	tgt := n.ws + "/target/"
	curl := func(host string) string {
		return fmt.Sprintf(`curl -s -H "Authorization: Bearer $PROG_TOKEN" http://%s:%s/; echo " $?"`, host, port)
	}
	for name, body := range map[string]string{
		"granted.sh": "#!/bin/sh\n" + curl("api.test") + "\n",
		"walled.sh":  "#!/bin/sh\n" + curl("other.test") + "\n",
		"main.sh": "#!/bin/sh\necho granted: $(./granted.sh)\necho walled: $(./walled.sh)\necho own-api: $(" + curl("api.test") + ")\n" +
			"echo own-other: $(" + curl("other.test") + ")\necho placeholder: $PROG_TOKEN\n",
	} {
		if err := os.WriteFile(tgt+name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	out, _ := os.CreateTemp(t.TempDir(), "out")
	defer out.Close()
	r, err := agentbox.New(n.ws, "progtest", []string{"./main.sh"}, n.opts(agentbox.WithAudit(log), agentbox.WithResolver(n.resolve),
		agentbox.WithInternalHosts("*.test"), agentbox.WithAllowHosts("other.test"), agentbox.WithDir(tgt),
		agentbox.WithEnv(append(os.Environ(), "PROG_TOKEN="+realKey)), agentbox.WithStdio(nil, out, out))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	got := string(b)
	for _, want := range []string{"granted: key-accepted 0", "walled: agentbox: connection to other.test:" + port + " denied",
		"own-api: agentbox: connection to api.test:" + port + " denied", "own-other: agentbox: denied", "placeholder: agentbox-placeholder-"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, realKey) {
		t.Errorf("the real value reached the sandbox:\n%s", got)
	}
	evs, _ := audit.ReadFile(log)
	var refused []string
	for _, e := range evs {
		if e.Event == audit.EventNet && e.Decision == audit.DecisionDeny {
			refused = append(refused, e.Rule+" "+e.Detail["program"]+" <"+e.Detail["ancestry"]+"> "+e.Reason)
		}
		if strings.Contains(fmt.Sprint(e), realKey) {
			t.Errorf("the real value is in the audit log: %+v", e)
		}
	}
	if len(refused) != 3 {
		t.Fatalf("%d refusals, want 3 (walled.sh, main.sh to api.test, main.sh's placeholder):\n%s", len(refused), strings.Join(refused, "\n"))
	}
	for i, want := range []string{"programs/walled.sh curl <walled.sh", "programs/granted.sh curl <main.sh", " curl <main.sh"} {
		if !strings.HasPrefix(refused[i], want) {
			t.Errorf("refusal %d: %s, want %s...", i, refused[i], want)
		}
	}
	if !strings.Contains(refused[2], "program granted.sh's only") {
		t.Errorf("placeholder refusal: %s", refused[2])
	}
}
