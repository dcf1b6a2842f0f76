package agentbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/review"
	"github.com/agentbox/agentbox/internal/testkit"
)

// needReview skips when the kernel cannot mount an overlay here.
func needReview(t *testing.T) {
	t.Helper()
	needSandbox(t)
	if os.Geteuid() != 0 {
		// A regular user's review run needs overlayfs in a user namespace
		// (Linux 5.11+); the tests run the root path.
		t.Skip("reason: the review tests mount the overlay as root")
	}
	if _, err := os.Stat("/sys/module/overlay"); err != nil {
		if b, _ := os.ReadFile("/proc/filesystems"); !strings.Contains(string(b), "overlay") {
			t.Skip("reason: no overlayfs in this kernel")
		}
	}
}

// treeTar is a digest of dir as the sandbox sees it: contents, modes,
// symlinks and directories (tar sorted by name, times and owners
// normalized), so the view inside a run and target/ after an apply can be
// compared.
const treeTar = "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C %s -cf - . | sha256sum"

func tarDigest(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", strings.Replace(treeTar, "%s", dir, 1)).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))[0]
}

// reviewScript changes everything a review layer must carry: an edit, a
// new file, a deletion, a rename, a mode change, a symlink out of
// target/, an ignored build directory, a directory replaced wholesale and
// a file inside .git/; then prints the digest of target/ as it sees it.
const reviewScript = `set -e
cd proj
printf 'keep these notes\nand more\n' > notes.txt
echo fresh > new.txt
rm data.txt
mv README.md README.txt
chmod 700 run.sh
ln -s ../../../../etc/passwd outside-link
mkdir -p build/obj && echo obj > build/obj/a.o && echo build/ > .gitignore
rm -rf src && mkdir src && echo 'int lib2(void);' > src/lib2.h
echo "# agent note" >> .git/description
cd ..
echo "DIGEST $(` + treeTar + `)"
`

