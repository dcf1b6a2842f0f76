package yamlfields

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFields: every problem of a mapping is reported at its line, and the
// keys fn knows are walked in order.
func TestFields(t *testing.T) {
	for _, c := range []struct {
		doc  string
		keys string // the keys fn saw
		errs string // the problems, one per line
	}{
		{"a: 1\nb: [x, y]\n", "a b", ""},
		{"a: 1\nzz: 2\n", "a zz", "2: unknown key \"zz\" in test"},
		{"a: 1\na: 2\n", "a", "2: duplicate key \"a\" in test"},
		{"- a\n", "", "1: test must be a mapping, got a list"},
		{"x\n", "", "1: test must be a mapping, got \"x\""},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		var errs, keys []string
		errf := func(n *yaml.Node, format string, args ...any) {
			errs = append(errs, fmt.Sprintf("%d: ", n.Line)+fmt.Sprintf(format, args...))
		}
		Fields(doc.Content[0], "test", errf, func(key string, k, v *yaml.Node) bool {
			keys = append(keys, key)
			return key != "zz"
		})
		if strings.Join(keys, " ") != c.keys || strings.Join(errs, "\n") != c.errs {
			t.Errorf("%q: keys %q errors %q, want %q %q", c.doc, keys, errs, c.keys, c.errs)
		}
	}
}

// TestStrList: a string is a list of one; null and non-strings are errors
// naming what was there.
func TestStrList(t *testing.T) {
	for _, c := range []struct {
		doc, want, errs string
	}{
		{"a", "a", ""},
		{"[a, b]", "a|b", ""},
		{"[a, [b], c]", "a|c", "test entry must be a string, got a list"},
		{"~", "", "test must be a list of strings, got null"},
		{"{k: v}", "", "test must be a list of strings, got a mapping"},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		var errs []string
		got, nodes := StrList(doc.Content[0], "test", func(n *yaml.Node, format string, args ...any) {
			errs = append(errs, fmt.Sprintf(format, args...))
		})
		if strings.Join(got, "|") != c.want || strings.Join(errs, "\n") != c.errs || len(nodes) != len(got) {
			t.Errorf("%q: %q (%d nodes) errors %q, want %q %q", c.doc, got, len(nodes), errs, c.want, c.errs)
		}
	}
}

// TestLookup: the value of a top-level key of a mapping; nil for a
// missing key, a non-mapping or no node.
func TestLookup(t *testing.T) {
	for _, c := range []struct {
		doc, key, want string // want: the value's text, "-" for nil
	}{
		{"a: 1\nrules: x\n", "rules", "x"},
		{"a: 1\n", "rules", "-"},
		{"a: {rules: x}\n", "rules", "-"},
		{"- rules\n- x\n", "rules", "-"},
		{"rules: x\nb: rules\n", "rules", "x"},
		{"x: rules\n", "rules", "-"},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		got := "-"
		if v := Lookup(doc.Content[0], c.key); v != nil {
			got = v.Value
		}
		if got != c.want {
			t.Errorf("Lookup(%q, %q) = %q, want %q", c.doc, c.key, got, c.want)
		}
	}
	if Lookup(nil, "a") != nil {
		t.Errorf("Lookup(nil) is not nil")
	}
}
