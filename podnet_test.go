package agentbox_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/policy"
)

// TestSharedNetNSProxy: network mode proxy without a network namespace of
// the sandbox's own (WithSharedNetNS, what a pod under RuntimeDefault
// allows): the sandbox shares this process's network namespace, yet its
// only way out is the egress proxy on 127.0.0.1:3128 — an allowed host is
// reached through it with the brokered secret put in on the wire while the
// sandbox holds a placeholder, a host outside the allowlist is refused by
// the proxy, a direct connection (no proxy) is refused by Landlock, and a
// run granting TCP ports to every host is refused.
func TestSharedNetNSProxy(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("reason: curl not installed")
	}
	const realKey = "sk-shared-netns-real-0123456789"
	var mu sync.Mutex
	var saw []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		saw = append(saw, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "api-answer")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	n := &netWorld{world: newWorld(t), names: map[string]string{"api.test": "127.0.0.1", "denied.test": "127.0.0.1"}}
	pol := "version: 1\nrules:\n  - {decision: allow, command: curl}\n  - {decision: allow, command: readlink}\n"
	if err := os.WriteFile(n.policy, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	ownNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`echo "ns=$(readlink /proc/self/ns/net)"
echo "key=$API_TOKEN"
curl -s -H "Authorization: Bearer $API_TOKEN" http://api.test:%[1]s/; echo " allowed=$?"
curl -s http://denied.test:%[1]s/; echo " denied=$?"
curl -s --noproxy '*' http://127.0.0.1:%[1]s/; echo " direct=$?"
`, port)
	code, out, evs := n.run(t, script, agentbox.WithSharedNetNS(), agentbox.WithAllowHosts("api.test"),
		agentbox.WithSecret("API_TOKEN", "api.test"), agentbox.WithEnv(append(os.Environ(), "API_TOKEN="+realKey)))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"ns=" + ownNS, "api-answer allowed=0", "denied.test:" + port + " denied: host not in the network allowlist", " direct=7"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "key="+realKey) || !strings.Contains(out, "key=") {
		t.Errorf("the sandbox's variable is not a placeholder:\n%s", out)
	}
	mu.Lock()
	got := strings.Join(saw, "\n")
	mu.Unlock()
	if !strings.Contains(got, "Bearer "+realKey) || strings.Contains(got, "denied.test") {
		t.Errorf("the server saw:\n%s", got)
	}
	if d := netDecisions(evs); !strings.Contains(d, "api.test:"+port+"=allow") || !strings.Contains(d, "denied.test:"+port+"=deny") {
		t.Errorf("audit decisions: %s", d)
	}

	// TCP ports to every host would reach past the proxy without a namespace.
	r, err := agentbox.New(n.ws, "developer", []string{"true"}, n.opts(agentbox.WithSharedNetNS(),
		agentbox.WithNetwork(policy.Network{Proxy: true, TCPConnect: []uint16{443}}))...)
	if err == nil {
		err = r.Start(t.Context())
		if err == nil {
			r.Wait()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "--shared-netns: TCP ports [443]") {
		t.Errorf("a TCP grant with --shared-netns: %v", err)
	}
}