// TestReviewRun: a review run's writes land in its layer — target/ is
// byte for byte what it was; diff lists exactly the changes; apply makes
// target/ what the run saw; the layer is then gone and the apply is in the
// audit log.
func TestReviewRun(t *testing.T) {
	needReview(t)
	w := newWorld(t)
	proj := gitProject(t, w.ws)
	target := filepath.Join(w.ws, "target")
	store := filepath.Join(t.TempDir(), "layers")
	before := testkit.TreeHash(t, target)
	res, out, _ := runCmd(t, w, []string{"sh", "-c", strings.Replace(reviewScript, "%s", ".", 1)},
		agentbox.WithReview(), agentbox.WithReviewStore(store), agentbox.WithoutExecPolicy())
	if res.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", res.ExitCode, out)
	}
	i := strings.Index(out, "DIGEST ")
	if i < 0 {
		t.Fatalf("no digest in the output:\n%s", out)
	}
	inside := strings.Fields(out[i+len("DIGEST "):])[0]
	if after := testkit.TreeHash(t, target); after != before {
		t.Fatal("the real target/ changed during a review run")
	}
	ls, err := review.Layers(store)
	if err != nil || len(ls) != 1 {
		t.Fatalf("layers: %v %v", ls, err)
	}
	run := ls[0].Run
	cs, err := review.LayerChanges(store, run)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		s := string(c.Kind) + " " + c.Path
		if c.From != "" {
			s += " <- " + c.From
		}
		got = append(got, s)
	}
	want := []string{
		"added proj/.gitignore", "added proj/build", "added proj/build/obj", "added proj/build/obj/a.o",
		"added proj/new.txt", "added proj/outside-link", "added proj/src/lib2.h",
		"deleted proj/data.txt", "deleted proj/src/lib.c",
		"mode proj/run.sh", "modified proj/.git/description", "modified proj/notes.txt",
		"renamed proj/README.txt <- proj/README.md",
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range cs {
		if c.Path == "proj/outside-link" {
			d, err := review.LayerDiff(store, run, c)
			if err != nil || !strings.Contains(d, "symlink proj/outside-link -> ../../../../etc/passwd") {
				t.Errorf("symlink diff %q %v", d, err)
			}
		}
		if c.Path == "proj/notes.txt" {
			d, _ := review.LayerDiff(store, run, c)
			if !strings.Contains(d, "+and more") {
				t.Errorf("diff of notes.txt: %q", d)
			}
		}
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	ar, err := review.Apply(store, run, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Applied) != len(cs) || ar.Left != 0 {
		t.Errorf("applied %d of %d, %d left", len(ar.Applied), len(cs), ar.Left)
	}
	if d := tarDigest(t, target); d != inside {
		t.Errorf("target/ after the apply differs from what the run saw (%s vs %s)", d, inside)
	}
	if l, err := os.Readlink(filepath.Join(proj, "outside-link")); err != nil || l != "../../../../etc/passwd" {
		t.Errorf("the symlink was not applied as a link: %q %v", l, err)
	}
	if p2, _ := os.ReadFile("/etc/passwd"); string(p2) != string(passwd) {
		t.Fatal("/etc/passwd changed")
	}
	if _, err := os.Stat(filepath.Join(store, run)); !os.IsNotExist(err) {
		t.Errorf("the layer is still there after a whole apply: %v", err)
	}
	evs := readEvents(t, w.audit)
	found := false
	for _, e := range evs {
		if e.Event == audit.EventApply && e.Run == run && strings.Contains(e.Detail["paths"], "modified proj/notes.txt") && e.Detail["applied_by"] != "" {
			found = true
		}
	}
	if !found {
		t.Error("no apply event in the run's audit log")
	}
	if _, err := review.Apply(store, run, nil, false, nil); !errors.Is(err, agentbox.ErrNoLayer) {
		t.Errorf("apply after the layer is gone: %v, want ErrNoLayer", err)
	}
}

// TestReviewConflictsAndParallel: two review runs on one target/ at once,
// each sees only its own writes; applying one, then the other, works when
// they touched different files; a run whose file changed meanwhile is
// refused whole, naming the file, until --force.
func TestReviewConflictsAndParallel(t *testing.T) {
	needReview(t)
	w := newWorld(t)
	proj := gitProject(t, w.ws)
	store := filepath.Join(t.TempDir(), "layers")
	opts := []agentbox.Option{agentbox.WithReview(), agentbox.WithReviewStore(store), agentbox.WithoutExecPolicy()}
	// Three runs held on a pipe each, so they overlap: A edits notes.txt,
	// B adds b.txt, C edits notes.txt too.
	type held struct {
		r  *agentbox.Run
		in *os.File
	}
	start := func(script string) held {
		pr, pw, _ := os.Pipe()
		r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "read go; " + script},
			w.opts(append(opts, agentbox.WithApprove("none"), agentbox.WithAudit(w.audit), agentbox.WithStdio(pr, nil, nil))...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		return held{r, pw}
	}
	a := start(`echo A >> proj/notes.txt; test ! -e proj/b.txt`)
	b := start(`echo B > proj/b.txt; grep -qv A proj/notes.txt`)
	c := start(`echo C >> proj/notes.txt`)
	if _, err := a.r.Changes(); !errors.As(err, new(*agentbox.LiveError)) {
		t.Errorf("changes of a live run: %v, want LiveError", err)
	}
	if _, err := review.Apply(store, a.r.ID(), nil, false, nil); !errors.As(err, new(*agentbox.LiveError)) {
		t.Errorf("apply of a live run: %v, want LiveError", err)
	}
	for _, h := range []held{a, b, c} {
		h.in.Write([]byte("go\n"))
		h.in.Close()
		res, err := h.r.Wait()
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %v %+v (each must see only its own writes)", err, res)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "b.txt")); err == nil {
		t.Fatal("a review run wrote into the real target/")
	}
	if _, err := a.r.Apply(nil, false); err != nil {
		t.Fatalf("apply A: %v", err)
	}
	if _, err := b.r.Apply(nil, false); err != nil {
		t.Fatalf("apply B (another file): %v", err)
	}
	notes := filepath.Join(proj, "notes.txt")
	afterAB, _ := os.ReadFile(notes)
	_, err := c.r.Apply(nil, false)
	var ce *agentbox.ConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != "proj/notes.txt" {
		t.Fatalf("apply C over A's change: %v, want a conflict naming proj/notes.txt", err)
	}
	if now, _ := os.ReadFile(notes); string(now) != string(afterAB) {
		t.Fatal("a refused apply changed the file")
	}
	if _, err := c.r.Apply(nil, true); err != nil {
		t.Fatalf("apply C --force: %v", err)
	}
	if now, _ := os.ReadFile(notes); !strings.HasSuffix(string(now), "C\n") || strings.Contains(string(now), "A\n") {
		t.Errorf("notes.txt after the forced apply: %q", now)
	}
	if ls, _ := review.Layers(store); len(ls) != 0 {
		t.Errorf("%d layers left", len(ls))
	}
}

// TestReviewDiscard: discard leaves nothing: no layer directory, no mount.
func TestReviewDiscard(t *testing.T) {
	needReview(t)
	w := newWorld(t)
	gitProject(t, w.ws)
	store := filepath.Join(t.TempDir(), "layers")
	before := testkit.TreeHash(t, filepath.Join(w.ws, "target"))
	res, out, _ := runCmd(t, w, []string{"sh", "-c", "rm -rf proj && echo x > y"},
		agentbox.WithReview(), agentbox.WithReviewStore(store), agentbox.WithoutExecPolicy())
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, out)
	}
	ls, _ := review.Layers(store)
	if len(ls) != 1 {
		t.Fatalf("layers: %v", ls)
	}
	if err := review.Discard(store, ls[0].Run); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("left in the store: %v", ents)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), store) {
		t.Errorf("a mount of the layer is left:\n%s", mi)
	}
	if testkit.TreeHash(t, filepath.Join(w.ws, "target")) != before {
		t.Error("target/ changed")
	}
	if err := review.Discard(store, "nosuchrun"); !errors.Is(err, agentbox.ErrNoLayer) {
		t.Errorf("discard of an unknown run: %v", err)
	}
	if err := review.Discard(store, "../etc"); err == nil || !strings.Contains(err.Error(), "not a run id") {
		t.Errorf("discard of ../etc: %v", err)
	}
}

