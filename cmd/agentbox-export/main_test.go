package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigAndRun: agentbox-export's configuration from its flags, from
// agentbox's handover (AGENTBOX_EXPORT_CONFIG) and from the user settings
// file, each mistake one line with exit 2 that never prints a header's
// value; --run says it is ready and, its stdin ended with nothing to send,
// exits 0 without touching the network.
func TestConfigAndRun(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	os.WriteFile(log, nil, 0o600)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	const secret = "Bearer s3cr3t"
	cases := []struct {
		name, env string
		args      []string
		code      int
		out       string
	}{
		{"bad header", "", []string{"--endpoint", "http://127.0.0.1:1", "--header", "Bad Name=" + secret}, 2, `header name "Bad Name"`},
		{"header on two lines", "", []string{"--endpoint", "http://127.0.0.1:1", "--header", "Authorization=" + secret + "\nX: 1"}, 2, "header Authorization: its value must be one line"},
		{"bad scheme", "", []string{"--endpoint", "ftp://127.0.0.1:1"}, 2, `scheme "ftp"`},
		{"header without endpoint", "", []string{"--header", "A=b"}, 2, "--header without --endpoint"},
		{"nothing configured", "", nil, 2, "no --endpoint, and no audit.export in " + filepath.Join(dir, "config", "agentbox", "config.yaml")},
		{"bad handover", `{"url":`, nil, 2, "AGENTBOX_EXPORT_CONFIG: not an export configuration"},
		{"handover checked", `{"url":"grpc://127.0.0.1:1/path","headers":{"Authorization":"` + secret + `"}}`, nil, 2, "an OTLP/gRPC endpoint has no path"},
		{"stdin log", "", []string{"--file", "-", "--endpoint", "http://127.0.0.1:1"}, 2, "--file - is not a file"},
		{"run: ready, nothing to send", `{"url":"http://127.0.0.1:1","headers":{"Authorization":"` + secret + `"}}`, []string{"--run"}, 0, "agentbox-export ready"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AGENTBOX_EXPORT_CONFIG", c.env)
			var out bytes.Buffer
			code := run(context.Background(), append([]string{"agentbox-export", "--file", log}, c.args...), strings.NewReader(""), &out, &out)
			if code != c.code || !strings.Contains(out.String(), c.out) {
				t.Errorf("exit %d, want %d; output %q, want it to contain %q", code, c.code, out.String(), c.out)
			}
			if strings.Contains(out.String(), "s3cr3t") {
				t.Errorf("a header's value is printed: %q", out.String())
			}
			if c.code != 0 && strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
				t.Errorf("more than one line: %q", out.String())
			}
		})
	}
}
