//go:build linux

package supervise_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/supervise"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// The judge (internal/judge) driving this package's supervisor:
// an external test package, so it may import the judge, which imports
// supervise.
//
// Each iteration runs the workload bare and then supervised, so a change
// in machine load hits both alike; the benchmark reports the supervised
// median as ns/op, its ratio to the bare median (x-bare) and the time it
// adds per exec. No Landlock or cgroups: the supervisor's cost alone.

// superviseMode is one way of running the workload under the supervisor.
type superviseMode struct {
	name      string
	notify    bool // notify mode (the default); else every process traced
	allowAll  bool // fast decides allow without the policy or the audit log
	mechanism bool // nothing read at the exec stop (set with allowAll)
}

var superviseModes = []superviseMode{
	{name: "trace-all"},
	{name: "notify", notify: true},
	// The floors under the default: with the program read but neither
	// decided nor audited, and the mechanism alone (notification, seize,
	// exec stop, detach).
	{name: "notify-read-only", notify: true, allowAll: true},
	{name: "notify-mechanism", notify: true, allowAll: true, mechanism: true},
}

// benchPolicy loads the developer role plus rules for the workspace d,
// with an audit log in d.
func benchPolicy(b *testing.B, d string, rules ...string) *judge.Judge {
	b.Helper()
	pf := filepath.Join(d, "p.yaml")
	text := "version: 1\nrules:\n"
	for _, r := range rules {
		text += "  - {decision: allow, command: " + r + "}\n"
	}
	if err := os.WriteFile(pf, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	eng, err := load.Policy(policy.LoadOptions{Role: "developer", NoUserFile: true, Files: []string{pf}, Workspace: d})
	if err != nil {
		b.Fatal(err)
	}
	w, err := audit.Open(filepath.Join(d, "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	pol := judge.New(judge.Config{Engine: eng, Audit: w, Workspace: d})
	b.Cleanup(pol.Close)
	return pol
}

// benchSupervised runs argv in dir bare and under each mode, interleaved;
// before, when set, runs ahead of every run (untimed: a build's clean).
func benchSupervised(b *testing.B, pol *judge.Judge, dir string, argv []string, execs int, before func()) {
	allow := func(*supervise.ExecEvent) (supervise.Verdict, bool) { return supervise.Verdict{Allow: true}, true }
	for _, m := range superviseModes {
		b.Run(m.name, func(b *testing.B) {
			var bare, sup []time.Duration
			for i := 0; i < b.N; i++ {
				if before != nil {
					before()
				}
				c := exec.Command(argv[0], argv[1:]...)
				c.Dir = dir
				t0 := time.Now()
				if out, err := c.CombinedOutput(); err != nil {
					b.Fatalf("bare %v: %v\n%s", argv, err, out)
				}
				bare = append(bare, time.Since(t0))
				if before != nil {
					before()
				}
				fast := pol.DecideFast
				if m.allowAll {
					fast = allow
				}
				t0 = time.Now()
				status, stderr := supervise.SuperviseForTest(b, argv, dir, pol.Decide, fast, m.notify, m.mechanism)
				sup = append(sup, time.Since(t0))
				if status != 0 {
					b.Fatalf("status %v: %s", status, stderr)
				}
			}
			mb, ms := median(bare), median(sup)
			b.ReportMetric(float64(ms.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(ms)/float64(mb), "x-bare")
			b.ReportMetric(float64((ms-mb).Microseconds())/float64(execs), "us-added/exec")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSupervisedExecLoop: a 500-exec shell loop of /bin/true.
func BenchmarkSupervisedExecLoop(b *testing.B) {
	d := b.TempDir()
	if err := os.WriteFile(filepath.Join(d, "loop.sh"), []byte("i=0\nwhile [ $i -lt 500 ]; do /bin/true; i=$((i+1)); done\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	pol := benchPolicy(b, d, "sh loop.sh")
	benchSupervised(b, pol, d, []string{"sh", "loop.sh"}, 500, nil)
}

// BenchmarkSupervisedBuild: `make -j2` of 150 small C files (~450 execs of
// cc, cc1 and as, plus the link), both CPUs busy.
func BenchmarkSupervisedBuild(b *testing.B) {
	if _, err := exec.LookPath("cc"); err != nil {
		b.Skip("no C compiler (cc) to build with")
	}
	if _, err := exec.LookPath("make"); err != nil {
		b.Skip("make is not installed")
	}
	const n = 150
	ws := b.TempDir()
	d := filepath.Join(ws, "target") // the developer role writes there
	if err := os.Mkdir(d, 0o755); err != nil {
		b.Fatal(err)
	}
	var main strings.Builder
	var objs []string
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&main, "int f%d(int);\n", i)
		src := fmt.Sprintf("int f%d(int x){int y=x;for(int k=0;k<%d;k++)y=y*31+k;return y;}\n", i, i)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.c", i)), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, fmt.Sprintf("f%d.o", i))
	}
	main.WriteString("int main(void){int s=0;\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&main, "s+=f%d(%d);\n", i, i)
	}
	main.WriteString("return s==0;}\n")
	mk := "prog: main.o " + strings.Join(objs, " ") + "\n\tcc -o $@ $^\n%.o: %.c\n\tcc -O1 -c -o $@ $<\n"
	for name, text := range map[string]string{"main.c": main.String(), "Makefile": mk} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	clean := func() {
		for _, o := range append(objs, "main.o", "prog") {
			os.Remove(filepath.Join(d, o))
		}
	}
	pol := benchPolicy(b, ws, "cc1", "collect2", "lto-wrapper")
	benchSupervised(b, pol, d, []string{"make", "-s", "-j2"}, 3*n+4, clean)
}