// TestReviewLayerFailureStopsRun: the layer is made while the helper
// starts and handed over before the helper's configuration; when it
// cannot be made (its directory exists already), the helper is ended
// unconfigured, the command never runs and the run's error says why.
func TestReviewLayerFailureStopsRun(t *testing.T) {
	needReview(t)
	w := newWorld(t)
	store := filepath.Join(t.TempDir(), "layers")
	marker := filepath.Join(w.ws, "target", "ran")
	r, err := agentbox.New(w.ws, "developer", []string{"touch", marker}, w.opts(agentbox.WithApprove("none"), agentbox.WithAudit(w.audit),
		agentbox.WithReview(), agentbox.WithReviewStore(store))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(store, r.ID()), 0o700); err != nil {
		t.Fatal(err)
	}
	err = runErr(t, r)
	if err == nil || !strings.HasPrefix(err.Error(), "review: ") || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("run error %v, want the layer's failure", err)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the command ran without its layer")
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), store) {
		t.Errorf("a mount of the layer is left:\n%s", mi)
	}
}

func readEvents(t *testing.T, path string) []audit.Event {
	t.Helper()
	evs, err := audit.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestEscalateGoAPI: Run.Escalate through the Go API. A Go approver's
// answer counts as the invoking user's: with an approvers block that
// grants it nothing but locked, a move to open is refused (audited) while
// the run goes on; a move to locked needs no grant.
func TestEscalateGoAPI(t *testing.T) {
	needSandbox(t)
	w := newWorld(t)
	pol := filepath.Join(t.TempDir(), "approvers.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\napprovers:\n  helper: {members: [\"uid:65534\"], grant: [locked]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw, _ := os.Pipe()
	defer pw.Close()
	asked := 0
	r, err := agentbox.New(w.ws, "developer", []string{"sh", "-c", "read x"}, w.opts(agentbox.WithPolicyFiles(pol), agentbox.WithAudit(w.audit),
		agentbox.WithStdio(pr, nil, nil),
		agentbox.WithApprover(approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
			asked++
			return approval.Response{Answer: approval.AllowOnce, Approver: "go"}, nil
		})))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	err = r.Escalate("open", "more rights")
	if err == nil || !strings.Contains(err.Error(), "no approver role grants role open") {
		t.Errorf("escalate to open: %v, want a refusal naming the missing grant", err)
	}
	if asked != 2 {
		t.Errorf("the approver was asked %d times, want 2 (asked again once after the refusal, then the question ended)", asked)
	}
	if err := r.Escalate("locked", ""); err != nil {
		t.Errorf("narrowing to locked: %v", err)
	}
	pw.Write([]byte("x\n"))
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, w.audit)
	var roles []string
	for _, e := range evs {
		if e.Event == audit.EventRole {
			roles = append(roles, e.Detail["from"]+"->"+e.Detail["to"])
		}
	}
	if strings.Join(roles, " ") != "developer->locked" {
		t.Errorf("role changes audited: %v", roles)
	}
}
