// Package k8s runs the shipped examples/kubernetes manifests on a real
// single-node Kubernetes cluster built on this machine (scripts/k8s/up.sh):
// the Job's agent (Claude Code under agentbox, against a fake model API pod)
// under Pod Security "restricted", its kernel and exec refusals, the egress
// proxy without a network namespace (--shared-netns), the brokered key, the
// audit log in `kubectl logs`. Runs with AGENTBOX_K8S=1 as root (make
// test-k8s); otherwise every test skips saying why.
package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/agentbox/agentbox/internal/fakemodel"
)

var (
	skipWhy  string // why the cluster is not here
	state    string // up.sh's state directory
	repoRoot string
	kubectl  string
	reused   bool // AGENTBOX_K8S_STATE: a cluster left up between runs
)

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	repoRoot = filepath.Join(wd, "..", "..")
	switch {
	case os.Getenv("AGENTBOX_K8S") != "1":
		skipWhy = "AGENTBOX_K8S=1 not set (make test-k8s builds and boots a cluster)"
	case os.Geteuid() != 0:
		skipWhy = "not root: the node's containerd and kubelet need root"
	}
	if skipWhy != "" {
		os.Exit(m.Run())
	}
	if dir := os.Getenv("AGENTBOX_K8S_STATE"); dir != "" {
		// A cluster up.sh brought up already (a developer measuring):
		// used, left up, and the tests' objects deleted after them.
		state, reused = dir, true
		ns = fmt.Sprintf("agentbox-test-%d", os.Getpid())
		kb, err := os.ReadFile(filepath.Join(state, "kubebin"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "k8s: AGENTBOX_K8S_STATE=%s: %v\n", dir, err)
			os.Exit(1)
		}
		kubectl = filepath.Join(strings.TrimSpace(string(kb)), "kubectl")
		os.Setenv("KUBECONFIG", filepath.Join(state, "admin.kubeconfig"))
		os.Exit(m.Run())
	}
	state = filepath.Join(os.TempDir(), fmt.Sprintf("agentbox-k8s-%d", os.Getpid()))
	// CI bounds make test-k8s with timeout(1), which signals the whole
	// process group: the cluster's processes (started in sessions of
	// their own) would outlive this binary. On SIGTERM or SIGINT the
	// cluster is torn down first, whatever phase the run is in. cmd/go
	// dies of the same SIGTERM, so this binary's stdout and stderr may be
	// broken pipes by then: SIGPIPE is ignored and down.sh logs to a file.
	var downOnce sync.Once
	downCode := 0
	teardown := func(out io.Writer) {
		downOnce.Do(func() {
			t1 := time.Now()
			down := exec.Command(filepath.Join(repoRoot, "scripts/k8s/down.sh"), state)
			down.Stdout, down.Stderr = out, out
			// its own process group: a second signal to ours (timeout's
			// --kill-after) does not cut the teardown short
			down.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := down.Run(); err != nil {
				fmt.Fprintf(out, "k8s: teardown: %v\n", err)
				downCode = 1
			}
			fmt.Fprintf(out, "k8s: torn down in %.1fs\n", time.Since(t1).Seconds())
		})
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-sigs
		signal.Ignore(syscall.SIGPIPE)
		fmt.Fprintf(os.Stderr, "k8s: %v: tearing the cluster down\n", sig)
		log, err := os.Create(state + ".down.log")
		if err != nil {
			log = os.Stderr
		}
		teardown(log)
		os.Exit(1)
	}()
	t0 := time.Now()
	up := exec.Command(filepath.Join(repoRoot, "scripts/k8s/up.sh"), state)
	var upErr bytes.Buffer
	up.Stdout, up.Stderr = io.Discard, io.MultiWriter(os.Stderr, &upErr)
	err := up.Run()
	code := 0
	if err != nil {
		// up.sh says "no package sources" when the Debian mirror or the
		// module proxy cannot be reached for what the cache lacks
		if i := bytes.Index(upErr.Bytes(), []byte("no package sources")); i >= 0 {
			line, _, _ := bytes.Cut(upErr.Bytes()[i:], []byte("\n"))
			skipWhy = string(line)
			code = m.Run()
		} else {
			fmt.Fprintf(os.Stderr, "k8s: the cluster did not come up: %v\n", err)
			code = 1
		}
	} else {
		fmt.Printf("k8s: cluster up in %.1fs (build included)\n", time.Since(t0).Seconds())
		kb, _ := os.ReadFile(filepath.Join(state, "kubebin"))
		kubectl = filepath.Join(strings.TrimSpace(string(kb)), "kubectl")
		os.Setenv("KUBECONFIG", filepath.Join(state, "admin.kubeconfig"))
		code = m.Run()
	}
	teardown(os.Stdout)
	os.Exit(max(code, downCode))
}

