package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
)

// Push tokens per approved push (docs/operations.md, "Push tokens"): the
// user's settings file names a mint and a revoke command; a `git push`
// the exec policy allows gets a token minted for it alone, which the
// proxy puts in that push's receive-pack requests over TLS to
// git-http-backend on loopback (a forge that takes exactly the minted
// tokens, until they are revoked). The token never enters the sandbox;
// other processes get none; a force push and the deletion of a protected
// branch are refused on the wire; a failing, hanging or silent mint
// command refuses the push with one line.

// pushForge serves the bare repositories under root over TLS and takes
// a request only with Basic credentials whose password is a token the
// test's mint command issued and its revoke command has not revoked.
func pushForge(t *testing.T, root, state string, ca *testkit.TestCA) (port string, posts func() []string) {
	t.Helper()
	return forge(t, root, ca, func(r *http.Request) string {
		if r.Method == http.MethodPost {
			return r.URL.Path
		}
		return ""
	}, func(r *http.Request) bool {
		minted, _ := os.ReadFile(filepath.Join(state, "minted"))
		revoked, _ := os.ReadFile(filepath.Join(state, "revoked"))
		_, pw, ok := r.BasicAuth()
		return ok && pw != "" && strings.Contains("\n"+string(minted), "\n"+pw+"\n") && !strings.Contains(string(revoked), pw)
	})
}

// mintScript issues a fresh token per call (recording it and the request)
// unless the request's refs ask it to fail, hang or print nothing.
const mintScript = `#!/bin/sh
d=STATE
req=$(cat)
printf '%s\n' "$req" >> "$d/requests"
case "$req" in
*mint-fail*) echo "no installation for this repository" >&2; exit 3;;
*mint-hang*) sleep 60; exit 0;;
*mint-empty*) exit 0;;
esac
tok="ptok$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
echo "$tok" >> "$d/minted"
printf '{"token":"%s","id":"tokid-%s","expires":"2099-01-01T00:00:00Z"}\n' "$tok" "$(echo "$tok" | cut -c5-12)"
`

const revokeScript = `#!/bin/sh
cat >> STATE/revoked
echo >> STATE/revoked
`

// section returns the part of out from the line "== name" to the next
// "== " line.
func section(t *testing.T, out, name string) string {
	t.Helper()
	i := strings.Index(out, "== "+name+"\n")
	if i < 0 {
		t.Fatalf("no section %q in:\n%s", name, out)
	}
	s := out[i+len(name)+4:]
	if j := strings.Index(s, "\n== "); j >= 0 {
		s = s[:j+1]
	}
	return s
}

