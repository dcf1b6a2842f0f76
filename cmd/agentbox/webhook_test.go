package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// TestRunWebhookFlags: `agentbox run --approve-webhook URL` puts the ask
// of a real run to a loopback bot, whose signed answer lets the program
// run; the secret comes from a file only, and wrong settings are usage
// errors naming the flag.
func TestRunWebhookFlags(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nrules:\n  - {decision: ask, command: touch, description: touching needs a human}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "secret")
	secret := []byte("cli-shared-secret-0123456789")
	if err := os.WriteFile(secretFile, append(secret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, secret, 0o644); err != nil {
		t.Fatal(err)
	}
	bot := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := approval.VerifyWebhook(secret, r.Header.Get(approval.WebhookTimestampHeader), r.Header.Get(approval.WebhookSignatureHeader), body, time.Now(), time.Minute); err != nil {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		var a approval.WebhookAsk
		_ = json.Unmarshal(body, &a)
		go func() {
			b, _ := json.Marshal(approval.WebhookAnswer{Nonce: a.Nonce, Answer: "allow", By: "cli-bot"})
			ts := time.Now().Unix()
			req, _ := http.NewRequest(http.MethodPost, a.AnswerURL, bytes.NewReader(b))
			req.Header.Set(approval.WebhookTimestampHeader, strconv.FormatInt(ts, 10))
			req.Header.Set(approval.WebhookSignatureHeader, approval.SignWebhook(secret, ts, b))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}))
	defer bot.Close()
	base := []string{"run", "--role", "developer", "--workspace", ws, "--policy", pol, "--no-user-policy", "--approve", "none",
		"--audit", filepath.Join(dir, "audit.jsonl"), "--cwd", filepath.Join(ws, "target")}
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		errPart string
	}{
		{"secret without a webhook", []string{"--webhook-secret", secretFile}, exitRunUsage, "--webhook-secret: no --approve-webhook"},
		{"no secret", []string{"--approve-webhook", bot.URL, "--webhook-identity", "root"}, exitRunUsage, "needs --webhook-secret FILE"},
		{"secret readable by others", []string{"--approve-webhook", bot.URL, "--webhook-secret", loose, "--webhook-identity", "root"}, exitRunUsage, "chmod 600 " + loose},
		{"no identity", []string{"--approve-webhook", bot.URL, "--webhook-secret", secretFile}, exitRunUsage, "no identity"},
		{"answered allow", []string{"--approve-webhook", bot.URL, "--webhook-secret", secretFile, "--webhook-identity", "root"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if abi := sandbox.LandlockABI(); tc.code == 0 && abi < sandbox.RequiredLandlockABI {
				t.Skipf("reason: Landlock ABI %d < %d", abi, sandbox.RequiredLandlockABI)
			}
			args := append(append(append([]string{}, base...), tc.args...), "--", "touch", "made")
			_, stderr, code := runCLI(t, "", args...)
			if code != tc.code || !strings.Contains(stderr, tc.errPart) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", code, stderr, tc.code, tc.errPart)
			}
			if strings.Contains(stderr, string(secret)) {
				t.Fatalf("stderr shows the secret: %s", stderr)
			}
			if tc.code == 0 {
				if _, err := os.Stat(filepath.Join(ws, "target", "made")); err != nil {
					t.Fatalf("the approved touch did not run: %v", err)
				}
			}
		})
	}
}
