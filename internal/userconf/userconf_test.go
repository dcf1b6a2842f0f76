package userconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     Settings
		err      string // substring of the error; "" for none
	}{
		{"empty file", "", Settings{}, ""},
		{"only comments", "# nothing yet\n", Settings{}, ""},
		{"limits off", "limits: off\n", Settings{NoLimits: true, Line: 1}, ""},
		{"limits on", "# default\nlimits: on\n", Settings{Line: 2}, ""},
		{"quoted off", "limits: \"off\"\n", Settings{NoLimits: true, Line: 1}, ""},
		{"boolean is not a word", "\n\nlimits: false\n", Settings{}, `config.yaml:3: limits: want on or off, got "false"`},
		{"typo in the key", "limit: off\n", Settings{}, `config.yaml:1: unknown setting "limit" (known: limits)`},
		{"set twice", "limits: on\nlimits: off\n", Settings{}, `config.yaml:2: "limits" set again (first on line 1)`},
		{"a list", "- limits\n", Settings{}, "config.yaml:1: want settings as `key: value` lines"},
		{"a mapping value", "limits:\n  memory: off\n", Settings{}, "config.yaml:2: limits: want on or off, got a mapping"},
		{"bad yaml", "limits: [off\n", Settings{}, "user settings config.yaml: yaml:"},
		{"a bare word", "off\n", Settings{}, "config.yaml:1: want settings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse("config.yaml", []byte(c.in))
			if c.err == "" {
				if err != nil || got != c.want {
					t.Fatalf("Parse = %+v, %v; want %+v", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Parse error = %v, want one containing %q", err, c.err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	p := filepath.Join(dir, "agentbox", "config.yaml")
	if got := Path(); got != p {
		t.Fatalf("Path = %q, want %q", got, p)
	}
	if s, _, err := Load(); err != nil || s != (Settings{}) {
		t.Fatalf("Load without a file = %+v, %v", s, err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("limits: off\n"), 0o644)
	if s, path, err := Load(); err != nil || !s.NoLimits || path != p {
		t.Fatalf("Load = %+v, %q, %v", s, path, err)
	}
	os.WriteFile(p, []byte(strings.Repeat("#", maxSize+1)), 0o644)
	if _, _, err := Load(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Load of an oversized file = %v", err)
	}
	// A relative XDG_CONFIG_HOME is ignored, as for the user policy.
	t.Setenv("XDG_CONFIG_HOME", "rel")
	t.Setenv("HOME", dir)
	if got := Path(); got != filepath.Join(dir, ".config", "agentbox", "config.yaml") {
		t.Fatalf("Path with a relative XDG_CONFIG_HOME = %q", got)
	}
}

// FuzzParse: no input panics, and a successful parse of limits is one of
// the two words.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "limits: off\n", "limits: on", "limits: [off", "a: b\nc: d\n", "- x", "limits: &a off\nx: *a\n", "limits: !!bool off\n", "? [a]\n: b\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") && !strings.HasPrefix(err.Error(), "user settings f:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if s.NoLimits && s.Line == 0 {
			t.Fatalf("limits off without a line: %+v", s)
		}
	})
}
