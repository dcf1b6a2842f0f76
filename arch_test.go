package agentbox_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowedImports is the layering of docs/architecture.md: what each package
// may import of this module (non-test files). Anything else — an upward
// import, or a new package not listed — fails, so the picture in the docs
// and the code cannot drift apart.
var allowedImports = map[string][]string{
	"internal/programs":        {},
	"internal/fakemodel":       {},
	"internal/testkit":         {},
	"internal/fault":           {},
	"internal/registry":        {"internal/procfs", "internal/jsonstr"},
	"internal/procfs":          {},
	"audit":                    {"internal/redact", "internal/jsonstr"},
	"internal/redact":          {},
	"internal/jsonstr":         {},
	"approval":                 {},
	"policy/command":           {"internal/programs"},
	"policy":                   {"policy/command", "internal/programs", "internal/redact", "internal/jsonstr"},
	"policy/remember":          {"policy", "internal/programs", "internal/redact"},
	"boundary":                 {"policy"},
	"sandbox/helper":           {},
	"internal/cgroup":          {"internal/procfs"},
	"internal/identity":        {"internal/programs"},
	"internal/supervise":       {"sandbox/helper", "internal/identity", "internal/fault"},
	"sandbox":                  {"sandbox/helper", "boundary", "internal/cgroup", "internal/fault"},
	"egress":                   {"policy", "audit"},
	"internal/judge":           {"policy/remember", "sandbox", "internal/supervise", "internal/identity", "egress", "boundary", "policy", "policy/command", "approval", "audit", "internal/procfs", "internal/redact"},
	"internal/plan":            {"sandbox", "internal/judge", "boundary", "policy", "policy/command", "audit"},
	".":                        {"internal/plan", "internal/judge", "sandbox", "internal/supervise", "internal/identity", "boundary", "policy", "audit", "approval", "internal/registry", "internal/programs", "egress"},
	"cmd/agentbox":             {".", "internal/plan", "internal/judge", "policy", "policy/command", "boundary", "audit"},
	"cmd/agentbox-helper":      {"sandbox/helper"},
	"examples/orchestrator":    {".", "approval", "audit"},
	"examples/approval-client": {"approval"},
	"scripts/gostart":          {},
}

func TestLayering(t *testing.T) {
	const mod = "github.com/agentbox/agentbox"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, mod+"/...").Output()
	if err != nil {
		t.Skipf("reason: go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, ":")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		if rel == "" {
			rel = "."
		}
		allowed, ok := allowedImports[rel]
		if !ok {
			t.Errorf("package %s is not in the layering (arch_test.go, docs/architecture.md)", rel)
			continue
		}
		for _, imp := range strings.Fields(imps) {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			r := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
			if r == "" {
				r = "."
			}
			if !slices.Contains(allowed, r) {
				t.Errorf("%s imports %s: not allowed by the layering", rel, r)
			}
		}
	}
}
