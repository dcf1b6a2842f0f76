//go:build linux

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/execpolicy"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// The exec policy (package execpolicy) driven by this package's supervisor:
// an external test package, so it may import execpolicy, which imports
// sandbox.

// BenchmarkSupervisedExecLoop runs a 500-exec shell loop under Supervise
// with the developer Policy and a real audit log (no Landlock): the
// supervisor's own cost per exec.
func BenchmarkSupervisedExecLoop(b *testing.B) {
	d := b.TempDir()
	os.WriteFile(filepath.Join(d, "loop.sh"), []byte("i=0\nwhile [ $i -lt 500 ]; do /bin/true; i=$((i+1)); done\n"), 0o644)
	pf := filepath.Join(d, "p.yaml")
	os.WriteFile(pf, []byte("version: 1\nrules:\n  - {decision: allow, command: sh loop.sh}\n"), 0o644)
	eng, err := policy.Load(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{pf}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := audit.Open(filepath.Join(d, "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	pol := execpolicy.New(execpolicy.Config{Engine: eng, Audit: w})
	defer pol.Close()
	for _, mode := range []string{"bare", "trace-all", "notify", "allow-all", "notify-allow-all"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if mode == "bare" {
					c := exec.Command("sh", "loop.sh")
					c.Dir = d
					if err := c.Run(); err != nil {
						b.Fatal(err)
					}
					continue
				}
				fast := pol.DecideFast
				if strings.HasSuffix(mode, "allow-all") { // the supervisor alone, no policy or audit
					fast = func(*sandbox.ExecEvent) (sandbox.Verdict, bool) { return sandbox.Verdict{Allow: true}, true }
				}
				status, stderr := sandbox.SuperviseForTest(b, []string{"sh", "loop.sh"}, d, pol.Decide, fast, strings.HasPrefix(mode, "notify"))
				if status != 0 {
					b.Fatalf("status %v: %s", status, stderr)
				}
			}
		})
	}
}
