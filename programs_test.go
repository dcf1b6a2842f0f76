package agentbox_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
	script := fmt.Sprintf(`curl -s http://api.test:%[1]s/; echo
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://api.test:%[1]s/").read().decode())'
`, port)
	code, out, evs := n.run(t, script, agentbox.WithAllowHosts("api.test"))
	if code != 0 || strings.Count(out, "answer") != 2 {
		t.Fatalf("exit %d:\n%s", code, out)
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
