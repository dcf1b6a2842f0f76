package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// conformance is a file of policy/testdata/formats: examples from a
// format's own document, carried over as data.
type conformance struct {
	Groups []struct {
		Name      string
		Role      string // bare-ask (default), bare-allow, or a built-in role
		Workspace bool   // files are placed in a workspace (names relative to it)
		Files     []struct {
			Name, Layer, Content string
		}
		Cases []struct {
			Action string
			Shell  string
			Exec   []string
			Want   string
			Why    string
		}
	}
}

// TestFormatConformance decides every example of every format document in
// testdata/formats and checks the decision (and, where given, a piece of
// the reason).
func TestFormatConformance(t *testing.T) {
	files, _ := filepath.Glob("testdata/formats/*.yaml")
	if len(files) < 3 {
		t.Fatalf("conformance files: %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c conformance
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range c.Groups {
			t.Run(filepath.Base(f)+"/"+g.Name, func(t *testing.T) {
				dir := t.TempDir()
				opts := LoadOptions{Role: "bare", NoUserFile: true}
				if g.Workspace {
					opts.Workspace = dir
				}
				switch g.Role {
				case "", "bare-ask", "bare-allow":
					def := strings.TrimPrefix(cmpOr(g.Role, "bare-ask"), "bare-")
					opts.Files = append(opts.Files, writePolicy(t, "role.yaml", bareRole(def)))
				default:
					opts.Role = g.Role
				}
				for _, pf := range g.Files {
					p := filepath.Join(dir, pf.Name)
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, []byte(pf.Content), 0o600); err != nil {
						t.Fatal(err)
					}
					switch pf.Layer {
					case "user":
						opts.UserFile, opts.NoUserFile = p, false
					default:
						opts.Files = append(opts.Files, p)
					}
				}
				e, err := Load(opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range g.Cases {
					var r Result
					in := k.Action
					switch {
					case k.Shell != "":
						in = "shell: " + k.Shell
						r = e.Decide(Query{Shell: k.Shell})
					case k.Exec != nil:
						in = "exec: " + strings.Join(k.Exec, " ")
						r = e.Decide(Query{Argv: k.Exec, ExecContext: ExecContext{Cwd: ""}})
					default:
						r = e.Decide(Query{Action: k.Action})
					}
					want, err := ParseDecision(k.Want)
					if err != nil {
						t.Fatalf("%s: want %q", in, k.Want)
					}
					if r.Decision != want || k.Why != "" && !strings.Contains(r.Reason, k.Why) {
						t.Errorf("%s = %s (%s), want %s (%q)", in, r.Decision, r.Reason, want, k.Why)
					}
				}
			})
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