func need(t testing.TB) {
	t.Helper()
	if skipWhy != "" {
		t.Skip("reason: " + skipWhy)
	}
}

// kc runs kubectl with stdin, bounded; it fails the test on error.
func kc(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := kcErr(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kcErr(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, kubectl, args...)
	c.Stdin = strings.NewReader(stdin)
	b, err := c.CombinedOutput()
	return string(b), err
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	last := ""
	for time.Now().Before(end) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not after %s (last: %s)", what, d, last)
}

// jobDone waits for job ns/name to finish; it returns whether it
// succeeded and the time from start.
func jobDone(t testing.TB, ns, name string, start time.Time) (bool, time.Duration) {
	t.Helper()
	var ok bool
	var took time.Duration
	waitFor(t, 8*time.Minute, "job "+name, func() (bool, string) {
		out, _ := kcErr("", "-n", ns, "get", "job", name, "-o", "jsonpath={.status.succeeded}/{.status.failed}")
		switch {
		case strings.HasPrefix(out, "1/"):
			ok, took = true, time.Since(start)
			return true, out
		case strings.HasSuffix(out, "/1"):
			took = time.Since(start)
			return true, out
		}
		return false, out
	})
	return ok, took
}

// loadJob decodes the shipped job.yaml into a generic object.
func loadJob(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples/kubernetes/job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatalf("job.yaml: %v", err)
	}
	return job
}

func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

func toJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, b)
	}
	return string(b)
}

// workspace prepares a workspace on the host for a hostPath volume: agentbox
// init, a project with one commit, owned by uid 1000.
func workspace(t testing.TB, dir string) {
	t.Helper()
	agentbox := filepath.Join(repoRoot, "bin", "agentbox")
	run(t, agentbox, "init", dir)
	proj := filepath.Join(dir, "target", "project")
	run(t, "git", "init", "-q", "-b", "main", proj)
	os.WriteFile(filepath.Join(proj, "README"), []byte("project\n"), 0o644)
	run(t, "git", "-C", proj, "add", "README")
	run(t, "git", "-C", proj, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "first")
	run(t, "git", "-C", proj, "remote", "add", "origin", "https://git.example.invalid/project.git")
	run(t, "chown", "-R", "1000:1000", dir)
}

// ns is the namespace of TestJobOnNode (with this process's PID on a
// reused cluster, where an earlier run's may still be terminating).
var ns = "agentbox-test"

const (
	apiHost  = "model-api.test"
	apiPort  = "8080"
	realKey  = "sk-ant-k8s-test-real-key-0123456789abcdef"
	auditHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
)

func bash(cmd string) fakemodel.Step {
	return fakemodel.Step{Tool: "Bash", Input: map[string]any{"command": cmd, "description": "run"}}
}

