package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// The example files in testdata (one per supported format) validate and
// load. They are copied to a private temp dir first: a checkout made with
// umask 002 leaves them group-writable, which the loader rightly refuses.
func TestTestdataFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*") // the format examples; peers/ holds corpora
	if len(files) < 4 {
		t.Fatalf("testdata has %d files", len(files))
	}
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(f))
		os.WriteFile(p, data, 0o600)
		paths = append(paths, p)
		if errs := ValidateFiles(p); errs != nil {
			t.Errorf("%s: %v", f, errs)
		}
	}
	e, err := Load(LoadOptions{Role: "reviewer", NoUserFile: true, Files: []string{filepath.Join(dir, "project.yaml")}})
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, e, []decCase{
		{"tool:exec:curl x", Deny}, {"tool:exec:make deploy prod", Ask}, {"tool:exec:gh pr list", Allow},
		// the role denies git push; a deny is never overridden by an allow
		{"tool:git:push origin feature", Deny}, {"tool:git:push origin main", Deny}, {"tool:exec:rg x", Allow},
	})
}
