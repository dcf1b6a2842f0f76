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
	if dst, err := Quarantine([]string{area}, hook); err != nil || dst != hook+QuarantineSuffix {
		t.Errorf("Quarantine(hook) = %q, %v", dst, err)
	}
	if _, err := os.Stat(hook); !os.IsNotExist(err) {
		t.Error("the hook is still in place")
	}
	if _, err := Quarantine([]string{area}, filepath.Join(repo, "README")); err == nil {
		t.Error("an ordinary file was moved")
	}
}

// TestLinksNotFollowed: a repository the run made under the area whose
// .git/hooks is a symbolic link to a directory outside (holding a file),
// whose .git/info is one too, and whose config includes a file outside:
// the scan reports each link itself — "outside <area>: git would run
// programs from there" — and never the outside files as the area's
// hooks, attributes or config; Quarantine refuses the outside file and the
// path through the link (the file stays where it was), and moves the link
// itself.
func TestLinksNotFollowed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("reason: git not installed")
	}
	base := t.TempDir()
	area := filepath.Join(base, "target")
	outside := filepath.Join(base, "home", "u", "hooks")
	for _, d := range []string{area, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	evil := filepath.Join(outside, "pre-commit")
	os.WriteFile(evil, []byte("#!/bin/sh\necho owned\n"), 0o755)
	os.WriteFile(filepath.Join(outside, "attributes"), []byte("* filter=evil\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "inc.cfg"), []byte("[core]\n\tfsmonitor = ./x\n"), 0o644)
	before := Scan([]string{area})

	repo := filepath.Join(area, "x")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	g := filepath.Join(repo, ".git")
	os.RemoveAll(filepath.Join(g, "hooks"))
	os.RemoveAll(filepath.Join(g, "info"))
	if err := os.Symlink(outside, filepath.Join(g, "hooks")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(g, "info"))
	cfg, _ := os.ReadFile(filepath.Join(g, "config"))
	os.WriteFile(filepath.Join(g, "config"), append(cfg, []byte("[include]\n\tpath = "+filepath.Join(outside, "inc.cfg")+"\n")...), 0o644)
	// git itself would run the outside file as this repository's hook.
	if out, _ := exec.Command("git", "-C", repo, "rev-parse", "--git-path", "hooks/pre-commit").Output(); !strings.Contains(string(out), ".git/hooks/pre-commit") {
		t.Fatalf("git rev-parse: %s", out)
	}

	var got []string
	for _, f := range Compare(before, Scan([]string{area})) {
		got = append(got, f.String())
		if within(outside, f.Path) {
			t.Errorf("finding names a file outside the area: %s", f)
		}
		if f.Area != area {
			t.Errorf("finding %s: area %q, want %q", f, f.Area, area)
		}
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		filepath.Join(g, "hooks") + ": symbolic link to " + outside + ", outside " + area + ": git would run programs from there",
		filepath.Join(g, "info") + ": symbolic link to " + outside + ", outside " + area,
		filepath.Join(g, "config") + ": config include.path = " + filepath.Join(outside, "inc.cfg"),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "hook pre-commit") || strings.Contains(text, "filter=evil") || strings.Contains(text, "fsmonitor") {
		t.Errorf("the outside files were read as the area's:\n%s", text)
	}

	for _, p := range []string{evil, filepath.Join(g, "hooks", "pre-commit"), filepath.Join(g, "hooks", "..", "hooks", "pre-commit")} {
		_, err := Quarantine([]string{area}, p)
		if err == nil {
			t.Errorf("Quarantine(%s) moved it", p)
			continue
		}
		if !strings.Contains(err.Error(), "not moved") {
			t.Errorf("Quarantine(%s): %v", p, err)
		}
	}
	if _, err := os.Stat(evil); err != nil {
		t.Errorf("the outside file is gone: %v", err)
	}
	if _, err := Quarantine([]string{area}, filepath.Join(g, "hooks", "pre-commit")); err == nil || !strings.Contains(err.Error(), filepath.Join(g, "hooks")+" is a symbolic link") {
		t.Errorf("refusal does not name the link: %v", err)
	}
	// The link itself is what git follows: it is moved, not its target.
	if dst, err := Quarantine([]string{area}, filepath.Join(g, "hooks")); err != nil || dst != filepath.Join(g, "hooks")+QuarantineSuffix {
		t.Errorf("Quarantine(link) = %q, %v", dst, err)
	}
	if fi, err := os.Lstat(filepath.Join(g, "hooks") + QuarantineSuffix); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was not moved aside: %v", err)
	}
	if _, err := os.Stat(evil); err != nil {
		t.Errorf("the outside file is gone: %v", err)
	}
}

// TestQuarantineRefusesLinkedArea: an area whose own path passes through a
// symbolic link is refused, naming the link, and nothing is moved.
func TestQuarantineRefusesLinkedArea(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.MkdirAll(filepath.Join(real, "hooks"), 0o755)
	hook := filepath.Join(real, "hooks", "pre-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(real, link)
	_, err := Quarantine([]string{link}, filepath.Join(link, "hooks", "pre-commit"))
	if err == nil || !strings.Contains(err.Error(), link) {
		t.Errorf("Quarantine through a linked area: %v", err)
	}
	if _, err := os.Stat(hook); err != nil {
		t.Errorf("the file was moved: %v", err)
	}
	if _, err := Quarantine([]string{real}, "/etc/passwd"); err == nil || !strings.Contains(err.Error(), "outside the writable areas") {
		t.Errorf("Quarantine(/etc/passwd): %v", err)
	}
}

// BenchmarkScan: one scan of an area with 5 repositories (hooks, config)
// among 300 directories, as a run pays twice (start, end).
func BenchmarkScan(b *testing.B) {
	area := b.TempDir()
	for i := 0; i < 300; i++ {
		os.MkdirAll(filepath.Join(area, "d"+strings.Repeat("x", i%7), "s"+string(rune('a'+i%26)), "t"), 0o755)
	}
	for i := 0; i < 5; i++ {
		g := filepath.Join(area, "r"+string(rune('a'+i)), ".git")
		os.MkdirAll(filepath.Join(g, "hooks"), 0o755)
		os.WriteFile(filepath.Join(g, "config"), []byte("[core]\n\tbare = false\n"), 0o644)
		os.WriteFile(filepath.Join(g, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	}
	b.ResetTimer()
	for b.Loop() {
		if len(Scan([]string{area})) == 0 {
			b.Fatal("nothing found")
		}
	}
}
