package gitleft

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanCompare: in a real repository with a submodule-like git dir and a
// worktree, what a run plants — a config key that runs a program in a
// submodule's config, a hook, an attributes driver, a commondir redirect,
// an include, a new repository with a hook — is found, and nothing that was
// there before or does not run programs is.
func TestScanCompare(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	area := t.TempDir()
	repo := filepath.Join(area, "proj")
	git := func(args ...string) {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(repo, 0o755)
	git("init", "-q")
	git("config", "core.pager", "less") // the owner's: there before, not reported
	g := filepath.Join(repo, ".git")
	mod := filepath.Join(g, "modules", "lib")
	if out, err := exec.Command("git", "init", "-q", "--bare", mod).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	before := Scan([]string{area})

	write := func(p, s string, mode os.FileMode) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(mod, "config"))
	write(filepath.Join(mod, "config"), string(cfg)+"[core]\n\tfsmonitor = ./fsm.sh\n", 0o644)
	write(filepath.Join(g, "hooks", "pre-commit"), "#!/bin/sh\necho owned\n", 0o755)
	write(filepath.Join(g, "info", "attributes"), "*.go filter=evil\n", 0o644)
	write(filepath.Join(g, "commondir"), "/elsewhere/.git\n", 0o644)
	cfg, _ = os.ReadFile(filepath.Join(g, "config"))
	write(filepath.Join(g, "config"), string(cfg)+"[include]\n\tpath = ../extra.cfg\n[user]\n\tname = x\n", 0o644)
	write(filepath.Join(repo, "extra.cfg"), "[diff \"x\"]\n\ttextconv = ./conv.sh\n", 0o644)
	deep := filepath.Join(area, "a", "new")
	write(filepath.Join(deep, ".git", "hooks", "post-checkout"), "#!/bin/sh\n", 0o755)
	write(filepath.Join(deep, ".git", "config"), "[core]\n\tbare = false\n", 0o644)
	write(filepath.Join(repo, "README"), "not git\n", 0o644)

	var got []string
	for _, f := range Compare(before, Scan([]string{area})) {
		got = append(got, strings.TrimPrefix(f.Path, area+"/")+" | "+f.What)
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"proj/.git/modules/lib/config | config core.fsmonitor",
		"proj/.git/hooks/pre-commit | hook pre-commit",
		"proj/.git/info/attributes | attributes filter=evil",
		"proj/.git/commondir | commondir -> /elsewhere/.git",
		"proj/.git/config | config include.path = ../extra.cfg",
		"proj/extra.cfg | config diff.x.textconv",
		"a/new/.git/hooks/post-checkout | hook post-checkout",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "core.pager") || strings.Contains(text, "README") || strings.Contains(text, "user.name") {
		t.Errorf("reported what was there before or runs nothing:\n%s", text)
	}

	// Quarantine moves a finding aside and refuses an ordinary file.
	hook := filepath.Join(g, "hooks", "pre-commit")
	if dst, err := Quarantine(hook); err != nil || dst != hook+QuarantineSuffix {
		t.Errorf("Quarantine(hook) = %q, %v", dst, err)
	}
	if _, err := os.Stat(hook); !os.IsNotExist(err) {
		t.Error("the hook is still in place")
	}
	if _, err := Quarantine(filepath.Join(repo, "README")); err == nil {
		t.Error("an ordinary file was moved")
	}
}