// jobScript is what the fake model API has the agent do in the Job:
// work, then each thing agentbox must refuse.
var jobScript = []fakemodel.Step{
	bash("echo from-the-agent > agent.txt && git add agent.txt && git -c user.name=a -c user.email=a@example.invalid commit -q -m agent && echo committed"),
	// A write into context/ no exec is decided on: Claude Code's own
	// Write tool, from its own process. Landlock refuses it.
	{Tool: "Write", Input: map[string]any{"file_path": "/ws/context/from-agent.txt", "content": "x\n"}},
	bash("git push origin main"),
	bash("echo key=$ANTHROPIC_API_KEY"),
	// A direct connection, past the proxy (model-api.test is in the
	// pod's /etc/hosts): Landlock refuses it under agentbox.
	bash("GIT_TERMINAL_PROMPT=0 git -c http.proxy= ls-remote http://" + apiHost + ":" + apiPort + "/direct.git 2>&1 | head -2; echo direct-tried"),
	// A host outside the allowlist, through the proxy.
	bash("git ls-remote http://elsewhere.test:" + apiPort + "/x.git 2>&1 | head -2; echo elsewhere-tried"),
	// What --allow-weaker=metadata leaves, as README.md says: the
	// kernel no longer holds the times and modes of files uid 1000 owns
	// outside the writable areas, the exec policy still refuses the
	// programs that change them there (chmod: ask, no approver; touch
	// into context/: a write). The audit key's copy (uid 1000's too)
	// stays unreadable.
	bash("chmod 0604 /ws/context/task.md"),
	bash("touch -c -d @0 /ws/context/task.md"),
	bash("cat /keys/audit.key 2>&1 | head -1; echo key-tried"),
	{Text: "All done."},
}

