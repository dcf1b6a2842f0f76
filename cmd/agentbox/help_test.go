package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// placeholder is what a flag's help may show as its value: a name in
// capitals (FILE, NAME@HOST, HOST=FILE) or a list of the words it takes
// (on, on|off). A phrase (`agentbox roles` in a Usage became one) or the
// library's type names (string, int, value) say nothing.
var placeholder = regexp.MustCompile(`^([A-Z][A-Z0-9_]*([=@:./|-][A-Z0-9_]+)*|[a-z]+(\|[a-z]+)*)$`)

// typeNames are the library's placeholders for a Usage without one.
var typeNames = map[string]bool{"string": true, "int": true, "uint": true, "value": true, "float": true, "duration": true, "bool": true}

// TestHelpRendersEveryCommand renders every command's --help, nested
// subcommands included, and checks each flag line: a placeholder that
// names the value, and a default stated once.
func TestHelpRendersEveryCommand(t *testing.T) {
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			p := append(append([]string{}, prefix...), c.Name)
			paths = append(paths, p)
			walk(p, c.Commands)
		}
	}
	walk(nil, newApp().Commands)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found", len(paths))
	}
	flagSpec := regexp.MustCompile(`^\s+(-{1,2}[a-z].*?)(\s{2,}(.*))?$`)
	for _, p := range paths {
		t.Run(strings.Join(p, "_"), func(t *testing.T) {
			var out bytes.Buffer
			app := newApp()
			app.Writer, app.ErrWriter = &out, &out
			if err := app.Run(context.Background(), append(append([]string{"agentbox"}, p...), "--help")); err != nil {
				t.Fatalf("agentbox %s --help: %v", strings.Join(p, " "), err)
			}
			text := out.String()
			if !strings.Contains(text, "USAGE:") {
				t.Fatalf("no help rendered:\n%s", text)
			}
			inOptions := false
			for _, line := range strings.Split(text, "\n") {
				if strings.HasSuffix(line, "OPTIONS:") {
					inOptions = true
					continue
				}
				if !inOptions {
					continue
				}
				m := flagSpec.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				spec, usage := m[1], m[3]
				if i := strings.Index(spec, " [ "); i >= 0 {
					spec = spec[:i] // the repeat hint of a slice flag
				}
				for _, f := range strings.Split(spec, ", ") {
					name, ph, has := strings.Cut(f, " ")
					if has && (!placeholder.MatchString(ph) || typeNames[ph]) {
						t.Errorf("%s: flag %s shows placeholder %q (a backquoted phrase in its Usage?): %s", strings.Join(p, " "), name, ph, line)
					}
				}
				if strings.Count(usage, "(default") > 1 {
					t.Errorf("%s: a default stated twice: %s", strings.Join(p, " "), line)
				}
			}
		})
	}
}