func TestPushTokenPerApprovedPush(t *testing.T) {
	testkit.NeedProg(t, "git", "curl")
	w := newAgentWorld(t)
	ca := testkit.NewTestCA(t, "repo.test")
	state := filepath.Join(w.dir, "pushstate")
	tools := filepath.Join(w.dir, "tools")
	for _, d := range []string{state, tools, filepath.Join(w.home, ".config", "agentbox")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mint, revoke := filepath.Join(tools, "mint"), filepath.Join(tools, "revoke")
	for f, body := range map[string]string{mint: mintScript, revoke: revokeScript} {
		if err := os.WriteFile(f, []byte(strings.ReplaceAll(body, "STATE", state)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	forge := filepath.Join(w.dir, "forge")
	bare := filepath.Join(forge, "repo.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", w.proj, bare).CombinedOutput(); err != nil {
		t.Fatalf("bare repo: %v %s", err, out)
	}
	port, posts := pushForge(t, forge, state, ca)
	url := "https://repo.test:" + port + "/repo.git"
	for _, args := range [][]string{{"remote", "set-url", "origin", url}} {
		if out, err := exec.Command("git", append([]string{"-C", w.proj}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	// A pre-push hook, in the approved push's own tree while its token
	// is out: what its environment and every process's inside hold.
	hook := "#!/bin/sh\n{ env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; } >> ../seen-env.txt\n"
	if err := os.WriteFile(filepath.Join(w.proj, ".git", "hooks", "pre-push"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	mainBefore := refOf(t, bare, "refs/heads/main")
	conf := filepath.Join(w.home, ".config", "agentbox", "config.yaml")
	writeConf := func(body string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(script string) (string, int) {
		t.Helper()
		args := []string{"run", "--role", "open", "--network", "proxy", "--workspace", w.ws, "--allow-host", "repo.test",
			"--proxy-resolve", "repo.test=127.0.0.1", "--allow-internal-host", "repo.test", "--", "sh", "-c", script}
		cmd := exec.Command(filepath.Join(w.bin, "agentbox"), args...)
		cmd.Dir = filepath.Join(w.ws, "target")
		cmd.Env = w.env("SSL_CERT_FILE=" + ca.CAFile)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}

	// Bad input: an unknown field is refused before anything starts,
	// naming the file and line.
	writeConf("push:\n  tokens:\n    mint: [" + mint + "]\n    hosts: [repo.test]\n    scope: repo\n")
	out, code := run("true")
	if code == 0 || !strings.Contains(out, conf+":5: unknown setting push.tokens.scope") {
		t.Errorf("unknown field: exit %d, want a refusal naming %s:5:\n%s", code, conf, out)
	}

	writeConf("push:\n  tokens:\n    mint: [" + mint + "]\n    revoke: [" + revoke + "]\n    timeout: 2s\n    hosts: [repo.test]\n")
	script := `cd proj && git commit -q --allow-empty -m feature1 || exit 1
echo "== push"; git push origin HEAD:refs/heads/feature 2>&1; echo "exit $?"
echo "== curl"; curl -sS --fail-with-body -u "x-access-token:agentbox-placeholder" "` + url + `/info/refs?service=git-receive-pack" 2>&1; echo "exit $?"
echo "== helper"; printf 'capabilities\nlist for-push\n\n' | git remote-https origin ` + url + ` 2>&1; echo "exit $?"
echo "== renamed"; cp "$(command -v git)" ../mygit && printf 'capabilities\nlist for-push\n\n' | ../mygit remote-https origin ` + url + ` 2>&1; echo "exit $?"
echo "== force"; git push --force origin HEAD~1:refs/heads/feature 2>&1; echo "exit $?"
echo "== delete"; git push origin :refs/heads/main 2>&1; echo "exit $?"
echo "== mint-fail"; git push origin HEAD:refs/heads/mint-fail 2>&1; echo "exit $?"
echo "== mint-hang"; git push origin HEAD:refs/heads/mint-hang 2>&1; echo "exit $?"
echo "== mint-empty"; git push origin HEAD:refs/heads/mint-empty 2>&1; echo "exit $?"
echo "== env"; env
echo "== end"`
	out, _ = run(script)
	t.Logf("run:\n%s", out)

	if s := section(t, out, "push"); !strings.Contains(s, "exit 0") {
		t.Errorf("the approved push failed:\n%s", s)
	}
	feature := refOf(t, filepath.Join(w.proj), "HEAD")
	if got := refOf(t, bare, "refs/heads/feature"); got != feature {
		t.Errorf("forge's feature is %q, want the pushed %q", got, feature)
	}
	if got := refOf(t, bare, "refs/heads/main"); got != mainBefore {
		t.Errorf("forge's main changed: %q, was %q", got, mainBefore)
	}
	if refs := refsOf(t, bare); strings.Contains(refs, "mint-") {
		t.Errorf("a push whose mint failed reached the forge:\n%s", refs)
	}
	for name, want := range map[string]string{
		"curl":       "agentbox: denied: git push to " + url,
		"helper":     "403",
		"renamed":    "403",
		"force":      "[remote rejected] HEAD~1 -> feature (agentbox: non-fast-forward",
		"delete":     "[remote rejected] main (agentbox: delete of a protected ref",
		"mint-fail":  "could not be minted",
		"mint-hang":  "did not finish within 2s",
		"mint-empty": "printed no token",
	} {
		s := section(t, out, name)
		if !strings.Contains(s, want) || strings.Contains(s, "exit 0") {
			t.Errorf("%s: not refused with %q:\n%s", name, want, s)
		}
	}

	if strings.Contains(out, "no installation for this repository") {
		t.Error("the mint command's stderr reached the sandbox (it goes to the audit log only)")
	}
	// The tokens: three minted (the push, the force push, the delete),
	// each revoked once its push's process exited; none inside.
	mintedRaw, _ := os.ReadFile(filepath.Join(state, "minted"))
	tokens := strings.Fields(string(mintedRaw))
	if len(tokens) != 3 {
		t.Errorf("%d tokens minted, want 3 (push, force, delete): %q", len(tokens), tokens)
	}
	revoked, _ := os.ReadFile(filepath.Join(state, "revoked"))
	evs, raw := w.events(t)
	seenEnv, err := os.ReadFile(filepath.Join(w.ws, "target", "seen-env.txt"))
	if err != nil || !strings.Contains(string(seenEnv), "PATH=") {
		t.Errorf("the pre-push hook left no environment dump: %v", err)
	}
	for _, tok := range tokens {
		if !strings.Contains(string(revoked), `"token":"`+tok+`"`) {
			t.Errorf("token %s… not revoked: %s", tok[:8], revoked)
		}
		if strings.Contains(out, tok) {
			t.Errorf("token %s… printed inside the sandbox", tok[:8])
		}
		if strings.Contains(string(raw), tok) {
			t.Errorf("token %s… in the audit log", tok[:8])
		}
		for _, dir := range []string{w.ws, w.home} {
			if f := fileHolding(t, dir, tok); f != "" {
				t.Errorf("token %s… in %s", tok[:8], f)
			}
		}
	}

	count := map[string]int{}
	for _, e := range evs {
		pt := e.Detail["push_token"]
		if e.Event != audit.EventNet || pt == "" {
			continue
		}
		count[pt]++
		switch pt {
		case "revoked":
			if !strings.Contains(e.Reason, "the push's process exited") {
				t.Errorf("revoked at %q, want when the push's process exited", e.Reason)
			}
		case "minted":
			if e.Detail["token_id"] == "" || e.Detail["push"] == "" || e.Detail["repo"] != url || e.Detail["program"] == "" {
				t.Errorf("minted event without token id, push, repo or program: %v", e.Detail)
			}
		case "mint_failed":
			if strings.Contains(e.Detail["refs"], "mint-fail") && !strings.Contains(e.Reason, "no installation for this repository") {
				t.Errorf("the failed mint's stderr is not in its audit event: %q", e.Reason)
			}
		case "pushed":
			if !strings.Contains(e.Detail["updates"], "refs/heads/feature create") {
				t.Errorf("the wire's updates not audited: %v", e.Detail)
			}
		}
	}
	for pt, want := range map[string]int{"granted": 6, "minted": 3, "revoked": 3, "pushed": 1, "wire_refused": 2, "mint_failed": 3, "refused": 3} {
		if count[pt] < want {
			t.Errorf("%d %s events, want at least %d (all: %v)", count[pt], pt, want, count)
		}
	}
	for _, p := range posts() {
		if !strings.HasSuffix(p, "/git-receive-pack") {
			t.Errorf("unexpected POST to the forge: %s", p)
		}
	}
}

// refOf resolves rev in the repository at dir.
func refOf(t *testing.T, dir, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", rev).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// fileHolding returns a regular file under dir whose content holds s ("":
// none).
func fileHolding(t *testing.T, dir, s string) string {
	t.Helper()
	found := ""
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			found = p
		}
		return nil
	})
	return found
}