// testNS makes namespace name, enforcing Pod Security "restricted", with
// the Job's two Secrets. On a reused cluster (AGENTBOX_K8S_STATE) it and
// its volumes are deleted after the test.
func testNS(t testing.TB, name string) {
	t.Helper()
	kc(t, "", "create", "namespace", name)
	if reused {
		t.Cleanup(func() { kcErr("", "delete", "namespace", name) })
	}
	kc(t, "", "label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
	kc(t, "", "-n", name, "create", "secret", "generic", "agentbox-api-key", "--from-literal=ANTHROPIC_API_KEY="+realKey)
	kc(t, "", "-n", name, "create", "secret", "generic", "agentbox-audit", "--from-literal=key="+auditHex)
}

// workspacePV prepares a workspace in dir (workspace, a task in context/)
// and binds it to claim in namespace ns as a hostPath PV of this node;
// the claim is the shipped pvc.yaml renamed.
func workspacePV(t testing.TB, ns, claim, dir string) {
	t.Helper()
	workspace(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "context", "task.md"), []byte("do the scripted work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := ns + "-" + claim
	pv := map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"capacity": map[string]any{"storage": "5Gi"}, "accessModes": []any{"ReadWriteOnce"},
			"storageClassName": "", "hostPath": map[string]any{"path": dir, "type": "Directory"},
			"claimRef": map[string]any{"namespace": ns, "name": claim}}}
	kc(t, toJSON(t, pv), "apply", "-f", "-")
	if reused {
		t.Cleanup(func() { kcErr("", "delete", "pv", name, "--wait=false") })
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples/kubernetes/pvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pvc map[string]any
	if err := yaml.Unmarshal(b, &pvc); err != nil {
		t.Fatalf("pvc.yaml: %v", err)
	}
	pvc["metadata"] = map[string]any{"name": claim}
	kc(t, toJSON(t, pvc), "-n", ns, "apply", "-f", "-")
	// A pod whose claim is not yet bound starts seconds late: the node
	// authorizer refuses the kubelet the claim until the binding is in its
	// graph, and the kubelet retries the mount with backoff (FailedMount
	// "no relationship found between node ... and this object"). That
	// delay is the cluster's, not the Job's: wait for the binding first.
	waitFor(t, time.Minute, "claim "+claim+" bound", func() (bool, string) {
		out, _ := kcErr("", "-n", ns, "get", "pvc", claim, "-o", "jsonpath={.status.phase}")
		return out == "Bound", out
	})
}

// agentJob is the shipped Job, named name, on claim, with the fake model
// API at podIP under the names apiHost and elsewhere.test.
func agentJob(t testing.TB, name, claim, podIP string) map[string]any {
	t.Helper()
	job := loadJob(t)
	job["metadata"] = map[string]any{"name": name}
	spec := dig(job, "spec", "template", "spec").(map[string]any)
	spec["hostAliases"] = []any{map[string]any{"ip": podIP, "hostnames": []any{apiHost, "elsewhere.test"}}}
	for _, v := range spec["volumes"].([]any) {
		if m := v.(map[string]any); m["name"] == "ws" {
			m["persistentVolumeClaim"] = map[string]any{"claimName": claim}
		}
	}
	agent := dig(spec, "containers", 0).(map[string]any)
	var args []any
	for _, a := range agent["args"].([]any) {
		if a == "--" {
			args = append(args, "--allow-internal-host="+apiHost)
		}
		args = append(args, a)
	}
	agent["args"] = args
	for _, e := range agent["env"].([]any) {
		if m := e.(map[string]any); m["name"] == "ANTHROPIC_BASE_URL" {
			m["value"] = "http://" + apiHost + ":" + apiPort
		}
	}
	return job
}

// bareJob is agentJob running the agent's command without agentbox: the
// same pod, the command's shell line run directly, with what agentbox's
// claude-code profile sets in the environment and the directory agentbox
// starts the command in.
func bareJob(t testing.TB, name, claim, podIP string) map[string]any {
	t.Helper()
	job := agentJob(t, name, claim, podIP)
	c := dig(job, "spec", "template", "spec", "containers", 0).(map[string]any)
	a := c["args"].([]any)
	c["command"] = []any{a[len(a)-3], a[len(a)-2]}
	c["args"] = []any{a[len(a)-1]}
	c["env"] = append(slices.Clone(c["env"].([]any)),
		map[string]any{"name": "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "value": "1"},
		map[string]any{"name": "DISABLE_AUTOUPDATER", "value": "1"}, map[string]any{"name": "IS_SANDBOX", "value": "1"})
	c["workingDir"] = "/ws/target"
	return job
}

// TestJobOnNode: the shipped Job as written, on the real node, in a
// namespace enforcing Pod Security "restricted".
func TestJobOnNode(t *testing.T) {
	need(t)
	testNS(t, ns)

	// The fake model API, a pod of its own; the agent reaches it by name.
	script := toJSON(t, jobScript)
	podIP := fakeAPI(t, ns, "fakeapi", script)

	// First, the same command without agentbox (bareJob), on a volume
	// and a fake API of its own: what it does, agentbox must refuse
	// below. It runs first so that whatever the first Job on a new node
	// pays is not counted as agentbox's (BenchmarkJobOverhead measures).
	bareDir := filepath.Join(state, ns+"-bare")
	workspacePV(t, ns, "agentbox-bare", bareDir)
	bareIP := fakeAPI(t, ns, "fakeapi-bare", script)
	bare := bareJob(t, "bare-agent", "agentbox-bare", bareIP)
	start := time.Now()
	kc(t, toJSON(t, bare), "-n", ns, "apply", "-f", "-")
	bok, btook := jobDone(t, ns, "bare-agent", start)
	if !bok {
		l, _ := kcErr("", "-n", ns, "logs", "job/bare-agent", "-c", "agent")
		t.Fatalf("the bare Job failed:\n%s", l)
	}
	fmt.Printf("k8s: kubectl apply to Job completion (same command without agentbox, first): %.2fs\n", btook.Seconds())

	// The workspace volume: a PV on this host bound to the shipped claim.
	pvDir := filepath.Join(state, ns+"-ws")
	workspacePV(t, ns, "agentbox-ws", pvDir)

	// The shipped Job, with the API's address and name for this cluster.
	job := agentJob(t, "agentbox-agent", "agentbox-ws", podIP)
	start = time.Now()
	kc(t, toJSON(t, job), "-n", ns, "apply", "-f", "-")
	ok, took := jobDone(t, ns, "agentbox-agent", start)
	logs, _ := kcErr("", "-n", ns, "logs", "job/agentbox-agent", "-c", "agent")
	agentLog, _ := os.ReadFile(filepath.Join(pvDir, "feedback", "agent.log"))
	if !ok {
		initLogs, _ := kcErr("", "-n", ns, "logs", "job/agentbox-agent", "-c", "workspace")
		desc, _ := kcErr("", "-n", ns, "describe", "pods", "-l", "job-name=agentbox-agent")
		t.Fatalf("the Job failed after %s\nagent container:\n%s\ninit:\n%s\nagent.log:\n%s\n%s", took, logs, initLogs, agentLog, desc)
	}
	fmt.Printf("k8s: kubectl apply to Job completion (agentbox): %.2fs\n", took.Seconds())

	// What the model API received: the real key on every request, and
	// the agent's tool results.
	st := fakeState(t, ns, "fakeapi")
	if st.KeyOK == 0 || st.KeyOther != 0 {
		t.Errorf("the fake API saw %d requests with the brokered key and %d with another credential", st.KeyOK, st.KeyOther)
	}
	res := strings.Join(st.Results, "\n---\n")
	for _, want := range []string{"committed", "EACCES: permission denied, open '/ws/context/from-agent.txt", "agentbox: denied: git push origin main", "key=agentbox-placeholder-", "Couldn't connect to server", "elsewhere.test:" + apiPort + " denied: host not in the network allowlist", "agentbox: denied: chmod 0604 /ws/context/task.md", "agentbox: denied: writing /ws/context/task.md", "/keys/audit.key: Permission denied"} {
		if !strings.Contains(res, want) {
			t.Errorf("tool results lack %q:\n%s", want, res)
		}
	}
	if strings.Contains(res, realKey) || strings.Contains(logs, realKey) || strings.Contains(string(agentLog), realKey) {
		t.Error("the real API key reached the agent, its output or the audit log")
	}
	if !strings.Contains(string(agentLog), "All done.") {
		t.Errorf("feedback/agent.log on the volume lacks the agent's answer:\n%s", agentLog)
	}
	// The agent's work, on the volume; its write into context/ not.
	if out := run(t, "git", "-c", "safe.directory=*", "-C", filepath.Join(pvDir, "target", "project"), "log", "--oneline"); !strings.Contains(out, "agent") {
		t.Errorf("the agent's commit is not in target/project:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(pvDir, "context", "from-agent.txt")); err == nil {
		t.Error("the agent wrote into context/")
	}

	// The audit log: in kubectl logs, whole, with the key from the Secret.
	auditFile := filepath.Join(state, "audit.jsonl")
	var auditLines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.HasPrefix(l, "{") {
			auditLines = append(auditLines, l)
		}
	}
	os.WriteFile(auditFile, []byte(strings.Join(auditLines, "\n")+"\n"), 0o600)
	keyFile := filepath.Join(state, "audit.key")
	os.WriteFile(keyFile, []byte(auditHex+"\n"), 0o600)
	for _, want := range []string{`"event":"launch"`, `git:push origin main`, `"event":"exit"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("kubectl logs lack %s", want)
		}
	}
	if out, err := exec.Command(filepath.Join(repoRoot, "bin", "agentbox"), "audit", "verify", "--file", auditFile, "--key", keyFile, "--no-head").CombinedOutput(); err != nil {
		t.Errorf("audit verify of kubectl logs (%d lines): %v\n%s", len(auditLines), err, out)
	}

	// The pod ran with exactly the shipped security contexts.
	podJSON := kc(t, "", "-n", ns, "get", "pods", "-l", "job-name=agentbox-agent", "-o", "jsonpath={.items[0].spec}")
	var pod map[string]any
	json.Unmarshal([]byte(podJSON), &pod)
	shipped := loadJob(t)
	sspec := dig(shipped, "spec", "template", "spec")
	for _, p := range [][]any{{"securityContext"}, {"containers", 0, "securityContext"}, {"initContainers", 0, "securityContext"}} {
		want, got := dig(sspec, p...), dig(pod, p...)
		if !reflect.DeepEqual(normalize(want), normalize(got)) {
			t.Errorf("%v: pod has %s, job.yaml %s", p, toJSON(t, got), toJSON(t, want))
		}
	}

	// Without agentbox (the bare Job, run first) the direct connection
	// went through, the write into context/ happened: the refusals above
	// were agentbox's.
	// Without agentbox the direct connection goes through: the refusal
	// above was agentbox's.
	direct := 0
	for _, r := range fakeState(t, ns, "fakeapi-bare").Results {
		if strings.Contains(r, "direct-tried") {
			direct++
			if strings.Contains(r, "Couldn't connect to server") {
				t.Errorf("without agentbox the direct connection was refused too: %s", r)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(bareDir, "context", "from-agent.txt")); err != nil {
		t.Errorf("without agentbox the write into context/ did not happen either: %v", err)
	}
	if direct != 1 {
		t.Errorf("without agentbox the direct connection step ran %d times, want 1", direct)
	}
}

// fakeAPI starts a fake model API pod in namespace ns serving script and returns its IP.
func fakeAPI(t testing.TB, ns, name, script string) string {
	t.Helper()
	fake := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "fakeapi"}},
		"spec": map[string]any{
			"automountServiceAccountToken": false,
			"securityContext":              map[string]any{"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{"name": "api", "image": "agentbox:dev", "command": []any{"/usr/local/bin/agentbox-fakeapi"},
				"env": []any{map[string]any{"name": "FAKEAPI_KEY", "value": realKey}, map[string]any{"name": "FAKEAPI_SCRIPT", "value": script}},
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
					"capabilities": map[string]any{"drop": []any{"ALL"}}}}}}}
	kc(t, toJSON(t, fake), "-n", ns, "apply", "-f", "-")
	var podIP string
	waitFor(t, 2*time.Minute, name+" running", func() (bool, string) {
		out, _ := kcErr("", "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase} {.status.podIP}")
		f := strings.Fields(out)
		if len(f) == 2 && f[0] == "Running" {
			podIP = f[1]
			return true, out
		}
		return false, out
	})
	return podIP
}

// fakeStatus is the fake API pod's last status line.
type fakeStatus struct {
	Requests int      `json:"requests"`
	KeyOK    int      `json:"key_ok"`
	KeyOther int      `json:"key_other"`
	Results  []string `json:"results"`
}

func fakeState(t testing.TB, ns, name string) fakeStatus {
	t.Helper()
	fl, _ := kcErr("", "-n", ns, "logs", name)
	lines := strings.Split(strings.TrimSpace(fl), "\n")
	var st fakeStatus
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &st); err != nil {
		t.Fatalf("%s's status line: %v\n%s", name, err, fl)
	}
	return st
}

// normalize makes numbers from YAML and JSON comparable.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// TestUnsupportedSecurityContext: the Job as root (runAsUser 0, which
// docs/operations.md lists as unsupported without CAP_SYS_ADMIN) fails with
// one line in the pod's log naming what it lacks.
func TestUnsupportedSecurityContext(t *testing.T) {
	need(t)
	rootNS := strings.Replace(ns, "agentbox-test", "agentbox-root", 1)
	kc(t, "", "create", "namespace", rootNS)
	if reused {
		t.Cleanup(func() { kcErr("", "delete", "namespace", rootNS) })
	}
	kc(t, "", "-n", rootNS, "create", "secret", "generic", "agentbox-api-key", "--from-literal=ANTHROPIC_API_KEY="+realKey)
	kc(t, "", "-n", rootNS, "create", "secret", "generic", "agentbox-audit", "--from-literal=key="+auditHex)
	job := loadJob(t)
	spec := dig(job, "spec", "template", "spec").(map[string]any)
	sc := spec["securityContext"].(map[string]any)
	sc["runAsNonRoot"], sc["runAsUser"], sc["runAsGroup"] = false, 0, 0
	for _, v := range spec["volumes"].([]any) {
		if m := v.(map[string]any); m["name"] == "ws" {
			delete(m, "persistentVolumeClaim")
			m["emptyDir"] = map[string]any{}
		}
	}
	// no repository to clone here: the init container only prepares
	init := dig(spec, "initContainers", 0).(map[string]any)
	init["args"] = []any{"set -e; agentbox init /ws; install -m 0600 /audit-secret/key /keys/audit.key"}
	start := time.Now()
	kc(t, toJSON(t, job), "-n", rootNS, "apply", "-f", "-")
	ok, _ := jobDone(t, rootNS, "agentbox-agent", start)
	logs, _ := kcErr("", "-n", rootNS, "logs", "job/agentbox-agent", "-c", "agent")
	var agentboxLines []string
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if strings.HasPrefix(l, "agentbox:") && !strings.HasPrefix(l, "agentbox: warning:") {
			agentboxLines = append(agentboxLines, l)
		}
	}
	// the refusal names what root lacks here: CAP_SYS_ADMIN for the
	// read-only mount namespace, or the user namespace to make it in.
	if len(agentboxLines) == 0 {
		initLogs, _ := kcErr("", "-n", rootNS, "logs", "job/agentbox-agent", "-c", "workspace")
		desc, _ := kcErr("", "-n", rootNS, "describe", "pods", "-l", "job-name=agentbox-agent")
		t.Logf("init container:\n%s\n%s", initLogs, desc)
	}
	if ok || len(agentboxLines) != 1 || !strings.Contains(agentboxLines[0], "user namespace") {
		t.Errorf("as root: succeeded=%v, want one agentbox line naming the namespace it cannot make:\n%s", ok, logs)
	} else {
		fmt.Printf("k8s: as root: %s\n", agentboxLines[0])
	}
}

// TestSandboxTemplateOnNode: the agent-sandbox CRD installed on the node's
// apiserver accepts the SandboxTemplate example under strict field
// validation (server-side dry run: the controller is not installed).
func TestSandboxTemplateOnNode(t *testing.T) {
	need(t)
	kc(t, "", "apply", "-f", filepath.Join(repoRoot, "examples/kubernetes/agent-sandbox/testdata/sandboxtemplates.crd.yaml"))
	waitFor(t, time.Minute, "the CRD established", func() (bool, string) {
		out, _ := kcErr("", "get", "crd", "sandboxtemplates.extensions.agents.x-k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True", out
	})
	out := kc(t, "", "apply", "--dry-run=server", "--validate=strict", "-f", filepath.Join(repoRoot, "examples/kubernetes/agent-sandbox/sandboxtemplate.yaml"))
	if !strings.Contains(out, "sandboxtemplate.extensions.agents.x-k8s.io/agentbox-claude created (server dry run)") {
		t.Errorf("kubectl apply --dry-run=server: %s", out)
	}
}

// BenchmarkJobOverhead: what agentbox adds to a Job — `kubectl apply` to
// completion of the shipped Job (Claude Code under agentbox, jobScript)
// against bareJob (the same pod and command without agentbox), in b.N
// interleaved pairs whose order alternates, each Job on a fresh workspace
// volume and a fresh HOME, one fake model API for all. Reports the medians
// (agentbox-s, bare-s) and the median of the pairs' differences
// (added-s); each pair is printed. Goal (issue 45): added-s <= 1.
//
//	AGENTBOX_K8S=1 go test -run '^$' -bench JobOverhead -benchtime 6x ./test/k8s/
func BenchmarkJobOverhead(b *testing.B) {
	need(b)
	benchRuns++
	bns := fmt.Sprintf("%s-bench-%d", ns, benchRuns)
	testNS(b, bns)
	podIP := fakeAPI(b, bns, "fakeapi", toJSON(b, jobScript))
	one := func(name string, bare bool) float64 {
		claim := name + "-ws"
		workspacePV(b, bns, claim, filepath.Join(state, bns+"-"+name))
		job := agentJob(b, name, claim, podIP)
		if bare {
			job = bareJob(b, name, claim, podIP)
		}
		start := time.Now()
		kc(b, toJSON(b, job), "-n", bns, "apply", "-f", "-")
		ok, took := jobDone(b, bns, name, start)
		if !ok {
			l, _ := kcErr("", "-n", bns, "logs", "job/"+name, "-c", "agent")
			b.Fatalf("job %s failed:\n%s", name, l)
		}
		return took.Seconds()
	}
	var ab, bare, added []float64
	for i := 0; i < b.N; i++ {
		var a, n float64
		if i%2 == 0 {
			a, n = one(fmt.Sprintf("agentbox-%d", i), false), one(fmt.Sprintf("bare-%d", i), true)
		} else {
			n, a = one(fmt.Sprintf("bare-%d", i), true), one(fmt.Sprintf("agentbox-%d", i), false)
		}
		ab, bare, added = append(ab, a), append(bare, n), append(added, a-n)
		fmt.Printf("k8s: pair %d: agentbox %.2fs, without %.2fs, added %+.2fs\n", i, a, n, a-n)
	}
	b.ReportMetric(median(ab), "agentbox-s")
	b.ReportMetric(median(bare), "bare-s")
	b.ReportMetric(median(added), "added-s")
	b.ReportMetric(0, "ns/op")
}

// benchRuns counts BenchmarkJobOverhead's runs (the testing package runs
// it once with b.N=1 first): each has a namespace of its own.
var benchRuns int

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
